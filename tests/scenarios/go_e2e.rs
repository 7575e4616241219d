//! The Go operator's own end-to-end cases (issue 25), each as a scenario at our sizes:
//! the case's setup, its action and its assertion (with `expect` where the scenario
//! language says it, else read from the result). Each test is named after its Go case
//! (`e2e/test_operator*/...` in FoundationDB/fdb-kubernetes-operator); cases that cannot
//! be expressed yet are listed in docs/simulation.md. The cases that need maintenance,
//! `include all`, slow disks or a pod cut off from the API are in `go_e2e_faults.rs`.

use fdb_e2e_tests::{conditions_of, run, scenario, violated};
use fdb_simulation::result::{EventSource, SimulationResult, StepResult};

/// Every violation, as `invariant: detail`.
pub(crate) fn violations(result: &SimulationResult) -> Vec<String> {
    result
        .violations
        .iter()
        .map(|v| format!("{}: {}", v.invariant, v.detail))
        .collect()
}

pub(crate) fn assert_clean(result: &SimulationResult) {
    assert!(violated(result).is_empty(), "{:#?}", violations(result));
}

/// Runs `yaml`; with `GO_E2E_DUMP` set (a directory), writes the result there as
/// `<case>.json`, to read a failure.
pub(crate) fn run_case(case: &str, yaml: &str) -> SimulationResult {
    let result = run(yaml, None);
    if let Ok(dir) = std::env::var("GO_E2E_DUMP") {
        let path = std::path::Path::new(&dir).join(format!("{case}.json"));
        std::fs::write(path, serde_json::to_vec_pretty(&result).unwrap()).unwrap();
    }
    result
}

/// The `fdbcli kill` commands of a step range, as their details.
pub(crate) fn kills_in(result: &SimulationResult, steps: std::ops::Range<usize>) -> Vec<String> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == "kill")
        .filter(|e| steps.contains(&e.step))
        .map(|e| e.detail.clone())
        .collect()
}

/// The addresses (`IP:port`) of a group's processes in a step's database.
fn addresses_of(step: &StepResult, group: &str) -> Vec<String> {
    step.fdb["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["locality"]["instance_id"] == group)
        .filter_map(|p| p["address"].as_str().map(str::to_owned))
        .collect()
}

/// Each process of a step's database as (its group, the version it runs).
fn versions_by_group(step: &StepResult) -> Vec<(String, String)> {
    let text = |value: &serde_json::Value| value.as_str().unwrap_or_default().to_owned();
    step.fdb["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (text(&p["locality"]["instance_id"]), text(&p["version"])))
        .collect()
}

/// The status entry of a process group in a step, if any.
pub(crate) fn group_status<'a>(step: &'a StepResult, group: &str) -> Option<&'a serde_json::Value> {
    step.cluster["status"]["processGroups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["processGroupID"] == group)
}

pub(crate) fn has_pod(step: &StepResult, name: &str) -> bool {
    step.pods.iter().any(|p| p.name == name)
}

pub(crate) const SMALL: &str = "version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}, minimumUptimeSecondsForBounce: 60";

// ---- Safety switches --------------------------------------------------------------

/// test_operator_upgrades: "upgrading a cluster where one coordinator gets restarted
/// during the staging phase". With `killProcesses: false` every group is staged and
/// nothing killed; the user restarts coordinator log-1 (the Go case's `pkill`), which
/// comes up on the staged 7.3 binary: the other two keep the quorum, the database stays
/// available on 7.1. Once kills are allowed the upgrade ends, nothing lost. The only
/// violation is the mixed versions the user's restart made (kills were off).
#[test]
fn go_e2e_upgrade_where_one_coordinator_gets_restarted_during_the_staging_phase() {
    let spec = format!("{{{SMALL}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {automationOptions: {killProcesses: false}}}\n  - reconcile: {}\n  - apply: {spec: {version: 7.3.43}}\n  - advance: 600\n  - act: {as: user, kill: [log-1]}\n  - advance: 600\n  - expect: {within: 60, available: true, runningVersion: \"7.1.57\"}\n  - apply: {spec: {automationOptions: {killProcesses: true}}}\n  - expect: {within: 3600, reconciled: true, available: true, teamsHealthy: true, version: \"7.3.43\", runningVersion: \"7.3.43\"}\n";
    let result = run_case(
        "go_e2e_upgrade_where_one_coordinator_gets_restarted_during_the_staging_phase",
        &scenario(&spec, steps),
    );
    // While kills are off, nothing was killed by the operator, and every group was
    // staged: IncorrectCommandLine on all of them.
    let staged = &result.steps[4];
    let groups = staged.cluster["status"]["processGroups"]
        .as_array()
        .unwrap();
    assert_eq!(groups.len(), 17);
    for group in groups {
        let id = group["processGroupID"].as_str().unwrap();
        assert!(
            conditions_of(staged, id).contains(&"IncorrectCommandLine".to_owned()),
            "{id}: {:?}",
            conditions_of(staged, id)
        );
    }
    // The restarted process is a coordinator, on the target, beside the others on 7.1.
    let coordinators = staged.fdb["coordinators"].as_array().unwrap();
    let log_1 = addresses_of(staged, "log-1");
    assert!(
        log_1.iter().any(|a| coordinators.iter().any(|c| c == a)),
        "log-1 ({log_1:?}) must be a coordinator: {coordinators:?}"
    );
    let split = &result.steps[6];
    let versions = versions_by_group(split);
    for (group, version) in &versions {
        let wanted = if group == "log-1" { "7.3.43" } else { "7.1.57" };
        assert_eq!(version, wanted, "{group}: {versions:?}");
    }
    let operator_kills: Vec<String> = result
        .events
        .iter()
        .filter(|e| e.action == "kill" && (3..8).contains(&e.step))
        .filter(|e| e.by.as_deref() != Some("user"))
        .map(|e| e.detail.clone())
        .collect();
    assert!(operator_kills.is_empty(), "{operator_kills:?}");
    let restarted_at = result.steps[5].time;
    for violation in &result.violations {
        assert!(
            violation.invariant == "mixed-version-bounce" && violation.time >= restarted_at,
            "only the versions the user's restart mixed: {:#?}",
            violations(&result)
        );
    }
}

/// test_operator: "using the buggify option to ignore a process during the restart" /
/// "should not restart the process on the ignore list". A knob change for every class
/// while one stateless group is in `buggify.ignoreDuringRestart` (by process group ID, as
/// the Go API says): the others are restarted, that one never is, and it keeps
/// IncorrectCommandLine.
#[test]
fn go_e2e_operator_should_not_restart_the_process_on_the_ignore_list() {
    let spec = format!("{{{SMALL}, buggify: {{ignoreDuringRestart: [stateless-1]}}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {processes: {general: {customParameters: [\"knob_max_trace_lines=1000000\"]}}}}\n  - advance: 900\n  - expect: {within: 0, available: true}\n  - advance: 60\n";
    let result = run_case(
        "go_e2e_operator_should_not_restart_the_process_on_the_ignore_list",
        &scenario(&spec, steps),
    );
    let before = &result.steps[0];
    let ignored = addresses_of(before, "stateless-1");
    assert_eq!(ignored.len(), 1, "{ignored:?}");
    let kills = kills_in(&result, 1..5);
    assert!(!kills.is_empty(), "the other processes are restarted");
    for kill in &kills {
        assert!(
            !kill.split_whitespace().any(|a| a == ignored[0]),
            "{kill} restarts the ignored {}",
            ignored[0]
        );
    }
    // The others run the knob; the ignored one keeps the condition, for a whole minute.
    for step in &result.steps[3..5] {
        assert!(
            conditions_of(step, "stateless-1").contains(&"IncorrectCommandLine".to_owned()),
            "{:?}",
            conditions_of(step, "stateless-1")
        );
        assert!(conditions_of(step, "stateless-2").is_empty());
    }
    assert_clean(&result);
}

/// test_operator: "a process group is set to be blocked for removal" / "should exclude the
/// Pod but not remove the resources" (pending in the Go suite), and the lifting of the
/// block afterwards. A stateless group in `buggify.blockRemoval` is marked for removal: it
/// is replaced and excluded, but its pod stays; once the block is lifted it goes.
#[test]
fn go_e2e_operator_should_exclude_the_pod_but_not_remove_the_resources() {
    let spec = format!("{{{SMALL}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {buggify: {blockRemoval: [stateless-1]}, processGroupsToRemove: [stateless-1]}}\n  - expect: {within: 1800, available: true, excluded: [\"locality_instance_id:stateless-1\"], pods: 18}\n  - advance: 600\n  - apply: {spec: {buggify: {blockRemoval: []}}}\n  - expect: {within: 1800, reconciled: true, available: true, excluded: [], pods: 17}\n";
    let result = run_case(
        "go_e2e_operator_should_exclude_the_pod_but_not_remove_the_resources",
        &scenario(&spec, steps),
    );
    for step in &result.steps[2..5] {
        assert!(has_pod(step, "sample-stateless-1"), "step {}", step.index);
        let group = group_status(step, "stateless-1").unwrap();
        assert!(group["removalTimestamp"].is_string(), "{group}");
    }
    // Fully excluded, for ten minutes, and still there.
    let held = group_status(&result.steps[3], "stateless-1").unwrap();
    assert!(held["exclusionTimestamp"].is_string(), "{held}");
    let end = result.steps.last().unwrap();
    assert!(!has_pod(end, "sample-stateless-1"));
    assert!(group_status(end, "stateless-1").is_none());
    assert_clean(&result);
}

/// test_operator: "a process group should be removed and deletions are disabled and a new
/// knob is rolled out" / "should update the pod that is marked for removal". With
/// `removalMode: None` a storage group marked for removal is excluded but never taken
/// apart; a storage knob rolled out while kills are off leaves it IncorrectCommandLine;
/// once kills are on again it is restarted with the others, and stays marked.
#[test]
fn go_e2e_operator_should_update_the_pod_that_is_marked_for_removal() {
    let spec = format!("{{{SMALL}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {automationOptions: {removalMode: None}, processGroupsToRemove: [storage-1]}}\n  - expect: {within: 3600, available: true, excluded: [\"locality_instance_id:storage-1\"], processGroups: {storage: 4}}\n  - apply: {spec: {automationOptions: {killProcesses: false}, processes: {storage: {customParameters: [\"knob_max_trace_lines=1000000\"]}}}}\n  - advance: 600\n  - apply: {spec: {automationOptions: {killProcesses: true}}}\n  - advance: 900\n  - expect: {within: 0, available: true}\n";
    let result = run_case(
        "go_e2e_operator_should_update_the_pod_that_is_marked_for_removal",
        &scenario(&spec, steps),
    );
    let staged = &result.steps[4];
    assert!(
        conditions_of(staged, "storage-1").contains(&"IncorrectCommandLine".to_owned()),
        "{:?}",
        conditions_of(staged, "storage-1")
    );
    assert!(kills_in(&result, 3..5).is_empty());
    for step in &result.steps[2..] {
        assert!(
            has_pod(step, "sample-storage-1"),
            "step {}: removalMode None",
            step.index
        );
    }
    let end = result.steps.last().unwrap();
    let group = group_status(end, "storage-1").unwrap();
    assert!(group["removalTimestamp"].is_string(), "{group}");
    assert!(
        !conditions_of(end, "storage-1").contains(&"IncorrectCommandLine".to_owned()),
        "{:?}",
        conditions_of(end, "storage-1")
    );
    let knob = end.fdb["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["locality"]["instance_id"] == "storage-1")
        .all(|p| {
            p["commandLine"]
                .as_str()
                .unwrap()
                .contains("knob_max_trace_lines=1000000")
        });
    assert!(knob, "storage-1 runs the new knob");
    assert_clean(&result);
}

// ---- Coordinators -----------------------------------------------------------------

/// The process classes of the current coordinators of a step (resolved to addresses in
/// `fdb.coordinators`).
fn coordinator_classes(step: &StepResult) -> Vec<String> {
    let coordinators: Vec<&str> = step.fdb["coordinators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let classes: Vec<String> = step.fdb["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| coordinators.contains(&p["address"].as_str().unwrap_or_default()))
        .map(|p| p["class"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(classes.len(), coordinators.len(), "{coordinators:?}");
    classes
}

/// test_operator: "changing coordinator selection", from the default (logs) to `selection`;
/// returns the run.
fn change_coordinator_selection(case: &str, selection: &str) -> SimulationResult {
    let spec = format!("{{{SMALL}}}");
    let steps = format!(
        "  - reconcile: {{}}\n  - apply: {{spec: {{coordinatorSelection: {selection}}}}}\n  - expect: {{within: 1800, reconciled: true, available: true}}\n"
    );
    let result = run_case(case, &scenario(&spec, &steps));
    assert_clean(&result);
    assert_eq!(coordinator_classes(&result.steps[0]), ["log"; 3]);
    result
}

/// test_operator: "changing coordinator selection" / "selecting only storage processes as
/// coordinators": the coordinators move from the logs to storage processes before the
/// cluster says Reconciled.
#[test]
fn go_e2e_operator_changing_coordinator_selection_selecting_only_storage_processes() {
    let result = change_coordinator_selection(
        "go_e2e_operator_changing_coordinator_selection_selecting_only_storage_processes",
        "[{processClass: storage, priority: 0}]",
    );
    assert_eq!(
        coordinator_classes(result.steps.last().unwrap()),
        ["storage"; 3]
    );
}

/// test_operator: "changing coordinator selection" / "selecting only log processes as
/// coordinators", from storage coordinators back to the logs.
#[test]
fn go_e2e_operator_changing_coordinator_selection_selecting_only_log_processes() {
    let spec =
        format!("{{{SMALL}, coordinatorSelection: [{{processClass: storage, priority: 0}}]}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {coordinatorSelection: [{processClass: log, priority: 0}]}}\n  - expect: {within: 1800, reconciled: true, available: true}\n";
    let result = run_case(
        "go_e2e_operator_changing_coordinator_selection_selecting_only_log_processes",
        &scenario(&spec, steps),
    );
    assert_clean(&result);
    assert_eq!(coordinator_classes(&result.steps[0]), ["storage"; 3]);
    assert_eq!(
        coordinator_classes(result.steps.last().unwrap()),
        ["log"; 3]
    );
}

/// test_operator: "changing coordinator selection" / "selecting both storage and log
/// processes as coordinators but preferring storage": every coordinator is a log or a
/// storage process (the Go case accepts either: both classes are eligible).
#[test]
fn go_e2e_operator_changing_coordinator_selection_preferring_storage() {
    let result = change_coordinator_selection(
        "go_e2e_operator_changing_coordinator_selection_preferring_storage",
        "[{processClass: log, priority: 0}, {processClass: storage, priority: 2147483647}]",
    );
    for class in coordinator_classes(result.steps.last().unwrap()) {
        assert!(["log", "storage"].contains(&class.as_str()), "{class}");
    }
}

/// The `coordinator` process class may host coordinators, as in the Go operator: a
/// selection naming it is accepted and the coordinators move there.
#[test]
fn coordinator_class_processes_take_the_coordinators_when_selected() {
    let spec = format!("{{{SMALL}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {processCounts: {coordinator: 3}, coordinatorSelection: [{processClass: coordinator, priority: 1}]}}\n  - expect: {within: 1800, reconciled: true, available: true}\n";
    let result = run_case(
        "coordinator_class_processes_take_the_coordinators_when_selected",
        &scenario(&spec, steps),
    );
    assert_clean(&result);
    assert_eq!(
        coordinator_classes(result.steps.last().unwrap()),
        ["coordinator"; 3]
    );
}

// ---- Status -------------------------------------------------------------------------

/// test_operator: "the cluster is unavailable" / "should set the cluster.status.health to
/// false". The operator cannot read `status json` (every admin command times out, as
/// when it is partitioned from the cluster): the status says unavailable and unhealthy
/// instead of keeping its last reading; once the partition heals, both are true again.
#[test]
fn go_e2e_operator_should_set_the_cluster_status_health_to_false() {
    let spec = format!("{{{SMALL}}}");
    let steps = "  - reconcile: {}\n  - fault: {kind: fdbcliTimeouts, rate: 1.0}\n  - advance: 300\n  - heal: {all: true}\n  - expect: {within: 600, reconciled: true, available: true}\n";
    let result = run_case(
        "go_e2e_operator_should_set_the_cluster_status_health_to_false",
        &scenario(&spec, steps),
    );
    let health = |step: usize| result.steps[step].cluster["status"]["health"].clone();
    assert_eq!(health(0)["available"], true, "{}", health(0));
    assert_eq!(health(0)["healthy"], true, "{}", health(0));
    assert_ne!(health(2)["available"], true, "{}", health(2));
    assert_ne!(health(2)["healthy"], true, "{}", health(2));
    let end = result.steps.len() - 1;
    assert_eq!(health(end)["available"], true, "{}", health(end));
    assert_eq!(health(end)["healthy"], true, "{}", health(end));
    assert_clean(&result);
}

/// test_operator: "using proxies instead of grv and commit proxies" / "should configure
/// the database to run with GRV and commit proxies but keep the proxies in the status
/// field of the FoundationDB resource"; and the other way round: a spec with GRV and
/// commit proxies shows only those.
#[test]
fn go_e2e_operator_should_keep_the_proxies_in_the_status_field_of_the_foundationdb_resource() {
    let spec = format!("{{{SMALL}, databaseConfiguration: {{proxies: 3}}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {databaseConfiguration: {proxies: null, grv_proxies: 1, commit_proxies: 2}}}\n  - expect: {within: 1800, reconciled: true, available: true}\n";
    let result = run_case(
        "go_e2e_operator_should_keep_the_proxies_in_the_status_field_of_the_foundationdb_resource",
        &scenario(&spec, steps),
    );
    assert_clean(&result);
    let shown = |step: usize| result.steps[step].cluster["status"]["databaseConfiguration"].clone();
    let live = |step: usize| result.steps[step].fdb["configuration"].clone();
    // The status keeps what the spec says, whatever else the database reports (the
    // simulated database keeps `proxies` beside the GRV and commit proxies it was
    // configured with later).
    assert!(shown(0)["proxies"].as_i64().unwrap() > 0, "{}", shown(0));
    assert!(shown(0).get("grv_proxies").is_none(), "{}", shown(0));
    assert!(shown(0).get("commit_proxies").is_none(), "{}", shown(0));
    let end = result.steps.len() - 1;
    assert_eq!(live(end)["proxies"], 3, "{}", live(end));
    assert_eq!(shown(end)["grv_proxies"], 1, "{}", shown(end));
    assert_eq!(shown(end)["commit_proxies"], 2, "{}", shown(end));
    assert!(shown(end).get("proxies").is_none(), "{}", shown(end));
}

/// `faultDomain.valueFrom: $FDB_INSTANCE_ID` (the Go operator's environment-variable
/// zones): accepted, and every process group is its own zone, even with four nodes for
/// seventeen pods.
#[test]
fn fault_domain_from_the_instance_id_makes_every_group_its_own_zone() {
    let spec = format!(
        "{{{SMALL}, faultDomain: {{key: foundationdb.org/instance, valueFrom: $FDB_INSTANCE_ID}}}}"
    );
    let steps = "  - expect: {within: 1800, reconciled: true, available: true}\n";
    let yaml = scenario(&spec, steps).replace("seed: 3\n", "seed: 3\nworld: {nodes: 4}\n");
    let result = run_case(
        "fault_domain_from_the_instance_id_makes_every_group_its_own_zone",
        &yaml,
    );
    assert_clean(&result);
    let end = result.steps.last().unwrap();
    let processes = end.fdb["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 17);
    for process in processes {
        assert_eq!(
            process["locality"]["zoneid"], process["locality"]["instance_id"],
            "{process}"
        );
    }
    for group in end.cluster["status"]["processGroups"].as_array().unwrap() {
        assert_eq!(group["faultDomain"], group["processGroupID"], "{group}");
    }
}

/// test_operator: "setting a locality that is using an environment variable" / "should
/// update the locality with the substituted environment variable".
#[test]
fn go_e2e_operator_should_update_the_locality_with_the_substituted_environment_variable() {
    let spec = format!("{{{SMALL}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {processes: {general: {customParameters: [\"locality_testing=$FDB_INSTANCE_ID\"]}}}}\n  - expect: {within: 1800, reconciled: true, available: true}\n";
    let result = run_case(
        "go_e2e_operator_should_update_the_locality_with_the_substituted_environment_variable",
        &scenario(&spec, steps),
    );
    assert_clean(&result);
    let end = result.steps.last().unwrap();
    let stateless: Vec<&serde_json::Value> = end.fdb["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["class"] == "stateless")
        .collect();
    assert!(!stateless.is_empty());
    for process in stateless {
        let locality = &process["locality"];
        assert!(locality["instance_id"].is_string(), "{process}");
        assert_eq!(locality["testing"], locality["instance_id"], "{process}");
    }
}

/// A removed process group's ID is not handed out again at once (the Go operator picks
/// random numbers for that, its issue 2071): after storage-2 is replaced and gone, the
/// replacement of storage-3 does not take the number 2 again.
#[test]
fn a_removed_process_group_id_is_not_reused_at_once() {
    let spec = format!("{{{SMALL}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {processGroupsToRemove: [storage-2]}}\n  - expect: {within: 3600, reconciled: true, available: true, processGroups: {storage: 4}, pods: 17}\n  - apply: {spec: {processGroupsToRemove: [storage-2, storage-3]}}\n  - expect: {within: 3600, reconciled: true, available: true, processGroups: {storage: 4}, pods: 17}\n";
    let result = run_case(
        "a_removed_process_group_id_is_not_reused_at_once",
        &scenario(&spec, steps),
    );
    assert_clean(&result);
    let ids = |step: &StepResult| -> Vec<String> {
        let mut ids: Vec<String> = step.cluster["status"]["processGroups"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["processClass"] == "storage")
            .map(|g| g["processGroupID"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(
        ids(&result.steps[2]),
        ["storage-1", "storage-3", "storage-4", "storage-5"]
    );
    assert_eq!(
        ids(result.steps.last().unwrap()),
        ["storage-1", "storage-4", "storage-5", "storage-6"]
    );
    // The trap: with the number 2 handed out again, the new storage-2 is still listed in
    // processGroupsToRemove, so it is created only to be excluded and removed at once.
    let recreated: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.step >= 1 && e.action == "create")
        .filter(|e| {
            e.target.starts_with("pod/sample-storage-2")
                || e.target.starts_with("pvc/sample-storage-2")
        })
        .map(|e| e.target.as_str())
        .collect();
    assert!(recreated.is_empty(), "{recreated:?}");
}

// ---- Removals during upgrades -------------------------------------------------------

/// test_operator_upgrades: "one process is marked for removal and is stuck in removal".
/// A storage group is marked for removal with its removal blocked
/// (`buggify.blockRemoval`), then the cluster is upgraded 7.1 -> 7.3 across the protocol
/// boundary: the group is staged with the others, the one cluster-wide kill takes it to
/// 7.3 too (no process left on the old version), every other group ends without a
/// condition; once the block is lifted the group is taken apart and the cluster
/// reconciles.
#[test]
fn go_e2e_upgrades_one_process_is_marked_for_removal_and_is_stuck_in_removal() {
    let spec = format!("{{{SMALL}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {buggify: {blockRemoval: [storage-2]}, processGroupsToRemove: [storage-2]}}\n  - expect: {within: 3600, available: true, excluded: [\"locality_instance_id:storage-2\"], processGroups: {storage: 4}}\n  - apply: {spec: {version: 7.3.43}}\n  - expect: {within: 3600, available: true, runningVersion: \"7.3.43\"}\n  - advance: 900\n  - apply: {spec: {buggify: {blockRemoval: []}}}\n  - expect: {within: 3600, reconciled: true, available: true, version: \"7.3.43\", processGroups: {storage: 4}, pods: 17}\n";
    let result = run_case(
        "go_e2e_upgrades_one_process_is_marked_for_removal_and_is_stuck_in_removal",
        &scenario(&spec, steps),
    );
    let upgraded = &result.steps[5];
    // Every process, the held group's included, runs 7.3.43 after the kill.
    let versions = versions_by_group(upgraded);
    assert!(
        versions.iter().any(|(group, _)| group == "storage-2"),
        "the held group still runs: {versions:?}"
    );
    for (group, version) in &versions {
        assert_eq!(version, "7.3.43", "{group} was left on the old version");
    }
    // The other groups are done: no condition left on any of them.
    for group in upgraded.cluster["status"]["processGroups"]
        .as_array()
        .unwrap()
    {
        let id = group["processGroupID"].as_str().unwrap();
        if id == "storage-2" {
            assert!(group["removalTimestamp"].is_string(), "{group}");
            continue;
        }
        assert!(conditions_of(upgraded, id).is_empty(), "{id}: {group}");
    }
    assert_eq!(
        kills_in(&result, 3..5).len(),
        1,
        "one cluster-wide kill: {:?}",
        kills_in(&result, 3..5)
    );
    let end = result.steps.last().unwrap();
    assert!(group_status(end, "storage-2").is_none());
    assert!(!has_pod(end, "sample-storage-2"));
    assert_clean(&result);
}

/// test_operator_upgrades: "upgrading a cluster with a pending pod" (issue 25:
/// incompatible upgrades deadlocked while a pod could not run). A storage pod is
/// recreated unschedulable, then the cluster is upgraded 7.1 -> 7.3: after
/// `ignoreMissingProcessesSeconds` the kill goes on without it (it was waiting for the
/// group's replacement, two hours later, before); once the pod can be scheduled it joins
/// on the new version and the cluster reconciles.
#[test]
fn go_e2e_upgrades_upgrading_a_cluster_with_a_pending_pod() {
    let spec = format!("{{{SMALL}}}");
    let steps = "  - reconcile: {}\n  - fault: {kind: podPending, processGroup: storage-1}\n  - act: {as: user, delete: pod/sample-storage-1}\n  - advance: 120\n  - apply: {spec: {version: 7.3.43}}\n  - expect: {within: 1800, available: true, runningVersion: \"7.3.43\"}\n  - heal: {all: true}\n  - expect: {within: 3600, reconciled: true, available: true, version: \"7.3.43\", runningVersion: \"7.3.43\", processGroups: {storage: 4}}\n";
    let result = run_case(
        "go_e2e_upgrades_upgrading_a_cluster_with_a_pending_pod",
        &scenario(&spec, steps),
    );
    assert_eq!(
        result.steps[5].reconciled,
        Some(true),
        "{:?}",
        result.steps[5].stopped_because
    );
    assert_clean(&result);
}
