//! Storage engines as FoundationDB names and changes them (issue 36, item 6): a Redwood
//! cluster configured in 7.1's naming upgrades to 7.3 (which reports Redwood as
//! `ssd-redwood-1`) without a reconfigure loop; an engine change either carries the
//! storage migration type FoundationDB needs or is refused, naming the field, before
//! any `configure` fails.

use fdb_e2e_tests::{run, scenario};
use fdb_simulation::result::{EventSource, SimulationResult};

const COUNTS: &str =
    "processCounts: {storage: 4, cluster_controller: 1}, minimumUptimeSecondsForBounce: 60";

/// The `configure` commands sent to the database, with their outcome.
fn configures(result: &SimulationResult) -> Vec<&str> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == "configure")
        .map(|e| e.detail.as_str())
        .collect()
}

fn failed(configures: &[&str]) -> usize {
    configures.iter().filter(|c| c.contains(" -> ")).count()
}

fn operator_events<'a>(result: &'a SimulationResult, reason: &str) -> Vec<&'a str> {
    result
        .events
        .iter()
        .filter(|e| e.action == "event" && e.detail.starts_with(reason))
        .map(|e| e.detail.as_str())
        .collect()
}

fn live_engine(result: &SimulationResult, step: usize) -> String {
    result.steps[step].cluster["status"]["databaseConfiguration"]["storage_engine"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_redwood_cluster_upgrades_from_7_1_to_7_3_without_a_reconfigure_loop() {
    let spec = format!(
        "{{version: 7.1.57, databaseConfiguration: {{storage_engine: ssd-redwood-1-experimental}}, {COUNTS}}}"
    );
    let steps = "  - reconcile: {}\n  - apply: {spec: {version: 7.3.43}}\n  - expect: {within: 7200, reconciled: true, available: true, runningVersion: \"7.3.43\"}\n  - advance: 1800\n  - expect: {reconciled: true, available: true}\n";
    let result = run(&scenario(&spec, steps), None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    assert_eq!(live_engine(&result, 0), "ssd-redwood-1-experimental");
    // 7.3 names the same engine ssd-redwood-1: the same engine, nothing to configure.
    assert_eq!(
        live_engine(&result, result.steps.len() - 1),
        "ssd-redwood-1"
    );
    let configures = configures(&result);
    assert_eq!(configures.len(), 1, "only `configure new`: {configures:#?}");
    assert!(configures[0].starts_with("configure new"), "{configures:?}");
}

#[test]
fn an_engine_change_without_a_migration_type_is_refused_naming_the_field() {
    let spec = format!("{{version: 7.3.43, {COUNTS}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {databaseConfiguration: {storage_engine: ssd-redwood-1}}}\n  - advance: 900\n";
    let result = run(&scenario(&spec, steps), None);
    let configures = configures(&result);
    assert!(failed(&configures) <= 1, "{configures:#?}");
    assert_eq!(configures.len(), 1, "only `configure new`: {configures:#?}");
    let refused = operator_events(&result, "InvalidSpec");
    assert!(
        refused
            .iter()
            .any(|e| e.contains("spec.databaseConfiguration.storage_migration_type")),
        "{refused:#?}"
    );
    assert_eq!(live_engine(&result, result.steps.len() - 1), "ssd-2");
    let last = result.steps.last().unwrap();
    assert_ne!(last.reconciled, Some(true), "the spec is not met");
}

#[test]
fn an_engine_change_with_a_migration_type_completes_in_one_configure() {
    let spec = format!("{{version: 7.3.43, {COUNTS}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {databaseConfiguration: {storage_engine: ssd-redwood-1, storage_migration_type: aggressive}}}\n  - expect: {within: 3600, reconciled: true, available: true}\n";
    let result = run(&scenario(&spec, steps), None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    let configures = configures(&result);
    assert_eq!(failed(&configures), 0, "{configures:#?}");
    assert_eq!(configures.len(), 2, "{configures:#?}");
    assert!(
        configures[1].contains("ssd-redwood-1")
            && configures[1].contains("storage_migration_type=aggressive"),
        "{}",
        configures[1]
    );
    assert_eq!(
        live_engine(&result, result.steps.len() - 1),
        "ssd-redwood-1"
    );
}
