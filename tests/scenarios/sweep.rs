//! Regressions of the release sweep's failing seeds (issue 26), one cheap scenario per
//! class of failure, cut down from the dumped seed; each file name starts with the seed
//! it came from.

use fdb_e2e_tests::{run_file, violated};
use fdb_simulation::result::{EventSource, SimulationResult};

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

/// Seed 71 (`mixed-version-bounce` for 300 s): the upgrade applied while the only
/// coordinator's pod failed (no quorum, no process reports) and a storage process was
/// missing. Every running pod was staged, so the storage process came back on 7.3 at the
/// heal beside the 7.1 cluster, which could not run the kill without its coordinator.
/// A pod is now staged once its processes report: storage-2 comes back on 7.1 and the
/// one kill follows the database's return. Checked on 2026-11-28: without the fix the
/// run fails with `mixed-version-bounce` at 223 s; with it, 7.5 s of CPU in debug.
#[test]
fn an_upgrade_applied_without_quorum_stages_pods_once_their_processes_report() {
    let result = run_file("sweep/71-upgrade-applied-without-quorum.yaml", None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    let kills = result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == "kill")
        .count();
    assert_eq!(kills, 1, "one cluster-wide kill");
    // storage-2's sidecar (its pod's only container patch) moved to the target only after
    // its process reported again, after the heal; before the fix, at the upgrade (153 s).
    let healed = result
        .steps
        .iter()
        .find(|s| s.step.get("heal").is_some())
        .map(|s| s.time)
        .unwrap();
    let staged_at = result
        .events
        .iter()
        .filter(|e| {
            e.action == "patch"
                && e.target == "pod/sample-storage-2"
                && e.detail.contains("spec.containers")
        })
        .map(|e| e.time)
        .min();
    assert!(
        staged_at.is_some_and(|t| t > healed),
        "storage-2 staged at {staged_at:?}, healed at {healed}"
    );
}

/// The run ended Reconciled with no invariant violated.
fn assert_clean(result: &SimulationResult) {
    assert_eq!(violated(result), Vec::<String>::new());
    assert_eq!(result.steps.last().unwrap().reconciled, Some(true));
}

// ---- H2: not Reconciled after healing; evictions that name a gone pod ----

/// Short seed 26: a coordinator on the only stateful pod of its zone, in a rollout that
/// must update that pod. Before the fix UpdatePods waited for ChangeCoordinators, which
/// could never place the coordinator elsewhere ("5 coordinators need 5 zones, but
/// eligible process groups span only 4"); now the group is replaced and the rollout ends.
#[test]
fn not_reconciled_coordinator_that_cannot_move_no_longer_holds_the_rollout() {
    let result = run_file("sweep/not-reconciled-coordinator-cannot-move.yaml", None);
    assert_clean(&result);
    let replaced: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.detail.contains("they cannot move"))
        .map(|e| e.detail.as_str())
        .collect();
    assert!(
        !replaced.is_empty(),
        "the group hosting the coordinator is replaced"
    );
    // Its replacement took a new number and the rollout finished: every log group that is
    // left runs the new spec (Reconciled says so), one of them the replacement.
    let logs: Vec<String> = result.steps.last().unwrap().cluster["status"]["processGroups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["processClass"] == "log")
        .map(|g| g["processGroupID"].as_str().unwrap().to_owned())
        .collect();
    assert!(logs.iter().any(|id| id == "log-6"), "{logs:?}");
}

/// The chunks without a verdict: a user eviction named a pod the operator had replaced
/// by then. The pod is now chosen when the act runs, among the live pods of its class.
#[test]
fn eviction_names_a_live_pod_after_the_operator_replaced_the_named_one() {
    let result = run_file("sweep/eviction-of-a-replaced-pod.yaml", None);
    assert_clean(&result);
    let evicted: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.action == "evict" && e.by.as_deref() == Some("user"))
        .map(|e| e.target.as_str())
        .collect();
    // storage-1 is gone (replaced by storage-4): the first live storage pod is storage-2.
    assert_eq!(evicted, ["pod/sample-storage-2"]);
}

/// Seed 75 (`unavailable-by-operator`, wrongly): a single-redundancy storage pod fails
/// and the operator deletes the Failed pod in the same second. The fault stopped the
/// process; the deletion stopped nothing, so the outage is not the operator's. Checked
/// on 2026-11-28: without the fix the run fails with `unavailable-by-operator` (6 s at
/// 1607 s), with it no violation and Reconciled. The seed at full length costs about
/// 94 s of CPU in debug, too much for CI: run it on demand.
#[test]
#[ignore = "about 94 s of CPU in debug: run on demand with --ignored"]
fn deleting_a_pod_the_fault_already_stopped_is_not_blamed_for_its_outage() {
    let result = run_file("sweep/75-failed-pod-deleted-at-the-fault.yaml", None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    assert!(
        result.events.iter().any(|e| e.source == EventSource::K8s
            && e.action == "delete"
            && e.target == "pod/sample-storage-2"),
        "the operator must delete the failed pod"
    );
}

// ---- H5: seed 156, a restart taken for a kill that never ran ----

/// Seed 156 (not Reconciled 14400 s after healing): single redundancy, storage-3's
/// process missing (the database unavailable), storage-3 replaced and marked for
/// removal, a knob change that cannot be restarted onto yet. The heal restarts
/// storage-3's process, the only one started since the last recovery. Before the fix
/// BounceProcesses took that for a kill every target survived, recreated pods one at a
/// time instead, and waited forever on log-1's pod, which hosts the coordinator
/// (checked on 2026-11-28: not Reconciled after 1200 s). A process of a group marked
/// for removal is never killed, so its restart is no sign of a kill: the restart waits
/// for storage-3's removal, and one kill restarts every process.
#[test]
fn a_removed_groups_process_restarting_is_not_taken_for_a_kill() {
    let result = run_file("sweep/156-removed-process-restart-is-no-kill.yaml", None);
    assert_clean(&result);
    let recreated: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.detail.contains("survived the restart"))
        .map(|e| e.detail.as_str())
        .collect();
    assert_eq!(recreated, Vec::<&str>::new(), "no process survived a kill");
    let kills = result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == "kill")
        .count();
    assert_eq!(kills, 1, "one kill restarts every process onto the knob");
}

/// Seed 136 (`unavailable-by-operator`, 7 s): in single redundancy the operator's pod
/// deletion for the upgrade caused a recovery (835-840 s), and 2 s after it ended the
/// user evicted a storage pod whose data has no other replica. The judge merged the
/// user's outage into the operator's ("outages less than one recovery apart count as
/// one") and blamed the operator; an outage a user or a fault begins is now theirs.
/// Checked on 2026-11-28: without the judging fix the run fails with
/// `unavailable-by-operator` at 835 s; with it, no violation (12.5 s of CPU in debug).
#[test]
fn a_users_eviction_right_after_an_operators_recovery_is_the_users_outage() {
    let result = run_file("sweep/136-eviction-after-an-operator-recovery.yaml", None);
    assert!(violated(&result).is_empty(), "{:#?}", result.violations);
    // The case needs both: the operator's deletion and the user's eviction seconds later.
    let at = |by: &str, action: &str| {
        result
            .events
            .iter()
            .find(|e| e.by.as_deref() == Some(by) && e.action == action && e.time > 700)
            .map(|e| e.time)
    };
    let (deleted, evicted) = (at("operator", "delete"), at("user", "evict"));
    assert!(
        matches!((deleted, evicted), (Some(d), Some(e)) if e > d && e - d <= 10),
        "an operator deletion then the user's eviction: {deleted:?} {evicted:?}"
    );
}

/// Randomized rollout seed 10, cut after its finding (single redundancy, six storage
/// pods on five zones): the storage zones of a rollout went 2 s apart, one outage of 11 s
/// for clients. Before the fix the full seed failed with `unavailable-by-operator` at
/// 1281 s, within the steps kept here.
#[test]
fn single_redundancy_storage_zones_are_spaced_by_the_recovery_pacing() {
    let result = run_file(
        "sweep/rollouts-10-single-storage-zones-back-to-back.yaml",
        None,
    );
    assert!(violated(&result).is_empty(), "{:#?}", result.violations);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
}
