//! `kubectl-fdb snapshot` and `rehearse` against a served simulated world: the capture
//! goes through a real kube client and `status json` through `pods/exec`, the folder is
//! the one `fdb-operator simulate` runs, and the rehearsal simulates a change on it
//! without writing to the served cluster.

// Test-only: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use support::*;

#[test]
fn snapshot_writes_a_runnable_folder_and_rehearse_tells_what_a_change_would_do() {
    let world = World::serve(
        &scenario("snapshot", "{nodes: 11}", "  - reconcile: {}\n"),
        0.001,
    );
    let dir = tempfile::tempdir().unwrap();
    let snapshot_dir = dir.path().join("snap");
    let taken = world.plugin(&[
        "snapshot",
        "-c",
        "sample",
        "-o",
        snapshot_dir.to_str().unwrap(),
    ]);
    assert_eq!(taken.status.code(), Some(0), "{}", stderr(&taken));
    assert!(
        stderr(&taken).contains("captured status json (11 processes)"),
        "{}",
        stderr(&taken)
    );
    for file in ["scenario.yaml", "live.yaml", "status.json"] {
        assert!(snapshot_dir.join(file).exists(), "{file} missing");
    }
    let live = std::fs::read_to_string(snapshot_dir.join("live.yaml")).unwrap();
    assert!(live.contains("kind: FoundationDBCluster"), "{live}");
    assert!(live.contains("name: sample-storage-1"), "{live}");

    let missing = world.plugin(&["snapshot", "-c", "nope", "-o", "/nonexistent/x"]);
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(
        stderr(&missing).trim(),
        "error: FoundationDBCluster default/nope not found"
    );

    // Rehearse a knob change: the cluster as served, with one more custom parameter.
    let mut manifest = world.cluster();
    let generation = manifest["metadata"]["generation"].clone();
    manifest["spec"]["processes"]["general"]["customParameters"] =
        serde_json::json!(["knob_max_trace_lines=1000"]);
    let manifest_path = dir.path().join("changed.yaml");
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let rehearsal_dir = dir.path().join("rehearsal");
    let rehearsed = world.plugin(&[
        "rehearse",
        "-c",
        "sample",
        "-f",
        manifest_path.to_str().unwrap(),
        "-o",
        rehearsal_dir.to_str().unwrap(),
    ]);
    let out = stdout(&rehearsed);
    assert_eq!(
        rehearsed.status.code(),
        Some(0),
        "{out}{}",
        stderr(&rehearsed)
    );
    assert!(out.contains("take-over: reconciled"), "{out}");
    assert!(out.contains("change: reconciled"), "{out}");
    // The knob is carried out by restarting the processes, and nothing else: the
    // take-over itself did nothing to the cluster.
    assert!(out.contains("change: fdb kill x"), "{out}");
    assert!(
        out.contains(
            "take-over: the operator deleted, created, killed, excluded or reconfigured nothing"
        ),
        "{out}"
    );
    assert!(rehearsal_dir.join("result.json").exists());
    // Nothing was written to the served cluster's spec.
    assert_eq!(world.cluster()["metadata"]["generation"], generation);
    assert!(world.cluster()["spec"]["processes"]["general"]["customParameters"].is_null());

    // A manifest that asks for nothing new is refused before anything is simulated.
    std::fs::write(&manifest_path, world.cluster().to_string()).unwrap();
    let same = world.plugin(&[
        "rehearse",
        "-c",
        "sample",
        "-f",
        manifest_path.to_str().unwrap(),
        "-o",
        dir.path().join("same").to_str().unwrap(),
    ]);
    assert_eq!(same.status.code(), Some(2), "{}", stdout(&same));
    assert!(
        stderr(&same).ends_with("asks for no change to the captured cluster\n"),
        "{}",
        stderr(&same)
    );
    assert!(
        stderr(&same).contains("error: --file "),
        "{}",
        stderr(&same)
    );
    let bad = world.plugin(&["rehearse", "-c", "sample", "-f", "/nonexistent.yaml"]);
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(stderr(&bad).lines().count(), 1, "{}", stderr(&bad));
    drop(world);
}
