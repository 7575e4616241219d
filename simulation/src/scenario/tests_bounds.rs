//! Tests of the scenario's bounds: durations, world size, step counts, process counts,
//! and the groups and nodes steps may name.

use super::tests::{CLUSTER, FOUR_STORAGE, invalid_field, parse, scenario_with};
use super::*;

#[test]
fn step_durations_are_bounded_up_front() {
    let (field, message) = invalid_field(parse("steps:\n  - advance: 253402207200\n"));
    assert_eq!(field, "steps[0].advance");
    assert!(
        message.contains("limit of 315360000 seconds (10 years"),
        "{message}"
    );
    let (field, _) = invalid_field(parse(
        "steps:\n  - reconcile: {}\n  - expect: {within: 315360001, available: true}\n",
    ));
    assert_eq!(field, "steps[1].expect.within");
    let (field, _) = invalid_field(parse(
        "steps:\n  - fault: {kind: slowRecovery, seconds: 18446744073709551615}\n",
    ));
    assert_eq!(field, "steps[0].fault.seconds");
    let (field, _) = invalid_field(parse("world: {failureDetectionSeconds: 999999999999}\n"));
    assert_eq!(field, "world.failureDetectionSeconds");
    // Ten years per step is fine, but not more than 100 years in all.
    parse("steps:\n  - advance: 315360000\n").unwrap();
    let many = "  - advance: 315360000\n".repeat(11);
    let (field, message) = invalid_field(parse(&format!("steps:\n{many}")));
    assert_eq!(field, "steps[10]");
    assert!(message.contains("100 years"), "{message}");
}

#[test]
fn the_world_and_the_number_of_steps_are_bounded() {
    let (field, message) = invalid_field(parse("world: {nodes: 100000}\n"));
    assert_eq!(field, "world.nodes");
    assert!(
        message.contains("100000 is above the limit of 1000 simulated nodes"),
        "{message}"
    );
    assert_eq!(
        invalid_field(parse("world: {zones: 5000}\n")).0,
        "world.zones"
    );
    assert_eq!(
        invalid_field(parse("world: {shards: 4000000000}\n")).0,
        "world.shards"
    );
    let steps = "  - reconcile: {maxPasses: 1}\n".repeat(10_001);
    let (field, message) = invalid_field(parse(&format!("steps:\n{steps}")));
    assert_eq!(field, "steps");
    assert!(message.contains("limit of 10000 steps"), "{message}");
    let (field, _) = invalid_field(parse(
        "world: {nodes: 990}\nsteps:\n  - act: {as: user, addNodes: 20}\n",
    ));
    assert_eq!(field, "steps[0].act.addNodes");
    let (field, _) = invalid_field(parse(
        "world: {clients: [{address: \"10.0.0.1:4000\", version: seven}]}\n",
    ));
    assert_eq!(field, "world.clients[0].version");
}

#[test]
fn process_counts_are_bounded() {
    let (field, message) = invalid_field(scenario_with(
        "{version: 7.1.57, processCounts: {storage: 5000}}",
        "",
    ));
    assert_eq!(field, "cluster.spec.processCounts");
    assert!(
        message.contains("above the limit of 1000 simulated process groups"),
        "{message}"
    );
    // Beyond what the operator accepts at all: the validation names the field.
    let (field, message) = invalid_field(scenario_with(
        "{version: 7.1.57, processCounts: {storage: 100000}}",
        "",
    ));
    assert_eq!(field, "cluster.spec.processCounts.storage");
    assert!(message.contains("above 10000"), "{message}");
    // Refused by the operator's own bound on servers per pod, before the simulation's.
    let (field, message) = invalid_field(scenario_with(
        "{version: 7.1.57, storageServersPerPod: 1000}",
        "",
    ));
    assert_eq!(field, "cluster.spec.storageServersPerPod");
    assert!(message.contains("above 16"), "{message}");
    let (field, _) = invalid_field(scenario_with(
        FOUR_STORAGE,
        "steps:\n  - apply: {spec: {processCounts: {log: 2000}}}\n",
    ));
    assert_eq!(field, "steps[0].apply");
}

#[test]
fn the_cluster_is_checked_like_the_operator_will_with_lines() {
    let (field, message) = invalid_field(Scenario::parse(
        "cluster:\n  kind: FoundationDBCluster\n  metadata: {name: sample}\n  spec: {version: 7.1.57}\n",
        "test.yaml",
    ));
    assert_eq!(field, "cluster.apiVersion");
    assert!(
        message.contains("must be apps.foundationdb.org/v1beta2"),
        "{message}"
    );
    let (field, message) = invalid_field(scenario_with(
        "\n    version: 7.1.57\n    processCounts: {storage: many}",
        "",
    ));
    assert_eq!(field, "cluster.spec.processCounts.storage");
    assert!(message.ends_with("at line 8"), "{message}");
    let (field, _) = invalid_field(scenario_with("{version: \"7.0\"}", ""));
    assert_eq!(field, "cluster.spec.version");
}

#[test]
fn duplicate_keys_and_nan_are_yaml_errors_with_lines() {
    for (body, line, needle) in [
        (
            "steps:\n  - advance: 1\n    advance: 2\n",
            9,
            "duplicate key \"advance\"",
        ),
        ("world: {storageGiB: .nan}\n", 7, "not a finite number"),
        ("\nseed: 3\nseed: 4\n", 9, "duplicate key \"seed\""),
    ] {
        match parse(body) {
            Err(ScenarioError::Yaml {
                message, line: got, ..
            }) => {
                assert!(message.contains(needle), "{message}");
                assert_eq!(got, Some(line), "{message}");
            }
            other => panic!("{body}: {other:?}"),
        }
    }
    let error = Scenario::parse(
        &format!(
            "{CLUSTER}  extra: {}1{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        ),
        "test.yaml",
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("deeper than 64 levels"),
        "{error}"
    );
    // A byte order mark is fine.
    Scenario::parse(&format!("\u{feff}name: bom\n{CLUSTER}"), "test.yaml").unwrap();
}

#[test]
fn apply_cannot_change_what_the_cluster_is() {
    for (patch, field) in [
        ("{kind: FoundationDBBackup}", "steps[0].apply.kind"),
        (
            "{apiVersion: apps.foundationdb.org/v1beta1}",
            "steps[0].apply.apiVersion",
        ),
        ("{metadata: {name: other}}", "steps[0].apply.metadata.name"),
        ("{metadata: null}", "steps[0].apply.metadata.name"),
        (
            "{metadata: {namespace: prod}}",
            "steps[0].apply.metadata.namespace",
        ),
    ] {
        let (got, _) = invalid_field(parse(&format!("steps:\n  - apply: {patch}\n")));
        assert_eq!(got, field, "{patch}");
    }
    parse("steps:\n  - apply: {metadata: {namespace: default, labels: {a: b}}}\n").unwrap();
}

#[test]
fn steps_name_only_groups_and_nodes_that_can_exist() {
    let cases = [
        (
            "  - fault: {kind: processMissing, processGroup: storage-99}\n",
            "steps[0].fault.processGroup",
            "to at most 4 here",
        ),
        (
            "  - fault: {kind: ioError, processGroup: storag-1}\n",
            "steps[0].fault.processGroup",
            "not a process group ID",
        ),
        (
            "  - heal: {processGroup: transaction-1}\n",
            "steps[0].heal.processGroup",
            "no transaction process groups",
        ),
        (
            "  - act: {as: operator, kill: [storage-1, log-9]}\n",
            "steps[0].act.kill[1]",
            "log groups",
        ),
        (
            "  - fault: {kind: nodeDown, node: node-99}\n",
            "steps[0].fault.node",
            "node-1..node-6",
        ),
        (
            "  - act: {as: user, drain: node-7}\n",
            "steps[0].act.drain",
            "world.nodes: 6",
        ),
        (
            "  - heal: {node: worker-1}\n",
            "steps[0].heal.node",
            "node-1, node-2",
        ),
        (
            "  - act: {as: user, delete: pod/sample-storage-9}\n",
            "steps[0].act.delete",
            "to at most 4 here",
        ),
        (
            "  - act: {as: user, evict: pod/other-storage-1}\n",
            "steps[0].act.evict",
            "not a pod of the cluster",
        ),
        (
            "  - act: {as: user, delete: pvc/sample-stateless-1-data}\n",
            "steps[0].act.delete",
            "not a pvc",
        ),
    ];
    for (step, field, needle) in cases {
        let (got, message) = invalid_field(scenario_with(
            FOUR_STORAGE,
            &format!("world: {{nodes: 6}}\nsteps:\n{step}"),
        ));
        assert_eq!(got, field, "{step}");
        assert!(message.contains(needle), "{step}: {message}");
    }
}

#[test]
fn group_numbers_grow_with_what_can_make_the_operator_replace_groups() {
    // A replacement takes the next free number: storage-5 exists after a fault.
    scenario_with(
        FOUR_STORAGE,
        "steps:\n  - fault: {kind: podFailed, processGroup: storage-2}\n  - advance: 600\n  - fault: {kind: ioError, processGroup: storage-5}\n",
    )
    .unwrap();
    // More groups after an apply, the prefix of an apply, nodes after addNodes.
    scenario_with(
        FOUR_STORAGE,
        "world: {nodes: 6}\nsteps:\n  - apply: {spec: {processCounts: {storage: 12}, processGroupIDPrefix: dc1}}\n  - act: {as: operator, kill: [dc1-storage-12, storage-1]}\n  - act: {as: user, addNodes: 2}\n  - fault: {kind: nodeDown, node: node-8}\n",
    )
    .unwrap();
    // Groups of a dedicated class and pods spelled with dashes.
    scenario_with(
        FOUR_STORAGE,
        "steps:\n  - fault: {kind: podFailed, processGroup: cluster_controller-1}\n  - act: {as: user, delete: pod/sample-cluster-controller-1}\n",
    )
    .unwrap();
    // Without anything happening first, the peak count is the ceiling.
    let (field, _) = invalid_field(scenario_with(
        FOUR_STORAGE,
        "steps:\n  - reconcile: {}\n  - fault: {kind: podFailed, processGroup: storage-5}\n",
    ));
    assert_eq!(field, "steps[1].fault.processGroup");
}
