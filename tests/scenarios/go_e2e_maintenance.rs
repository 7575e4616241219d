//! The Go operator's `test_operator_maintenance_mode` suite (issue 25), each case a
//! scenario named after it, at our sizes. The suite judges FoundationDB's own behaviour
//! as the operator sees it: `status json`'s team trackers
//! (`cluster.data.team_trackers[].state.healthy`, the `teamsHealthy` condition) and the
//! maintenance zone. Every case starts as the Go suite's BeforeSuite and BeforeEach do:
//! automatic replacements off, a storage group's zone in maintenance for 240 s (zones are
//! the process group IDs, so the scenario can name it), then that pod deleted and kept
//! Pending (the Go suite's `SetPodAsUnschedulable`). Gomega's `Consistently` is an
//! `expect` with `throughout`. Every case ends as the suite's AfterEach does: the pod may
//! be scheduled again, maintenance off, the cluster reconciled with healthy teams. The
//! operator's maintenance mode checker is off (the suite's default): it never touches the
//! user's zone.

use fdb_e2e_tests::{reporting, scenario};
use fdb_simulation::result::SimulationResult;

use super::go_e2e::{SMALL, assert_clean, run_case};

/// The suite's cluster: every group its own zone, automatic replacements off.
fn spec(extra: &str) -> String {
    format!(
        "{{{SMALL}, faultDomain: {{key: foundationdb.org/instance, valueFrom: $FDB_INSTANCE_ID}}, automationOptions: {{replacements: {{enabled: false}}}}{extra}}}"
    )
}

/// The suite's BeforeSuite and BeforeEach: storage-1's zone in maintenance for 240 s,
/// its pod deleted and kept Pending. Steps 0-3.
const SETUP: &str = "  - reconcile: {}\n  - act: {as: user, maintenance: {zone: storage-1, seconds: 240}}\n  - fault: {kind: podPending, processGroup: storage-1}\n  - act: {as: user, delete: pod/sample-storage-1}\n";

/// The check every case starts its body with: for two minutes every team tracker is
/// healthy and the zone stays in maintenance.
const CONSISTENTLY_HEALTHY: &str =
    "  - expect: {throughout: 120, teamsHealthy: true, maintenanceZone: storage-1}\n";

/// The suite's AfterEach: the pod may be scheduled again, maintenance off, the cluster
/// reconciles and its teams are healthy.
const AFTER_EACH: &str = "  - heal: {all: true}\n  - act: {as: user, maintenance: off}\n  - expect: {within: 1800, reconciled: true, available: true, teamsHealthy: true, maintenanceZone: null}\n";

/// `maintenance` commands not sent by the user (by the operator), as `(step, detail)`.
fn operator_maintenance(result: &SimulationResult) -> Vec<(usize, String)> {
    result
        .events
        .iter()
        .filter(|e| e.action == "maintenance" && e.by.as_deref() != Some("user"))
        .map(|e| (e.step, e.detail.clone()))
        .collect()
}

/// What every case checks besides its `expect`s: storage-1 was away while its zone was
/// in maintenance, the operator sent no maintenance command, and nothing was violated.
fn check_common(result: &SimulationResult) {
    assert_eq!(
        reporting(&result.steps[4], "storage-1"),
        0,
        "the pod is away"
    );
    assert!(
        operator_maintenance(result).is_empty(),
        "{:?}",
        operator_maintenance(result)
    );
    assert_clean(result);
}

/// "the maintenance mode is set" / "the Pod comes back before the maintenance mode times
/// out" / "should not set the team tracker status to unhealthy". Storage-1 is away for
/// two minutes, its zone in maintenance: data distribution never declares it failed, so
/// every team tracker stays healthy (while `cluster.data.state`, which wants every
/// replica served, is not) and the zone stays; then the pod comes back before the zone
/// times out.
#[test]
fn go_e2e_maintenance_mode_the_pod_comes_back_before_the_maintenance_mode_times_out() {
    let steps = format!("{SETUP}{CONSISTENTLY_HEALTHY}{AFTER_EACH}");
    let result = run_case(
        "go_e2e_maintenance_mode_the_pod_comes_back_before_the_maintenance_mode_times_out",
        &scenario(&spec(""), &steps),
    );
    check_common(&result);
    assert_eq!(
        result.steps[4].fdb["teamsHealthy"], true,
        "{}",
        result.steps[4].fdb
    );
}

/// "the maintenance mode is set" / "the maintenance mode times out" / "should update the
/// team tracker status to unhealthy". Healthy for two minutes; the zone times out after
/// 240 s; then the team trackers report unhealthy (storage-1, long silent, is failed at
/// once and its data is re-replicated).
#[test]
fn go_e2e_maintenance_mode_the_maintenance_mode_times_out() {
    let steps = format!(
        "{SETUP}{CONSISTENTLY_HEALTHY}  - expect: {{within: 600, maintenanceZone: null}}\n  - expect: {{within: 600, teamsHealthy: false}}\n{AFTER_EACH}"
    );
    let result = run_case(
        "go_e2e_maintenance_mode_the_maintenance_mode_times_out",
        &scenario(&spec(""), &steps),
    );
    check_common(&result);
    // The zone timed out on its own, 240 s after it was set.
    let set = result
        .events
        .iter()
        .find(|e| e.action == "maintenance" && e.step == 1)
        .map(|e| e.time)
        .unwrap();
    assert_eq!(result.steps[5].time - set, 240, "{}", result.steps[5].time);
}

/// "the maintenance mode is set" / "there is a failure during maintenance mode" / "should
/// remove the maintenance mode". The zone is set for two hours; after two healthy
/// minutes another storage group's processes stop (the Go case crash-loops its main
/// container) for more than the 60 s failure detection: FoundationDB's data distributor
/// clears the maintenance zone, and the team trackers report unhealthy. Triple
/// replication, as the Go suite's cluster, so two storage groups away leave a replica of
/// everything.
#[test]
fn go_e2e_maintenance_mode_there_is_a_failure_during_maintenance_mode() {
    let steps = format!(
        "{SETUP}  - act: {{as: user, maintenance: {{zone: storage-1, seconds: 7200}}}}\n{CONSISTENTLY_HEALTHY}  - fault: {{kind: processMissing, processGroup: storage-2}}\n  - expect: {{within: 600, maintenanceZone: null, teamsHealthy: false}}\n{AFTER_EACH}"
    );
    let result = run_case(
        "go_e2e_maintenance_mode_there_is_a_failure_during_maintenance_mode",
        &scenario(
            &spec(", databaseConfiguration: {redundancy_mode: triple}"),
            &steps,
        ),
    );
    check_common(&result);
    // The database cleared the zone itself (no one sent `maintenance off`), about a
    // failure detection after storage-2 stopped.
    let cleared = &result.steps[7];
    let off: Vec<usize> = result
        .events
        .iter()
        .filter(|e| e.action == "maintenance" && e.detail.contains("off"))
        .map(|e| e.step)
        .collect();
    assert!(off.iter().all(|step| *step > 7), "{off:?}");
    let stopped = result.steps[6].time;
    assert!(
        (60..=65).contains(&(cleared.time - stopped)),
        "cleared {} s after the failure",
        cleared.time - stopped
    );
    assert_eq!(cleared.fdb["available"], true);
}

/// "the maintenance mode is set" / "the number of storage Pods is changed" / "should not
/// remove the maintenance mode". The zone is set for two hours; after two healthy
/// minutes three storage groups are added: for five minutes more the zone stays and every
/// team tracker stays healthy. Its AfterEach sets the storage count back.
#[test]
fn go_e2e_maintenance_mode_the_number_of_storage_pods_is_changed() {
    let steps = format!(
        "{SETUP}  - act: {{as: user, maintenance: {{zone: storage-1, seconds: 7200}}}}\n{CONSISTENTLY_HEALTHY}  - apply: {{spec: {{processCounts: {{storage: 7}}}}}}\n  - expect: {{throughout: 300, teamsHealthy: true, maintenanceZone: storage-1}}\n  - apply: {{spec: {{processCounts: {{storage: 4}}}}}}\n{AFTER_EACH}"
    );
    let result = run_case(
        "go_e2e_maintenance_mode_the_number_of_storage_pods_is_changed",
        &scenario(&spec(""), &steps),
    );
    check_common(&result);
    // The three storage groups were added while the zone was in maintenance.
    let added = &result.steps[7];
    let storage_pods = added
        .pods
        .iter()
        .filter(|p| p.name.starts_with("sample-storage-"))
        .count();
    assert_eq!(
        storage_pods,
        7,
        "{:?}",
        added.pods.iter().map(|p| &p.name).collect::<Vec<_>>()
    );
    let end = result.steps.last().unwrap();
    let storage_pods = end
        .pods
        .iter()
        .filter(|p| p.name.starts_with("sample-storage-"))
        .count();
    assert_eq!(storage_pods, 4);
}

/// `expect` with `throughout` fails at the first moment a condition stops holding: a
/// zone set for 60 s does not stay in maintenance for 120.
#[test]
fn an_expect_throughout_fails_when_a_condition_stops_holding() {
    let steps = "  - reconcile: {}\n  - act: {as: user, maintenance: {zone: storage-1, seconds: 60}}\n  - expect: {throughout: 120, maintenanceZone: storage-1}\n";
    let result = run_case(
        "an_expect_throughout_fails_when_a_condition_stops_holding",
        &scenario(&spec(""), steps),
    );
    let failed: Vec<&str> = result
        .violations
        .iter()
        .filter(|v| v.invariant == "expectation-failed")
        .map(|v| v.detail.as_str())
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(
        failed[0].starts_with("held, then not 60 s before the end of its 120 s throughout"),
        "{}",
        failed[0]
    );
    assert_eq!(result.steps[2].time - result.steps[1].time, 60);
}
