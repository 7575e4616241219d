//! `kubectl fdb` on hostile names (issue 40): a cluster, process group or pod name with
//! `/`, `;`, a newline or `..` exits 2 naming the argument, before any request, and
//! nothing is written (`-c sample/status` used to patch the status subresource and print
//! "Marked for removal" with exit 0). `rehearse -f` takes only a valid
//! FoundationDBCluster.

// Test-only: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use support::*;

#[test]
fn hostile_names_exit_2_naming_the_argument_and_nothing_is_written() {
    let world = World::serve(
        &scenario("hostile-names", "{nodes: 11}", "  - reconcile: {}\n"),
        20.0,
    );
    let before = world.cluster();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "remove",
                "process-groups",
                "-c",
                "sample/status",
                "storage-1",
                "--yes",
            ],
            "--fdb-cluster",
        ),
        (
            vec![
                "remove",
                "process-groups",
                "-c",
                "sample;x",
                "storage-1",
                "--yes",
            ],
            "--fdb-cluster",
        ),
        (
            vec![
                "remove",
                "process-groups",
                "-c",
                "sample",
                "storage-1/x",
                "--yes",
            ],
            "[NAMES]",
        ),
        (
            vec!["remove", "process-groups", "-c", "sample", "..", "--yes"],
            "[NAMES]",
        ),
        (
            vec!["restart", "-c", "sample", "storage-1\nstorage-2", "--yes"],
            "[NAMES]",
        ),
        (
            vec![
                "buggify",
                "crash-loop",
                "-c",
                "sample",
                "storage-1;",
                "--yes",
            ],
            "[NAMES]",
        ),
        (
            vec![
                "buggify",
                "crash-loop",
                "-c",
                "sample",
                "storage-1",
                "--container-name",
                "a/b",
            ],
            "--container-name",
        ),
        (vec!["get", "configuration", "../sample"], "<CLUSTER>"),
        (vec!["-n", "../default", "analyze", "sample"], "--namespace"),
        (
            vec!["exec", "-c", "sample", "-p", "x/../y", "--", "status"],
            "--pod",
        ),
    ];
    for (args, argument) in cases {
        let output = world.plugin(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(
            message.contains(argument) && message.contains("invalid value"),
            "{args:?}: {message}"
        );
        assert!(stdout(&output).is_empty(), "{args:?}: {}", stdout(&output));
    }
    let after = world.cluster();
    assert_eq!(
        after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
        "the cluster was written"
    );
    let result = world.stop();
    assert!(result.violations.is_empty(), "{:?}", result.violations);
}

#[test]
fn rehearse_takes_only_a_valid_foundationdb_cluster_and_writes_nothing_otherwise() {
    let world = World::serve(
        &scenario("hostile-rehearse", "{nodes: 11}", "  - reconcile: {}\n"),
        20.0,
    );
    let dir = tempfile::tempdir().unwrap();
    let output_dir = dir.path().join("out");
    for (manifest, needles) in [
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: sample}\nspec: {containers: []}\n",
            vec!["\"Pod\"", "not a FoundationDBCluster"],
        ),
        (
            "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata: {name: sample}\nspec: {version: 7.1.57, processCounts: {storage: -5}}\n",
            vec!["processCounts.storage", "fdb-operator explain"],
        ),
        (
            "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata: {name: sample, namespace: decoy}\nspec: {version: 7.3.43}\n",
            vec!["metadata.namespace", "\"decoy\""],
        ),
    ] {
        let file = dir.path().join("manifest.yaml");
        std::fs::write(&file, manifest).unwrap();
        let output = world.plugin(&[
            "rehearse",
            "-c",
            "sample",
            "-f",
            file.to_str().unwrap(),
            "-o",
            output_dir.to_str().unwrap(),
        ]);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{message}");
        for needle in needles {
            assert!(message.contains(needle), "{needle}: {message}");
        }
        assert!(!output_dir.exists(), "{message}");
    }
    world.stop();
}

#[test]
fn every_flag_is_validated_and_crash_loop_stays_within_the_fault_tolerance() {
    let world = World::serve(
        &scenario("hostile-flags", "{nodes: 11}", "  - reconcile: {}\n"),
        20.0,
    );
    let before = world.cluster();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["analyze", "sample", "--ignore-condition", "Bogus"],
            "--ignore-condition",
        ),
        (
            vec![
                "remove",
                "process-groups",
                "-c",
                "sample",
                "--process-condition",
                "Bogus",
                "--yes",
            ],
            "--process-condition",
        ),
        (
            vec![
                "remove",
                "process-groups",
                "-c",
                "sample",
                "--process-class",
                "storage;x",
                "--yes",
            ],
            "--process-class",
        ),
        (
            vec![
                "restart",
                "-c",
                "sample",
                "--process-condition",
                "x/y",
                "--yes",
            ],
            "--process-condition",
        ),
        (
            vec!["cordon", "-c", "sample", "--node-selector", "a b", "--yes"],
            "--node-selector",
        ),
        // An empty selector would select (and cordon) every node.
        (
            vec!["cordon", "-c", "sample", "--node-selector", "", "--yes"],
            "--node-selector",
        ),
        (
            vec![
                "update",
                "connection-string",
                "-c",
                "sample",
                "garbage",
                "--yes",
            ],
            "<CONNECTION_STRING>",
        ),
    ];
    for (args, argument) in cases {
        let output = world.plugin(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(
            message.contains(argument) && message.contains("invalid value"),
            "{args:?}: {message}"
        );
    }
    // Double redundancy tolerates one fault domain down: two storage groups on two
    // nodes are declined (exit 1, nothing written) unless forced.
    let declined = world.plugin(&[
        "buggify",
        "crash-loop",
        "-c",
        "sample",
        "storage-1",
        "storage-2",
        "--yes",
    ]);
    let message = stderr(&declined);
    assert_eq!(declined.status.code(), Some(1), "{message}");
    assert!(
        message.contains("--force") && message.contains("tolerates (1)"),
        "{message}"
    );
    let after = world.cluster();
    assert_eq!(
        after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
        "the cluster was written"
    );
    let forced = world.plugin(&[
        "buggify",
        "crash-loop",
        "-c",
        "sample",
        "storage-1",
        "storage-2",
        "--yes",
        "--force",
    ]);
    assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
    assert_eq!(
        world.cluster()["spec"]["buggify"]["crashLoopContainers"][0]["targets"],
        serde_json::json!(["storage-1", "storage-2"])
    );
    let cleaned = world.plugin(&["buggify", "crash-loop", "-c", "sample", "--clean", "--yes"]);
    assert_eq!(cleaned.status.code(), Some(0), "{}", stderr(&cleaned));
    world.stop();
}
