//! A sidecar started with `--watch-input` copies a projected ConfigMap change by itself.
//! In the world that happens within the settle that projects it, never at some later
//! real-time moment (a file watcher's), so runs do not depend on the machine's speed.

use fdb_operator::clock::Clock;
use fdb_simulation::kube::{PatchType, ResourceKey};
use serde_json::json;

use super::support::{CLUSTER_FILE, config_map, monitor_conf, setup, storage_pod};

#[tokio::test]
async fn a_watching_sidecar_copies_the_projected_change_before_the_world_is_settled() {
    let mut s = setup(None, 219);
    s.api
        .create_as("operator", config_map(&monitor_conf(""), CLUSTER_FILE))
        .unwrap();
    let mut pod = storage_pod(1, false);
    pod["spec"]["containers"][1]["args"]
        .as_array_mut()
        .unwrap()
        .push(json!("--watch-input"));
    s.api.create_as("operator", pod).unwrap();
    s.world.settle().await.unwrap();
    let output = s
        .world
        .pod_volume_dir("default", "sample-storage-1", "dynamic-conf")
        .unwrap();
    let rendered = || std::fs::read_to_string(output.join("fdbmonitor.conf")).unwrap();
    assert!(!rendered().contains("knob_"));

    let patch = json!({"data": {"fdbmonitor-conf-storage": monitor_conf("knob_x = 1\n"),
                                "cluster-file": "sample:new@127.9.9.8:4501"}});
    let key = ResourceKey::new("", "v1", "configmaps", "default", "sample-config");
    s.api
        .patch_as("operator", &key, PatchType::Merge, &patch, false)
        .unwrap();
    s.world.settle().await.unwrap();
    let due = s.world.next_due().unwrap();
    s.clock
        .advance_seconds(due.as_second() - s.clock.now().as_second() - 1);
    let report = s.world.settle().await.unwrap();
    assert!(!report.events.iter().any(|e| e.action == "project"));
    assert!(!rendered().contains("knob_"), "not projected yet");

    s.clock.advance_seconds(1);
    let report = s.world.settle().await.unwrap();
    let actions: Vec<&str> = report.events.iter().map(|e| e.action.as_str()).collect();
    let project = actions.iter().position(|a| *a == "project").unwrap();
    let copied = actions
        .iter()
        .position(|a| *a == "sidecar-watch-input")
        .unwrap();
    assert!(project < copied, "{actions:?}");
    // Already there when the world reports settled: files, then the monitor conf.
    assert!(rendered().contains("knob_x = 1"), "{}", rendered());
    assert_eq!(
        std::fs::read_to_string(output.join("fdb.cluster")).unwrap(),
        "sample:new@127.9.9.8:4501"
    );
}

#[tokio::test]
async fn a_sidecar_without_watch_input_leaves_the_copy_to_the_operator() {
    let mut s = setup(None, 220);
    s.api
        .create_as("operator", config_map(&monitor_conf(""), CLUSTER_FILE))
        .unwrap();
    s.api.create_as("operator", storage_pod(1, false)).unwrap();
    s.world.settle().await.unwrap();
    let patch = json!({"data": {"fdbmonitor-conf-storage": monitor_conf("knob_x = 1\n")}});
    let key = ResourceKey::new("", "v1", "configmaps", "default", "sample-config");
    s.api
        .patch_as("operator", &key, PatchType::Merge, &patch, false)
        .unwrap();
    s.world.settle().await.unwrap();
    s.clock.advance_seconds(60);
    let report = s.world.settle().await.unwrap();
    assert!(report.events.iter().any(|e| e.action == "project"));
    assert!(
        !report
            .events
            .iter()
            .any(|e| e.action == "sidecar-watch-input")
    );
    let output = s
        .world
        .pod_volume_dir("default", "sample-storage-1", "dynamic-conf")
        .unwrap();
    assert!(
        !std::fs::read_to_string(output.join("fdbmonitor.conf"))
            .unwrap()
            .contains("knob_")
    );
}
