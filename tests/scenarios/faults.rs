//! The operator under faults: it reports them and converges once they are gone.

use fdb_e2e_tests::{conditions_of, run, scenario};

const DOUBLE: &str = "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}}";

#[test]
fn creation_converges_despite_api_conflicts_and_admin_timeouts() {
    let result = run(
        &scenario(
            DOUBLE,
            "  - fault: {kind: apiConflicts, rate: 0.3}\n  - fault: {kind: fdbcliTimeouts, rate: 0.3}\n  - reconcile: {}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let step = &result.steps[2];
    assert_eq!(step.reconciled, Some(true), "{:?}", step.stopped_because);
    assert_eq!(step.fdb["available"], true);
    assert_eq!(step.pods.len(), 17);
    let conflicts = result
        .events
        .iter()
        .filter(|event| event.detail.contains("injected conflict"))
        .count();
    assert!(conflicts > 0, "the fault was active");
}

#[test]
fn a_missing_process_is_reported_and_the_cluster_recovers_when_it_returns() {
    let result = run(
        &scenario(
            DOUBLE,
            "  - reconcile: {}\n  - fault: {kind: processMissing, processGroup: storage-2}\n  - advance: 120\n  - reconcile: {maxPasses: 3}\n  - heal: {processGroup: storage-2}\n  - reconcile: {}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let during = &result.steps[3];
    assert_eq!(
        during.reconciled,
        Some(false),
        "a missing process is not Reconciled"
    );
    assert!(
        conditions_of(during, "storage-2").contains(&"MissingProcesses".to_owned()),
        "{:?}",
        conditions_of(during, "storage-2")
    );
    let after = &result.steps[5];
    assert_eq!(after.reconciled, Some(true), "{:?}", after.stopped_because);
    assert!(conditions_of(after, "storage-2").is_empty());
}

#[test]
fn a_conf_change_the_processes_have_not_picked_up_is_not_reconciled() {
    // fdbmonitor does not restart processes when their conf changes; until they are
    // bounced they run the old command line, and the cluster must not claim Reconciled.
    // With bounces turned off the processes keep the old command line for good.
    let result = run(
        &scenario(
            "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}, automationOptions: {killProcesses: false}}",
            "  - reconcile: {}\n  - apply: {spec: {processes: {general: {customParameters: [\"knob_disable_posix_kernel_aio=1\"]}}}}\n  - reconcile: {maxPasses: 30}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let after = &result.steps[2];
    assert_eq!(after.reconciled, Some(false), "{:?}", after.stopped_because);
    let conditions = conditions_of(after, "storage-1");
    assert!(
        conditions.contains(&"IncorrectCommandLine".to_owned()),
        "{conditions:?}"
    );
    assert!(
        !conditions.contains(&"IncorrectConfigMap".to_owned()),
        "the new conf was delivered: {conditions:?}"
    );
    // The processes still run the old command line; the sidecar has the new conf.
    let process = after.fdb["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["locality"]["instance_id"] == "storage-1")
        .unwrap();
    assert!(
        !process["commandLine"]
            .as_str()
            .unwrap()
            .contains("knob_disable_posix_kernel_aio")
    );
}
