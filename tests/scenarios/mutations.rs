//! Mutation tests of the simulated world: scenarios in which a deliberately broken
//! operator (`act: {as: operator}`) does what a careless operator would. Each must be
//! caught by the right invariant; each correct counterpart must pass. A world that let
//! these through would make every green day-2 test a lie.

use fdb_e2e_tests::{run_file, run_without_operator, scenario, violated};

fn assert_caught(file: &str, invariant: &str) {
    let result = run_file(&format!("mutations/{file}.yaml"), None);
    let found = violated(&result);
    assert!(
        found.iter().any(|name| name == invariant),
        "{file}: expected {invariant}, got {:#?}",
        result.violations
    );
}

fn assert_passes(file: &str) -> fdb_simulation::result::SimulationResult {
    let result = run_file(&format!("mutations/{file}.yaml"), None);
    assert!(
        result.violations.is_empty(),
        "{file}: {:#?}",
        result.violations
    );
    result
}

#[test]
fn deleting_two_storage_zones_one_by_one_is_caught() {
    assert_caught("delete-two-storage-zones", "data-loss-risk");
}

#[test]
fn deleting_two_storage_zones_loses_data_for_good() {
    let result = run_file("mutations/delete-two-storage-zones.yaml", None);
    assert!(
        violated(&result).contains(&"data-lost".to_owned()),
        "{:#?}",
        result.violations
    );
    let last = result.steps.last().unwrap();
    assert!(last.fdb["lostShards"].as_u64().unwrap() > 0, "{}", last.fdb);
    assert_eq!(last.fdb["available"], false, "lost data stays lost");
}

#[test]
fn killing_two_storage_zones_at_once_is_caught() {
    assert_caught("kill-two-zones", "fault-tolerance-exceeded");
}

#[test]
fn an_operator_storm_with_a_fault_in_the_middle_is_still_caught() {
    assert_caught(
        "rolling-delete-stateless-then-fault",
        "unavailable-by-operator",
    );
}

/// Blamed on the operator before issue 26: the outage began in the second of the
/// operator's (harmless) exclusion, though a fault stopped the processes.
#[test]
fn a_fault_right_after_a_harmless_operator_action_is_not_blamed_on_the_operator() {
    assert_passes("fault-after-harmless-exclusion");
}

/// Blamed on the operator before (randomized rollout seed 125): a crash loop opened the
/// outage, and the operator deleted a pod later in the same second.
#[test]
fn an_operator_action_during_a_faults_outage_is_not_blamed_on_the_operator() {
    assert_passes("operator-action-during-fault-outage");
}

#[test]
fn restarting_two_zones_at_once_in_single_redundancy_is_caught() {
    assert_caught("single-kill-two-zones", "fault-tolerance-exceeded");
}

#[test]
fn restarting_one_zone_in_single_redundancy_passes() {
    let result = assert_passes("single-delete-one-zone");
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "the expect held");
    assert_eq!(last.fdb["lostShards"], 0, "unavailable, never lost");
}

#[test]
fn restarting_one_process_on_an_incompatible_version_is_caught() {
    assert_caught("incompatible-restart", "mixed-version-bounce");
}

#[test]
fn a_rolling_burst_of_stateless_deletions_is_caught() {
    assert_caught("rolling-delete-stateless", "unavailable-by-operator");
}

#[test]
fn deleting_storage_as_one_collection_is_caught() {
    assert_caught("delete-storage-collection", "data-loss-risk");
}

#[test]
fn deleting_a_pvc_right_after_its_exclusion_is_caught() {
    assert_caught("exclude-then-delete-pvc", "data-loss-risk");
}

#[test]
fn deleting_a_coordinators_pod_is_caught() {
    assert_caught("delete-coordinator-pod", "coordinator-deleted");
}

#[test]
fn deleting_one_storage_pod_and_keeping_its_pvc_passes() {
    let result = assert_passes("delete-storage-pod-keep-pvc");
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "the expect held");
}

#[test]
fn an_operator_that_does_nothing_fails_the_expectation_of_a_shrink() {
    let yaml = scenario(
        "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}}",
        "  - apply: {spec: {processCounts: {storage: 3}}}\n  - expect: {within: 7200, processGroups: {storage: 3}, pods: 16}\n",
    );
    let result = run_without_operator(&yaml, None);
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

#[test]
fn excluding_a_dead_process_and_deleting_it_after_re_replication_passes() {
    let result = assert_passes("exclude-dead-then-delete");
    let last = result.steps.last().unwrap();
    assert_eq!(last.fdb["lostShards"], 0);
    assert!(
        last.fdb["movedMiB"].as_f64().unwrap() >= 1024.0,
        "{}",
        last.fdb
    );
}

#[test]
fn patching_only_the_sidecar_image_restarts_it_and_stages_the_new_binaries() {
    let result = assert_passes("patch-sidecar-image");
    let last = result.steps.last().unwrap();
    let binaries = &last.sidecars["sample-storage-1"].binaries;
    assert!(
        binaries.iter().any(|b| b == "bin/7.3.43/fdbserver"),
        "{binaries:?}"
    );
    let pod = last
        .pods
        .iter()
        .find(|pod| pod.name == "sample-storage-1")
        .unwrap();
    let restarts: Vec<(&str, i32)> = pod
        .containers
        .iter()
        .map(|c| (c.name.as_str(), c.restart_count))
        .collect();
    assert!(
        restarts.contains(&("foundationdb-kubernetes-sidecar", 1))
            && restarts.contains(&("foundationdb", 0)),
        "exactly the sidecar restarted: {restarts:?}"
    );
}

#[test]
fn the_one_cluster_wide_kill_of_a_bounce_passes() {
    let result = assert_passes("kill-every-process-once");
    let last = result.steps.last().unwrap();
    assert_eq!(last.fdb["available"], true);
}

#[test]
fn bouncing_the_whole_cluster_twice_in_a_row_is_caught() {
    assert_caught("kill-every-process-twice", "unavailable-by-operator");
}

#[test]
fn an_operator_that_forgets_the_include_is_caught() {
    assert_caught("forget-include", "exclusion-left-behind");
}

/// Local volumes: a broken operator that frees a drained node's storage pod by deleting
/// its claim (never excluded) instead of replacing the group is caught. The correct
/// answer is `replacements/local-volume-drain.yaml`.
#[test]
fn deleting_the_claim_of_a_pod_held_by_its_local_volume_is_caught() {
    assert_caught("local-volume-delete-pvc", "data-loss-risk");
}
