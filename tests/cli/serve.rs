//! `fdb-operator simulate --serve`: the real `kubectl` (Debian's `kubernetes-client`,
//! installed here when missing and apt can) looks around a served world and changes it;
//! SIGTERM stops the run, which then writes its result.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::{fdb_operator, repo_file};

/// A running `fdb-operator simulate --serve`, killed if the test fails.
pub(crate) struct Served {
    child: Option<Child>,
    pub(crate) kubeconfig: PathBuf,
    result: PathBuf,
    pub(crate) dir: tempfile::TempDir,
}

impl Served {
    /// The kubeconfig of the operator's identity that `--external-operator` writes next
    /// to the users' (`FILE.operator`).
    pub(crate) fn operator_kubeconfig(&self) -> PathBuf {
        let mut path = self.kubeconfig.as_os_str().to_owned();
        path.push(".operator");
        PathBuf::from(path)
    }

    fn start(scenario: &Path, speed: &str) -> Self {
        Self::start_with(scenario, &["--speed", speed])
    }

    /// `simulate SCENARIO --serve 127.0.0.1:0 --kubeconfig DIR/kubeconfig ARGS...`.
    pub(crate) fn start_with(scenario: &Path, args: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let result = dir.path().join("result.json");
        let child = Command::new(env!("CARGO_BIN_EXE_fdb-operator"))
            .args([
                "simulate",
                scenario.to_str().unwrap(),
                "--serve",
                "127.0.0.1:0",
            ])
            .args(["--kubeconfig", kubeconfig.to_str().unwrap()])
            .args(args)
            .args(["--output", result.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut served = Self {
            child: Some(child),
            kubeconfig,
            result,
            dir,
        };
        let started = Instant::now();
        while !served.kubeconfig.exists() {
            if let Some(status) = served.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("simulate --serve exited before serving: {status}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "no kubeconfig after 300 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        served
    }

    /// SIGTERM, then the exit status and the result document.
    pub(crate) fn stop(mut self) -> (Option<i32>, serde_json::Value) {
        let mut child = self.child.take().unwrap();
        let killed = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = child.wait().unwrap();
        let result = std::fs::read_to_string(&self.result).unwrap();
        (status.code(), serde_json::from_str(&result).unwrap())
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `kubectl`, installed from Debian's `kubernetes-client` when missing; `None` (the test
/// is skipped, saying why) only where there is no apt to install it with.
pub(crate) fn kubectl() -> Option<PathBuf> {
    let found = |name: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
    };
    if let Some(path) = found("kubectl") {
        return Some(path);
    }
    if found("apt-get").is_none() {
        eprintln!("SKIPPED: kubectl is not installed and there is no apt-get to install it");
        return None;
    }
    let sudo = if found("sudo").is_some() { "sudo " } else { "" };
    let install = Command::new("sh")
        .args([
            "-c",
            &format!(
                "{sudo}apt-get update -q && {sudo}env DEBIAN_FRONTEND=noninteractive apt-get install -y -q kubernetes-client"
            ),
        ])
        .status()
        .unwrap();
    assert!(
        install.success(),
        "apt-get install kubernetes-client failed"
    );
    Some(found("kubectl").expect("kubernetes-client installed no kubectl"))
}

/// How long one `kubectl` command may take before the test fails instead of hanging.
const KUBECTL_DEADLINE: Duration = Duration::from_secs(120);

/// `kubectl args`, killed (and the test failed) when it runs past [`KUBECTL_DEADLINE`].
pub(crate) fn run(kubectl: &Path, kubeconfig: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(kubectl)
        .env("KUBECONFIG", kubeconfig)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drain the pipes while waiting, so a chatty command cannot block on a full pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut buf).unwrap();
        buf
    });
    let err = std::thread::spawn(move || {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut buf).unwrap();
        buf
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > KUBECTL_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kubectl {args:?} still running after {KUBECTL_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

pub(crate) fn ok(kubectl: &Path, kubeconfig: &Path, args: &[&str]) -> String {
    let output = run(kubectl, kubeconfig, args);
    assert!(
        output.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Waits (wall clock) until `kubectl args` prints something that satisfies `done`.
pub(crate) fn eventually(
    kubectl: &Path,
    kubeconfig: &Path,
    args: &[&str],
    done: impl Fn(&str) -> bool,
) {
    let started = Instant::now();
    loop {
        let out = ok(kubectl, kubeconfig, args);
        if done(&out) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "kubectl {args:?} never got there; last output:\n{out}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn real_kubectl_reads_changes_and_watches_a_served_world() {
    let Some(kubectl) = kubectl() else { return };
    let served = Served::start(&repo_file("docs/examples/quickstart.yaml"), "30");
    let config = served.kubeconfig.clone();

    let listing = ok(
        &kubectl,
        &config,
        &["get", "foundationdbclusters,pods,pvc", "-A"],
    );
    assert!(listing.contains("foundationdbcluster.apps.foundationdb.org/sample"));
    assert!(listing.contains("pod/sample-storage-1") && listing.contains("Running"));
    assert!(listing.contains("persistentvolumeclaim/sample-storage-1-data"));
    let crds = ok(&kubectl, &config, &["get", "crd"]);
    assert!(crds.contains("foundationdbclusters.apps.foundationdb.org"));

    let described = ok(&kubectl, &config, &["describe", "pod", "sample-storage-1"]);
    assert!(described.contains("foundationdb.org/fdb-process-group-id=storage-1"));
    let described = ok(&kubectl, &config, &["describe", "fdb", "sample"]);
    assert!(described.contains("Running Version"));

    // A watch started now must see the pod deleted below.
    let watch = Command::new(&kubectl)
        .env("KUBECONFIG", &config)
        .args(["get", "pods", "-w", "--request-timeout=60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let old_uid = ok(
        &kubectl,
        &config,
        &[
            "get",
            "pod",
            "sample-stateless-2",
            "-o",
            "jsonpath={.metadata.uid}",
        ],
    );
    // `--wait=false`: kubectl's wait for the deletion (GET, then LIST and WATCH by name
    // until DELETED) never returns when the pod is removed between its GET and its LIST
    // and recreated under the same name before it checks its cache: it then waits for
    // the new pod's deletion. That is kubectl's own race (kubernetes/kubernetes#123177,
    // kubernetes/kubectl#1803, fixed by kubernetes/kubernetes#135563), hit against real
    // API servers too; at --speed 30 the operator recreates the pod within milliseconds
    // of the kubelet removing it, so the served world hit it about once in 60 deletes.
    let deleted = ok(
        &kubectl,
        &config,
        &["delete", "pod", "sample-stateless-2", "--wait=false"],
    );
    assert!(deleted.contains("deleted"));
    std::thread::sleep(Duration::from_secs(1));
    let _ = Command::new("kill")
        .args([&watch.id().to_string()])
        .status();
    let watched = String::from_utf8(watch.wait_with_output().unwrap().stdout).unwrap();
    assert!(
        watched
            .lines()
            .any(|l| l.starts_with("sample-stateless-2") && l.contains("Terminating")),
        "the watch saw no deletion:\n{watched}"
    );
    // The operator replaces the deleted pod: same name, new uid, running.
    eventually(
        &kubectl,
        &config,
        &[
            "get",
            "pod",
            "sample-stateless-2",
            "--ignore-not-found",
            "-o",
            "jsonpath={.metadata.uid} {.status.phase}",
        ],
        |out| {
            out.split_once(' ')
                .is_some_and(|(uid, phase)| uid != old_uid && phase == "Running")
        },
    );

    // `kubectl apply` of a changed manifest: the operator adds the storage process.
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("cluster.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata:\n  name: sample\n  namespace: default\nspec:\n  version: 7.1.57\n  databaseConfiguration:\n    redundancy_mode: double\n  processCounts:\n    storage: 5\n    cluster_controller: 1\n",
    )
    .unwrap();
    let applied = ok(
        &kubectl,
        &config,
        &["apply", "-f", manifest.to_str().unwrap()],
    );
    assert!(applied.contains("configured"), "{applied}");
    eventually(&kubectl, &config, &["get", "pods"], |out| {
        out.lines()
            .any(|l| l.starts_with("sample-storage-5") && l.contains("Running"))
    });
    eventually(
        &kubectl,
        &config,
        &[
            "get",
            "fdb",
            "sample",
            "-o",
            "jsonpath={.metadata.generation}/{.status.generations.reconciled}",
        ],
        |out| out == "2/2",
    );

    let (code, result) = served.stop();
    assert_eq!(code, Some(0), "violations: {}", result["violations"]);
    let last = result["steps"].as_array().unwrap().last().unwrap().clone();
    assert!(last["step"]["serve"]["seconds"].as_u64().unwrap() > 0);
    assert!(
        last["pods"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "sample-storage-5")
    );
}

#[test]
fn serving_a_non_loopback_address_is_refused() {
    let output = fdb_operator(&[
        "simulate",
        repo_file("docs/examples/quickstart.yaml").to_str().unwrap(),
        "--serve",
        "0.0.0.0:8001",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not a loopback address"), "{stderr}");
}

/// Issue 36: `kubectl exec` into a served pod runs FoundationDB's fdbcli (the simulated
/// one the operator's tools run on): `kill` of an address the cluster controller does
/// not list refuses the whole command with FoundationDB's text and exit code 1, and
/// nothing is killed.
#[test]
fn kubectl_exec_fdbcli_refuses_a_kill_of_an_unlisted_address() {
    let Some(kubectl) = kubectl() else { return };
    let served = Served::start(&repo_file("docs/examples/quickstart.yaml"), "30");
    let config = served.kubeconfig.clone();
    let output = run(
        &kubectl,
        &config,
        &[
            "exec",
            "sample-log-1",
            "-c",
            "foundationdb",
            "--",
            "fdbcli",
            "--exec",
            "kill; kill 10.99.99.99:4501",
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("ERROR: process `10.99.99.99:4501' not recognized."),
        "{stderr}"
    );
    assert!(stdout.contains("can be killed:"), "{stdout}");
    let (code, result) = served.stop();
    assert_eq!(code, Some(0), "violations: {}", result["violations"]);
    let user_kills: Vec<&serde_json::Value> = result["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "kill" && e["by"] == "user")
        .collect();
    assert!(user_kills.is_empty(), "{user_kills:?}");
}
