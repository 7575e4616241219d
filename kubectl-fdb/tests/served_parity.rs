//! The Go plugin's flags that Go users' runbooks type, against a served simulated world
//! (issue 38): `cordon` without `-c` (each pod's `--cluster-label` names its cluster),
//! `analyze --no-color`, `--match-labels`, `get configuration --fail-over --update` and
//! `get exclusion-status --interval`.

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
    // --match-labels on remove (asked, declined: the question names the selection) and
    // on buggify (written).
    let by_class = world.plugin(&[
        "remove",
        "process-groups",
        "-c",
        "sample",
        "--match-labels",
        "foundationdb.org/fdb-process-class=log",
    ]);
    assert_eq!(by_class.status.code(), Some(1), "{}", stderr(&by_class));
    let question = stdout(&by_class);
    assert!(
        question.contains("Remove process groups log-"),
        "{question}"
    );
    assert!(!question.contains("storage-"), "{question}");
    let no_schedule = world.plugin(&[
        "buggify",
        "no-schedule",
        "-c",
        "sample",
        "--match-labels",
        "foundationdb.org/fdb-process-group-id=stateless-1",
        "-y",
    ]);
    assert_eq!(
        no_schedule.status.code(),
        Some(0),
        "{}",
        stderr(&no_schedule)
    );
    assert_eq!(
        world.cluster()["spec"]["buggify"]["noSchedule"],
        serde_json::json!(["stateless-1"])
    );
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

fn dc1(world: &World) -> serde_json::Value {
    world.get(
        "/apis/apps.foundationdb.org/v1beta2/namespaces/default/foundationdbclusters/test-cluster-dc1",
    )
}

#[test]
fn get_configuration_fails_over_a_two_region_spec_and_writes_it_with_update() {
    // dc1's cluster of a database given a second region (tests/scenarios/regions/
    // at-once.yaml's start): the operator held still (a slow clock) so the test reads
    // what the plugin wrote.
    let world = World::serve(
        "name: fail-over\nseed: 4\ncluster:\n  apiVersion: apps.foundationdb.org/v1beta2\n  \
         kind: FoundationDBCluster\n  metadata: {name: test-cluster-dc1, namespace: default}\n  \
         spec:\n    version: 7.1.57\n    faultDomain: {key: foundationdb.org/none}\n    \
         processGroupIDPrefix: dc1\n    dataCenter: dc1\n    \
         processCounts: {stateless: -1, log: 2, storage: 2}\n    databaseConfiguration:\n      \
         redundancy_mode: double\n      usable_regions: 1\n      \
         regions: [{datacenters: [{id: dc1, priority: 1}]}, {datacenters: [{id: dc2, priority: 0}]}]\n\
         steps:\n  - reconcile: {}\n",
        0.001,
    );
    let shown = world.plugin(&["get", "configuration", "--fail-over", "test-cluster-dc1"]);
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    let shown = stdout(&shown);
    // As fdbcli configure takes it (its escapes of `[`, `{`, `"` and `,`).
    assert!(
        shown.contains(r"\x22id\x22:\x22dc1\x22\x2c\x22priority\x22:0"),
        "{shown}"
    );
    assert!(
        shown.contains(r"\x22id\x22:\x22dc2\x22\x2c\x22priority\x22:1"),
        "{shown}"
    );
    let before = dc1(&world);
    let declined = world.plugin(&[
        "get",
        "configuration",
        "--fail-over",
        "--update",
        "test-cluster-dc1",
    ]);
    assert_eq!(declined.status.code(), Some(1), "{}", stderr(&declined));
    assert_eq!(
        dc1(&world)["metadata"]["resourceVersion"],
        before["metadata"]["resourceVersion"]
    );
    let updated = world.plugin(&[
        "get",
        "configuration",
        "--fail-over",
        "--update",
        "test-cluster-dc1",
        "--yes",
    ]);
    assert_eq!(updated.status.code(), Some(0), "{}", stderr(&updated));
    assert_eq!(stdout(&updated).trim_end().lines().last(), Some("Updated"));
    assert_eq!(
        dc1(&world)["spec"]["databaseConfiguration"]["regions"],
        serde_json::json!([
            {"datacenters": [{"id": "dc1", "priority": 0}]},
            {"datacenters": [{"id": "dc2", "priority": 1}]}
        ])
    );
    drop(world);
}

#[test]
fn exclusion_status_follows_a_draining_exclusion_every_interval_until_done() {
    // A user's exclusion of a storage process whose data drains in 20 simulated seconds,
    // served on the wall clock.
    let world = World::serve(
        &scenario(
            "draining",
            "{nodes: 11, exclusionSeconds: 20}",
            "  - reconcile: {}\n  - act: {as: user, exclude: [storage-1]}\n",
        ),
        1.0,
    );
    let followed = world.plugin(&["get", "exclusion-status", "sample", "--interval=2s"]);
    assert_eq!(followed.status.code(), Some(0), "{}", stderr(&followed));
    let out = stdout(&followed);
    assert!(
        out.contains("(data still moving: reading again in 2s; Ctrl-C stops)"),
        "{out}"
    );
    // Read again and again until the process held nothing: the last round says so.
    let last = out
        .rsplit("Excluded processes (status json):")
        .next()
        .unwrap();
    assert!(!last.contains("still moving"), "{out}");
    assert!(
        out.matches("Excluded processes (status json):").count() >= 2,
        "{out}"
    );
    let result = world.stop();
    assert!(result.violations.is_empty(), "{:?}", result.violations);
}
