//! `kubectl-fdb` against a simulated world served over HTTP (`simulate --serve`): the
//! plugin binary talks to the world through a real kube client, the operator reacts, and
//! the world judges the outcome.

// Test-only: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::*;

#[test]
fn analyze_finds_a_failed_pod_and_auto_fix_replaces_it() {
    let world = World::serve(
        &scenario(
            "analyze",
            "{nodes: 11}",
            "  - reconcile: {}\n  - fault: {kind: podFailed, processGroup: storage-2}\n  - advance: 120\n",
        ),
        20.0,
    );
    let analysis = world.plugin(&["analyze", "sample"]);
    assert_eq!(analysis.status.code(), Some(1), "{}", stderr(&analysis));
    let report = stdout(&analysis);
    assert!(
        report.contains("ProcessGroup: storage-2 has the condition PodFailing"),
        "{report}"
    );
    assert!(
        report.contains("Pod sample-storage-2 has unexpected Phase Failed"),
        "{report}"
    );

    // Asked without --yes, with no one to answer: nothing changes.
    let declined = world.plugin(&["analyze", "--auto-fix", "sample"]);
    assert_eq!(declined.status.code(), Some(1));
    assert!(
        stderr(&declined).contains("aborted"),
        "{}",
        stderr(&declined)
    );
    assert!(world.cluster()["spec"]["processGroupsToRemove"].is_null());

    let fixed = world.plugin(&["analyze", "--auto-fix", "--yes", "sample"]);
    assert!(
        stdout(&fixed).contains("Marked for removal: storage-2"),
        "{}",
        stdout(&fixed)
    );
    assert_eq!(
        world.cluster()["spec"]["processGroupsToRemove"],
        serde_json::json!(["storage-2"])
    );
    world.eventually("storage-2 replaced and gone", |w| {
        !group_exists(w, "storage-2") && pod(&w.pods(), "sample-storage-2").is_none()
    });
    world.eventually("analyze finds nothing", |w| {
        w.plugin(&["analyze", "sample"]).status.code() == Some(0)
    });
    let result = world.stop();
    assert!(result.violations.is_empty(), "{:?}", result.violations);
}

#[test]
fn remove_cordon_and_buggify_act_through_the_operator() {
    let world = World::serve(
        &scenario("day-2", "{nodes: 11}", "  - reconcile: {}\n"),
        20.0,
    );
    // remove process-groups by pod name, without -c: the pod's cluster label names its
    // cluster (the Go plugin's cross-cluster selection). The operator excludes,
    // replaces, then deletes.
    let removed = world.plugin(&["remove", "process-groups", "sample-storage-1", "--yes"]);
    assert_eq!(removed.status.code(), Some(0), "{}", stderr(&removed));
    world.eventually("storage-1 removed", |w| {
        !group_exists(w, "storage-1") && pod(&w.pods(), "sample-storage-1").is_none()
    });
    let exclusions = world.plugin(&["get", "exclusion-status", "sample"]);
    assert_eq!(
        stdout(&exclusions),
        "Excluded processes (status json):\n  none\nProcess groups marked for removal (operator status):\n  none\n"
    );

    // cordon a node: every group on it is replaced.
    let pods = world.pods();
    let log_1 = pod(&pods, "sample-log-1").unwrap();
    let node = log_1["spec"]["nodeName"].as_str().unwrap().to_owned();
    let cordoned = world.plugin(&["cordon", "-c", "sample", &node, "-y"]);
    assert_eq!(cordoned.status.code(), Some(0), "{}", stderr(&cordoned));
    assert!(stdout(&cordoned).contains("log-1"), "{}", stdout(&cordoned));
    // Every group that ran on the node is marked, then replaced and gone.
    let marked: Vec<String> = stdout(&cordoned)
        .lines()
        .find_map(|l| l.strip_prefix("Marked for removal: "))
        .unwrap()
        .split(", ")
        .map(str::to_owned)
        .collect();
    let on_node: Vec<String> = pods
        .iter()
        .filter(|p| p["spec"]["nodeName"] == node.as_str())
        .filter_map(|p| p["metadata"]["labels"]["foundationdb.org/fdb-process-group-id"].as_str())
        .map(str::to_owned)
        .collect();
    let mut expected = on_node.clone();
    expected.sort();
    assert_eq!(marked, expected);
    world.eventually("the node's groups replaced", |w| {
        marked.iter().all(|g| !group_exists(w, g))
    });

    // buggify crash-loop: the group is listed and its container crash-loops.
    let victim = world
        .pods()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter_map(|p| p["metadata"]["labels"]["foundationdb.org/fdb-process-group-id"].as_str())
        .find(|g| g.starts_with("stateless-"))
        .unwrap()
        .to_owned();
    let victim_pod = format!("sample-{victim}");
    let buggified = world.plugin(&["buggify", "crash-loop", "-c", "sample", &victim_pod, "-y"]);
    assert_eq!(buggified.status.code(), Some(0), "{}", stderr(&buggified));
    let targets = world.cluster()["spec"]["buggify"]["crashLoopContainers"].clone();
    assert_eq!(
        targets,
        serde_json::json!([{"containerName": "foundationdb", "targets": [victim]}])
    );
    world.eventually("the victim crash-loops", |w| {
        pod(&w.pods(), &victim_pod).is_some_and(|p| {
            p["status"]["containerStatuses"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["state"]["waiting"]["reason"] == "CrashLoopBackOff")
        })
    });
    let cleaned = world.plugin(&["buggify", "crash-loop", "-c", "sample", "--clean", "-y"]);
    assert_eq!(cleaned.status.code(), Some(0));
    assert!(world.cluster()["spec"]["buggify"]["crashLoopContainers"].is_null());
    world.eventually("the victim runs again", |w| {
        live_pod(w, &victim_pod)
            && pod(&w.pods(), &victim_pod).is_some_and(|p| {
                p["status"]["containerStatuses"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .all(|c| c["ready"] == true)
            })
    });

    let result = world.stop();
    assert!(result.violations.is_empty(), "{:?}", result.violations);
}

#[test]
fn bad_usage_missing_clusters_and_unreachable_apis_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    // Nothing listens on port 1.
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n\
         users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kubectl-fdb"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .output()
            .unwrap()
    };
    for (args, expected) in [
        (
            vec!["analyze", "--bogus", "sample"],
            "unexpected argument '--bogus'",
        ),
        (
            vec!["analyze", "sample"],
            "cannot reach the Kubernetes API at http://127.0.0.1:1",
        ),
        (
            vec!["remove", "process-groups", "--process-class", "log"],
            "--process-class selects within one cluster: name it with -c",
        ),
        (
            vec!["restart", "--match-labels", "a=b"],
            "--match-labels selects within one cluster",
        ),
    ] {
        let output = run(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert_eq!(message.lines().count(), 1, "{args:?}: {message}");
        assert!(message.contains(expected), "{args:?}: {message}");
    }
    let missing = Path::new("/nonexistent/kubeconfig");
    let output = Command::new(env!("CARGO_BIN_EXE_kubectl-fdb"))
        .arg("--kubeconfig")
        .arg(missing)
        .args(["analyze", "sample"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).starts_with("error: kubeconfig: /nonexistent/kubeconfig"));
}

#[test]
fn restart_all_processes_is_one_kill_and_exec_runs_fdbcli() {
    let world = World::serve(
        &scenario("restart", "{nodes: 11}", "  - reconcile: {}\n"),
        1.0,
    );
    let status = world.plugin(&[
        "exec",
        "-c",
        "sample",
        "--",
        "fdbcli",
        "--exec",
        "status json",
    ]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    let status: Value = serde_json::from_str(&stdout(&status)).unwrap();
    let processes = status["cluster"]["processes"].as_object().unwrap().len();
    assert_eq!(processes, 11);
    let unknown = world.plugin(&["exec", "-c", "sample", "--", "ls"]);
    assert_eq!(unknown.status.code(), Some(127));
    // `get configuration` prints what `fdbcli configure` takes (the Go plugin's output):
    // the database accepts it as it is.
    let configuration = world.plugin(&["get", "configuration", "sample"]);
    assert_eq!(
        configuration.status.code(),
        Some(0),
        "{}",
        stderr(&configuration)
    );
    let arguments = stdout(&configuration).trim().to_owned();
    assert!(
        arguments.starts_with("double ssd-2 usable_regions=1"),
        "{arguments}"
    );
    let configure = world.plugin(&[
        "exec",
        "-c",
        "sample",
        "--",
        "fdbcli",
        "--exec",
        &format!("configure {arguments}"),
    ]);
    assert_eq!(
        configure.status.code(),
        Some(0),
        "{}{}",
        stdout(&configure),
        stderr(&configure)
    );
    let json = world.plugin(&["get", "configuration", "-o", "json", "sample"]);
    let json: Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(json["spec"]["redundancy_mode"], "double");
    // A single-region cluster has nothing to fail over.
    let over = world.plugin(&[
        "get",
        "configuration",
        "--fail-over",
        "--update",
        "sample",
        "-y",
    ]);
    assert_eq!(
        stdout(&over).trim(),
        "Nothing to change",
        "{}",
        stderr(&over)
    );
    // Standard input reaches the command: fdbcli reads its commands from it.
    let mut piped = Command::new(env!("CARGO_BIN_EXE_kubectl-fdb"))
        .arg("--kubeconfig")
        .arg(&world.kubeconfig)
        .args(["exec", "-c", "sample", "--", "fdbcli"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let mut input = piped.stdin.take().unwrap();
        input.write_all(b"status json\n").unwrap();
    }
    let piped = piped.wait_with_output().unwrap();
    assert_eq!(piped.status.code(), Some(0), "{}", stderr(&piped));
    let status: Value = serde_json::from_str(&stdout(&piped)).unwrap();
    assert_eq!(
        status["cluster"]["processes"].as_object().unwrap().len(),
        11
    );

    let declined = world.plugin(&["restart", "-c", "sample", "--all-processes"]);
    assert_eq!(declined.status.code(), Some(1));
    // --match-labels selects the cluster's pods carrying every label (declined here: the
    // question names what would be restarted).
    let by_labels = world.plugin(&[
        "restart",
        "-c",
        "sample",
        "--match-labels",
        "foundationdb.org/fdb-process-class=storage,foundationdb.org/fdb-process-group-id=storage-2",
    ]);
    assert_eq!(by_labels.status.code(), Some(1), "{}", stderr(&by_labels));
    assert!(
        stdout(&by_labels).contains("(process groups storage-2)"),
        "{}",
        stdout(&by_labels)
    );
    let restarted = world.plugin(&["restart", "-c", "sample", "--all-processes", "--yes"]);
    assert_eq!(restarted.status.code(), Some(0), "{}", stderr(&restarted));
    assert!(
        stdout(&restarted).contains("Restart 11 processes"),
        "{}",
        stdout(&restarted)
    );
    let result = world.stop();
    let served_step = result.steps.len() - 1;
    let kills: Vec<_> = result
        .events
        .iter()
        .filter(|e| e.step == served_step && e.action == "kill")
        .collect();
    assert_eq!(kills.len(), 1, "{kills:?}");
    // The user's act, whatever the operator did meanwhile.
    assert_eq!(kills[0].by.as_deref(), Some("user"), "{kills:?}");
    assert_eq!(
        kills[0].detail.matches(":4501").count(),
        11,
        "{}",
        kills[0].detail
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
}

#[test]
fn a_missing_cluster_is_named() {
    let world = World::serve(
        &scenario("missing", "{nodes: 11}", "  - reconcile: {maxPasses: 1}\n"),
        1.0,
    );
    let output = world.plugin(&["analyze", "nope"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output).trim(),
        "error: FoundationDBCluster default/nope not found"
    );
    let output = world.plugin(&["remove", "process-groups", "-c", "sample", "nope", "-y"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output).trim(),
        "error: no pod or process group named nope in FoundationDBCluster default/sample"
    );
    let output = world.plugin(&["version"]);
    assert!(stdout(&output).contains("Kubernetes API: v1.33.0-fdb-simulation"));
}
