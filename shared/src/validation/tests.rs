use super::*;

fn spec(yaml: &str) -> FoundationDBClusterSpec {
    serde_yaml_ng::from_str(yaml).unwrap()
}

fn errors(yaml: &str) -> Vec<String> {
    validate_cluster_spec(&spec(yaml)).all_errors()
}

#[test]
fn a_plain_cluster_is_valid() {
    let report = validate_cluster_spec(&spec("version: 7.1.57"));
    assert_eq!(report, ValidationReport::default());
}

#[test]
fn versions_must_parse_and_be_supported() {
    assert_eq!(errors("{}"), ["spec.version: is required (e.g. 7.1.57)"]);
    assert_eq!(
        errors("version: \"7.0\""),
        [
            "spec.version: \"7.0\" is not a valid FoundationDB version (expected MAJOR.MINOR.PATCH with an optional -rcN, e.g. 7.1.57)"
        ]
    );
    assert_eq!(
        errors("version: 6.3.24"),
        ["spec.version: 6.3.24 is older than the oldest supported version 7.1.0"]
    );
}

#[test]
fn storage_engines_must_exist_in_the_version() {
    assert_eq!(
        errors("version: 7.1.57\ndatabaseConfiguration: {storage_engine: ssd-9}")[0],
        format!(
            "spec.databaseConfiguration.storage_engine: \"ssd-9\" is not a known storage engine (known: {})",
            StorageEngine::known_names()
        )
    );
    assert_eq!(
        errors("version: 7.1.57\ndatabaseConfiguration: {storage_engine: ssd-sharded-rocksdb}"),
        [
            "spec.databaseConfiguration.storage_engine: ssd-sharded-rocksdb needs FoundationDB 7.2.0 or later (spec.version is 7.1.57)"
        ]
    );
    assert_eq!(
        errors(
            "version: 7.2.5\ndatabaseConfiguration: {perpetual_storage_wiggle_engine: ssd-redwood-1}"
        ),
        [
            "spec.databaseConfiguration.perpetual_storage_wiggle_engine: ssd-redwood-1 needs FoundationDB 7.3.0 or later (spec.version is 7.2.5)"
        ]
    );
    assert!(
        errors("version: 7.3.43\ndatabaseConfiguration: {storage_engine: ssd-redwood-1}")
            .is_empty()
    );
}

#[test]
fn reported_engine_values_are_accepted_where_configure_takes_them() {
    // What FoundationDB reports (`toJSON` in fdbclient/DatabaseConfiguration.cpp) and the
    // Go operator's CRD allow, read as `configure` reads it.
    for yaml in [
        r#"{perpetual_storage_wiggle_engine: none}"#,
        r#"{perpetual_storage_wiggle_engine: ""}"#,
        r#"{storage_migration_type: ""}"#,
    ] {
        let errors = errors(&format!("version: 7.1.57\ndatabaseConfiguration: {yaml}"));
        assert!(errors.is_empty(), "{yaml}: {errors:?}");
    }
    assert!(
        errors("version: 7.4.5\ndatabaseConfiguration: {storage_engine: memory-radixtree}")
            .is_empty()
    );
    let field = "spec.databaseConfiguration";
    for (yaml, error) in [
        (
            "{storage_engine: custom}",
            format!(
                "{field}.storage_engine: \"custom\" is what FoundationDB reports for an engine it cannot name; configure takes an engine name"
            ),
        ),
        (
            "{perpetual_storage_wiggle_engine: unknown}",
            format!(
                "{field}.perpetual_storage_wiggle_engine: \"unknown\" is what FoundationDB reports for an engine it cannot name; configure takes an engine name"
            ),
        ),
        (
            "{storage_engine: none}",
            format!(
                "{field}.storage_engine: \"none\" is not a storage engine (it is a perpetual_storage_wiggle_engine value)"
            ),
        ),
        (
            r#"{storage_engine: ""}"#,
            format!(
                "{field}.storage_engine: \"\" is empty: leave the field out for the default (ssd-2)"
            ),
        ),
        (
            "{storage_engine: ssd-rocksdb-experimental}",
            format!(
                "{field}.storage_engine: \"ssd-rocksdb-experimental\" is the pre-7.1 name no supported FoundationDB takes: use ssd-rocksdb-v1"
            ),
        ),
        (
            "{storage_engine: memory-radixtree}",
            format!(
                "{field}.storage_engine: memory-radixtree needs FoundationDB 7.4.0 or later (memory-radixtree-beta before) (spec.version is 7.1.57)"
            ),
        ),
    ] {
        assert_eq!(
            errors(&format!("version: 7.1.57\ndatabaseConfiguration: {yaml}")),
            [error],
            "{yaml}"
        );
    }
    assert_eq!(
        errors(
            "version: 7.4.5\ndatabaseConfiguration: {storage_engine: ssd-redwood-1-experimental}"
        ),
        [
            "spec.databaseConfiguration.storage_engine: ssd-redwood-1-experimental is not a name FoundationDB 7.4 and later take: use ssd-redwood-1 (spec.version is 7.4.5)"
        ]
    );
}

#[test]
fn counts_below_minus_one_are_rejected() {
    assert_eq!(
        errors("version: 7.1.57\nprocessCounts: {storage: -2, log: -1, stateless: 0}"),
        ["spec.processCounts.storage: -2 is not allowed (use -1 for none, 0 for the default)"]
    );
    assert_eq!(
        errors("version: 7.1.57\ndatabaseConfiguration: {logs: -3}"),
        ["spec.databaseConfiguration.logs: -3 is not allowed (use -1 for none, 0 for the default)"]
    );
    assert_eq!(
        errors(
            "version: 7.1.57\ndatabaseConfiguration: {redundancy_mode: triple}\nprocessCounts: {storage: 2}"
        ),
        [
            "spec.processCounts.storage: 2 storage processes cannot hold triple redundancy (it needs at least 3)"
        ]
    );
}

#[test]
fn coordinators_only_from_stateful_classes() {
    assert_eq!(
        errors(
            "version: 7.1.57\ncoordinatorSelection: [{processClass: log, priority: 1}, {processClass: stateless, priority: 0}]"
        ),
        [
            "spec.coordinatorSelection[1].processClass: stateless processes cannot be coordinators (use storage, log, transaction or coordinator)"
        ]
    );
}

#[test]
fn process_settings_keys_and_custom_parameters() {
    assert_eq!(
        errors(
            "version: 7.1.57\nprocesses: {general: {customParameters: [knob_a=1, knob_a=2]}, storage: {customParameters: [datadir=/x]}, blob: {}}"
        ),
        [
            "spec.processes.blob: \"blob\" is neither \"general\" nor a process class",
            "spec.processes.general.customParameters[1]: \"knob_a\" is set more than once",
            "spec.processes.storage.customParameters[0]: \"datadir\" is managed by the operator and cannot be set as a custom parameter",
        ]
    );
}

#[test]
fn unknown_enum_values_are_errors_and_unified_is_accepted() {
    let report = validate_cluster_spec(&spec(
        "version: 7.1.57\nimageType: unified\nautomationOptions: {deletionMode: Everything}\nrouting: {publicIPSource: node}",
    ));
    assert_eq!(
        report.errors,
        [
            "spec.automationOptions.deletionMode: \"Everything\" is not one of Zone, ProcessGroup, All, None",
            "spec.routing.publicIPSource: \"node\" is not one of pod, service",
        ]
    );
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

#[test]
fn validated_cluster_only_from_valid_specs() {
    let mut cluster = FoundationDBCluster::new("sample", spec("version: 7.1.57"));
    let validated = ValidatedCluster::new(cluster.clone()).unwrap();
    assert_eq!(validated.version().to_string(), "7.1.57");
    cluster.spec.version = "7.0".to_owned();
    let error = ValidatedCluster::new(cluster).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("invalid FoundationDBCluster sample: spec.version")
    );
}

#[test]
fn backup_and_restore_checks() {
    let backup: FoundationDBBackupSpec = serde_yaml_ng::from_str(
        "clusterName: sample\ncustomParameters: [knob_a=1, knob_a=2]\nbackupState: Gone",
    )
    .unwrap();
    assert_eq!(
        validate_backup_spec(&backup).errors,
        [
            "spec.backupState: \"Gone\" is not one of Running, Stopped, Paused",
            "spec.customParameters[1]: \"knob_a\" is set more than once",
        ]
    );
    // A tool option (not a knob) is refused: it would become an argument of backup_agent.
    let tool_option: FoundationDBBackupSpec =
        serde_yaml_ng::from_str("clusterName: sample\ncustomParameters: [dest-cluster-file=/x]")
            .unwrap();
    let errors = validate_backup_spec(&tool_option).errors;
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("which is not a knob"), "{errors:?}");
    assert_eq!(
        validate_restore_spec(&FoundationDBRestoreSpec::default()).errors,
        ["spec.destinationClusterName: is required"]
    );
}

#[test]
fn a_cluster_without_storage_is_an_error_unless_another_cluster_holds_it() {
    let standalone = validate_cluster_spec(&spec("version: 7.1.57\nprocessCounts: {storage: -1}"));
    assert_eq!(standalone.errors.len(), 1, "{standalone:?}");
    assert!(
        standalone.errors[0].starts_with(
            "spec.processCounts.storage: -1 leaves the cluster without storage processes"
        ),
        "{standalone:?}"
    );
    let satellite = validate_cluster_spec(&spec(
        "version: 7.1.57\ndataCenter: dc2\nprocessCounts: {storage: -1, log: 3}",
    ));
    assert!(satellite.errors.is_empty(), "{satellite:?}");
    assert!(
        satellite.warnings[0].starts_with("spec.processCounts.storage: -1 runs no storage"),
        "{satellite:?}"
    );
}

#[test]
fn counts_are_bounded_so_derived_counts_cannot_overflow() {
    let huge = spec(
        "version: 7.1.57\nprocessCounts: {log: 2147483647}\ndatabaseConfiguration: {logs: 2147483647}",
    );
    assert!(!counts_within_limits(&huge));
    assert_eq!(
        validate_cluster_spec(&huge).errors,
        [
            "spec.databaseConfiguration.logs: 2147483647 is above 10000, the most this operator accepts (the largest FoundationDB clusters run a few thousand processes)",
            "spec.processCounts.log: 2147483647 is above 10000, the most this operator accepts (the largest FoundationDB clusters run a few thousand processes)",
        ]
    );
    assert!(counts_within_limits(&spec(
        "version: 7.1.57\nprocessCounts: {storage: 10000}"
    )));
}

#[test]
fn max_fault_domains_with_tainted_process_groups_is_a_count_or_a_percentage() {
    let field = "version: 7.1.57\nautomationOptions: {replacements: {maxFaultDomainsWithTaintedProcessGroups: ";
    assert!(errors(&format!("{field}2}}}}")).is_empty());
    assert!(errors(&format!("{field}\"25%\"}}}}")).is_empty());
    assert_eq!(
        errors(&format!("{field}\"two\"}}}}")),
        [
            "spec.automationOptions.replacements.maxFaultDomainsWithTaintedProcessGroups: \"two\" is neither a number nor a percentage such as \"10%\""
        ]
    );
    assert_eq!(
        errors(&format!("{field}-1}}}}")),
        [
            "spec.automationOptions.replacements.maxFaultDomainsWithTaintedProcessGroups: -1 is negative"
        ]
    );
}

/// An invalid field only automatic replacements read stops them alone: the cluster is
/// still valid (every other step goes on) and the error names the field.
#[test]
fn an_invalid_replacement_field_stops_only_replacements() {
    let yaml =
        "version: 7.1.57\nautomationOptions: {replacements: {maxConcurrentReplacements: -1}}";
    let report = validate_cluster_spec(&spec(yaml));
    assert!(report.is_valid(), "{report:?}");
    assert_eq!(
        report.scoped,
        [(
            ScopedWork::AutomaticReplacements,
            "spec.automationOptions.replacements.maxConcurrentReplacements: -1 is outside 0..=10000".to_owned()
        )]
    );
    let mut cluster: FoundationDBCluster =
        serde_yaml_ng::from_str("metadata: {name: sample}\nspec: {version: 7.1.57}").unwrap();
    cluster.spec = spec(yaml);
    let validated = ValidatedCluster::new(cluster).unwrap();
    assert_eq!(validated.scoped_errors().len(), 1);
    let broken =
        "version: nope\nautomationOptions: {replacements: {maxConcurrentReplacements: -1}}";
    assert!(!validate_cluster_spec(&spec(broken)).is_valid());
}
