//! Process-group conditions as the Go operator sets them (`checkAndSetProcessStatus` and
//! `validateProcessGroup` in its `controllers/update_status.go`, v2.33.0): runbooks,
//! dashboards and `kubectl fdb analyze` read them, and the Go upgrade cases check them.
//! A change of the conf (a knob, a version) shows IncorrectConfigMap and
//! IncorrectCommandLine together until the pod takes the new conf, then
//! IncorrectCommandLine alone until the restart, then nothing. A fault holds one group
//! in the first state so that a scenario step can see it.

use fdb_e2e_tests::{conditions_of, run, scenario, violated};
use fdb_simulation::result::{SimulationResult, StepResult};

const SPEC_71: &str = "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}, minimumUptimeSecondsForBounce: 60}";

fn has(step: &StepResult, group: &str, condition: &str) -> bool {
    conditions_of(step, group).iter().any(|c| c == condition)
}

fn groups(step: &StepResult) -> Vec<String> {
    step.cluster["status"]["processGroups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["processGroupID"].as_str().map(str::to_owned))
        .collect()
}

fn assert_no_condition_left(result: &SimulationResult) {
    let end = result.steps.last().unwrap();
    for group in groups(end) {
        assert!(
            conditions_of(end, &group).is_empty(),
            "{group}: {:?}",
            conditions_of(end, &group)
        );
    }
    assert!(violated(result).is_empty(), "{:#?}", result.violations);
}

/// test_operator_upgrades_variations: "the operator is setting the IncorrectConfigMap and
/// IncorrectCommandLine conditions during the upgrade process". log-2 cannot stage the
/// 7.3 binary: it keeps both conditions (its conf is not the upgrade's, its processes do
/// not run 7.3); the staged groups show IncorrectCommandLine alone, waiting for the one
/// kill, which waits for log-2.
#[test]
fn an_incompatible_upgrade_shows_both_conditions_until_a_group_is_staged() {
    let result = run(
        &scenario(
            SPEC_71,
            "  - reconcile: {}\n  - fault: {kind: binaryMissing, processGroup: log-2, version: \"7.3.43\"}\n  - apply: {spec: {version: 7.3.43}}\n  - advance: 600\n  - heal: {processGroup: log-2}\n  - expect: {within: 3600, reconciled: true, version: \"7.3.43\", runningVersion: \"7.3.43\"}\n",
        ),
        None,
    );
    let held = &result.steps[3];
    assert!(
        has(held, "log-2", "IncorrectConfigMap") && has(held, "log-2", "IncorrectCommandLine"),
        "log-2: {:?}",
        conditions_of(held, "log-2")
    );
    for group in groups(held).iter().filter(|g| *g != "log-2") {
        assert!(
            has(held, group, "IncorrectCommandLine") && !has(held, group, "IncorrectConfigMap"),
            "{group}: {:?}",
            conditions_of(held, group)
        );
    }
    assert_no_condition_left(&result);
}

/// A storage knob while storage-1's sidecar cannot be reached: storage-1 cannot take the
/// new conf and shows IncorrectConfigMap with IncorrectCommandLine; the other storage
/// groups took it and show IncorrectCommandLine alone (the one restart waits for
/// storage-1); the classes the knob does not touch show nothing.
#[test]
fn a_knob_change_shows_both_conditions_until_the_pod_takes_the_conf() {
    let result = run(
        &scenario(
            SPEC_71,
            "  - reconcile: {}\n  - fault: {kind: sidecarUnreachable, processGroup: storage-1}\n  - apply: {spec: {processes: {storage: {customParameters: [\"knob_max_trace_lines=1000000\"]}}}}\n  - advance: 300\n  - heal: {processGroup: storage-1}\n  - expect: {within: 1800, reconciled: true, available: true}\n",
        ),
        None,
    );
    let held = &result.steps[3];
    assert!(
        has(held, "storage-1", "IncorrectConfigMap")
            && has(held, "storage-1", "IncorrectCommandLine"),
        "storage-1: {:?}",
        conditions_of(held, "storage-1")
    );
    for group in ["storage-2", "storage-3", "storage-4"] {
        assert!(
            has(held, group, "IncorrectCommandLine") && !has(held, group, "IncorrectConfigMap"),
            "{group}: {:?}",
            conditions_of(held, group)
        );
    }
    for group in groups(held).iter().filter(|g| !g.starts_with("storage")) {
        assert!(
            conditions_of(held, group).is_empty(),
            "{group}: {:?}",
            conditions_of(held, group)
        );
    }
    assert_no_condition_left(&result);
}
