//! `act: {as: user, kubectlFdb: [...]}`: scenarios in which a user runs this plugin's
//! binary against the simulated world (the Go runbooks), judged as the user's actions.

// Test-only: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use fdb_simulation::result::SimulationResult;
use fdb_simulation::runner::{RunError, RunOptions, run_scenario};
use fdb_simulation::scenario::Scenario;

const EVERY_POD_LOST: &str = include_str!("scenarios/every-pod-lost-fixed-ips.yaml");

/// The runbook step of the scenario.
const RUNBOOK: &str = "  - act: {as: user, kubectlFdb: [fix-coordinator-ips, -c, sample, --yes]}\n";

fn run(yaml: &str) -> Result<SimulationResult, RunError> {
    let scenario = Scenario::parse(yaml, "test").unwrap();
    let options = RunOptions {
        kubectl_fdb: Some(env!("CARGO_BIN_EXE_kubectl-fdb").into()),
        ..RunOptions::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run_scenario(&scenario, options))
}

fn invariants(result: &SimulationResult) -> Vec<&str> {
    result
        .violations
        .iter()
        .map(|v| v.invariant.as_str())
        .collect()
}

#[test]
fn every_pod_lost_with_fixed_ips_comes_back_with_the_go_runbook() {
    let result = run(EVERY_POD_LOST).unwrap();
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
    // The plugin ran, as the user, and said what it did.
    let ran = result
        .events
        .iter()
        .find(|e| e.action == "kubectl-fdb")
        .expect("the plugin's run is in the event log");
    assert_eq!(ran.target, "fix-coordinator-ips -c sample --yes");
    assert!(ran.detail.starts_with("exit 0\n"), "{}", ran.detail);
    assert!(
        ran.detail.contains("New connection string: "),
        "{}",
        ran.detail
    );
}

#[test]
fn every_pod_lost_with_fixed_ips_stays_down_without_the_runbook() {
    // The control: the same loss without the user's repair is not recovered, so the
    // scenario above passes because of the plugin's run.
    let without = EVERY_POD_LOST.replace(RUNBOOK, "");
    assert_ne!(without, EVERY_POD_LOST);
    let result = run(&without).unwrap();
    assert!(
        invariants(&result).contains(&"expectation-failed"),
        "{:#?}",
        result.violations
    );
}

#[test]
fn a_command_the_plugin_refuses_fails_the_step_with_its_message() {
    let yaml = EVERY_POD_LOST.replace(
        RUNBOOK,
        "  - act: {as: user, kubectlFdb: [remove, process-groups, -c, nosuch, storage-1, --yes]}\n",
    );
    let error = run(&yaml).unwrap_err().to_string();
    assert!(error.contains("kubectl fdb exited with 2"), "{error}");
    assert!(error.contains("nosuch"), "{error}");
}
