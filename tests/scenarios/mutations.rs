//! Mutation tests of the simulated world: scenarios in which a deliberately broken
//! operator (`act: {as: operator}`) does what a careless operator would. Each must be
//! caught by the right invariant; each correct counterpart must pass. A world that let
//! these through would make every green day-2 test a lie.

use fdb_e2e_tests::{run_file, run_without_operator, scenario, violated};

fn assert_caught(file: &str, block: u8, invariant: &str) {
    let result = run_file(&format!("mutations/{file}.yaml"), block);
    let found = violated(&result);
    assert!(
        found.iter().any(|name| name == invariant),
        "{file}: expected {invariant}, got {:#?}",
        result.violations
    );
}

fn assert_passes(file: &str, block: u8) -> fdb_operator::simulation::result::SimulationResult {
    let result = run_file(&format!("mutations/{file}.yaml"), block);
    assert!(
        result.violations.is_empty(),
        "{file}: {:#?}",
        result.violations
    );
    result
}

#[test]
fn deleting_two_storage_zones_one_by_one_is_caught() {
    assert_caught("delete-two-storage-zones", 220, "data-loss-risk");
}

#[test]
fn deleting_storage_as_one_collection_is_caught() {
    assert_caught("delete-storage-collection", 221, "data-loss-risk");
}

#[test]
fn deleting_a_pvc_right_after_its_exclusion_is_caught() {
    assert_caught("exclude-then-delete-pvc", 222, "data-loss-risk");
}

#[test]
fn deleting_a_coordinators_pod_is_caught() {
    assert_caught("delete-coordinator-pod", 223, "coordinator-deleted");
}

#[test]
fn deleting_one_storage_pod_and_keeping_its_pvc_passes() {
    let result = assert_passes("delete-storage-pod-keep-pvc", 224);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "the expect held");
}

#[test]
fn an_operator_that_does_nothing_fails_the_expectation_of_a_shrink() {
    let yaml = scenario(
        "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}}",
        "  - apply: {spec: {processCounts: {storage: 3}}}\n  - expect: {within: 7200, processGroups: {storage: 3}, pods: 16}\n",
    );
    let result = run_without_operator(&yaml, 225);
    let failed: Vec<&str> = result
        .violations
        .iter()
        .filter(|v| v.invariant == "expectation-failed")
        .map(|v| v.detail.as_str())
        .collect();
    assert_eq!(failed.len(), 1, "{:#?}", result.violations);
    assert!(
        failed[0].contains("pods: expected 16, found 0"),
        "{}",
        failed[0]
    );
    assert!(
        failed[0].contains("processGroups: expected storage: 3"),
        "{}",
        failed[0]
    );
}
