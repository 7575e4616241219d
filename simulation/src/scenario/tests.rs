//! Tests of scenario parsing and validation.

use super::*;

pub(super) const CLUSTER: &str = "cluster:\n  apiVersion: apps.foundationdb.org/v1beta2\n  kind: FoundationDBCluster\n  metadata: {name: sample, namespace: default}\n  spec: {version: 7.1.57}\n";

pub(super) fn parse(body: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(&format!("name: test\n{CLUSTER}{body}"), "test.yaml")
}

#[test]
fn parses_every_step_kind_of_the_contract() {
    let scenario = parse(
            "seed: 7\nworld: {nodes: 6, zones: 3, configMapDelaySeconds: 60, exclusionSeconds: 60,\n  clients: [{address: \"10.9.0.1:4000\", version: \"7.1.57\", logGroup: app}]}\nsteps:\n  - reconcile: {}\n  - reconcile: {maxPasses: 5}\n  - apply: {spec: {processCounts: {storage: 3}}}\n  - advance: 3600\n  - fault: {kind: processMissing, processGroup: storage-2}\n  - fault: {kind: podPending, processGroup: log-1}\n  - fault: {kind: podFailed, processGroup: log-1}\n  - fault: {kind: podStuckTerminating, processGroup: storage-1}\n  - fault: {kind: sidecarUnreachable, processGroup: stateless-3}\n  - fault: {kind: nodeDown, node: node-2}\n  - fault: {kind: nodeTaint, node: node-2, key: example.com/maintenance}\n  - fault: {kind: apiConflicts, rate: 0.2}\n  - fault: {kind: fdbcliTimeouts, rate: 0.2}\n  - fault: {kind: clientConnected, address: \"10.9.0.2:4000\", version: \"7.1.0\", logGroup: app}\n  - heal: {processGroup: storage-2}\n  - heal: {node: node-2}\n  - heal: {all: true}\n  - restartOperator: {}\n",
        )
        .unwrap();
    assert_eq!(scenario.seed(), 7);
    assert_eq!(scenario.world.clients.len(), 1);
    let steps = scenario.steps();
    assert_eq!(steps.len(), 18);
    assert_eq!(
        steps[1],
        Step::Reconcile(ReconcileStep {
            max_passes: Some(5)
        })
    );
    assert_eq!(steps[3], Step::Advance(3600));
    assert_eq!(steps[11], Step::Fault(Fault::ApiConflicts { rate: 0.2 }));
    assert_eq!(steps[17], Step::RestartOperator { after: None });
}

#[test]
fn defaults_apply_when_unset() {
    let scenario = parse("").unwrap();
    assert_eq!(scenario.seed(), DEFAULT_SEED);
    assert!(scenario.steps().is_empty());
}

#[test]
fn yaml_errors_name_the_field_and_line() {
    let error = parse("steps:\n  - fault: {kind: podPendin, processGroup: a}\n").unwrap_err();
    let ScenarioError::Yaml { message, line, .. } = &error else {
        panic!("{error}")
    };
    assert!(message.contains("steps[0].fault.kind"), "{message}");
    assert!(message.contains("podPendin"), "{message}");
    assert_eq!(*line, Some(8));

    let error = parse("steps:\n  - reconcile: {maxPasss: 3}\n").unwrap_err();
    assert!(error.to_string().contains("maxPasss"), "{error}");
}

#[test]
fn semantic_errors_name_the_field() {
    let cases = [
        (
            "steps:\n  - fault: {kind: apiConflicts, rate: 1.5}\n",
            "steps[0].fault.rate",
        ),
        ("steps:\n  - {advance: 3, reconcile: {}}\n", "steps[0]"),
        ("steps:\n  - heal: {}\n", "steps[0].heal"),
        (
            "steps:\n  - reconcile: {maxPasses: 0}\n",
            "steps[0].reconcile.maxPasses",
        ),
        ("steps:\n  - apply: 3\n", "steps[0].apply"),
        (
            "steps:\n  - fault: {kind: clientConnected, address: a, version: x}\n",
            "steps[0].fault.version",
        ),
        ("world: {nodes: 0}\n", "world.nodes"),
    ];
    for (body, field) in cases {
        match parse(body) {
            Err(ScenarioError::Invalid { field: got, .. }) => assert_eq!(got, field, "{body}"),
            other => panic!("{body}: expected an invalid {field}, got {other:?}"),
        }
    }
}

#[test]
fn the_cluster_must_be_a_named_foundationdb_cluster() {
    let error =
        Scenario::parse("cluster: {kind: Pod, metadata: {name: x}}\n", "test.yaml").unwrap_err();
    assert!(error.to_string().contains("cluster.kind"), "{error}");
    let error = Scenario::parse(
        "cluster: {kind: FoundationDBCluster, metadata: {}}\n",
        "test.yaml",
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("cluster.metadata.name"),
        "{error}"
    );
}

#[test]
fn parses_the_v2_steps_faults_and_world_settings() {
    let scenario = parse(concat!(
        "world: {storageGiB: 2, shards: 64, moveMiBPerSecond: 10, failureDetectionSeconds: 30,\n",
        "  recoverySeconds: 4, restartSeconds: 3, images: {\"registry.example/fdb:build-1\": \"7.1.57\"}}\n",
        "steps:\n",
        "  - act: {as: operator, delete: pod/sample-storage-1}\n",
        "  - act: {as: user, delete: pvc/sample-storage-1-data}\n",
        "  - act: {as: operator, deleteCollection: {kind: pod, labelSelector: \"foundationdb.org/fdb-process-class=storage\"}}\n",
        "  - act: {as: operator, kill: [storage-1, storage-2]}\n",
        "  - act: {as: operator, exclude: [storage-1]}\n",
        "  - act: {as: user, patch: {target: pod/sample-log-1, patch: {metadata: {labels: {a: b}}}}}\n",
        "  - act: {as: user, evict: pod/sample-storage-2}\n",
        "  - act: {as: user, drain: node-3}\n",
        "  - act: {as: user, addNodes: 2}\n",
        "  - restartOperator: {after: kill}\n",
        "  - expect: {within: 3600, reconciled: true, available: true, version: \"7.3.43\", runningVersion: \"7.3.43\",\n",
        "      processGroups: {storage: 3, log: 4, stateless: 8}, pods: 15, excluded: [], images: {main: \"foundationdb/foundationdb:7.3.43\"}}\n",
        "  - fault: {kind: clientDisconnected, address: \"10.9.0.2:4000\"}\n",
        "  - fault: {kind: ioError, processGroup: storage-1}\n",
        "  - fault: {kind: processCrashLoop, processGroup: storage-1}\n",
        "  - fault: {kind: binaryMissing, processGroup: storage-1, version: 7.3.43}\n",
        "  - fault: {kind: outputNotWritable, processGroup: storage-1}\n",
        "  - fault: {kind: slowRecovery, seconds: 60}\n",
        "  - fault: {kind: ignoreKill, processGroup: storage-1}\n",
    ))
    .unwrap();
    assert_eq!(scenario.world.storage_gib, Some(2.0));
    assert_eq!(scenario.world.move_mib_per_second, Some(10.0));
    assert_eq!(scenario.world.images.len(), 1);
    let steps = scenario.steps();
    assert_eq!(steps.len(), 18);
    assert_eq!(
        steps[0],
        Step::Act {
            actor: Actor::Operator,
            action: Action::Delete(ObjectRef {
                kind: ObjectKind::Pod,
                name: "sample-storage-1".into()
            }),
            cluster: None,
        }
    );
    assert_eq!(
        steps[3],
        Step::Act {
            actor: Actor::Operator,
            action: Action::Kill(vec!["storage-1".into(), "storage-2".into()]),
            cluster: None,
        }
    );
    assert_eq!(
        steps[9],
        Step::RestartOperator {
            after: Some("kill".into())
        }
    );
    let Step::Expect(expect) = &steps[10] else {
        panic!("{:?}", steps[10])
    };
    assert_eq!(expect.within, 3600);
    assert_eq!(expect.pods, Some(15));
    assert_eq!(expect.excluded, Some(vec![]));
    assert_eq!(
        steps[17],
        Step::Fault(Fault::IgnoreKill {
            process_group: "storage-1".into()
        })
    );
}

#[test]
fn v2_semantic_errors_name_the_field() {
    let cases = [
        ("steps:\n  - act: {as: operator}\n", "steps[0].act"),
        (
            "steps:\n  - act: {as: operator, delete: pod/a, kill: [b]}\n",
            "steps[0].act",
        ),
        (
            "steps:\n  - act: {as: operator, delete: node/a}\n",
            "steps[0].act.delete",
        ),
        (
            "steps:\n  - act: {as: user, kill: []}\n",
            "steps[0].act.kill",
        ),
        (
            "steps:\n  - act: {as: user, evict: pvc/a}\n",
            "steps[0].act.evict",
        ),
        (
            "steps:\n  - act: {as: user, evict: {processClass: storage, nth: 0}}\n",
            "steps[0].act.evict.nth",
        ),
        (
            "steps:\n  - act: {as: user, patch: {target: pod/a, patch: 3}}\n",
            "steps[0].act.patch.patch",
        ),
        ("steps:\n  - expect: {within: 5}\n", "steps[0].expect"),
        (
            "steps:\n  - expect: {version: \"7.x\"}\n",
            "steps[0].expect.version",
        ),
        (
            "steps:\n  - expect: {processGroups: {storag: 3}}\n",
            "steps[0].expect.processGroups",
        ),
        (
            "steps:\n  - restartOperator: {after: \" \"}\n",
            "steps[0].restartOperator.after",
        ),
        (
            "steps:\n  - fault: {kind: slowRecovery, seconds: 0}\n",
            "steps[0].fault.seconds",
        ),
        (
            "steps:\n  - fault: {kind: binaryMissing, processGroup: a, version: x}\n",
            "steps[0].fault.version",
        ),
        ("world: {shards: 0}\n", "world.shards"),
        ("world: {storageGiB: -1}\n", "world.storageGiB"),
        ("world: {images: {a: nope}}\n", "world.images[\"a\"]"),
        (
            "world: {operatorTools: [\"7.1\", \"../7.3\"]}\n",
            "world.operatorTools[1]",
        ),
        (
            "world: {operatorTools: [\"7\"]}\n",
            "world.operatorTools[0]",
        ),
        (
            "world: {storageClasses: [{name: local}, {name: local}]}\n",
            "world.storageClasses[1].name",
        ),
        (
            "world: {storageClasses: [{name: a, default: true}, {name: b, default: true}]}\n",
            "world.storageClasses",
        ),
    ];
    for (body, field) in cases {
        match parse(body) {
            Err(ScenarioError::Invalid { field: got, .. }) => assert_eq!(got, field, "{body}"),
            other => panic!("{body}: expected an invalid {field}, got {other:?}"),
        }
    }
}

pub(super) fn invalid_field(result: Result<Scenario, ScenarioError>) -> (String, String) {
    match result {
        Err(ScenarioError::Invalid { field, message, .. }) => (field, message),
        other => panic!("expected an invalid field, got {other:?}"),
    }
}

pub(super) fn scenario_with(spec: &str, body: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(
        &format!(
            "name: test\ncluster:\n  apiVersion: apps.foundationdb.org/v1beta2\n  kind: FoundationDBCluster\n  metadata: {{name: sample}}\n  spec: {spec}\n{body}"
        ),
        "test.yaml",
    )
}

pub(super) const FOUR_STORAGE: &str =
    "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}}";

#[test]
fn every_committed_scenario_file_passes_validation() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = vec![root.join("docs/examples/quickstart.yaml")];
    for entry in std::fs::read_dir(root.join("tests/scenarios/mutations")).unwrap() {
        files.push(entry.unwrap().path());
    }
    assert!(files.len() > 5);
    for file in files {
        if let Err(error) = Scenario::from_file(&file) {
            panic!("{}: {error}", file.display());
        }
    }
}

const KC2: &str = "clusters:\n  - apiVersion: apps.foundationdb.org/v1beta2\n    kind: FoundationDBCluster\n    metadata: {name: kc2}\n    spec: {version: 7.1.57, processGroupIDPrefix: kc2}\n";

#[test]
fn extra_clusters_and_their_selectors_parse() {
    let scenario = parse(&format!(
        "{KC2}steps:\n  - apply: {{target: foundationdbcluster/kc2, patch: {{spec: {{processCounts: {{storage: 2}}}}}}}}\n  - act: {{as: operator, cluster: kc2, kill: [kc2-storage-1]}}\n  - expect: {{cluster: kc2, reconciled: true}}\n  - apply: {{spec: {{processCounts: {{storage: 2}}}}}}\n"
    ))
    .unwrap();
    assert_eq!(scenario.clusters.len(), 1);
    let steps = scenario.steps();
    assert_eq!(
        steps[0],
        Step::ApplyCluster {
            name: "kc2".into(),
            patch: serde_json::json!({"spec": {"processCounts": {"storage": 2}}})
        }
    );
    assert_eq!(
        steps[1],
        Step::Act {
            actor: Actor::Operator,
            action: Action::Kill(vec!["kc2-storage-1".into()]),
            cluster: Some("kc2".into()),
        }
    );
    let Step::Expect(expect) = &steps[2] else {
        panic!("an expect step");
    };
    assert_eq!(expect.cluster.as_deref(), Some("kc2"));
    assert!(
        matches!(steps[3], Step::Apply(_)),
        "a plain apply patches the first cluster"
    );
}

#[test]
fn extra_clusters_are_validated_and_named_clusters_must_exist() {
    let (field, message) = invalid_field(parse(&format!(
        "{KC2}steps:\n  - expect: {{cluster: kc3, reconciled: true}}\n"
    )));
    assert_eq!(field, "steps[0].expect.cluster");
    assert!(
        message.contains("kc3") && message.contains("sample, kc2"),
        "{message}"
    );
    let (field, _) = invalid_field(parse(&format!(
        "{KC2}steps:\n  - act: {{as: user, cluster: kc2, kill: [kc2-storage-1]}}\n"
    )));
    assert_eq!(field, "steps[0].act.cluster");
    let (field, _) = invalid_field(parse(
        "clusters:\n  - apiVersion: apps.foundationdb.org/v1beta2\n    kind: FoundationDBCluster\n    metadata: {name: sample}\n    spec: {version: 7.1.57}\n",
    ));
    assert_eq!(field, "clusters[0].metadata.name");
    let (field, _) = invalid_field(parse(
        "clusters:\n  - apiVersion: apps.foundationdb.org/v1beta2\n    kind: FoundationDBCluster\n    metadata: {name: kc2}\n    spec: {version: banana}\n",
    ));
    assert!(field.starts_with("clusters[0].spec"), "{field}");
}

#[test]
fn objects_are_secrets_and_config_maps_of_the_cluster_namespace() {
    let scenario = parse(
        "objects:\n  - {apiVersion: v1, kind: Secret, metadata: {name: creds}, stringData: {a: b}}\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: extra, namespace: default}, data: {k: v}}\n",
    )
    .unwrap();
    assert_eq!(scenario.objects.len(), 2);
    let cases = [
        (
            "objects:\n  - {apiVersion: v1, kind: Pod, metadata: {name: p}}\n",
            "objects[0].kind",
            "Secret, ConfigMap",
        ),
        (
            "objects:\n  - {apiVersion: apps/v1, kind: Secret, metadata: {name: s}}\n",
            "objects[0].apiVersion",
            "v1",
        ),
        (
            "objects:\n  - {apiVersion: v1, kind: Secret, metadata: {}}\n",
            "objects[0].metadata.name",
            "required",
        ),
        (
            "objects:\n  - {apiVersion: v1, kind: Secret, metadata: {name: s, namespace: other}}\n",
            "objects[0].metadata.namespace",
            "\"default\"",
        ),
        (
            "objects:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: sample-config}}\n",
            "objects[0].metadata.name",
            "operator",
        ),
        (
            "objects:\n  - {apiVersion: v1, kind: Secret, metadata: {name: s}}\n  - {apiVersion: v1, kind: Secret, metadata: {name: s}}\n",
            "objects[1].metadata.name",
            "already",
        ),
        (
            "objects:\n  - {apiVersion: v1, kind: Secret, metadata: {name: s}, data: {k: \"not base64!\"}}\n",
            "objects[0]",
            "not a valid Secret",
        ),
    ];
    for (body, field, words) in cases {
        let (found, message) = invalid_field(parse(body));
        assert_eq!(found, field, "{body}: {message}");
        assert!(message.contains(words), "{body}: {message}");
    }
}

#[test]
fn parses_the_steps_of_the_go_e2e_cases() {
    let scenario = parse(concat!(
        "steps:\n",
        "  - act: {as: user, maintenance: {zone: node-2, seconds: 600}}\n",
        "  - act: {as: user, maintenance: off}\n",
        "  - act: {as: user, includeAll: true}\n",
        "  - fault: {kind: ioLatency, processGroup: storage-1, milliseconds: 2000}\n",
        "  - fault: {kind: kubeApiUnreachable, processGroup: storage-1}\n",
        "  - expect: {maintenanceZone: node-2, conditions: {storage-1: [IncorrectConfigMap], log-1: []}}\n",
        "  - expect: {maintenanceZone: null}\n",
        "  - expect: {within: 60, throughout: 120, teamsHealthy: false}\n",
    ))
    .unwrap();
    let steps = scenario.steps();
    let action = |step: &Step| match step {
        Step::Act { action, .. } => action.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        action(&steps[0]),
        Action::Maintenance(Some(("node-2".into(), 600)))
    );
    assert_eq!(action(&steps[1]), Action::Maintenance(None));
    assert_eq!(action(&steps[2]), Action::IncludeAll);
    assert_eq!(
        steps[3],
        Step::Fault(Fault::IoLatency {
            process_group: "storage-1".into(),
            milliseconds: 2000
        })
    );
    let Step::Expect(expect) = &steps[5] else {
        panic!("{:?}", steps[5])
    };
    assert_eq!(expect.maintenance_zone, Some(Some("node-2".into())));
    let conditions = expect.conditions.as_ref().unwrap();
    assert_eq!(conditions["storage-1"], ["IncorrectConfigMap"]);
    assert!(conditions["log-1"].is_empty());
    let Step::Expect(expect) = &steps[6] else {
        panic!("{:?}", steps[6])
    };
    assert_eq!(expect.maintenance_zone, Some(None), "null: no zone");
    let Step::Expect(expect) = &steps[7] else {
        panic!("{:?}", steps[7])
    };
    assert_eq!(
        (expect.within, expect.throughout, expect.teams_healthy),
        (60, 120, Some(false))
    );

    for (body, field) in [
        (
            "steps:\n  - act: {as: user, maintenance: on}\n",
            "steps[0].act.maintenance",
        ),
        (
            "steps:\n  - act: {as: user, maintenance: {zone: a, seconds: 0}}\n",
            "steps[0].act.maintenance.seconds",
        ),
        (
            "steps:\n  - act: {as: user, includeAll: false}\n",
            "steps[0].act.includeAll",
        ),
        (
            "steps:\n  - fault: {kind: ioLatency, processGroup: a, milliseconds: 0}\n",
            "steps[0].fault.milliseconds",
        ),
        (
            "steps:\n  - expect: {conditions: {a: [NotACondition]}}\n",
            "steps[0].expect.conditions",
        ),
    ] {
        assert_eq!(invalid_field(parse(body)).0, field, "{body}");
    }
}

#[test]
fn evict_chooses_the_nth_live_pod_of_a_class_when_it_runs() {
    let scenario =
        parse("steps:\n  - act: {as: user, evict: {processClass: storage, nth: 2}}\n").unwrap();
    let choice = PodChoice {
        process_class: fdb_shared::api::ProcessClass::Storage,
        nth: 2,
    };
    assert!(matches!(
        &scenario.steps()[0],
        Step::Act { action: Action::EvictChosen(c), .. } if *c == choice
    ));
    let alive = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
    // Numbers compare as numbers; the count goes round when fewer pods are alive.
    let pods = alive(&["sample-storage-10", "sample-storage-9", "sample-storage-2"]);
    assert_eq!(choice.choose(&pods), Some("sample-storage-9"));
    let fifth = PodChoice { nth: 5, ..choice };
    assert_eq!(fifth.choose(&pods), Some("sample-storage-9"));
    assert_eq!(choice.choose(&[]), None);
}

/// A `fleet:` member named `name`, with `metadata` fields after its name.
fn fleet_member(name: &str, metadata: &str) -> String {
    format!(
        "fleet:\n  - apiVersion: apps.foundationdb.org/v1beta2\n    kind: FoundationDBCluster\n    metadata: {{name: {name}{metadata}}}\n    spec: {{version: 7.3.43}}\n"
    )
}

#[test]
fn fleet_members_are_named_by_steps_and_each_is_a_database_of_its_own() {
    let scenario = parse(&format!(
        "{}steps:\n  - expect: {{cluster: other, reconciled: true}}\n",
        fleet_member("other", "")
    ))
    .unwrap();
    assert_eq!(scenario.fleet.len(), 1);
    assert!(scenario.clusters.is_empty());
    // A name taken, another namespace, a database description another has.
    let (field, _) = invalid_field(parse(&fleet_member("sample", "")));
    assert_eq!(field, "fleet[0].metadata.name");
    let (field, message) = invalid_field(parse(&fleet_member("other", ", namespace: elsewhere")));
    assert_eq!(field, "fleet[0].metadata.namespace");
    assert!(message.contains("\"default\""), "{message}");
    // Names are DNS labels, but a seed can name another database's description.
    let (field, message) = invalid_field(parse(&fleet_member("other", "").replace(
        "version: 7.3.43",
        "version: 7.3.43, seedConnectionString: \"sample:abc@10.0.0.1:4501\"",
    )));
    assert_eq!(field, "fleet[0].spec.seedConnectionString", "{message}");
    assert!(message.contains("\"sample\""), "{message}");
    let (field, message) = invalid_field(parse(&format!(
        "{}steps:\n  - act: {{as: operator, cluster: other, kill: [storage-1]}}\n",
        fleet_member("other", "")
    )));
    assert_eq!(field, "steps[0].act.cluster");
    assert!(message.contains("fleet member"), "{message}");
    let (field, _) = invalid_field(parse(
        &fleet_member("other", "").replace("7.3.43", "banana"),
    ));
    assert!(field.starts_with("fleet[0].spec"), "{field}");
}
