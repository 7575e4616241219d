//! Taking over a cluster the Go operator v2 left (issue 21): a split-image, double
//! redundancy cluster built from its models ([`GoV2Cluster`]) is adopted without
//! touching a pod, then upgraded and re-knobbed as our own clusters are; a pod that truly
//! differs is named and only its group rolls.

use std::path::{Path, PathBuf};

use fdb_simulation::result::{EventSource, SimulationResult};
use fdb_simulation::scenario::go_v2::{GoV2Cluster, GoV2Snapshot};
use fdb_simulation::scenario::snapshot_write::write_dir;
use serde_json::{Value, json};

use super::run_path;

/// Writes the snapshot and a scenario of `steps` (after the take-over's reconcile and
/// expect) into `dir`.
fn write_go_scenario(dir: &Path, snapshot: &GoV2Snapshot, steps: &[Value]) -> PathBuf {
    write_dir(dir, &snapshot.objects, Some(&snapshot.status), None, true).unwrap();
    let path = dir.join("scenario.yaml");
    let mut scenario: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let list = scenario["steps"].as_array_mut().unwrap();
    list.extend(steps.iter().cloned());
    std::fs::write(&path, serde_yaml_ng::to_string(&scenario).unwrap()).unwrap();
    path
}

/// What would disturb the adopted cluster: any deletion or creation, any container
/// restart, and the admin commands that move data, restart or reconfigure.
fn take_over_disruptions(result: &SimulationResult, steps: usize) -> Vec<String> {
    result
        .events
        .iter()
        .filter(|e| e.step < steps)
        .filter(|e| {
            e.action == "restart-container"
                || match e.source {
                    EventSource::K8s => matches!(e.action.as_str(), "delete" | "create"),
                    EventSource::Fdb => matches!(
                        e.action.as_str(),
                        "kill" | "exclude" | "include" | "configure" | "coordinators"
                    ),
                    _ => false,
                }
        })
        .map(|e| format!("{:?} {} {} {}", e.source, e.action, e.target, e.detail))
        .collect()
}

/// What the operator reported, one line each (for failure messages).
fn operator_events(result: &SimulationResult) -> String {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Operator)
        .map(|e| format!("{} {} {}\n", e.action, e.target, e.detail))
        .collect()
}

/// Pod names with their process group ID label and node.
fn pods_of(
    result: &SimulationResult,
    step: usize,
) -> Vec<(String, Option<String>, Option<String>)> {
    result.steps[step]
        .pods
        .iter()
        .map(|p| {
            (
                p.name.clone(),
                p.labels
                    .get("foundationdb.org/fdb-process-group-id")
                    .cloned(),
                p.node.clone(),
            )
        })
        .collect()
}

#[test]
fn a_go_operator_v2_cluster_is_taken_over_without_touching_a_pod() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = GoV2Cluster::default().generate();
    let path = write_go_scenario(dir.path(), &snapshot, &[]);
    let result = run_path(&path);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    assert_eq!(
        result.steps[1].reconciled,
        Some(true),
        "{:?}",
        result.steps[0].stopped_because
    );
    assert_eq!(
        take_over_disruptions(&result, 2),
        Vec::<String>::new(),
        "{}",
        operator_events(&result)
    );
    // The same pods with the same process group IDs and labels, on the same nodes.
    let captured: Vec<(String, Option<String>, Option<String>)> = snapshot
        .objects
        .iter()
        .filter(|o| o["kind"] == "Pod")
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap().to_owned(),
                o["metadata"]["labels"]["foundationdb.org/fdb-process-group-id"]
                    .as_str()
                    .map(str::to_owned),
                o["spec"]["nodeName"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let mut captured = captured;
    captured.sort();
    let mut after = pods_of(&result, 1);
    after.sort();
    assert_eq!(after, captured);
    // Each pod's spec hash is now ours, re-stamped in place.
    let restamped = result
        .events
        .iter()
        .filter(|e| {
            e.source == EventSource::K8s
                && e.action == "patch"
                && e.target.starts_with("pod/")
                && e.detail.contains("last-applied-spec")
        })
        .count();
    assert_eq!(restamped, 16);
    // The status the Go operator wrote was read: the groups and addresses stay.
    let groups = result.steps[1].cluster["status"]["processGroups"]
        .as_array()
        .unwrap();
    assert_eq!(groups.len(), 16);
    assert!(
        groups
            .iter()
            .all(|g| g["addresses"].as_array().is_some_and(|a| a.len() == 1)),
        "{groups:#?}"
    );
    assert_eq!(
        result.steps[1].fdb["connectionString"],
        snapshot.status["cluster"]["connection_string"]
    );
    // The transaction roles stayed where `status json` had them.
    let roles_of = |pod: &str| -> Vec<String> {
        let ip = result.steps[0]
            .pods
            .iter()
            .find(|p| p.name == pod)
            .and_then(|p| p.ip.clone())
            .unwrap();
        result.steps[0].fdb["processes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| {
                p["address"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{ip}:"))
            })
            .flat_map(|p| p["roles"].as_array().unwrap().clone())
            .map(|r| r.as_str().unwrap().to_owned())
            .collect()
    };
    assert!(roles_of("go-stateless-9").contains(&"cluster_controller".to_owned()));
    assert!(roles_of("go-stateless-8").contains(&"master".to_owned()));
    assert!(!roles_of("go-log-1").contains(&"log".to_owned()));
    assert!(roles_of("go-log-4").contains(&"log".to_owned()));
}

#[test]
fn an_adopted_go_cluster_is_upgraded_and_reknobbed_as_our_own() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = GoV2Cluster::default().generate();
    let steps = [
        json!({"apply": {"spec": {"version": "7.3.43"}}}),
        json!({"expect": {"within": 21600, "reconciled": true, "available": true,
                          "version": "7.3.43", "runningVersion": "7.3.43"}}),
        json!({"apply": {"spec": {"processes": {"general": {
            "customParameters": ["knob_max_trace_lines=1000000"]}}}}}),
        json!({"expect": {"within": 21600, "reconciled": true, "available": true}}),
    ];
    let path = write_go_scenario(dir.path(), &snapshot, &steps);
    let result = run_path(&path);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    assert_eq!(take_over_disruptions(&result, 2), Vec::<String>::new());
    for step in 2..6 {
        assert_ne!(
            result.steps[step].reconciled,
            Some(false),
            "step {step}: {:?}",
            result.steps[step].stopped_because
        );
    }
    let kills_in = |step: usize| {
        result
            .events
            .iter()
            .filter(|e| e.step == step && e.source == EventSource::Fdb && e.action == "kill")
            .count()
    };
    assert!(kills_in(3) > 0, "the upgrade restarted the processes");
    assert!(kills_in(5) > 0, "the knob change bounced the processes");
    let last = result.steps.last().unwrap();
    assert!(
        last.config_maps
            .iter()
            .any(|c| format!("{c:?}").contains("knob_max_trace_lines")),
        "the knob reached the monitor conf"
    );
}

#[test]
fn a_go_pod_that_truly_differs_is_named_and_only_its_group_rolls() {
    let dir = tempfile::tempdir().unwrap();
    let mut snapshot = GoV2Cluster::default().generate();
    for object in &mut snapshot.objects {
        if object["kind"] == "Pod" && object["metadata"]["name"] == "go-log-2" {
            let containers = object["spec"]["containers"].as_array_mut().unwrap();
            let sidecar = containers
                .iter_mut()
                .find(|c| c["name"] == "foundationdb-kubernetes-sidecar")
                .unwrap();
            sidecar["image"] = json!("foundationdb/foundationdb-kubernetes-sidecar:7.1.57-0");
            sidecar["env"]
                .as_array_mut()
                .unwrap()
                .push(json!({"name": "ADDED_BY_HAND", "value": "1"}));
        }
    }
    let path = write_go_scenario(dir.path(), &snapshot, &[]);
    let result = run_path(&path);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    assert_eq!(result.steps[1].reconciled, Some(true));
    let deleted: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.source == EventSource::K8s && e.action == "delete")
        .map(|e| e.target.as_str())
        .collect();
    assert!(!deleted.is_empty(), "the differing group was rolled");
    assert!(
        deleted.iter().all(|t| t.contains("go-log-2")),
        "only the group that truly differs is rolled: {deleted:?}"
    );
    let operator: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Operator)
        .map(|e| e.detail.as_str())
        .collect();
    // The older sidecar image is brought up to date in place (as on our own clusters);
    // the changed variable is what rolls the group, and the Event names it.
    assert!(
        operator
            .iter()
            .any(|d| d.contains("log-2 containers[foundationdb-kubernetes-sidecar].env")),
        "{operator:#?}"
    );
    // Every other pod stayed.
    let names: Vec<&str> = result.steps[1]
        .pods
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    for pod in snapshot.objects.iter().filter(|o| o["kind"] == "Pod") {
        let name = pod["metadata"]["name"].as_str().unwrap();
        if name != "go-log-2" {
            assert!(names.contains(&name), "{name} stays: {names:?}");
        }
    }
}

/// The Go operator v2's default cluster: `imageType` unset, unified pods.
fn go_unified() -> GoV2Snapshot {
    GoV2Cluster {
        unified: true,
        ..GoV2Cluster::default()
    }
    .generate()
}

#[test]
fn a_go_operator_v2_unified_cluster_is_taken_over_without_touching_a_pod() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = go_unified();
    let path = write_go_scenario(dir.path(), &snapshot, &[]);
    let result = run_path(&path);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    assert_eq!(
        result.steps[1].reconciled,
        Some(true),
        "{:?}",
        result.steps[1].stopped_because
    );
    assert_eq!(
        take_over_disruptions(&result, 2),
        Vec::<String>::new(),
        "{}",
        operator_events(&result)
    );
    // The same pods, still unified: `imageType` unset keeps what the cluster runs.
    let mut captured: Vec<String> = snapshot
        .objects
        .iter()
        .filter(|o| o["kind"] == "Pod")
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    captured.sort();
    let mut after: Vec<String> = result.steps[1]
        .pods
        .iter()
        .map(|p| p.name.clone())
        .collect();
    after.sort();
    assert_eq!(after, captured);
    for pod in &result.steps[1].pods {
        assert_eq!(
            pod.annotations
                .get("foundationdb.org/image-type")
                .map(String::as_str),
            Some("unified"),
            "{}",
            pod.name
        );
    }
    // The ConfigMap holds the Go operator's bytes already: the operator wrote none.
    let config_map_writes: Vec<String> = result
        .events
        .iter()
        .filter(|e| e.source == EventSource::K8s && e.target.starts_with("configmap/"))
        .filter(|e| e.by.as_deref() == Some("operator"))
        .map(|e| format!("{} {} {}", e.action, e.target, e.detail))
        .collect();
    assert_eq!(config_map_writes, Vec::<String>::new());
    assert_eq!(
        result.steps[1].cluster["status"]["imageTypes"],
        json!(["unified"])
    );
}

#[test]
fn a_malformed_monitor_annotation_is_named_and_deletes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = go_unified();
    // After the take-over, someone overwrites one monitor's report with text that does
    // not parse; the monitor rewrites it only when asked to (the operator's nudge).
    let steps = [
        json!({"act": {"as": "user", "patch": {"target": "pod/go-log-2", "patch": {
            "metadata": {"annotations": {
                "foundationdb.org/launcher-current-configuration": "{broken"}}}}}}),
        json!({"reconcile": {}}),
    ];
    let path = write_go_scenario(dir.path(), &snapshot, &steps);
    let result = run_path(&path);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    // A Warning Event names the pod and the annotation.
    let named: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.action == "event" && e.detail.starts_with("MonitorAnnotationsUnreadable"))
        .map(|e| e.detail.as_str())
        .collect();
    assert!(
        named.iter().any(|d| d.contains(
            "pod go-log-2: annotation foundationdb.org/launcher-current-configuration is malformed"
        )),
        "{named:#?}"
    );
    let deleted: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.source == EventSource::K8s && e.action == "delete")
        .map(|e| e.target.as_str())
        .collect();
    assert_eq!(deleted, Vec::<&str>::new());
    let kills = result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == "kill")
        .count();
    assert_eq!(kills, 0);
    // Asked to report again, the monitor did, and the cluster is Reconciled.
    assert_eq!(
        result.steps[3].reconciled,
        Some(true),
        "{:?}",
        result.steps[3].stopped_because
    );
}
