//! Starting the world from a live cluster's snapshot (issue 21): a capture of our own
//! quickstart cluster boots and is Reconciled with no write at all; captures that do not
//! hold together are refused naming the object and field.

use std::path::Path;

use fdb_simulation::fdb::SimulatedFdb;
use fdb_simulation::kube::FakeApiServer;
use fdb_simulation::result::{EventSource, SimulationResult};
use fdb_simulation::runner::{RunOptions, Runner, run_scenario};
use fdb_simulation::scenario::{Scenario, ScenarioError};
use serde_json::Value;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// What a user's `kubectl get ... -o yaml` and `fdbcli --exec 'status json'` would hold.
fn capture(api: &FakeApiServer, fdb: &SimulatedFdb) -> (Vec<Value>, Value) {
    let mut objects = api.list("", "nodes", None);
    for (group, plural) in [
        ("", "configmaps"),
        ("", "secrets"),
        ("", "services"),
        ("", "persistentvolumeclaims"),
        ("apps.foundationdb.org", "foundationdbclusters"),
        ("", "pods"),
    ] {
        objects.extend(api.list(group, plural, Some("default")));
    }
    (objects, fdb.render_status_json())
}

/// Runs the quickstart and captures its cluster at the end into `dir` (live.yaml,
/// status.json).
fn capture_quickstart(dir: &Path) -> SimulationResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/quickstart.yaml");
    let scenario = Scenario::from_file(&path).unwrap();
    let (result, (objects, status)) = runtime().block_on(async {
        let runner = Runner::new(scenario, RunOptions::default()).await.unwrap();
        runner
            .run_then(|api, fdb| async move { capture(&api, &fdb) })
            .await
            .unwrap()
    });
    let mut stream = String::new();
    for object in &objects {
        stream.push_str("---\n");
        stream.push_str(&serde_json::to_string(object).unwrap());
        stream.push('\n');
    }
    std::fs::write(dir.join("live.yaml"), stream).unwrap();
    std::fs::write(
        dir.join("status.json"),
        serde_json::to_string_pretty(&status).unwrap(),
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
    let original = capture_quickstart(dir.path());
    assert_eq!(original.steps[1].reconciled, Some(true));
    let path = write_scenario(
        dir.path(),
        "  - reconcile: {}\n  - expect: {reconciled: true, available: true}\n",
    );
    let result = run_path(&path);
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
        .map(|d| serde_json::from_str(d).unwrap())
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
    capture_quickstart(dir.path());

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
