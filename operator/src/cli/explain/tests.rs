use super::*;
use fdb_shared::yaml_input::ReadError;

fn explain(yaml: &str) -> Explanation {
    explain_manifest(Path::new("test.yaml"), yaml).unwrap()
}

fn cluster(spec: &str) -> String {
    format!(
        "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata:\n  name: sample\nspec:\n  version: 7.1.57\n{spec}"
    )
}

fn counts(explanation: &Explanation) -> Vec<(String, i32)> {
    explanation
        .process_counts
        .as_ref()
        .unwrap()
        .iter()
        .map(|(class, count)| (class.to_string(), *count))
        .collect()
}

struct Case {
    name: &'static str,
    spec: &'static str,
    fault_tolerance: i32,
    counts: &'static [(&'static str, i32)],
    coordinators: i32,
    configure: &'static str,
}

#[test]
fn counts_coordinators_and_configure_command_per_redundancy_mode() {
    let cases = [
        Case {
            name: "single",
            spec: "  databaseConfiguration: {redundancy_mode: single}\n",
            fault_tolerance: 0,
            counts: &[("storage", 1), ("log", 3), ("stateless", 8)],
            coordinators: 1,
            configure: "configure new single ssd-2 logs=3 proxies=3 resolvers=1 usable_regions=1",
        },
        Case {
            name: "double (default)",
            spec: "",
            fault_tolerance: 1,
            counts: &[("storage", 3), ("log", 4), ("stateless", 9)],
            coordinators: 3,
            configure: "configure new double ssd-2 logs=3 proxies=3 resolvers=1 usable_regions=1",
        },
        Case {
            name: "triple",
            spec: "  databaseConfiguration: {redundancy_mode: triple, storage_engine: ssd-redwood-1-experimental}\n",
            fault_tolerance: 2,
            counts: &[("storage", 5), ("log", 5), ("stateless", 10)],
            coordinators: 5,
            configure: "configure new triple ssd-redwood-1-experimental logs=3 proxies=3 resolvers=1 usable_regions=1",
        },
        Case {
            name: "three_data_hall",
            spec: "  databaseConfiguration: {redundancy_mode: three_data_hall}\n",
            fault_tolerance: 2,
            counts: &[("storage", 5), ("log", 6), ("stateless", 10)],
            coordinators: 9,
            configure: "configure new three_data_hall ssd-2 logs=4 proxies=3 resolvers=1 usable_regions=1",
        },
        Case {
            name: "double with explicit storage and cluster controller",
            spec: "  processCounts: {storage: 4, cluster_controller: 1}\n",
            fault_tolerance: 1,
            counts: &[
                ("storage", 4),
                ("log", 4),
                ("stateless", 8),
                ("cluster_controller", 1),
            ],
            coordinators: 3,
            configure: "configure new double ssd-2 logs=3 proxies=3 resolvers=1 usable_regions=1",
        },
        Case {
            name: "single with explicit counts",
            spec: "  databaseConfiguration: {redundancy_mode: single, logs: 2}\n  processCounts: {storage: 2, log: 2, stateless: 3}\n",
            fault_tolerance: 0,
            counts: &[("storage", 2), ("log", 2), ("stateless", 3)],
            coordinators: 1,
            configure: "configure new single ssd-2 logs=2 proxies=3 resolvers=1 usable_regions=1",
        },
        Case {
            name: "triple with explicit roles and dedicated proxies",
            spec: "  databaseConfiguration: {redundancy_mode: triple, logs: 6, commit_proxies: 4, grv_proxies: 2, resolvers: 2}\n  processCounts: {storage: 8, commit_proxy: 4, grv_proxy: 2}\n",
            fault_tolerance: 2,
            // 1 master + 1 cc + 2 resolvers + 1 rk + 1 dd + F(2); proxies have their classes.
            counts: &[
                ("storage", 8),
                ("log", 8),
                ("stateless", 8),
                ("commit_proxy", 4),
                ("grv_proxy", 2),
            ],
            coordinators: 5,
            configure: "configure new triple ssd-2 logs=6 commit_proxies=4 grv_proxies=2 resolvers=2 usable_regions=1",
        },
        Case {
            name: "three_data_hall with explicit counts",
            spec: "  databaseConfiguration: {redundancy_mode: three_data_hall}\n  processCounts: {storage: 9, log: 9, stateless: -1, transaction: 3}\n",
            fault_tolerance: 2,
            counts: &[("storage", 9), ("log", 9), ("transaction", 3)],
            coordinators: 9,
            configure: "configure new three_data_hall ssd-2 logs=4 proxies=3 resolvers=1 usable_regions=1",
        },
    ];
    for case in cases {
        let explanation = explain(&cluster(case.spec));
        assert!(explanation.valid, "{}: {:?}", case.name, explanation.errors);
        assert_eq!(
            explanation.fault_tolerance,
            Some(case.fault_tolerance),
            "{}",
            case.name
        );
        let expected: Vec<(String, i32)> = case
            .counts
            .iter()
            .map(|(c, n)| ((*c).to_owned(), *n))
            .collect();
        assert_eq!(counts(&explanation), expected, "{}", case.name);
        assert_eq!(
            explanation.coordinators,
            Some(case.coordinators),
            "{}",
            case.name
        );
        assert_eq!(
            explanation.configure_command.as_deref(),
            Some(case.configure),
            "{}",
            case.name
        );
    }
}

#[test]
fn output_matches_the_documented_shape() {
    let explanation = explain(&cluster(
        "  processCounts: {storage: 4, cluster_controller: 1}\n",
    ));
    let json = serde_json::to_string(&explanation).unwrap();
    let expected = concat!(
        r#"{"valid":true,"errors":[],"warnings":[],"version":"7.1.57","faultTolerance":1,"#,
        r#""processCounts":{"storage":4,"log":4,"stateless":8,"cluster_controller":1},"coordinators":3,"#,
        r#""databaseConfiguration":{"redundancy_mode":"double","storage_engine":"ssd-2","logs":3,"proxies":3,"resolvers":1,"usable_regions":1},"#,
        r#""images":{"main":"foundationdb/foundationdb:7.1.57","sidecar":"foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1"},"#,
        r#""podModel":{"imageType":"split","imageTypeSource":"imageType unset: this operator's default, split (a running cluster whose pods all run unified stays unified)","containers":["init:foundationdb-kubernetes-init: the sidecar in --init-mode (copies the cluster file and monitor conf)","foundationdb: fdbmonitor","foundationdb-kubernetes-sidecar: the HTTP sidecar (the operator's agent in the pod)"]},"#,
        r#""locks":false,"configureCommand":"configure new double ssd-2 logs=3 proxies=3 resolvers=1 usable_regions=1"}"#
    );
    assert_eq!(json, expected);
}

#[test]
fn invalid_manifests_name_the_field_and_unknown_fields_warn() {
    let explanation = explain(
        "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata: {name: x}\nspec:\n  version: \"7.0\"\n  fooBar: 1\n  processCounts: {storage: -2}\n",
    );
    assert!(!explanation.valid);
    assert_eq!(
        explanation.errors,
        [
            "spec.version: \"7.0\" is not a valid FoundationDB version (expected MAJOR.MINOR.PATCH with an optional -rcN, e.g. 7.1.57)",
            "spec.processCounts.storage: -2 is not allowed (use -1 for none, 0 for the default)",
        ]
    );
    assert_eq!(
        explanation.warnings,
        ["unknown field spec.fooBar: ignored by this operator"]
    );
    assert_eq!(explanation.exit_code(), ExitCode::from(1));

    let wrong_type = explain(
        "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nspec: {version: 7.1.57, processCounts: {log: lots}}\n",
    );
    assert!(!wrong_type.valid);
    assert!(
        wrong_type.errors[0].starts_with("spec.processCounts.log: invalid type"),
        "{:?}",
        wrong_type.errors
    );
    assert_eq!(wrong_type.process_counts, None);

    let old_api = explain(
        "apiVersion: apps.foundationdb.org/v1beta1\nkind: FoundationDBCluster\nspec: {version: 7.1.57}\n",
    );
    assert_eq!(
        old_api.errors,
        [
            "apiVersion: \"apps.foundationdb.org/v1beta1\" is not served by this operator (expected apps.foundationdb.org/v1beta2)"
        ]
    );
}

#[test]
fn unreadable_inputs() {
    let path = Path::new("x.yaml");
    assert!(matches!(
        explain_manifest(path, "a: [unclosed"),
        Err(UnreadableManifest::NotYaml { .. })
    ));
    let error = explain_manifest(path, "apiVersion: v1\nkind: ConfigMap\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        "x.yaml holds no FoundationDBCluster (found kinds: ConfigMap)"
    );
    assert!(matches!(
        explain_file(Path::new("/nonexistent/cluster.yaml")),
        Err(UnreadableManifest::Read(ReadError::Io { .. }))
    ));
}

#[test]
fn picks_the_cluster_out_of_a_multi_document_file_and_uses_image_configs() {
    let text = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: fdb}}\n---\n{}",
        cluster(
            "  mainContainer:\n    imageConfigs: [{baseImage: my.registry/fdb, tag: custom}]\n  databaseConfiguration: {usable_regions: 2}\n"
        )
    );
    let explanation = explain(&text);
    assert!(explanation.valid, "{:?}", explanation.errors);
    assert_eq!(
        explanation.images.as_ref().unwrap().main,
        "my.registry/fdb:custom"
    );
    assert_eq!(explanation.coordinators, Some(9));
    assert_eq!(explanation.locks, Some(true));
}

#[test]
fn a_byte_order_mark_is_ignored() {
    let explanation = explain(&format!("\u{feff}{}", cluster("")));
    assert!(explanation.valid, "{:?}", explanation.errors);
    let two_documents = format!(
        "\u{feff}apiVersion: v1\nkind: Namespace\nmetadata: {{name: fdb}}\n---\n{}",
        cluster("")
    );
    assert!(explain(&two_documents).valid);
}

#[test]
fn nan_and_infinity_are_errors_naming_the_field_and_line() {
    for (value, shown) in [(".nan", "NaN"), (".inf", "inf"), ("-.Inf", "-inf")] {
        let explanation = explain(&cluster(&format!(
            "  processCounts:\n    storage: {value}\n"
        )));
        assert!(!explanation.valid, "{value}");
        assert_eq!(explanation.errors.len(), 1, "{:?}", explanation.errors);
        let error = &explanation.errors[0];
        assert!(
            error.starts_with(&format!(
                "spec.processCounts.storage: {shown} is not a finite number"
            )),
            "{error}"
        );
        assert!(error.contains("line 8"), "{error}");
        assert_eq!(explanation.process_counts, None);
        assert_eq!(explanation.exit_code(), ExitCode::from(1));
    }
}

#[test]
fn duplicate_keys_are_errors_naming_the_key_and_line() {
    let explanation = explain(&cluster(
        "  processCounts:\n    storage: 5\n    log: 4\n    storage: 3\n",
    ));
    assert!(!explanation.valid);
    let error = &explanation.errors[0];
    assert!(error.contains("duplicate key \"storage\""), "{error}");
    assert!(error.starts_with("spec.processCounts"), "{error}");
    assert!(error.contains("line 10"), "{error}");
    let top_level = explain(&format!("{}kind: FoundationDBCluster\n", cluster("")));
    assert!(
        top_level.errors[0].contains("duplicate key \"kind\""),
        "{:?}",
        top_level.errors
    );
}

#[test]
fn type_errors_name_the_line() {
    let explanation = explain(&cluster(
        "  processCounts:\n    storage: 3\n    log: lots\n",
    ));
    assert_eq!(
        explanation.errors,
        ["spec.processCounts.log: invalid type: string \"lots\", expected i32 at line 9"]
    );
    // In the second document of a file, the line counts from the top of the file.
    let text = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: fdb}}\n---\n{}",
        cluster("  coordinatorSelection:\n  - {processClass: log, priority: high}\n")
    );
    let explanation = explain(&text);
    assert!(
        explanation.errors[0].starts_with("spec.coordinatorSelection[0].priority: invalid type"),
        "{:?}",
        explanation.errors
    );
    assert!(
        explanation.errors[0].ends_with("at line 12"),
        "{:?}",
        explanation.errors
    );
}

#[test]
fn a_standalone_cluster_without_storage_is_an_error() {
    let explanation = explain(&cluster("  processCounts: {storage: -1}\n"));
    assert!(!explanation.valid);
    assert!(
        explanation.errors[0].contains("never reconciles"),
        "{:?}",
        explanation.errors
    );
    let satellite = explain(&cluster(
        "  dataCenter: dc3\n  processCounts: {storage: -1, log: 3}\n",
    ));
    assert!(satellite.valid, "{:?}", satellite.errors);
    assert!(satellite.warnings[0].contains("no storage processes"));
}

#[test]
fn huge_counts_are_errors_not_overflows() {
    let explanation = explain(&cluster(
        "  databaseConfiguration: {logs: 2147483647}\n  processCounts: {stateless: 2147483647}\n",
    ));
    assert!(!explanation.valid);
    assert_eq!(explanation.errors.len(), 2, "{:?}", explanation.errors);
    assert_eq!(explanation.process_counts, None);
}

#[test]
fn deep_nesting_and_huge_files_are_unreadable_quickly() {
    let started = std::time::Instant::now();
    let deep = format!(
        "{}spec:\n  x: {}{}\n",
        cluster(""),
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let error = explain_manifest(Path::new("deep.yaml"), &deep).unwrap_err();
    let message = fdb_shared::error_chain::chain_text(&error);
    assert!(
        message.starts_with("deep.yaml is not readable YAML: ")
            && message.contains("deeper than 64 levels"),
        "{message}"
    );
    let json = format!("{}{}", "{\"a\": ".repeat(100_000), "}".repeat(100_000));
    assert!(matches!(
        explain_manifest(Path::new("deep.json"), &json),
        Err(UnreadableManifest::NotYaml { .. })
    ));
    assert!(started.elapsed() < std::time::Duration::from_secs(5));

    let dir = std::env::temp_dir().join(format!("explain-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.yaml");
    std::fs::write(
        &big,
        format!("{}# {}\n", cluster(""), "x".repeat(5 * 1024 * 1024)),
    )
    .unwrap();
    let error = explain_file(&big).unwrap_err();
    let message = fdb_shared::error_chain::chain_text(&error);
    assert!(
        message.starts_with("cannot read ") && message.contains("4 MiB"),
        "{message}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unified_manifests_show_the_monitor_pod_model() {
    let explanation = explain(&cluster("  imageType: unified\n"));
    assert!(
        explanation.warnings.is_empty(),
        "{:?}",
        explanation.warnings
    );
    let model = explanation.pod_model.unwrap();
    assert_eq!(model.image_type, "unified");
    assert_eq!(model.containers.len(), 2);
    assert!(model.containers[0].starts_with("foundationdb: fdb-kubernetes-monitor"));
    assert_eq!(
        explanation.images.unwrap().main,
        "foundationdb/fdb-kubernetes-monitor:7.1.57"
    );
}

#[test]
fn three_data_hall_shows_where_the_halls_come_from() {
    let explanation = explain(&cluster(concat!(
        "  imageType: unified\n",
        "  databaseConfiguration: {redundancy_mode: three_data_hall}\n",
        "  processCounts: {stateless: -1}\n",
        "  processes:\n",
        "    general: {customParameters: [\"locality_data_hall=$NODE_LABEL_TOPOLOGY_KUBERNETES_IO_ZONE\"]}\n",
    )));
    assert!(explanation.valid, "{:?}", explanation.errors);
    let halls = explanation.data_halls.unwrap();
    assert_eq!(halls.halls_needed, Some(3));
    assert_eq!(halls.coordinators_per_hall, Some(3));
    assert_eq!(
        halls
            .locality
            .get(&ProcessClass::Storage)
            .cloned()
            .flatten()
            .as_deref(),
        Some("customParameters: locality_data_hall=$NODE_LABEL_TOPOLOGY_KUBERNETES_IO_ZONE")
    );
    assert!(
        explanation.warnings.is_empty(),
        "{:?}",
        explanation.warnings
    );
    // Without a source of halls: a warning that says the operator will wait.
    let bare = explain(&cluster(
        "  databaseConfiguration: {redundancy_mode: three_data_hall}\n",
    ));
    assert!(
        bare.warnings
            .iter()
            .any(|w| w.contains("get no data_hall locality")),
        "{:?}",
        bare.warnings
    );
    // spec.dataHall, for a split-image cluster in one hall of a multi-cluster database.
    let one = explain(&cluster("  dataHall: az1\n"));
    let halls = one.data_halls.unwrap();
    assert_eq!(halls.halls_needed, None);
    assert_eq!(
        halls
            .locality
            .get(&ProcessClass::Log)
            .cloned()
            .flatten()
            .as_deref(),
        Some("spec.dataHall: az1")
    );
}

#[test]
fn an_unset_image_type_keeps_what_a_running_cluster_runs() {
    // A cluster the Go operator v2 made: imageType unset (its default is unified), every
    // pod unified.
    let go = format!("{}status:\n  imageTypes: [unified]\n", cluster(""));
    let model = explain(&go).pod_model.unwrap();
    assert_eq!(model.image_type, "unified");
    assert!(
        model.image_type_source.contains("status.imageTypes"),
        "{model:?}"
    );
    // A migration under way (both models) or a new cluster: this operator's default.
    let mixed = format!("{}status:\n  imageTypes: [split, unified]\n", cluster(""));
    assert_eq!(explain(&mixed).pod_model.unwrap().image_type, "split");
    // Set in the spec, the spec decides.
    let set = format!(
        "{}status:\n  imageTypes: [unified]\n",
        cluster("  imageType: split\n")
    );
    let model = explain(&set).pod_model.unwrap();
    assert_eq!(model.image_type, "split");
    assert_eq!(model.image_type_source, "spec.imageType");
}
