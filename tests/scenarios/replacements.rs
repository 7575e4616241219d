//! Replacements (issue 9, Day-2 I): changes only a new process group can apply
//! (ReplaceMisconfiguredPods), tainted nodes and I/O errors (ReplaceFailedPods). Every
//! scenario states its expected end with an `expect` step and must violate no invariant.

use fdb_e2e_tests::{run_file, violated};
use fdb_simulation::result::{EventSource, SimulationResult, StepResult};

fn assert_clean(result: &SimulationResult) {
    assert!(violated(result).is_empty(), "{:#?}", result.violations);
}

fn group_ids(step: &StepResult) -> Vec<String> {
    step.cluster["status"]["processGroups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["processGroupID"].as_str().unwrap().to_owned())
        .collect()
}

/// The operator's Kubernetes Events with this reason, by note.
fn operator_events<'a>(result: &'a SimulationResult, reason: &str) -> Vec<&'a str> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Operator && e.detail.starts_with(reason))
        .map(|e| e.detail.as_str())
        .collect()
}

fn admin_targets(result: &SimulationResult, action: &str) -> Vec<String> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == action)
        .map(|e| e.detail.clone())
        .collect()
}

#[test]
fn a_new_process_group_id_prefix_migrates_every_group_by_replacement() {
    let result = run_file("replacements/prefix-change.yaml", None);
    assert_clean(&result);
    let before = group_ids(&result.steps[0]);
    let end = result.steps.last().unwrap();
    let after = group_ids(end);
    assert_eq!(after.len(), before.len(), "{after:?}");
    assert!(after.iter().all(|id| id.starts_with("blue-")), "{after:?}");
    // Each old group was excluded and included again: replaced, not just renamed.
    let excluded = admin_targets(&result, "exclude").join(" ");
    let included = admin_targets(&result, "include").join(" ");
    for old in &before {
        assert!(
            excluded.contains(old.as_str()),
            "{old} not excluded: {excluded}"
        );
        assert!(
            included.contains(old.as_str()),
            "{old} not included: {included}"
        );
    }
    assert_eq!(end.fdb["lostShards"], 0, "{}", end.fdb["lostShards"]);
}

#[test]
fn a_bigger_volume_replaces_every_stateful_group_two_at_a_time() {
    let result = run_file("replacements/pvc-size.yaml", None);
    assert_clean(&result);
    let end = result.steps.last().unwrap();
    let live: Vec<_> = end.pvcs.iter().filter(|p| !p.terminating).collect();
    assert!(!live.is_empty());
    assert!(live.iter().all(|p| p.storage == "256G"), "{live:?}");
    let before = group_ids(&result.steps[0]);
    let after = group_ids(end);
    let stateful_before: Vec<_> = before
        .iter()
        .filter(|id| id.starts_with("storage") || id.starts_with("log"))
        .collect();
    assert!(
        stateful_before.iter().all(|id| !after.contains(id)),
        "{before:?} -> {after:?}"
    );
    let chosen = operator_events(&result, "ReplacementChosen");
    assert!(!chosen.is_empty());
    for note in &chosen {
        assert!(
            note.matches("volumeClaimTemplate changed").count() <= 2,
            "{note}"
        );
    }
    assert!(
        !operator_events(&result, "ReplacementBlocked").is_empty(),
        "the budget of two was used up at some point"
    );
    assert_eq!(end.fdb["lostShards"], 0, "{}", end.fdb["lostShards"]);
}

/// The process group of each pod on `node` in `step`.
fn groups_on(step: &StepResult, node: &str) -> Vec<String> {
    step.pods
        .iter()
        .filter(|p| p.node.as_deref() == Some(node) && !p.terminating)
        .filter_map(|p| {
            p.labels
                .get("foundationdb.org/fdb-process-group-id")
                .cloned()
        })
        .collect()
}

#[test]
fn a_tainted_nodes_groups_are_replaced_after_the_durations_and_the_opt_out_is_ignored() {
    let result = run_file("replacements/node-taint.yaml", None);
    assert_clean(&result);
    let tainted = groups_on(&result.steps[0], "node-2");
    let kept = groups_on(&result.steps[0], "node-3");
    assert!(
        !tainted.is_empty() && !kept.is_empty(),
        "{tainted:?} {kept:?}"
    );
    let end = result.steps.last().unwrap();
    let after = group_ids(end);
    for id in &tainted {
        assert!(
            !after.contains(id),
            "{id} on the tainted node was not replaced"
        );
    }
    for id in &kept {
        assert!(
            after.contains(id),
            "{id} was replaced for an opted-out taint"
        );
    }
    assert!(groups_on(end, "node-2").is_empty(), "nothing new on node-2");
    let chosen = operator_events(&result, "ReplacementChosen");
    assert!(
        chosen
            .iter()
            .any(|n| n.contains("NodeTaintReplacing")
                && n.contains("taintReplacementTimeSeconds 600")),
        "{chosen:?}"
    );
    // Not before the taint's 300 s plus the 600 s of taintReplacementTimeSeconds.
    let taint_time = result.steps[1].time;
    let first_mark = result
        .events
        .iter()
        .find(|e| e.source == EventSource::Operator && e.detail.starts_with("ReplacementChosen"))
        .map(|e| e.time)
        .unwrap();
    assert!(
        first_mark >= taint_time + 900,
        "{first_mark} < {taint_time} + 900"
    );
    assert_eq!(end.fdb["lostShards"], 0);
}

/// `maxFaultDomainsWithTaintedProcessGroups: 1` with two tainted nodes (two fault
/// domains): nothing is replaced for the taints while both are tainted; once one taint
/// goes, the other node's groups are replaced. Without the limit both nodes' groups would
/// be replaced during the first 600 s.
#[test]
fn taint_replacements_never_cover_more_fault_domains_than_allowed() {
    let result = run_file("replacements/taint-fault-domains.yaml", None);
    assert_clean(&result);
    let replaced = groups_on(&result.steps[0], "node-2");
    let kept = groups_on(&result.steps[0], "node-3");
    assert!(
        !replaced.is_empty() && !kept.is_empty(),
        "{replaced:?} {kept:?}"
    );
    // While both nodes are tainted: every group stays, none is marked, and the wait is
    // announced.
    let both = &result.steps[3];
    let marked: Vec<&serde_json::Value> = both.cluster["status"]["processGroups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| !g["removalTimestamp"].is_null())
        .collect();
    assert!(marked.is_empty(), "{marked:?}");
    let heal_time = result.steps[4].time;
    let chosen_early: Vec<u64> = result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Operator && e.detail.starts_with("ReplacementChosen"))
        .map(|e| e.time)
        .filter(|time| *time < heal_time)
        .collect();
    assert!(chosen_early.is_empty(), "replaced at {chosen_early:?}");
    let blocked = operator_events(&result, "ReplacementBlocked");
    assert!(
        blocked.iter().any(
            |n| n.contains("maxFaultDomainsWithTaintedProcessGroups allows (1)")
                && n.contains("node-2, node-3")
        ),
        "{blocked:?}"
    );
    // Then node-2's groups are replaced and node-3's stay.
    let end = result.steps.last().unwrap();
    let after = group_ids(end);
    for id in &replaced {
        assert!(!after.contains(id), "{id} on node-2 was not replaced");
    }
    for id in &kept {
        assert!(after.contains(id), "{id} on node-3 was replaced");
    }
    assert_eq!(end.fdb["lostShards"], 0);
}

/// A group whose pods keep failing: each failed pod is recreated after a growing
/// back-off (not in a loop of one pass per second), and the group is replaced on time,
/// once it has failed for `failureDetectionTimeSeconds` (600 s).
#[test]
fn a_pod_that_keeps_failing_is_recreated_with_a_back_off_then_replaced_on_time() {
    let result = run_file("replacements/failed-pod.yaml", None);
    assert_clean(&result);
    let failed_at = result.steps[1].time;
    let deletions: Vec<u64> = result
        .events
        .iter()
        .filter(|e| {
            e.source == EventSource::Operator
                && e.detail.starts_with("TerminalPodDeleted")
                && e.detail.contains("sample-stateless-1 ")
        })
        .map(|e| e.time)
        .collect();
    // 0, 10, 10, 20, 40, 80, 160, 300 s apart: at most 8 in the 600 s before the
    // replacement (about 600 without the back-off).
    assert!(
        !deletions.is_empty() && deletions.len() <= 8,
        "{deletions:?}"
    );
    assert!(
        deletions.windows(2).skip(1).all(|w| w[1] - w[0] >= 10),
        "recreated sooner than 10 s: {deletions:?}"
    );
    let chosen = result
        .events
        .iter()
        .find(|e| {
            e.source == EventSource::Operator
                && e.detail.starts_with("ReplacementChosen")
                && e.detail.contains("stateless-1:")
        })
        .map(|e| e.time)
        .expect("stateless-1 is replaced");
    assert!(
        (failed_at + 600..=failed_at + 640).contains(&chosen),
        "replaced at {chosen}, failed at {failed_at}"
    );
    assert!(!group_ids(result.steps.last().unwrap()).contains(&"stateless-1".to_owned()));
}

#[test]
fn a_process_reporting_io_errors_is_replaced() {
    let result = run_file("replacements/io-error.yaml", None);
    assert_clean(&result);
    let end = result.steps.last().unwrap();
    assert!(!group_ids(end).contains(&"storage-2".to_owned()));
    let chosen = operator_events(&result, "ReplacementChosen");
    assert!(
        chosen
            .iter()
            .any(|n| n.contains("storage-2: ProcessHasIOError")),
        "{chosen:?}"
    );
    assert_eq!(end.fdb["lostShards"], 0);
}

/// The monitor conf keys of the ConfigMap for storage, sorted.
fn storage_conf_keys(step: &StepResult) -> Vec<String> {
    step.config_maps
        .iter()
        .flat_map(|cm| cm.data.keys())
        .filter(|key| key.starts_with("fdbmonitor-conf-storage"))
        .cloned()
        .collect()
}

fn status_list(step: &StepResult, field: &str) -> Vec<serde_json::Value> {
    step.cluster["status"][field]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The number of storage processes of each storage group (by `instance_id`).
fn storage_processes_per_group(step: &StepResult) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for process in step.fdb["processes"].as_array().into_iter().flatten() {
        if process["class"] == "storage"
            && let Some(id) = process["locality"]["instance_id"].as_str()
        {
            *counts.entry(id.to_owned()).or_insert(0) += 1;
        }
    }
    counts
}

#[test]
fn a_servers_per_pod_change_replaces_storage_and_keeps_the_old_conf_key_while_pods_mount_it() {
    let result = run_file("replacements/servers-per-pod.yaml", None);
    assert_clean(&result);
    let start = storage_processes_per_group(&result.steps[0]);
    assert_eq!(start.len(), 4);
    assert!(start.values().all(|n| *n == 1), "{start:?}");
    assert_eq!(
        storage_conf_keys(&result.steps[0]),
        ["fdbmonitor-conf-storage"]
    );

    // Mid-rollout: old pods (one server) and new ones (two) run side by side, so the
    // ConfigMap holds both keys and the status says both densities are in use.
    let mid = &result.steps[2];
    let shapes: std::collections::BTreeSet<usize> =
        storage_processes_per_group(mid).into_values().collect();
    assert_eq!(
        shapes,
        [1, 2].into(),
        "not mid-rollout: {:?}",
        storage_processes_per_group(mid)
    );
    assert_eq!(
        storage_conf_keys(mid),
        [
            "fdbmonitor-conf-storage",
            "fdbmonitor-conf-storage-density-2"
        ]
    );
    assert_eq!(status_list(mid, "storageServersPerDisk"), [1, 2]);

    // The end: every storage group runs two servers (each old one was excluded and
    // replaced), and the old key is gone.
    let end = result.steps.last().unwrap();
    let finish = storage_processes_per_group(end);
    assert_eq!(finish.len(), 4, "{finish:?}");
    assert!(finish.values().all(|n| *n == 2), "{finish:?}");
    let excluded = admin_targets(&result, "exclude").join(" ");
    for old in start.keys() {
        assert!(
            excluded.contains(old.as_str()),
            "{old} not excluded: {excluded}"
        );
    }
    assert_eq!(
        storage_conf_keys(end),
        ["fdbmonitor-conf-storage-density-2"]
    );
    assert_eq!(status_list(end, "storageServersPerDisk"), [2]);
    assert_eq!(status_list(end, "imageTypes"), ["split"]);
    assert_eq!(end.fdb["lostShards"], 0);
}

/// Local volumes: the groups of a drained node cannot run elsewhere (their claims are
/// bound to it), stay Pending with the scheduler's volume conflict, and are replaced
/// after `failureDetectionTimeSeconds`; no invariant (fault tolerance, data) is broken
/// and the cluster ends Reconciled.
#[test]
fn groups_of_a_drained_node_with_local_volumes_are_replaced() {
    let result = run_file("replacements/local-volume-drain.yaml", None);
    assert_clean(&result);
    let drained = groups_on(&result.steps[0], "node-2");
    assert!(!drained.is_empty(), "nothing ran on node-2");
    let end = result.steps.last().unwrap();
    let after = group_ids(end);
    // The stateful groups were held Pending by their local volumes and replaced; the
    // stateless one (no claim) came back on another node and stayed.
    for id in drained.iter().filter(|id| !id.starts_with("stateless")) {
        assert!(!after.contains(id), "{id} was not replaced: {after:?}");
    }
    assert!(
        drained
            .iter()
            .any(|id| id.starts_with("stateless") && after.contains(id)),
        "{drained:?} {after:?}"
    );
    assert!(
        end.pods
            .iter()
            .all(|pod| pod.node.as_deref() != Some("node-2"))
    );
}

/// A claim naming a storage class the cluster does not have stays Pending, and so does
/// its pod: the operator says so in an Event naming the class, and neither replaces the
/// group nor recreates the claim, though the detection time (30 s) passes many times.
#[test]
fn a_claim_of_a_missing_storage_class_is_reported_and_not_recreated() {
    let spec = "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}, automationOptions: {replacements: {failureDetectionTimeSeconds: 30}}, processes: {storage: {volumeClaimTemplate: {spec: {storageClassName: fast-ssd, resources: {requests: {storage: 16Gi}}}}}}}";
    let steps = "  - reconcile: {maxPasses: 30}\n  - advance: 600\n";
    let result = fdb_e2e_tests::run(&fdb_e2e_tests::scenario(spec, steps), None);
    let reported = result.events.iter().any(|e| {
        e.source == EventSource::Operator
            && e.detail.starts_with("VolumeClaimUnbound")
            && e.detail.contains("\"fast-ssd\"")
    });
    assert!(reported, "no Event names the missing class");
    let replaced: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.detail.starts_with("ReplacementChosen"))
        .map(|e| e.detail.as_str())
        .collect();
    assert!(replaced.is_empty(), "{replaced:?}");
    let storage_claims = result
        .events
        .iter()
        .filter(|e| {
            e.action == "create" && e.target.starts_with("pvc/") && e.target.contains("storage")
        })
        .count();
    assert_eq!(storage_claims, 4, "claims recreated");
    assert!(
        result
            .violations
            .iter()
            .all(|v| v.invariant != "write-refused"),
        "{:?}",
        result.violations
    );
}

#[test]
fn a_failed_group_whose_coordinator_cannot_move_does_not_hold_the_replacement_budget() {
    let result = run_file("replacements/blocked-coordinator-budget.yaml", None);
    assert_clean(&result);
    assert_eq!(result.steps.last().unwrap().reconciled, Some(true));
    let chosen_at = |group: &str| {
        result
            .events
            .iter()
            .find(|e| {
                e.source == EventSource::Operator
                    && e.detail.starts_with("ReplacementChosen")
                    && e.detail.contains(&format!(" {group}:"))
            })
            .map(|e| e.time)
    };
    // node-1 went down at 393 s; with a 300 s detection time its storage groups are
    // replaced within minutes, not when the node returns (2793 s).
    for group in ["storage-1", "storage-4"] {
        let at = chosen_at(group).unwrap_or_else(|| panic!("{group} never replaced"));
        assert!(at < 1500, "{group} replaced at {at} s");
    }
    // log-1 hosts a coordinator that had nowhere to go while node-1 was down.
    let log_at = chosen_at("log-1");
    assert!(
        log_at.is_none_or(|at| at >= 2793),
        "log-1 replaced at {log_at:?} s"
    );
}
