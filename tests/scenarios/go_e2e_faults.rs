//! The Go operator's e2e cases (issue 25) that need a user's maintenance zone, a user's
//! `include all`, a slow disk (`ioLatency`) or a pod cut off from the Kubernetes API
//! (`kubeApiUnreachable`), each named after its Go case, at our sizes. Zones are the
//! process group IDs (`faultDomain.valueFrom: $FDB_INSTANCE_ID`) where a case names the
//! zone of a group, so the scenario can name it.

use fdb_e2e_tests::{conditions_of, reporting, scenario};
use fdb_simulation::result::{SimulationResult, StepResult};

use super::go_e2e::{SMALL, assert_clean, group_status, has_pod, kills_in, run_case};

/// SMALL with every process group its own zone (named like the group).
fn by_group() -> String {
    format!("{SMALL}, faultDomain: {{key: foundationdb.org/instance, valueFrom: $FDB_INSTANCE_ID}}")
}

const UNIFIED: &str = "version: 7.1.57, imageType: unified, processCounts: {storage: 4, cluster_controller: 1}, minimumUptimeSecondsForBounce: 60";

/// Whether any step shows `group` marked for removal.
fn ever_marked(result: &SimulationResult, group: &str) -> bool {
    result
        .steps
        .iter()
        .any(|step| group_status(step, group).is_some_and(|g| g["removalTimestamp"].is_string()))
}

/// `maintenance` commands of the run, as `(step, by, detail)`.
fn maintenance_commands(result: &SimulationResult) -> Vec<(usize, String, String)> {
    result
        .events
        .iter()
        .filter(|e| e.action == "maintenance")
        .map(|e| (e.step, e.by.clone().unwrap_or_default(), e.detail.clone()))
        .collect()
}

// ---- Maintenance zone ---------------------------------------------------------------

/// test_operator: "a process is in the maintenance zone" / "should not replace the process
/// group". Automatic replacements after 30 s, as in the Go case; the user puts storage-1's zone in
/// maintenance and its processes stop reporting (the Go case partitions the pod). For
/// five minutes the group is not replaced; once it is back and maintenance is off, the
/// cluster reconciles without ever having marked it.
#[test]
fn go_e2e_operator_a_process_is_in_the_maintenance_zone_should_not_replace_the_process_group() {
    let spec = format!(
        "{{{}, automationOptions: {{replacements: {{enabled: true, failureDetectionTimeSeconds: 30}}}}}}",
        by_group()
    );
    let steps = "  - reconcile: {}\n  - act: {as: user, maintenance: {zone: storage-1, seconds: 600}}\n  - fault: {kind: processMissing, processGroup: storage-1}\n  - advance: 300\n  - expect: {within: 0, maintenanceZone: storage-1, processGroups: {storage: 4}, pods: 17, conditions: {storage-1: [MissingProcesses]}}\n  - heal: {processGroup: storage-1}\n  - act: {as: user, maintenance: off}\n  - expect: {within: 1800, reconciled: true, available: true, maintenanceZone: null, pods: 17}\n";
    let result = run_case(
        "go_e2e_operator_a_process_is_in_the_maintenance_zone_should_not_replace_the_process_group",
        &scenario(&spec, steps),
    );
    assert_eq!(reporting(&result.steps[3], "storage-1"), 0);
    assert!(!ever_marked(&result, "storage-1"), "storage-1 was replaced");
    assert!(has_pod(result.steps.last().unwrap(), "sample-storage-1"));
    // No replacement was even started (a whole replacement fits in one step).
    let created: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.step >= 1 && e.action == "create" && e.target.starts_with("pod/"))
        .map(|e| e.target.as_str())
        .collect();
    assert!(created.is_empty(), "{created:?}");
    assert_clean(&result);
}

/// test_operator: "the operator is allowed to reset the maintenance zone" / "should reset
/// the maintenance mode once the Pod was restarted". With the maintenance mode checker
/// on, the user puts storage-1's zone in maintenance while its pod is being recreated
/// (deleted, and Pending until healed; the Go case marks the group in FoundationDB's
/// maintenance list instead): the zone stays while the pod is away, and the operator
/// resets it once the pod runs again, long before it would expire.
#[test]
fn go_e2e_operator_should_reset_the_maintenance_mode_once_the_pod_was_restarted() {
    let spec = format!(
        "{{{}, automationOptions: {{maintenanceModeOptions: {{UseMaintenanceModeChecker: true}}}}}}",
        by_group()
    );
    let steps = "  - reconcile: {}\n  - fault: {kind: podPending, processGroup: storage-1}\n  - act: {as: user, delete: pod/sample-storage-1}\n  - act: {as: user, maintenance: {zone: storage-1, seconds: 3600}}\n  - advance: 60\n  - expect: {within: 0, maintenanceZone: storage-1}\n  - heal: {processGroup: storage-1}\n  - expect: {within: 600, maintenanceZone: null, reconciled: true, available: true}\n";
    let result = run_case(
        "go_e2e_operator_should_reset_the_maintenance_mode_once_the_pod_was_restarted",
        &scenario(&spec, steps),
    );
    let commands = maintenance_commands(&result);
    assert!(
        commands
            .iter()
            .any(|(step, by, detail)| *step == 7 && by != "user" && detail.contains("off")),
        "the operator reset the zone: {commands:?}"
    );
    assert!(!ever_marked(&result, "storage-1"));
    assert_clean(&result);
}

/// test_operator_upgrades: "one process is under maintenance". A storage group's zone is
/// in maintenance when the cluster is upgraded 7.1 -> 7.3 (incompatible): the upgrade
/// stages but does not restart the cluster while the zone is in maintenance; once the
/// user turns maintenance off, it finishes.
#[test]
fn go_e2e_upgrades_one_process_is_under_maintenance() {
    let spec = format!("{{{}}}", by_group());
    let steps = "  - reconcile: {}\n  - act: {as: user, maintenance: {zone: storage-1, seconds: 3600}}\n  - apply: {spec: {version: 7.3.43}}\n  - advance: 300\n  - expect: {within: 0, available: true, runningVersion: \"7.1.57\", maintenanceZone: storage-1}\n  - act: {as: user, maintenance: off}\n  - expect: {within: 3600, reconciled: true, available: true, version: \"7.3.43\", runningVersion: \"7.3.43\"}\n";
    let result = run_case(
        "go_e2e_upgrades_one_process_is_under_maintenance",
        &scenario(&spec, steps),
    );
    assert_clean(&result);
}

// ---- Exclusions -------------------------------------------------------------------

/// The exclusion timestamp of a group in a step, if any.
fn exclusion_timestamp(step: &StepResult, group: &str) -> Option<String> {
    group_status(step, group)?["exclusionTimestamp"]
        .as_str()
        .map(str::to_owned)
}

/// test_operator: "a process is marked for removal and was excluded" / "the process gets
/// included again" / "should be excluded a second time". With `removalMode: None` a
/// stateless group marked for removal is excluded and stays; the user runs `include all`;
/// the operator sees its processes included again and excludes them a second time, with a
/// new, later exclusion timestamp.
#[test]
fn go_e2e_operator_should_be_excluded_a_second_time() {
    let spec = format!("{{{SMALL}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {automationOptions: {removalMode: None}, processGroupsToRemove: [stateless-1]}}\n  - expect: {within: 1800, available: true, excluded: [\"locality_instance_id:stateless-1\"]}\n  - advance: 300\n  - act: {as: user, includeAll: true}\n  - expect: {within: 1800, available: true, excluded: [\"locality_instance_id:stateless-1\"]}\n  - advance: 300\n";
    let result = run_case(
        "go_e2e_operator_should_be_excluded_a_second_time",
        &scenario(&spec, steps),
    );
    let first = exclusion_timestamp(&result.steps[3], "stateless-1").expect("excluded once");
    assert_eq!(
        result.steps[4].fdb["excluded"],
        serde_json::json!([]),
        "include all lifted it"
    );
    let second = exclusion_timestamp(&result.steps[6], "stateless-1").expect("excluded again");
    // RFC 3339 in UTC, second precision: the text orders as the time.
    assert!(first < second, "{first} then {second}");
    for step in &result.steps[1..] {
        assert!(has_pod(step, "sample-stateless-1"), "removalMode None");
    }
    assert_clean(&result);
}

// ---- Slow disks -------------------------------------------------------------------

/// test_operator: "a Pod has high I/O latency" / "should remove the targeted process".
/// A storage group's disk answers every I/O in 2 s (its data drains at a tenth of the
/// rate); the user marks it for removal: it is excluded and removed all the same.
#[test]
fn go_e2e_operator_a_pod_has_high_io_latency_should_remove_the_targeted_process() {
    let spec = format!("{{{SMALL}}}");
    let steps = "  - reconcile: {}\n  - fault: {kind: ioLatency, processGroup: storage-1, milliseconds: 2000}\n  - apply: {spec: {processGroupsToRemove: [storage-1]}}\n  - expect: {within: 3600, reconciled: true, available: true, processGroups: {storage: 4}, pods: 17, excluded: []}\n";
    let result = run_case(
        "go_e2e_operator_a_pod_has_high_io_latency_should_remove_the_targeted_process",
        &scenario(&spec, steps),
    );
    let end = result.steps.last().unwrap();
    assert!(!has_pod(end, "sample-storage-1"));
    assert!(group_status(end, "storage-1").is_none());
    // The slow disk drained slowly: at the usual rate even a full disk drains in 60 s
    // (the default exclusionSeconds), so its pod would go within about a minute.
    let at = |action: &str, target: &str| {
        result
            .events
            .iter()
            .find(|e| e.action == action && e.target == target)
            .map(|e| e.time)
            .unwrap()
    };
    let drained = at("delete", "pod/sample-storage-1") - at("exclude", "database");
    assert!(drained >= 120, "drained in {drained} s");
    assert_clean(&result);
}

// ---- A pod cut off from the Kubernetes API ------------------------------------------

const CURRENT: &str = "foundationdb.org/launcher-current-configuration";

fn pod_of<'a>(step: &'a StepResult, name: &str) -> &'a fdb_simulation::result::PodSummary {
    step.pods.iter().find(|p| p.name == name).unwrap()
}

fn restarts(step: &StepResult, name: &str) -> i32 {
    pod_of(step, name)
        .containers
        .iter()
        .map(|c| c.restart_count)
        .sum()
}

/// test_operator: "a FDB pod is partitioned from the Kubernetes API" / "should keep the
/// pod up and running" (unified image). The monitor of storage-1 cannot annotate its pod
/// while a storage knob rolls out: the group shows IncorrectConfigMap, its processes keep
/// reporting and its pod is not restarted; once the partition heals the pod's annotation
/// follows and the cluster reconciles.
#[test]
fn go_e2e_operator_a_fdb_pod_is_partitioned_from_the_kubernetes_api_should_keep_the_pod_up_and_running()
 {
    let spec = format!("{{{UNIFIED}}}");
    let steps = "  - reconcile: {}\n  - fault: {kind: kubeApiUnreachable, processGroup: storage-1}\n  - apply: {spec: {processes: {storage: {customParameters: [\"knob_max_trace_lines=1000000\"]}}}}\n  - advance: 300\n  - expect: {within: 0, available: true, conditions: {storage-1: [IncorrectConfigMap]}}\n  - heal: {processGroup: storage-1}\n  - expect: {within: 1800, reconciled: true, available: true}\n";
    let result = run_case(
        "go_e2e_operator_a_fdb_pod_is_partitioned_from_the_kubernetes_api_should_keep_the_pod_up_and_running",
        &scenario(&spec, steps),
    );
    let pod = "sample-storage-1";
    let before = &result.steps[0];
    for step in &result.steps[1..5] {
        assert_eq!(reporting(step, "storage-1"), 1, "step {}", step.index);
        assert_eq!(
            restarts(step, pod),
            restarts(before, pod),
            "step {}",
            step.index
        );
    }
    assert!(
        conditions_of(&result.steps[4], "storage-1").contains(&"IncorrectConfigMap".to_owned())
    );
    let annotation = |step: &StepResult| pod_of(step, pod).annotations.get(CURRENT).cloned();
    assert_eq!(annotation(&result.steps[4]), annotation(before));
    let end = result.steps.last().unwrap();
    assert_ne!(annotation(end), annotation(before));
    assert!(annotation(end).unwrap().contains("knob_max_trace_lines"));
    assert_clean(&result);
}

/// test_operator_upgrades: "one process cannot connect to the Kubernetes API" (unified
/// image, 7.1 -> 7.3, incompatible). The monitor of storage-1 cannot tell what it runs:
/// the upgrade does not restart the cluster for three minutes; once the partition heals,
/// it finishes.
#[test]
fn go_e2e_upgrades_one_process_cannot_connect_to_the_kubernetes_api() {
    let spec = format!("{{{UNIFIED}}}");
    let steps = "  - reconcile: {}\n  - fault: {kind: kubeApiUnreachable, processGroup: storage-1}\n  - apply: {spec: {version: 7.3.43}}\n  - advance: 180\n  - expect: {within: 0, available: true, runningVersion: \"7.1.57\"}\n  - heal: {processGroup: storage-1}\n  - expect: {within: 3600, reconciled: true, available: true, version: \"7.3.43\", runningVersion: \"7.3.43\"}\n";
    let result = run_case(
        "go_e2e_upgrades_one_process_cannot_connect_to_the_kubernetes_api",
        &scenario(&spec, steps),
    );
    assert_clean(&result);
}

// ---- Upgrades with a faulty pod -----------------------------------------------------

/// test_operator_upgrades: "upgrading a cluster with a crash looping sidecar process"
/// (7.1 -> 7.3, incompatible). Automatic replacements off; storage-1's sidecar stops
/// answering while its processes run. The upgrade stages everywhere else but does not
/// restart the cluster while that pod cannot stage (two minutes, as the Go case waits);
/// once the sidecar is back, the upgrade finishes and no process is left behind.
#[test]
fn go_e2e_upgrades_upgrading_a_cluster_with_a_crash_looping_sidecar_process() {
    let spec = format!("{{{SMALL}, automationOptions: {{replacements: {{enabled: false}}}}}}");
    let steps = "  - reconcile: {}\n  - fault: {kind: sidecarUnreachable, processGroup: storage-1}\n  - advance: 60\n  - apply: {spec: {version: 7.3.43}}\n  - advance: 120\n  - expect: {within: 0, available: true, runningVersion: \"7.1.57\"}\n  - heal: {processGroup: storage-1}\n  - expect: {within: 3600, reconciled: true, available: true, version: \"7.3.43\", runningVersion: \"7.3.43\"}\n";
    let result = run_case(
        "go_e2e_upgrades_upgrading_a_cluster_with_a_crash_looping_sidecar_process",
        &scenario(&spec, steps),
    );
    // Only the sidecar is down: the processes keep reporting, no group misses them.
    let partitioned = &result.steps[2];
    assert_eq!(reporting(partitioned, "storage-1"), 1);
    for group in partitioned.cluster["status"]["processGroups"]
        .as_array()
        .unwrap()
    {
        let id = group["processGroupID"].as_str().unwrap();
        assert!(
            !conditions_of(partitioned, id).contains(&"MissingProcesses".to_owned()),
            "{id}"
        );
    }
    assert!(!ever_marked(&result, "storage-1"));
    assert_clean(&result);
}

/// test_operator_upgrades: "upgrading a cluster and one coordinator is not restarted"
/// (7.1 -> 7.3, incompatible). One coordinator (log-1) is in
/// `buggify.ignoreDuringRestart`: the upgrade's kill restarts every other process (the
/// cluster-wide bounce, judged by its downtime as a kill of every process is), the two
/// other coordinators form a quorum on the new version, and the cluster must still
/// finish the upgrade with every process on the new one (the Go case waits for
/// `incompatible_connections` to empty), available, as the Go case checks with its
/// availability invariant on.
#[test]
fn go_e2e_upgrades_upgrading_a_cluster_and_one_coordinator_is_not_restarted() {
    let spec = format!("{{{SMALL}, buggify: {{ignoreDuringRestart: [log-1]}}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {version: 7.3.43}}\n  - expect: {within: 3600, available: true, version: \"7.3.43\", runningVersion: \"7.3.43\"}\n";
    let result = run_case(
        "go_e2e_upgrades_upgrading_a_cluster_and_one_coordinator_is_not_restarted",
        &scenario(&spec, steps),
    );
    assert_clean(&result);
}

/// test_operator_upgrades: "upgrading a cluster and multiple processes are not restarted"
/// (7.1 -> 7.3, incompatible). Half of the stateless groups and half of the log groups
/// are in `buggify.ignoreDuringRestart` (the Go case picks them at random; here log-3, a
/// coordinator, and log-4, so a majority of the coordinators is restarted): the
/// upgrade's kill restarts every other process, and the cluster still ends with every
/// process on the new version, available.
#[test]
fn go_e2e_upgrades_upgrading_a_cluster_and_multiple_processes_are_not_restarted() {
    let spec = format!(
        "{{{SMALL}, buggify: {{ignoreDuringRestart: [stateless-1, stateless-2, stateless-3, stateless-4, log-3, log-4]}}}}"
    );
    let steps = "  - reconcile: {}\n  - apply: {spec: {version: 7.3.43}}\n  - expect: {within: 3600, available: true, version: \"7.3.43\", runningVersion: \"7.3.43\"}\n";
    let result = run_case(
        "go_e2e_upgrades_upgrading_a_cluster_and_multiple_processes_are_not_restarted",
        &scenario(&spec, steps),
    );
    assert_clean(&result);
}

/// test_operator_upgrades: "upgrading a cluster and no coordinator is restarted" (7.1 ->
/// 7.3, incompatible). Every coordinator (log-1, log-2, log-3) is in
/// `buggify.ignoreDuringRestart`. The Go operator kills every other process, so the
/// restarted ones wait on 7.3 for a quorum that stays on 7.1 and the database is down
/// until the Go case restarts the coordinators (its availability check is off). Ours
/// refuses that kill: for five minutes (the Go case's `Consistently` on the upgrade being
/// pending) the database stays available on 7.1 and a Warning Event
/// `UpgradeKillRefused` names the coordinators; once the user takes them out of the
/// list (the Go case's last step), one kill of every process finishes the upgrade,
/// available. The Go case's `pkill` of the coordinators is left out: after a refused
/// kill it would restart them alone onto the staged 7.3 and split the cluster.
#[test]
fn go_e2e_upgrades_upgrading_a_cluster_and_no_coordinator_is_restarted() {
    let spec = format!("{{{SMALL}, buggify: {{ignoreDuringRestart: [log-1, log-2, log-3]}}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {version: 7.3.43}}\n  - advance: 600\n  - expect: {throughout: 300, available: true, version: \"7.1.57\", runningVersion: \"7.1.57\"}\n  - apply: {spec: {buggify: {ignoreDuringRestart: null}}}\n  - expect: {within: 3600, available: true, version: \"7.3.43\", runningVersion: \"7.3.43\"}\n";
    let result = run_case(
        "go_e2e_upgrades_upgrading_a_cluster_and_no_coordinator_is_restarted",
        &scenario(&spec, steps),
    );
    assert_clean(&result);
    let refused: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.step < 4 && e.action == "event")
        .filter(|e| e.detail.starts_with("UpgradeKillRefused"))
        .map(|e| e.detail.as_str())
        .collect();
    let named = ["log-1", "log-2", "log-3"];
    assert!(
        refused
            .iter()
            .any(|detail| named.iter().all(|group| detail.contains(group))),
        "{refused:?}"
    );
    assert!(
        kills_in(&result, 0..4).is_empty(),
        "{:?}",
        kills_in(&result, 0..4)
    );
}
