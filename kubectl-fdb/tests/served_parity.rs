//! The Go plugin's flags that Go users' runbooks type, against a served simulated world
//! (issue 38): `cordon` without `-c` (each pod's `--cluster-label` names its cluster) and
//! `analyze --no-color`.

// Test-only: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use support::*;

#[test]
fn cordon_finds_the_clusters_by_their_pods_label_and_analyze_prints_no_color() {
    let world = World::serve(
        &scenario("parity", "{nodes: 11}", "  - reconcile: {}\n"),
        0.001,
    );
    let analysis = world.plugin(&["analyze", "--no-color", "sample"]);
    assert_eq!(analysis.status.code(), Some(0), "{}", stderr(&analysis));
    let report = stdout(&analysis);
    assert!(report.contains("✔ Cluster is available"), "{report}");
    assert!(!report.contains('\u{1b}'), "{report}");

    let pods = world.pods();
    let log_1 = pod(&pods, "sample-log-1").unwrap();
    let node = log_1["spec"]["nodeName"].as_str().unwrap().to_owned();
    let mut on_node: Vec<String> = pods
        .iter()
        .filter(|p| p["spec"]["nodeName"] == node.as_str())
        .filter_map(|p| p["metadata"]["labels"]["foundationdb.org/fdb-process-group-id"].as_str())
        .map(str::to_owned)
        .collect();
    on_node.sort();
    // A label no pod has: no cluster is found, nothing is written.
    let before = world.cluster()["metadata"]["resourceVersion"].clone();
    let nothing = world.plugin(&["cordon", "-l", "example.com/no-such-label", &node, "-y"]);
    assert_eq!(nothing.status.code(), Some(0), "{}", stderr(&nothing));
    assert!(
        stdout(&nothing).contains("No pod with label example.com/no-such-label"),
        "{}",
        stdout(&nothing)
    );
    assert_eq!(world.cluster()["metadata"]["resourceVersion"], before);
    // Asked without --yes, with no one to answer: declined, nothing written.
    let declined = world.plugin(&["cordon", &node]);
    assert_eq!(declined.status.code(), Some(1), "{}", stderr(&declined));
    assert_eq!(world.cluster()["metadata"]["resourceVersion"], before);
    // Without -c: the pods' cluster label names the cluster.
    let cordoned = world.plugin(&["cordon", &node, "--yes"]);
    assert_eq!(cordoned.status.code(), Some(0), "{}", stderr(&cordoned));
    assert!(
        stdout(&cordoned).contains(&format!("Marked for removal: {}", on_node.join(", "))),
        "{}",
        stdout(&cordoned)
    );
    assert_eq!(
        world.cluster()["spec"]["processGroupsToRemove"],
        serde_json::json!(on_node)
    );
    drop(world);
}
