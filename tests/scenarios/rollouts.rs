//! Day-2 rollouts: knob bounces (BounceProcesses), rolling pod updates (UpdatePods),
//! maintenance mode, buggify and locks.
//!
//! The knob bounces restart every process with one `kill`, as docs/operator.md, "The steps"
//! and issue 10 ask; the world judges that one cluster-wide kill by how long the database
//! is unavailable (a restart plus a recovery).

use fdb_e2e_tests::{conditions_of, run_file, violated};
use fdb_simulation::result::{EventSource, SimulationResult, StepResult};

/// The `fdb` events of an action (`kill`, `maintenance`, ...).
fn admin_events<'a>(result: &'a SimulationResult, action: &str) -> Vec<&'a str> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == action)
        .map(|e| e.detail.as_str())
        .collect()
}

fn processes(step: &StepResult) -> &Vec<serde_json::Value> {
    step.fdb["processes"].as_array().unwrap()
}

const KNOB: &str = "knob_disable_posix_kernel_aio";

#[test]
fn a_knob_restarts_every_process_exactly_once_with_one_kill() {
    let result = run_file("rollouts/knob-rollout.yaml", None);
    let kills = admin_events(&result, "kill");
    assert_eq!(kills.len(), 1, "{kills:?}");
    let before = &result.steps[2];
    let after = &result.steps[4];
    let killed = kills[0].split_whitespace().count() - 1;
    assert_eq!(
        killed,
        processes(before).len(),
        "every process in the one kill"
    );
    assert!(
        processes(after)
            .iter()
            .all(|p| p["commandLine"].as_str().unwrap().contains(KNOB))
    );
    let recoveries =
        after.fdb["recoveries"].as_u64().unwrap() - before.fdb["recoveries"].as_u64().unwrap();
    assert!(recoveries <= 3, "{recoveries} recoveries");
    // The kill came after every pod confirmed the new conf (the ConfigMap projection).
    let kill_time = result
        .events
        .iter()
        .find(|e| e.action == "kill")
        .unwrap()
        .time;
    let last_annotation = result
        .events
        .iter()
        .filter(|e| e.step == 4 && e.action == "patch" && e.target.starts_with("pod/"))
        .map(|e| e.time)
        .max()
        .unwrap();
    assert!(kill_time >= last_annotation);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
}

#[test]
fn a_knob_change_waits_for_an_unreachable_sidecar_and_finishes_once_it_heals() {
    let result = run_file("rollouts/knob-unreachable-sidecar.yaml", None);
    let waiting = &result.steps[5];
    assert_eq!(waiting.reconciled, Some(false));
    assert!(conditions_of(waiting, "storage-2").contains(&"SidecarUnreachable".to_owned()));
    assert!(conditions_of(waiting, "storage-1").contains(&"IncorrectCommandLine".to_owned()));
    // Nothing was restarted while the sidecar was unreachable (900 s, well past the
    // minimum uptime)...
    let kills: Vec<_> = result
        .events
        .iter()
        .filter(|e| e.action == "kill")
        .collect();
    assert_eq!(kills.len(), 1);
    assert!(kills[0].step >= 7, "killed during step {}", kills[0].step);
    // ...and once it healed, everything restarted onto the new conf.
    let after = &result.steps[7];
    assert!(
        processes(after)
            .iter()
            .all(|p| p["commandLine"].as_str().unwrap().contains(KNOB))
    );
    assert!(result.violations.is_empty(), "{:?}", violated(&result));
}

/// The `delete pod/...` events during step `step`, as (pass, pod).
fn pod_deletions(result: &SimulationResult, step: usize) -> Vec<(u64, String)> {
    result
        .events
        .iter()
        .filter(|e| e.step == step && e.action == "delete" && e.target.starts_with("pod/"))
        .map(|e| (e.pass, e.target.clone()))
        .collect()
}

/// The PVC uid-independent identity: names of the PVCs of a step.
fn pvc_names(step: &StepResult) -> Vec<String> {
    let mut names: Vec<String> = step.pvcs.iter().map(|p| p.name.clone()).collect();
    names.sort();
    names
}

#[test]
fn a_storage_template_change_recreates_storage_pods_zone_by_zone_on_their_pvcs() {
    // Three nodes (zones by node): one zone holds two storage pods, deleted together.
    let result = run_file("rollouts/storage-env-rollout.yaml", None);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let deletions = pod_deletions(&result, 2);
    let pods: Vec<&str> = deletions.iter().map(|(_, p)| p.as_str()).collect();
    let mut sorted = pods.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        [
            "pod/sample-storage-1",
            "pod/sample-storage-2",
            "pod/sample-storage-3",
            "pod/sample-storage-4"
        ],
        "only storage pods, each once"
    );
    let passes: std::collections::BTreeSet<u64> = deletions.iter().map(|(pass, _)| *pass).collect();
    assert_eq!(passes.len(), 3, "three zones, one per pass: {deletions:?}");
    let (before, after) = (&result.steps[0], &result.steps[2]);
    assert_eq!(pvc_names(before), pvc_names(after), "the PVCs stayed");
    assert_eq!(after.fdb["movedMiB"].as_f64(), Some(0.0), "no data moved");
    assert_eq!(after.fdb["lostShards"].as_u64(), Some(0));
    let env = |step: &StepResult, pod: &str| {
        step.pods
            .iter()
            .find(|p| p.name == pod)
            .map(|p| p.annotations.clone())
    };
    // The recreated pods carry the new spec hash; the others kept theirs.
    for pod in ["sample-storage-1", "sample-storage-4"] {
        assert_ne!(
            env(before, pod),
            env(after, pod),
            "{pod} was recreated with the new spec"
        );
    }
    assert_eq!(
        env(before, "sample-log-1"),
        env(after, "sample-log-1"),
        "log pods untouched"
    );
}

#[test]
fn with_deletion_mode_process_group_pods_are_deleted_one_at_a_time() {
    let result = run_file("rollouts/storage-env-rollout-by-group.yaml", None);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let deletions = pod_deletions(&result, 2);
    assert_eq!(deletions.len(), 4, "{deletions:?}");
    let passes: std::collections::BTreeSet<u64> = deletions.iter().map(|(pass, _)| *pass).collect();
    assert_eq!(passes.len(), 4, "one pod per pass: {deletions:?}");
    assert_eq!(result.steps[2].fdb["movedMiB"].as_f64(), Some(0.0));
}

#[test]
fn with_deletion_mode_none_a_template_change_deletes_nothing_and_says_so() {
    let result = run_file("rollouts/env-rollout-deletion-none.yaml", None);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    assert!(pod_deletions(&result, 1).is_empty() && pod_deletions(&result, 2).is_empty());
    let after = &result.steps[2];
    let status = &after.cluster["status"];
    // The status says the pods wait for a deletion, and the cluster is not Reconciled.
    assert_eq!(status["generations"]["needsPodDeletion"], 2);
    assert_eq!(status["generations"]["reconciled"], 1);
    // The Go operator's Event for it, naming the waiting groups.
    let needs_deletion: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.action == "event" && e.detail.starts_with("NeedsPodsDeletion"))
        .map(|e| e.detail.as_str())
        .collect();
    assert!(!needs_deletion.is_empty(), "no NeedsPodsDeletion event");
    assert!(
        needs_deletion[0].contains("deleting pods is disabled")
            && needs_deletion[0].contains("storage-1"),
        "{needs_deletion:?}"
    );
    for group in ["storage-1", "storage-2", "storage-3", "storage-4"] {
        assert!(conditions_of(after, group).contains(&"IncorrectPodSpec".to_owned()));
    }
}

#[test]
fn a_general_template_change_recreates_storage_pods_and_replaces_the_transaction_system() {
    let result = run_file("rollouts/general-env-rollout.yaml", None);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let after = &result.steps[2];
    assert_eq!(
        after.fdb["movedMiB"].as_f64(),
        Some(0.0),
        "storage data stayed on its PVCs"
    );
    let storage_deletions: Vec<_> = pod_deletions(&result, 2)
        .into_iter()
        .filter(|(_, pod)| pod.starts_with("pod/sample-storage-"))
        .collect();
    assert_eq!(storage_deletions.len(), 4, "{storage_deletions:?}");
    // Log and stateless groups were replaced: new IDs.
    let groups = after.cluster["status"]["processGroups"].as_array().unwrap();
    assert!(
        groups
            .iter()
            .all(|g| g["processGroupID"] != "log-1" && g["processGroupID"] != "stateless-1")
    );
}

/// The maintenance commands of step `step`, in order.
fn maintenance_commands(result: &SimulationResult, step: usize) -> Vec<&str> {
    result
        .events
        .iter()
        .filter(|e| e.step == step && e.source == EventSource::Fdb && e.action == "maintenance")
        .map(|e| e.detail.as_str())
        .collect()
}

/// Each zone set before its pods are deleted and reset after; no data moves.
fn assert_maintenance_per_zone(result: &SimulationResult, step: usize) {
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    assert_eq!(
        maintenance_commands(result, step),
        [
            "maintenance on node-1 600",
            "maintenance off",
            "maintenance on node-2 600",
            "maintenance off",
            "maintenance on node-3 600",
            "maintenance off"
        ]
    );
    // Every storage pod deletion happens inside a window of its zone.
    let mut window: Option<String> = None;
    for event in result.events.iter().filter(|e| e.step == step) {
        match (
            event.action.as_str(),
            event.detail.strip_prefix("maintenance on "),
        ) {
            ("maintenance", Some(zone)) => {
                window = zone.split_whitespace().next().map(str::to_owned)
            }
            ("maintenance", None) => window = None,
            ("delete", _) if event.target.starts_with("pod/") => {
                assert!(
                    window.is_some(),
                    "{} deleted outside a maintenance window",
                    event.target
                )
            }
            _ => {}
        }
    }
    let after = result.steps.last().unwrap();
    assert_eq!(after.fdb["movedMiB"].as_f64(), Some(0.0), "no data moved");
    assert!(after.fdb["maintenanceZone"].is_null());
}

#[test]
fn with_the_maintenance_mode_each_storage_zone_is_set_and_reset_and_no_data_moves() {
    let result = run_file("rollouts/storage-env-rollout-maintenance.yaml", None);
    assert_maintenance_per_zone(&result, 2);
}

#[test]
fn a_maintenance_window_left_by_a_crashed_operator_is_finished_and_reset() {
    let result = run_file("rollouts/storage-env-rollout-maintenance-crash.yaml", None);
    assert_maintenance_per_zone(&result, 3);
}

#[test]
fn a_crash_looping_group_is_not_replaced_and_is_restored_when_removed_from_the_spec() {
    let result = run_file("rollouts/buggify-crash-loop.yaml", None);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let reports = |step: &StepResult| {
        processes(step)
            .iter()
            .any(|p| p["locality"]["instance_id"] == "storage-4")
    };
    // Crash-looping: its pod was recreated and runs, its process does not.
    let looping = &result.steps[3];
    assert!(!reports(looping));
    assert!(looping.pods.iter().any(|p| p.name == "sample-storage-4"));
    let recreated: Vec<usize> = result
        .events
        .iter()
        .filter(|e| e.action == "create" && e.target == "pod/sample-storage-4")
        .map(|e| e.step)
        .collect();
    assert_eq!(recreated, [0, 3, 6], "created, crash-looping, restored");
    // Never replaced, although it was down far longer than failureDetectionTimeSeconds.
    assert!(
        result
            .events
            .iter()
            .all(|e| !e.detail.starts_with("ReplacementChosen")),
        "a crash-looping group was replaced"
    );
    assert!(reports(result.steps.last().unwrap()));
}

#[test]
fn a_single_redundancy_cluster_rolls_one_zone_at_a_time() {
    let result = run_file("rollouts/single-env-rollout.yaml", None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    assert_eq!(result.steps.last().unwrap().reconciled, Some(true));
    // Every storage pod was deleted (PVC kept), each in its own pass.
    let deletions: Vec<_> = result
        .events
        .iter()
        .filter(|e| e.action == "delete" && e.target.starts_with("pod/sample-storage"))
        .collect();
    assert_eq!(deletions.len(), 3, "{deletions:?}");
    assert!(
        deletions.windows(2).all(|w| w[0].time < w[1].time),
        "{deletions:?}"
    );
}

#[test]
fn a_process_that_survives_the_knob_restart_gets_its_pod_recreated_instead_of_a_second_kill() {
    let result = run_file("rollouts/knob-ignore-kill.yaml", None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    assert_eq!(
        admin_events(&result, "kill").len(),
        1,
        "one cluster-wide kill"
    );
    assert!(
        result
            .events
            .iter()
            .any(|e| e.action == "delete" && e.target == "pod/sample-stateless-2")
    );
    let last = result.steps.last().unwrap();
    assert!(
        processes(last)
            .iter()
            .all(|p| p["commandLine"].as_str().unwrap().contains(KNOB))
    );
}

#[test]
fn a_triple_rollout_with_a_replacement_and_an_eviction_in_flight_finishes() {
    let result = run_file("rollouts/triple-rollout-replacement-eviction.yaml", None);
    assert!(violated(&result).is_empty(), "{:#?}", result.violations);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true));
    // Reconciled means no group has IncorrectPodSpec left: the storage pods were
    // recreated from the new template.
    assert!(
        result
            .events
            .iter()
            .any(|e| e.action == "delete" && e.target.starts_with("pod/sample-storage"))
    );
}

#[test]
fn a_knob_rollout_under_slow_recoveries_is_not_judged_an_operator_outage() {
    let result = run_file("rollouts/knob-rollout-slow-recovery.yaml", None);
    assert!(violated(&result).is_empty(), "{:#?}", result.violations);
    assert_eq!(admin_events(&result, "kill").len(), 1, "one kill");
}

#[test]
fn buggify_no_schedule_on_every_log_stays_within_the_fault_tolerance_and_clears() {
    let result = run_file("rollouts/buggify-no-schedule-every-log.yaml", None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    assert_eq!(result.steps.last().unwrap().reconciled, Some(true));
    // While noSchedule listed every log group, at most one log pod was deleted for it.
    let deleted_for_no_schedule = result
        .events
        .iter()
        .filter(|e| {
            (3..=4).contains(&e.step)
                && e.action == "delete"
                && e.target.starts_with("pod/sample-log")
        })
        .count();
    assert!(deleted_for_no_schedule <= 1, "{deleted_for_no_schedule}");
    // The database stayed available throughout.
    assert!(
        result
            .steps
            .iter()
            .all(|s| s.cluster["status"]["health"]["available"] != false),
        "unavailable at some step"
    );
}
