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

/// Seed 75 (`unavailable-by-operator`, wrongly): a single-redundancy storage pod fails
/// and the operator deletes the Failed pod in the same second. The fault stopped the
/// process; the deletion stopped nothing, so the outage is not the operator's. The
/// operator did delete the pod then (the scenario shows the case it must).
#[test]
fn deleting_a_pod_the_fault_already_stopped_is_not_blamed_for_its_outage() {
    let result = run_file("sweep/75-failed-pod-deleted-at-the-fault.yaml", None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    assert!(
        result
            .events
            .iter()
            .any(|e| e.source == EventSource::K8s
                && e.action == "delete"
                && e.target == "pod/sample-storage-2"),
        "the operator must delete the failed pod"
    );
}
