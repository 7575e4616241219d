//! Removals and replacements (issue 9, Day-2 I): shrinks, requested removals, automatic
//! and misconfiguration replacements, stuck resources, operator crashes mid-removal.
//! Every scenario states its expected end with an `expect` step and must violate no
//! invariant.

use fdb_e2e_tests::{run, run_file, scenario, violated};
use fdb_simulation::result::{EventSource, SimulationResult, StepResult};

fn storage_groups(step: &StepResult) -> Vec<(String, String)> {
    step.cluster["status"]["processGroups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["processClass"] == "storage")
        .map(|g| {
            (
                g["processGroupID"].as_str().unwrap().to_owned(),
                g["faultDomain"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn admin_commands(result: &SimulationResult, action: &str) -> Vec<String> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == action)
        .map(|e| e.detail.clone())
        .collect()
}

fn assert_clean(result: &SimulationResult) {
    assert!(violated(result).is_empty(), "{:#?}", result.violations);
}

#[test]
fn shrinking_storage_excludes_removes_and_includes_one_group() {
    let result = run_file("removals/shrink-storage.yaml", None);
    assert_clean(&result);
    let end = result.steps.last().unwrap();
    let survivors = storage_groups(end);
    assert_eq!(survivors.len(), 3, "{survivors:?}");
    let zones: std::collections::BTreeSet<_> = survivors.iter().map(|(_, z)| z).collect();
    assert_eq!(zones.len(), 3, "survivors in distinct zones: {survivors:?}");
    let excludes = admin_commands(&result, "exclude");
    let includes = admin_commands(&result, "include");
    assert_eq!(excludes.len(), 1, "{excludes:?}");
    assert_eq!(includes.len(), 1, "{includes:?}");
    let removed = excludes[0].rsplit(':').next().unwrap().to_owned();
    assert!(includes[0].ends_with(&removed), "{includes:?}");
    assert!(!survivors.iter().any(|(id, _)| *id == removed));
    // The pod went before the PVC, and both after the exclusion completed.
    let order: Vec<&str> = result
        .events
        .iter()
        .filter(|e| {
            (e.source == EventSource::K8s && e.action == "delete")
                || (e.source == EventSource::Fdb
                    && ["exclude", "include"].contains(&e.action.as_str()))
        })
        .filter(|e| e.detail.contains(&removed) || e.target.contains(&removed))
        .map(|e| e.action.as_str())
        .collect();
    assert_eq!(
        order,
        ["exclude", "delete", "delete", "include"],
        "{order:?}"
    );
}

/// The shrink of `shrink-storage.yaml` with the operator crashing right after its first
/// `action`.
fn shrink_with_crash_after(action: &str) -> SimulationResult {
    let spec = "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}}";
    let steps = format!(
        "  - reconcile: {{}}\n  - restartOperator: {{after: {action}}}\n  - apply: {{spec: {{processCounts: {{storage: 3}}}}}}\n  - expect: {{within: 3600, reconciled: true, available: true, processGroups: {{storage: 3}}, pods: 16, excluded: []}}\n"
    );
    let yaml =
        scenario(spec, &steps).replace("seed: 3\n", "seed: 3\nworld: {nodes: 8, zones: 4}\n");
    run(&yaml, None)
}

#[test]
fn a_crash_right_after_the_exclude_of_a_shrink_still_converges() {
    let result = shrink_with_crash_after("exclude");
    assert_clean(&result);
    assert_eq!(admin_commands(&result, "include").len(), 1);
}

#[test]
fn a_crash_right_after_a_delete_of_a_shrink_still_converges() {
    let result = shrink_with_crash_after("delete");
    assert_clean(&result);
    assert_eq!(admin_commands(&result, "include").len(), 1);
}

#[test]
fn a_crash_right_after_the_include_of_a_shrink_still_converges() {
    // The group is included but still in the status: the next pass includes it again
    // (idempotent) and drops it.
    let result = shrink_with_crash_after("include");
    assert_clean(&result);
    assert!(!admin_commands(&result, "include").is_empty());
}

#[test]
fn a_crash_right_after_the_removal_is_chosen_still_converges() {
    // The first status patch of the shrink is the mark for removal.
    let result = shrink_with_crash_after("patch");
    assert_clean(&result);
}

#[test]
fn removing_a_coordinator_changes_coordinators_before_its_pod_goes() {
    let result = run_file("removals/remove-coordinator.yaml", None);
    assert_clean(&result);
    let actions: Vec<(&str, &str)> = result
        .events
        .iter()
        .filter(|e| e.step == 2)
        .filter(|e| {
            (e.source == EventSource::Fdb
                && ["exclude", "include", "coordinators"].contains(&e.action.as_str()))
                || (e.source == EventSource::K8s && e.action == "delete")
        })
        .map(|e| (e.action.as_str(), e.target.as_str()))
        .collect();
    assert_eq!(
        actions.first().map(|a| a.0),
        Some("coordinators"),
        "{actions:?}"
    );
    let coordinators = &result.steps.last().unwrap().fdb["coordinators"];
    let log_1_ip = result.steps[0]
        .pods
        .iter()
        .find(|p| p.name == "sample-log-1")
        .and_then(|p| p.ip.clone())
        .unwrap();
    assert!(
        !coordinators.to_string().contains(&format!("\"{log_1_ip}:")),
        "{coordinators}"
    );
    assert!(
        actions.contains(&("delete", "pod/sample-log-1")),
        "{actions:?}"
    );
}

#[test]
fn a_pod_stuck_terminating_leaves_the_cluster_reconciled_with_a_pending_removal() {
    let result = run_file("removals/stuck-terminating.yaml", None);
    assert_clean(&result);
    let stuck = &result.steps[3];
    let generations = &stuck.cluster["status"]["generations"];
    assert!(
        generations["hasPendingRemoval"].is_number(),
        "{generations}"
    );
    assert_eq!(stuck.reconciled, Some(true));
    let healed = result.steps.last().unwrap();
    assert!(healed.cluster["status"]["generations"]["hasPendingRemoval"].is_null());
    assert!(
        !storage_groups(healed)
            .iter()
            .any(|(id, _)| id == "storage-4")
    );
}

#[test]
fn groups_on_nodes_down_for_hours_are_replaced_one_at_a_time() {
    let result = run_file("removals/node-down.yaml", None);
    assert_clean(&result);
    let replacements: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Operator && e.detail.starts_with("ReplacementChosen"))
        .map(|e| e.detail.as_str())
        .collect();
    assert!(replacements.len() >= 2, "{replacements:?}");
    for event in &replacements {
        assert_eq!(
            event.matches("failureDetectionTimeSeconds").count(),
            1,
            "one at a time: {event}"
        );
    }
    let end = result.steps.last().unwrap();
    assert_eq!(end.fdb["lostShards"], 0, "{}", end.fdb["lostShards"]);
}

/// Issue 19: the include after a removal uses what was excluded, not what the options
/// say now. Flipped either way mid-removal, nothing stays excluded (before the fix the
/// locality of the removed group stayed excluded while the status said Reconciled).
#[test]
fn flipping_locality_exclusions_mid_removal_leaves_nothing_excluded() {
    for (file, excluded) in [
        (
            "removals/flip-localities-mid-removal.yaml",
            "locality_instance_id:",
        ),
        ("removals/flip-to-localities-mid-removal.yaml", "127."),
    ] {
        let result = run_file(file, None);
        assert_clean(&result);
        let excludes = admin_commands(&result, "exclude");
        let includes = admin_commands(&result, "include");
        assert!(
            excludes.iter().any(|e| e.contains(excluded)),
            "{file}: {excludes:?}"
        );
        assert!(
            includes.iter().any(|i| i.contains(excluded)),
            "{file}: the excluded target is included again: {includes:?}"
        );
        let end = result.steps.last().unwrap();
        assert_eq!(end.fdb["excluded"], serde_json::json!([]), "{file}");
    }
}

/// fdbcli refuses an exclusion that would leave less than 10 % free space (four storage
/// groups of 4 GiB on 16 GiB volumes shrunk to one). The operator never adds `FORCE`
/// (as the Go operator), deletes nothing, loses nothing, and each failed pass leaves an
/// Event quoting FoundationDB's reason.
#[test]
fn an_exclude_refused_for_free_space_removes_nothing_and_says_why() {
    let result = run_file("removals/exclude-no-space.yaml", None);
    assert_clean(&result);
    let end = result.steps.last().unwrap();
    assert_eq!(storage_groups(end).len(), 4);
    assert_eq!(end.fdb["processes"].as_array().unwrap().len(), 7);
    assert_eq!(end.fdb["lostShards"], 0);
    assert!(admin_commands(&result, "exclude").is_empty());
    let deleted = result
        .events
        .iter()
        .any(|e| e.source == EventSource::K8s && e.action == "delete");
    assert!(!deleted, "nothing may be deleted");
    let why =
        "ERROR: This exclude may cause the total free space in the cluster to drop below 10%.";
    let refusals: Vec<_> = result
        .events
        .iter()
        .filter(|e| {
            e.target == "event/sample"
                && e.detail.starts_with("RemovalBlocked")
                && e.detail.contains(why)
        })
        .collect();
    assert!(!refusals.is_empty(), "no Event names the refusal");
    assert!(
        refusals
            .iter()
            .all(|e| !e.detail.contains("exclude FORCE locality")),
        "the operator never forces an exclusion"
    );
}

/// Storage metrics missing from `status json` (issue 36): fdbcli refuses every
/// exclusion; the operator forces nothing, removes nothing, says why, and tries again
/// after a back-off (30 s, FoundationDB's advice, then 60, 120, 240) instead of every
/// pass; once the metrics are back the shrink completes.
#[test]
fn an_exclude_refused_for_missing_storage_metrics_is_retried_with_a_backoff() {
    let result = run_file("removals/exclude-metrics-missing.yaml", None);
    assert_clean(&result);
    let refused: Vec<_> = result
        .tool_runs
        .iter()
        .filter(|run| run.command.starts_with("exclude") && run.exit_code == 1)
        .collect();
    // In the 400 s the fault lasts: attempts at 0, 30, 90, 210 (and 450 is later).
    let during: Vec<u64> = refused
        .iter()
        .filter(|r| r.step <= 3)
        .map(|r| r.time)
        .collect();
    assert!(
        (2..=5).contains(&during.len()),
        "refused attempts at {during:?}"
    );
    for pair in during.windows(2) {
        assert!(pair[1] - pair[0] >= 30, "retried too soon: {during:?}");
    }
    assert!(
        refused.iter().all(|r| !r.command.contains("FORCE")),
        "the operator never forces an exclusion"
    );
    let why = "Could not calculate the impact of this exclude on the total free space";
    assert!(
        result.events.iter().any(|e| e.target == "event/sample"
            && e.detail.starts_with("RemovalBlocked")
            && e.detail.contains(why)),
        "no Event names the refusal"
    );
    // Nothing was removed while the metrics were missing.
    let storage_pods = |step: &StepResult| {
        step.pods
            .iter()
            .filter(|p| p.name.contains("-storage-"))
            .count()
    };
    assert_eq!(storage_pods(&result.steps[4]), 4);
    // The shrink then completed.
    let end = result.steps.last().unwrap();
    assert_eq!(storage_groups(end).len(), 3);
    assert_eq!(end.fdb["lostShards"], 0);
}
