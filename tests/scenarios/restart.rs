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

#[test]
fn a_crash_right_after_configure_new_still_converges_and_nothing_after_it_reaches_the_world() {
    let spec = "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}}";
    let result = run(
        &scenario(
            spec,
            "  - restartOperator: {after: configure}\n  - reconcile: {}\n  - expect: {reconciled: true, available: true, pods: 17}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let events = &result.events;
    let configure = events
        .iter()
        .position(|e| e.action == "configure")
        .expect("the operator configured the database");
    let crash = events
        .iter()
        .position(|e| e.detail.contains("crashed right after its action"))
        .expect("the crash is in the events log");
    assert!(crash > configure);
    // Between the configure and the crash report, the dead operator sent nothing.
    assert_eq!(crash, configure + 1, "{:#?}", &events[configure..=crash]);
    assert_eq!(
        events.iter().filter(|e| e.action == "configure").count(),
        1,
        "the restarted operator finds the database configured"
    );
    assert_eq!(result.steps[1].reconciled, Some(true));
}
