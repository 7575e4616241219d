//! Starting the world from a live cluster's snapshot (issue 21): a capture of our own
//! quickstart cluster boots and is Reconciled with no write at all; captures that do not
//! hold together are refused naming the object and field.

use std::path::Path;

use std::sync::Arc;

use fdb_operator::capture::{CaptureOptions, capture};
use fdb_operator::controller::AdminClientProvider;
use fdb_operator::fdb::{AdminClient, AdminError};
use fdb_shared::api::FoundationDBCluster;
use fdb_simulation::fdb::SimulatedFdb;
use fdb_simulation::result::{EventSource, SimulationResult};
use fdb_simulation::runner::{RunOptions, Runner, run_scenario};
use fdb_simulation::scenario::snapshot_write::write_dir;
use fdb_simulation::scenario::{Scenario, ScenarioError};
use serde_json::Value;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The database of the simulated world, as `fdb-operator snapshot` reaches it.
struct SimulatedAdmin(SimulatedFdb);

impl AdminClientProvider for SimulatedAdmin {
    fn admin_for(
        &self,
        _cluster: &FoundationDBCluster,
    ) -> Result<Arc<dyn AdminClient>, AdminError> {
        Ok(Arc::new(self.0.clone()))
    }
}

/// Runs the quickstart and, at its end, captures its cluster the way `fdb-operator
/// snapshot` does (a kube client against the world's API server) into `dir`.
fn capture_quickstart(dir: &Path, rehearse: Option<&Value>) -> SimulationResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/quickstart.yaml");
    let scenario = Scenario::from_file(&path).unwrap();
    let (result, captured) = runtime().block_on(async {
        let runner = Runner::new(scenario, RunOptions::default()).await.unwrap();
        runner
            .run_then(|api, fdb| async move {
                let options = CaptureOptions {
                    namespace: "default".into(),
                    cluster: "sample".into(),
                    include_secret_values: false,
                };
                capture(
                    &api.client("snapshot"),
                    &SimulatedAdmin(fdb),
                    &options,
                    &|_| {},
                )
                .await
                .unwrap()
            })
            .await
            .unwrap()
    });
    write_dir(
        dir,
        &captured.objects,
        captured.status.as_ref(),
        rehearse,
        false,
    )
    .unwrap();
    result
}

fn write_scenario(dir: &Path, steps: &str) -> std::path::PathBuf {
    let path = dir.join("scenario.yaml");
    std::fs::write(
        &path,
        format!(
            "name: from-snapshot\nsnapshot:\n  objects: live.yaml\n  status: status.json\nsteps:\n{steps}"
        ),
    )
    .unwrap();
    path
}

fn run_path(path: &Path) -> SimulationResult {
    let scenario = Scenario::from_file(path).unwrap_or_else(|e| panic!("{e}"));
    runtime()
        .block_on(run_scenario(&scenario, RunOptions::default()))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Writes and admin commands that would disturb a cluster the operator takes over.
fn disruptions(result: &SimulationResult) -> Vec<String> {
    result
        .events
        .iter()
        .filter(|e| match e.source {
            EventSource::K8s => e.action != "event",
            EventSource::Fdb => matches!(
                e.action.as_str(),
                "kill" | "exclude" | "include" | "configure" | "coordinators"
            ),
            _ => false,
        })
        .map(|e| format!("{:?} {} {} {}", e.source, e.action, e.target, e.detail))
        .collect()
}

#[test]
fn a_snapshot_of_our_own_quickstart_is_reconciled_with_no_write_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let original = capture_quickstart(dir.path(), None);
    assert_eq!(original.steps[1].reconciled, Some(true));
    // The scenario `fdb-operator snapshot` wrote, as it is.
    let result = run_path(&dir.path().join("scenario.yaml"));
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    assert_eq!(
        result.steps[0].reconciled,
        Some(true),
        "{:?}",
        result.steps[0].stopped_because
    );
    assert_eq!(disruptions(&result), Vec::<String>::new());
    let requests = &result.metrics.api_requests;
    assert_eq!(
        (
            requests.create,
            requests.update,
            requests.patch,
            requests.delete
        ),
        (0, 0, 0, 0),
        "the operator wrote to the API"
    );
    // The same pods, on the same nodes, with the database as captured.
    let before: Vec<_> = original.steps[1]
        .pods
        .iter()
        .map(|p| (&p.name, &p.node))
        .collect();
    let after: Vec<_> = result.steps[0]
        .pods
        .iter()
        .map(|p| (&p.name, &p.node))
        .collect();
    assert_eq!(before, after);
    assert_eq!(
        result.steps[0].fdb["configuration"],
        original.steps[1].fdb["configuration"]
    );
    assert_eq!(
        result.steps[0].fdb["connectionString"],
        original.steps[1].fdb["connectionString"]
    );
}

fn invalid(dir: &Path, edit: impl FnOnce(&mut Vec<Value>, &mut Value)) -> String {
    let text = std::fs::read_to_string(dir.join("live.yaml")).unwrap();
    let mut objects: Vec<Value> = text
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_yaml_ng::from_str(d).unwrap())
        .collect();
    let mut status: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("status.json")).unwrap()).unwrap();
    edit(&mut objects, &mut status);
    let case = tempfile::tempdir_in(dir).unwrap();
    let stream: String = objects
        .iter()
        .map(|o| format!("---\n{}\n", serde_json::to_string(o).unwrap()))
        .collect();
    std::fs::write(case.path().join("live.yaml"), stream).unwrap();
    std::fs::write(case.path().join("status.json"), status.to_string()).unwrap();
    let path = write_scenario(case.path(), "  - reconcile: {}\n");
    match Scenario::from_file(&path) {
        Err(error @ ScenarioError::Invalid { .. }) => error.to_string(),
        other => panic!("expected an invalid scenario, got {other:?}"),
    }
}

fn pod_index(objects: &[Value], name: &str) -> usize {
    objects
        .iter()
        .position(|o| o["kind"] == "Pod" && o["metadata"]["name"] == name)
        .unwrap()
}

#[test]
fn snapshots_that_do_not_hold_together_are_refused_naming_the_object_and_field() {
    let dir = tempfile::tempdir().unwrap();
    capture_quickstart(dir.path(), None);

    let message = invalid(dir.path(), |objects, _| {
        let index = pod_index(objects, "sample-storage-1");
        objects[index]["spec"]
            .as_object_mut()
            .unwrap()
            .remove("nodeName");
    });
    assert!(
        message.contains("Pod default/sample-storage-1: spec.nodeName"),
        "{message}"
    );

    let message = invalid(dir.path(), |_, status| {
        let processes = status["cluster"]["processes"].as_object_mut().unwrap();
        let first = processes.values_mut().next().unwrap();
        first["address"] = Value::from("10.99.99.99:4501");
    });
    assert!(
        message.contains("address") && message.contains("10.99.99.99:4501"),
        "{message}"
    );
    assert!(message.contains("matches no captured pod"), "{message}");

    let message = invalid(dir.path(), |objects, _| {
        objects.retain(|o| o["kind"] != "ConfigMap");
    });
    assert!(message.contains("Pod default/sample-"), "{message}");
    assert!(message.contains(".configMap.name"), "{message}");

    let message = invalid(dir.path(), |objects, _| {
        let cluster = objects
            .iter()
            .find(|o| o["kind"] == "FoundationDBCluster")
            .unwrap()
            .clone();
        objects.push(cluster);
    });
    assert!(
        message.contains("FoundationDBCluster default/sample: metadata.name"),
        "{message}"
    );

    let case = tempfile::tempdir_in(dir.path()).unwrap();
    let path = write_scenario(case.path(), "  - reconcile: {}\n");
    let message = Scenario::from_file(&path).unwrap_err().to_string();
    assert!(
        message.contains("snapshot.objects") && message.contains("live.yaml"),
        "{message}"
    );
}

#[test]
fn a_rehearsed_upgrade_runs_on_the_captured_cluster_after_a_quiet_take_over() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = serde_json::json!({
        "apiVersion": "apps.foundationdb.org/v1beta2",
        "kind": "FoundationDBCluster",
        "metadata": {"name": "sample", "namespace": "default"},
        "spec": {
            "version": "7.3.43",
            "databaseConfiguration": {"redundancy_mode": "double"},
            "processCounts": {"storage": 4, "cluster_controller": 1},
        },
    });
    capture_quickstart(dir.path(), Some(&manifest));
    let scenario = std::fs::read_to_string(dir.path().join("scenario.yaml")).unwrap();
    assert!(
        scenario.contains("apply:") && scenario.contains("7.3.43"),
        "{scenario}"
    );
    let result = run_path(&dir.path().join("scenario.yaml"));
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    // The take-over (steps 0 and 1) wrote nothing; the upgrade then completed.
    let take_over = SimulationResult {
        events: result
            .events
            .iter()
            .filter(|e| e.step < 2)
            .cloned()
            .collect(),
        ..result.clone()
    };
    assert_eq!(disruptions(&take_over), Vec::<String>::new());
    let last = result.steps.last().unwrap();
    assert_eq!(last.fdb["version"], "7.3.43");
    assert!(
        result
            .events
            .iter()
            .any(|e| e.step >= 2 && e.action == "kill"),
        "the upgrade restarted the processes"
    );
}

/// Rewrites the captured `live.yaml` of `dir` with `edit` applied to each pod.
fn edit_pods(dir: &Path, mut edit: impl FnMut(&mut Value)) {
    let text = std::fs::read_to_string(dir.join("live.yaml")).unwrap();
    let stream: String = text
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| {
            let mut object: Value = serde_yaml_ng::from_str(d).unwrap();
            if object["kind"] == "Pod" {
                edit(&mut object);
            }
            format!("---\n{}\n", serde_json::to_string(&object).unwrap())
        })
        .collect();
    std::fs::write(dir.join("live.yaml"), stream).unwrap();
}

#[test]
fn pods_with_another_operators_hash_are_restamped_and_only_a_truly_different_one_rolls() {
    let dir = tempfile::tempdir().unwrap();
    capture_quickstart(dir.path(), None);
    edit_pods(dir.path(), |pod| {
        pod["metadata"]["annotations"]["foundationdb.org/last-applied-spec"] =
            Value::from("written-by-another-operator");
        if pod["metadata"]["name"] == "sample-log-1" {
            let containers = pod["spec"]["containers"].as_array_mut().unwrap();
            let main = containers
                .iter_mut()
                .find(|c| c["name"] == "foundationdb")
                .unwrap();
            main["env"]
                .as_array_mut()
                .unwrap()
                .push(serde_json::json!({"name": "ADDED_BY_HAND", "value": "1"}));
        }
    });
    let result = run_path(&dir.path().join("scenario.yaml"));
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let writes: Vec<&fdb_simulation::result::Event> = result
        .events
        .iter()
        .filter(|e| e.source == EventSource::K8s)
        .collect();
    // Every other pod is re-stamped in place, never deleted.
    let restamped = writes
        .iter()
        .filter(|e| {
            e.action == "patch"
                && e.target.starts_with("pod/")
                && e.detail.contains("last-applied-spec")
        })
        .count();
    assert_eq!(restamped, 16, "{writes:#?}");
    let deleted: Vec<&str> = writes
        .iter()
        .filter(|e| e.action == "delete" && e.target.starts_with("pod/"))
        .map(|e| e.target.as_str())
        .collect();
    assert!(
        deleted.iter().all(|t| t.starts_with("pod/sample-log-1")),
        "only the group that truly differs is rolled: {deleted:?}"
    );
    // The difference is named in the operator's Event.
    assert!(
        result
            .events
            .iter()
            .any(|e| e.source == EventSource::Operator
                && e.detail.contains("log-1 containers[foundationdb].env")),
        "{:#?}",
        result
            .events
            .iter()
            .filter(|e| e.source == EventSource::Operator)
            .collect::<Vec<_>>()
    );
    let last = result.steps.last().unwrap();
    let pod = last.pods.iter().find(|p| p.name == "sample-log-1");
    assert!(
        pod.is_none(),
        "the differing log group was replaced: {:?}",
        last.pods.iter().map(|p| &p.name).collect::<Vec<_>>()
    );
}

mod go_v2;

/// A Secret value, and its base64 (as `data` and a JSON copy of it hold it).
const SECRET_VALUE: &str = "hunter2-very-secret";
const SECRET_VALUE_BASE64: &str = "aHVudGVyMi12ZXJ5LXNlY3JldA==";

/// The quickstart with a Secret created by `kubectl apply` (its last-applied annotation
/// and managed fields hold the value) that the pods mount, captured into `dir`.
fn capture_with_applied_secret(dir: &Path, include_secret_values: bool) {
    let quickstart = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/quickstart.yaml");
    let mut scenario: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(quickstart).unwrap()).unwrap();
    let applied = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"annotations": {}, "name": "credentials", "namespace": "default"},
        "stringData": {"password": SECRET_VALUE},
    });
    scenario["objects"] = serde_json::json!([{
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {
            "name": "credentials",
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": applied.to_string(),
                "example.com/copy": SECRET_VALUE_BASE64,
            },
            "managedFields": [{
                "manager": "kubectl-client-side-apply", "operation": "Update",
                "apiVersion": "v1", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {"f:password": {}}, "f:metadata": {"f:annotations": {
                    "f:example.com/copy": {}}}},
            }],
        },
        "data": {"password": SECRET_VALUE_BASE64},
    }]);
    scenario["cluster"]["spec"]["processes"] = serde_json::json!({"general": {"podTemplate": {
        // `containers` is required in a PodSpec (the CRD's schema, as Go's, says so).
        "spec": {"containers": [],
                 "volumes": [{"name": "credentials", "secret": {"secretName": "credentials"}}]}}}});
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), serde_yaml_ng::to_string(&scenario).unwrap()).unwrap();
    let scenario = Scenario::from_file(file.path()).unwrap();
    let captured = runtime().block_on(async {
        let runner = Runner::new(scenario, RunOptions::default()).await.unwrap();
        let (_, captured) = runner
            .run_then(|api, fdb| async move {
                let options = CaptureOptions {
                    namespace: "default".into(),
                    cluster: "sample".into(),
                    include_secret_values,
                };
                capture(
                    &api.client("snapshot"),
                    &SimulatedAdmin(fdb),
                    &options,
                    &|_| {},
                )
                .await
                .unwrap()
            })
            .await
            .unwrap();
        captured
    });
    write_dir(
        dir,
        &captured.objects,
        captured.status.as_ref(),
        None,
        false,
    )
    .unwrap();
}

/// The files of `dir` that hold the secret value (plain or base64).
fn files_holding_the_secret(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|entry| {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            text.contains(SECRET_VALUE) || text.contains(SECRET_VALUE_BASE64)
        })
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_capture_without_secret_values_holds_no_value_of_an_applied_secret_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    capture_with_applied_secret(dir.path(), false);
    let live = std::fs::read_to_string(dir.path().join("live.yaml")).unwrap();
    assert!(
        live.contains("kind: Secret") && live.contains("credentials"),
        "not captured"
    );
    assert_eq!(files_holding_the_secret(dir.path()), Vec::<String>::new());
    // The same capture with the values keeps them (the check above can see them).
    let with_values = tempfile::tempdir().unwrap();
    capture_with_applied_secret(with_values.path(), true);
    assert_eq!(
        files_holding_the_secret(with_values.path()),
        vec!["live.yaml".to_owned()]
    );
}
