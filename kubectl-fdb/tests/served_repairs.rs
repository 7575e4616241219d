//! `kubectl-fdb`'s emergency repairs against a served simulated world, with the operator
//! held still (a slow clock) so what the test reads is what the plugin wrote:
//! `fix-coordinator-ips --dry-run`, `update connection-string`, `deprecation`.

// Test-only: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::process::Command;

use serde_json::Value;
use support::*;

#[test]
fn fix_coordinator_ips_dry_run_names_the_change_and_writes_nothing() {
    // At this speed the operator does not run again during the test (its next pass is a
    // simulated second away): the stale address stays as the test made it.
    let world = World::serve(
        &scenario("coordinators", "{nodes: 11}", "  - reconcile: {}\n"),
        0.001,
    );
    let cluster = world.cluster();
    let connection = cluster["status"]["connectionString"]
        .as_str()
        .unwrap()
        .to_owned();
    let first = connection
        .split('@')
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap();
    let old_ip = first.rsplit_once(':').unwrap().0.to_owned();
    let owner = cluster["status"]["processGroups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| {
            g["addresses"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a == old_ip.as_str())
        })
        .unwrap()["processGroupID"]
        .as_str()
        .unwrap()
        .to_owned();
    let pod_name = format!("sample-{owner}");
    // The pod came back with another IP (as after a restart of every pod).
    let patch =
        serde_json::json!({"status": {"podIP": "127.0.9.9", "podIPs": [{"ip": "127.0.9.9"}]}});
    let patched = Command::new("kubectl")
        .env("KUBECONFIG", &world.kubeconfig)
        .args([
            "patch",
            "pod",
            &pod_name,
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch.to_string(),
        ])
        .output();
    if !patched.as_ref().is_ok_and(|o| o.status.success()) {
        // No kubectl here: patch through the served API with a raw request.
        raw_patch(
            &world,
            &format!("/api/v1/namespaces/default/pods/{pod_name}/status"),
            &patch,
        );
    }
    let before = world.cluster()["metadata"]["resourceVersion"].clone();
    let dry = world.plugin(&["fix-coordinator-ips", "-c", "sample", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    let out = stdout(&dry);
    assert!(out.contains(&format!("{first} -> 127.0.9.9:")), "{out}");
    assert!(out.contains(&format!("(process group {owner})")), "{out}");
    assert!(out.contains("Dry run: nothing was changed"), "{out}");
    let after = world.cluster();
    assert_eq!(after["metadata"]["resourceVersion"], before);
    assert_eq!(
        after["status"]["connectionString"].as_str(),
        Some(connection.as_str())
    );
    // Asked without --yes, with no one to answer: nothing changes.
    let declined = world.plugin(&["fix-coordinator-ips", "-c", "sample"]);
    assert_eq!(declined.status.code(), Some(1), "{}", stderr(&declined));
    assert_eq!(
        world.cluster()["metadata"]["resourceVersion"],
        before,
        "declined, yet written"
    );
    drop(world);
}

#[test]
fn fix_coordinator_ips_rewrites_every_pod_s_cluster_file_then_the_status() {
    let world = World::serve(
        &scenario("coordinators-apply", "{nodes: 11}", "  - reconcile: {}\n"),
        0.001,
    );
    let connection = world.cluster()["status"]["connectionString"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, first, owner) = first_coordinator(&world);
    let pod_name = format!("sample-{owner}");
    raw_patch(
        &world,
        &format!("/api/v1/namespaces/default/pods/{pod_name}/status"),
        &serde_json::json!({"status": {"podIP": "127.0.9.9", "podIPs": [{"ip": "127.0.9.9"}]}}),
    );
    let new = connection.replacen(
        &first,
        &format!("127.0.9.9:{}", first.rsplit_once(':').unwrap().1),
        1,
    );
    let running: Vec<String> = world
        .pods()
        .iter()
        .filter(|p| p["status"]["phase"] == "Running")
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    let applied = world.plugin(&["fix-coordinator-ips", "-c", "sample", "--yes"]);
    assert_eq!(applied.status.code(), Some(0), "{}", stderr(&applied));
    let out = stdout(&applied);
    assert!(
        out.contains(&format!("New connection string: {new}")),
        "{out}"
    );
    // Every running pod holds the new cluster file, written through pods/exec.
    for pod in &running {
        assert!(
            out.contains(&format!("{pod}: cluster file written, ")),
            "{out}"
        );
        let file = world.plugin(&[
            "exec",
            "-c",
            "sample",
            "-p",
            pod,
            "--",
            "cat",
            "/var/fdb/data/fdb.cluster",
        ]);
        assert_eq!(
            stdout(&file),
            format!("{new}\n"),
            "{pod}: {}",
            stderr(&file)
        );
    }
    let cluster = world.cluster();
    assert_eq!(
        cluster["status"]["connectionString"].as_str(),
        Some(new.as_str())
    );
    let config_map = world.get("/api/v1/namespaces/default/configmaps/sample-config");
    assert_eq!(
        config_map["data"]["cluster-file"].as_str(),
        Some(new.as_str())
    );
    // Once applied, nothing is left to change.
    let again = world.plugin(&["fix-coordinator-ips", "-c", "sample", "--dry-run"]);
    assert!(
        stdout(&again).contains("Nothing to change"),
        "{}",
        stdout(&again)
    );
    // `pkill fdbserver` signals the processes of each pod (fdbmonitor starts them
    // again): every pod but the one whose IP the test faked, where nothing listens.
    let restarted = out.matches("fdbserver restarted").count();
    assert_eq!(restarted, running.len() - 1, "{out}");
    assert!(
        out.contains(&format!(
            "{pod_name}: cluster file written, no fdbserver was running"
        )),
        "{out}"
    );
    drop(world);
}

/// The first coordinator's IP, address, and the process group that has that IP.
fn first_coordinator(world: &World) -> (String, String, String) {
    let cluster = world.cluster();
    let connection = cluster["status"]["connectionString"].as_str().unwrap();
    let first = connection
        .split('@')
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .to_owned();
    let ip = first.rsplit_once(':').unwrap().0.to_owned();
    let owner = cluster["status"]["processGroups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| {
            g["addresses"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a == ip.as_str())
        })
        .unwrap()["processGroupID"]
        .as_str()
        .unwrap()
        .to_owned();
    (ip, first, owner)
}

#[test]
fn update_connection_string_sets_the_status_and_the_config_map_after_a_dry_run() {
    // The operator does not run again during the test at this speed: what the test reads
    // is what the plugin wrote.
    let world = World::serve(
        &scenario("connection", "{nodes: 11}", "  - reconcile: {}\n"),
        0.001,
    );
    let connection = world.cluster()["status"]["connectionString"]
        .as_str()
        .unwrap()
        .to_owned();
    let (ids, coordinators) = connection.split_once('@').unwrap();
    let mut coordinators: Vec<String> = coordinators.split(',').map(str::to_owned).collect();
    coordinators[0] = "127.0.9.9:4501".to_owned();
    let new = format!("{ids}@{}", coordinators.join(","));
    let config_map = |world: &World| {
        world.get("/api/v1/namespaces/default/configmaps/sample-config")["data"]["cluster-file"]
            .as_str()
            .map(str::to_owned)
    };

    let dry = world.plugin(&[
        "update",
        "connection-string",
        "-c",
        "sample",
        &new,
        "--dry-run",
    ]);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    assert!(
        stdout(&dry).contains(&format!("{connection} -> {new}")),
        "{}",
        stdout(&dry)
    );
    assert_eq!(
        world.cluster()["status"]["connectionString"].as_str(),
        Some(connection.as_str())
    );

    let bad = world.plugin(&[
        "update",
        "connection-string",
        "-c",
        "sample",
        "sample@",
        "--yes",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(stderr(&bad).lines().count(), 1, "{}", stderr(&bad));
    assert!(stderr(&bad).contains("not valid"), "{}", stderr(&bad));

    let done = world.plugin(&["update", "connection-string", "-c", "sample", &new, "--yes"]);
    assert_eq!(done.status.code(), Some(0), "{}", stderr(&done));
    assert_eq!(
        world.cluster()["status"]["connectionString"].as_str(),
        Some(new.as_str())
    );
    assert_eq!(config_map(&world).as_deref(), Some(new.as_str()));

    let again = world.plugin(&["update", "connection-string", "-c", "sample", &new, "--yes"]);
    assert_eq!(again.status.code(), Some(0));
    assert!(stdout(&again).contains("already has"), "{}", stdout(&again));
    drop(world);
}

#[test]
fn deprecation_shows_a_diff_of_deprecated_settings_and_exits_1() {
    let world = World::serve(
        &scenario("deprecation", "{nodes: 11}", "  - reconcile: {}\n"),
        0.001,
    );
    let clean = world.plugin(&["deprecation"]);
    assert_eq!(clean.status.code(), Some(0), "{}", stderr(&clean));
    assert!(
        stdout(&clean).contains("1 cluster(s) without deprecations"),
        "{}",
        stdout(&clean)
    );
    raw_patch(
        &world,
        "/apis/apps.foundationdb.org/v1beta2/namespaces/default/foundationdbclusters/sample",
        &serde_json::json!({"spec": {"buggify": {"crashLoop": ["storage-1"]}}}),
    );
    let found = world.plugin(&["deprecation", "sample"]);
    assert_eq!(found.status.code(), Some(1), "{}", stderr(&found));
    let out = stdout(&found);
    assert!(out.contains("Cluster sample has deprecations"), "{out}");
    assert!(
        out.contains("spec.buggify.crashLoop: use spec.buggify.crashLoopContainers"),
        "{out}"
    );
    assert!(out.contains("-  crashLoop:"), "{out}");
    assert!(out.contains("+  crashLoopContainers:"), "{out}");
    assert!(out.contains("1/1 cluster(s) with deprecations"), "{out}");
    let missing = world.plugin(&["deprecation", "nope"]);
    assert_eq!(missing.status.code(), Some(2));
    drop(world);
}

fn raw_patch(world: &World, path: &str, patch: &Value) {
    let config = std::fs::read_to_string(&world.kubeconfig).unwrap();
    let server = config
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: http://"))
        .unwrap()
        .to_owned();
    let body = patch.to_string();
    let mut stream = std::net::TcpStream::connect(server).unwrap();
    use std::io::{Read as _, Write as _};
    write!(
        stream,
        "PATCH {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/merge-patch+json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
}

/// Field report FoundationDB/fdb-kubernetes-operator#2544 (a node-pool migration): every
/// pod of an IP-addressed cluster is lost at once; the operator recreates each on its
/// PVC, at new IPs, and the connection string names addresses nobody answers at. The
/// status keeps each group's old address while the database is down (as the Go operator
/// does), so `fix-coordinator-ips` maps every coordinator to its group's new IP, writes
/// the cluster file fdbserver keeps, restarts fdbserver, and the database comes back from
/// the PVCs with nothing lost.
#[test]
fn every_pod_lost_at_once_comes_back_through_fix_coordinator_ips() {
    let steps = "  - reconcile: {}\n  - advance: 60\n  - act: {as: user, deleteCollection: \
                 {kind: pod, labelSelector: \"foundationdb.org/fdb-cluster-name=sample\"}}\n  \
                 - advance: 600\n";
    let world = World::serve(&scenario("all-pods-lost", "{nodes: 11}", steps), 20.0);
    let cluster = world.cluster();
    assert_ne!(
        cluster["status"]["health"]["available"],
        Value::Bool(true),
        "the old coordinators' IPs are gone: {}",
        cluster["status"]
    );
    let dry = world.plugin(&["fix-coordinator-ips", "-c", "sample", "--dry-run"]);
    let out = stdout(&dry);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    assert!(!out.contains("no process group has this IP"), "{out}");
    assert_eq!(out.matches(" -> ").count(), 3, "{out}");
    let applied = world.plugin(&["fix-coordinator-ips", "-c", "sample", "--yes"]);
    assert_eq!(applied.status.code(), Some(0), "{}", stderr(&applied));
    world.eventually(
        "the database is available and the cluster reconciled",
        |w| {
            let status = &w.cluster()["status"];
            status["health"]["available"] == Value::Bool(true)
                && status["generations"]["reconciled"].is_number()
                && status["processGroups"].as_array().is_some_and(|groups| {
                    groups
                        .iter()
                        .all(|g| g["addresses"].as_array().map(Vec::len) == Some(1))
                })
        },
    );
    let result = world.stop();
    assert!(result.violations.is_empty(), "{:?}", result.violations);
}
