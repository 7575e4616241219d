//! Regressions of the release sweep's failing seeds (issue 26), one cheap scenario per
//! class of failure, cut down from the dumped seed; each file name starts with the seed
//! it came from.

use fdb_e2e_tests::run_file;
use fdb_simulation::result::EventSource;

/// Seed 18 (`mixed-version-bounce`, then never Reconciled): an upgrade staged while a
/// single-redundancy database is unavailable. The replacement pod created meanwhile
/// starts on the running version (its sidecar moves to the target once it runs), and
/// once the missing process is back on the staged binary, the one cluster-wide kill
/// goes ahead although the database is unavailable: only the kill brings it back.
#[test]
fn an_upgrade_staged_while_the_database_is_unavailable_finishes_with_one_kill() {
    let result = run_file("sweep/18-upgrade-while-unavailable.yaml", None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    let kills: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == "kill")
        .map(|e| e.detail.as_str())
        .collect();
    assert_eq!(kills.len(), 1, "one cluster-wide kill: {kills:?}");
    // The replacement (storage-4) was created during the upgrade.
    assert!(
        result
            .events
            .iter()
            .any(|e| e.action == "create" && e.target == "pod/sample-storage-4"),
        "the scenario must replace storage-3 during the upgrade"
    );
}
