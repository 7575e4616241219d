//! `kubectl-fdb` against a simulated world served over HTTP (`simulate --serve`): the
//! plugin binary talks to the world through a real kube client, the operator reacts, and
//! the world judges the outcome.

// Test-only: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use fdb_simulation::result::SimulationResult;
use fdb_simulation::runner::{RunOptions, serve_scenario};
use fdb_simulation::scenario::Scenario;
use fdb_simulation::serve::ServeOptions;
use serde_json::Value;

/// A world served on a loopback port from a thread of its own.
struct World {
    kubeconfig: PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<SimulationResult>>,
    _dir: tempfile::TempDir,
}

impl World {
    fn serve(scenario: &str, speed: f64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let scenario = Scenario::parse(scenario, "test").unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let options = ServeOptions {
            address: "127.0.0.1:0".parse().unwrap(),
            kubeconfig: kubeconfig.clone(),
            speed,
        };
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime
                .block_on(serve_scenario(
                    &scenario,
                    RunOptions::default(),
                    options,
                    async move {
                        let _ = stopped.await;
                    },
                ))
                .unwrap()
        });
        let started = Instant::now();
        while !kubeconfig.exists() {
            assert!(!thread.is_finished(), "the world stopped before serving");
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "not served after 300 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Self {
            kubeconfig,
            stop: Some(stop),
            thread: Some(thread),
            _dir: dir,
        }
    }

    /// Runs `kubectl-fdb args` (stdin closed: a question is answered "no").
    fn plugin(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_kubectl-fdb"))
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// A GET of the served API, as JSON.
    fn get(&self, path: &str) -> Value {
        let config = std::fs::read_to_string(&self.kubeconfig).unwrap();
        let server = config
            .lines()
            .find_map(|l| l.trim().strip_prefix("server: http://"))
            .unwrap()
            .to_owned();
        let mut stream = std::net::TcpStream::connect(server).unwrap();
        use std::io::{Read as _, Write as _};
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        let (head, body) = reply.split_once("\r\n\r\n").unwrap();
        let body = if head.to_lowercase().contains("transfer-encoding: chunked") {
            dechunk(body)
        } else {
            body.to_owned()
        };
        serde_json::from_str(&body).unwrap_or(Value::Null)
    }

    fn cluster(&self) -> Value {
        self.get(
            "/apis/apps.foundationdb.org/v1beta2/namespaces/default/foundationdbclusters/sample",
        )
    }

    fn pods(&self) -> Vec<Value> {
        self.get("/api/v1/namespaces/default/pods")["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Waits (wall clock) until `done` holds.
    fn eventually(&self, what: &str, done: impl Fn(&Self) -> bool) {
        let started = Instant::now();
        while !done(self) {
            assert!(
                started.elapsed() < Duration::from_secs(180),
                "never: {what}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn stop(mut self) -> SimulationResult {
        let _ = self.stop.take().unwrap().send(());
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&tail[..size]);
        rest = &tail[size + 2..];
    }
    out
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn pod<'a>(pods: &'a [Value], name: &str) -> Option<&'a Value> {
    pods.iter().find(|p| p["metadata"]["name"] == name)
}

fn live_pod(world: &World, name: &str) -> bool {
    let pods = world.pods();
    pod(&pods, name).is_some_and(|p| {
        p["metadata"]["deletionTimestamp"].is_null() && p["status"]["phase"] == "Running"
    })
}

fn group_exists(world: &World, group: &str) -> bool {
    world.cluster()["status"]["processGroups"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|g| g["processGroupID"] == group)
}

const CLUSTER: &str = r"
cluster:
  apiVersion: apps.foundationdb.org/v1beta2
  kind: FoundationDBCluster
  metadata: {name: sample, namespace: default}
  spec:
    version: 7.1.57
    databaseConfiguration: {redundancy_mode: double}
    processCounts: {storage: 4, log: 3, stateless: 3, cluster_controller: 1}
    routing: {useDNSInClusterFile: false}
    automationOptions:
      replacements: {enabled: false}
";

fn scenario(name: &str, world: &str, steps: &str) -> String {
    format!("name: {name}\nworld: {world}\n{CLUSTER}steps:\n{steps}")
}

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
    // remove process-groups by pod name: the operator excludes, replaces, then deletes.
    let removed = world.plugin(&[
        "remove",
        "process-groups",
        "-c",
        "sample",
        "sample-storage-1",
        "--yes",
    ]);
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
    // Without --dry-run it refuses (it would need pods/exec), in one line.
    let refused = world.plugin(&["fix-coordinator-ips", "-c", "sample"]);
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(stderr(&refused).lines().count(), 1);
    drop(world);
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
        (vec!["remove", "process-groups", "x"], "--fdb-cluster"),
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

    let declined = world.plugin(&["restart", "-c", "sample", "--all-processes"]);
    assert_eq!(declined.status.code(), Some(1));
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
