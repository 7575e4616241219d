//! The operator keeps no state of its own: restarting it mid-creation converges.

use fdb_e2e_tests::{fdb_str, groups_per_class, run, scenario};

#[test]
fn restarting_the_operator_mid_creation_converges_to_the_same_cluster() {
    let spec = "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}}";
    let straight = run(&scenario(spec, "  - reconcile: {}\n"), None);
    let restarted = run(
        &scenario(
            spec,
            "  - reconcile: {maxPasses: 3}\n  - restartOperator: {}\n  - reconcile: {}\n",
        ),
        None,
    );
    assert!(
        restarted.violations.is_empty(),
        "{:?}",
        restarted.violations
    );
    let early = &restarted.steps[0];
    assert_eq!(
        early.reconciled,
        Some(false),
        "3 passes are not enough to finish"
    );
    let done = &restarted.steps[2];
    assert_eq!(done.reconciled, Some(true), "{:?}", done.stopped_because);

    let reference = &straight.steps[0];
    assert_eq!(groups_per_class(done), groups_per_class(reference));
    assert_eq!(done.pods.len(), reference.pods.len());
    assert_eq!(done.pvcs.len(), reference.pvcs.len());
    assert_eq!(done.fdb["available"], true);
    assert_eq!(done.fdb["configured"], true);
    assert_eq!(
        done.fdb["processes"].as_array().map(Vec::len),
        Some(done.pods.len())
    );
    assert!(!fdb_str(done, "connectionString").is_empty());
}
