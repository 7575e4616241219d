//! Pacing (issue 26 item 1): after an action that causes a recovery, the operator takes
//! no other recovery-causing action (kill, exclusion or inclusion of a transaction
//! process, coordinators change, configure, deleting a pod hosting a transaction process
//! or coordinator) until the database is available and its last recovery is at least
//! 120 s old. Judged from the world's own recovery log (`fdb.recoveryLog`), not from
//! the operator's events.

use fdb_e2e_tests::{run, run_file, run_with, scenario, violated};
use fdb_operator::controller::ExecutorRules;
use fdb_simulation::result::SimulationResult;
use fdb_simulation::runner::RunOptions;

/// The operator's minimum time between a recovery and the next recovery-causing action.
const MINIMUM_GAP: i64 = 120;

const SPEC_71: &str = "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}, minimumUptimeSecondsForBounce: 60}";

/// Recoveries that began less than [`MINIMUM_GAP`] seconds after the previous one
/// completed, as `previous reason (recovered at) -> next reason (started at)`. Every
/// recovery of these runs comes from an operator action (no faults).
fn stacked(result: &SimulationResult) -> Vec<String> {
    let log = result.steps.last().unwrap().fdb["recoveryLog"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!log.is_empty(), "the world logs recoveries");
    log.windows(2)
        .filter_map(|pair| {
            let recovered = pair[0]["recovered"].as_i64()?;
            let started = pair[1]["started"].as_i64().unwrap();
            (started - recovered < MINIMUM_GAP).then(|| {
                format!(
                    "{} (recovered at {recovered}s) -> {} (started at {started}s)",
                    pair[0]["reason"], pair[1]["reason"]
                )
            })
        })
        .collect()
}

fn recovery_reasons(result: &SimulationResult) -> Vec<String> {
    result.steps.last().unwrap().fdb["recoveryLog"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["reason"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn removing_a_log_group_paces_configure_coordinators_exclusion_and_inclusion() {
    let result = run_file("removals/remove-coordinator.yaml", None);
    assert_eq!(violated(&result), Vec::<String>::new());
    assert_eq!(stacked(&result), Vec::<String>::new());
    let reasons = recovery_reasons(&result);
    assert!(
        reasons.iter().any(|r| r == "coordinators change")
            && reasons.iter().any(|r| r.contains("excluded")),
        "{reasons:?}"
    );
}

/// An upgrade after which the coordinators must move.
fn upgrade() -> String {
    scenario(
        SPEC_71,
        "  - reconcile: {}\n  - apply: {spec: {version: 7.3.43}}\n  - expect: {within: 3600, reconciled: true, available: true, version: \"7.3.43\", runningVersion: \"7.3.43\"}\n",
    )
}

#[test]
fn an_upgrade_kill_is_not_followed_by_a_coordinators_change_within_the_minimum() {
    let result = run(&upgrade(), None);
    assert_eq!(violated(&result), Vec::<String>::new());
    assert_eq!(stacked(&result), Vec::<String>::new());
    let reasons = recovery_reasons(&result);
    assert!(
        reasons.iter().any(|r| r.starts_with("kill of"))
            && reasons.iter().any(|r| r == "coordinators change"),
        "{reasons:?}"
    );
}

#[test]
fn pacing_holds_across_an_operator_restart_right_after_the_kill() {
    let result = run(
        &scenario(
            SPEC_71,
            "  - reconcile: {}\n  - restartOperator: {after: kill}\n  - apply: {spec: {version: 7.3.43}}\n  - expect: {within: 3600, reconciled: true, available: true, version: \"7.3.43\", runningVersion: \"7.3.43\"}\n",
        ),
        None,
    );
    assert_eq!(violated(&result), Vec::<String>::new());
    assert!(
        result
            .events
            .iter()
            .any(|e| e.detail.contains("crashed right after its action"))
    );
    assert_eq!(stacked(&result), Vec::<String>::new());
}

#[test]
fn process_group_deletions_of_transaction_pods_are_paced() {
    let result = run(
        &scenario(
            "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}, automationOptions: {deletionMode: ProcessGroup, podUpdateStrategy: Delete}}",
            "  - reconcile: {}\n  - apply: {spec: {processes: {log: {podTemplate: {spec: {containers: [{name: foundationdb, env: [{name: ROLLOUT, value: \"1\"}]}]}}}}}}\n  - expect: {within: 7200, reconciled: true, available: true}\n",
        ),
        None,
    );
    assert_eq!(violated(&result), Vec::<String>::new());
    let deleted: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.action == "delete" && e.target.starts_with("pod/sample-log-"))
        .map(|e| e.target.as_str())
        .collect();
    assert!(deleted.len() >= 2, "{deleted:?}");
    assert_eq!(stacked(&result), Vec::<String>::new());
}

/// Mutation test of the executor: without its pacing rule, the same upgrade stacks the
/// coordinators change right after the kill's recovery, and the recovery log shows it.
#[test]
fn an_executor_without_pacing_is_caught() {
    let result = run_with(
        &upgrade(),
        RunOptions {
            executor_rules: ExecutorRules {
                pacing: false,
                ..ExecutorRules::default()
            },
            ..RunOptions::default()
        },
    );
    assert_ne!(stacked(&result), Vec::<String>::new());
}
