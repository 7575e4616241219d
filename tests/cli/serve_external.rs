//! `simulate --serve --external-operator`: the world without its own operator, the real
//! `fdb-operator run` reconciling it through the served API, its writes judged as the
//! operator's in the result written at SIGTERM.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use super::serve::{Served, eventually, kubectl, run};
use super::{fdb_operator, repo_file};

/// The quickstart scenario without its steps (they need the world's own operator).
pub(crate) fn scenario_without_steps(dir: &std::path::Path) -> std::path::PathBuf {
    let quickstart = std::fs::read_to_string(repo_file("docs/examples/quickstart.yaml")).unwrap();
    let world = quickstart.split("\nsteps:").next().unwrap();
    let path = dir.join("no-steps.yaml");
    std::fs::write(&path, format!("{world}\nsteps: []\n")).unwrap();
    path
}

/// A running `fdb-operator run` and its log (`WORK/operator.log`), killed if the test
/// fails.
pub(crate) struct Operator(Option<Child>, std::path::PathBuf);

impl Operator {
    fn start(kubeconfig: &std::path::Path, work: &std::path::Path) -> Self {
        let no_tools = work.join("no-tools");
        Self::start_with(
            kubeconfig,
            work,
            &["--fdb-binaries-dir", no_tools.to_str().unwrap()],
        )
    }

    /// `fdb-operator run --metrics-address 127.0.0.1:0 --work-dir WORK/work ARGS...`.
    pub(crate) fn start_with(
        kubeconfig: &std::path::Path,
        work: &std::path::Path,
        args: &[&str],
    ) -> Self {
        std::fs::create_dir_all(work).unwrap();
        let log = std::fs::File::create(work.join("operator.log")).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_fdb-operator"))
            .args(["run", "--metrics-address", "127.0.0.1:0"])
            .args(["--work-dir", work.join("work").to_str().unwrap()])
            .args(args)
            .env("KUBECONFIG", kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env("NO_COLOR", "1")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        Self(Some(child), work.join("operator.log"))
    }

    /// SIGKILL, as a node or the OOM killer ends a process.
    pub(crate) fn kill(mut self) {
        let mut child = self.0.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// SIGTERM; the exit status within 30 s.
    pub(crate) fn stop(self) -> Option<i32> {
        self.terminate();
        self.exit_code(Duration::from_secs(30))
    }

    /// Sends SIGTERM and returns at once.
    pub(crate) fn terminate(&self) {
        let child = self.0.as_ref().unwrap();
        let sent = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }

    /// Whether the kernel may back the process's memory with transparent huge pages
    /// (`THP_enabled` of `/proc/PID/status`); `None` where it does not say.
    pub(crate) fn transparent_huge_pages(&self) -> Option<bool> {
        let pid = self.0.as_ref()?.id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let line = status.lines().find(|l| l.starts_with("THP_enabled:"))?;
        Some(line.split_whitespace().nth(1)? != "0")
    }

    /// Whether the process still runs.
    pub(crate) fn running(&mut self) -> bool {
        self.0.as_mut().unwrap().try_wait().unwrap().is_none()
    }

    /// The exit status, waiting at most `limit` (then the process is killed and the
    /// test fails); the log's tail is printed when it is not 0.
    pub(crate) fn exit_code(mut self, limit: Duration) -> Option<i32> {
        let mut child = self.0.take().unwrap();
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                if !status.success() {
                    eprintln!("{}", self.log_tail());
                }
                return status.code();
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "fdb-operator run did not stop within {limit:?}\n{}",
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Operator {
    /// The last lines of the operator's log, to show when a test fails.
    pub(crate) fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.1).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(30)..].join("\n");
        format!("{}:\n{tail}", self.1.display())
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn steps_that_need_the_worlds_operator_are_refused_by_name() {
    let output = fdb_operator(&[
        "simulate",
        repo_file("docs/examples/quickstart.yaml").to_str().unwrap(),
        "--serve",
        "127.0.0.1:0",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
        "--external-operator",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("steps[0] (reconcile) needs the world's own operator"),
        "{stderr}"
    );
}

#[test]
fn the_shipped_operator_reconciles_a_served_world_and_is_judged_as_the_operator() {
    let Some(kubectl) = kubectl() else { return };
    let scenarios = tempfile::tempdir().unwrap();
    let scenario = scenario_without_steps(scenarios.path());
    let served = Served::start_with(&scenario, &["--external-operator"]);
    let users = served.kubeconfig.clone();
    let operators = served.operator_kubeconfig();
    assert!(
        operators.exists(),
        "no operator kubeconfig next to the users'"
    );

    // The world's clock is the wall clock: the cluster was created just now.
    let created = super::serve::ok(
        &kubectl,
        &users,
        &[
            "get",
            "fdb",
            "sample",
            "-o",
            "jsonpath={.metadata.creationTimestamp}",
        ],
    );
    let now = Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .unwrap();
    assert!(
        created.starts_with(String::from_utf8_lossy(&now.stdout).trim()),
        "created {created}, not today"
    );

    // The shipped binary, unchanged, reconciles through its own kubeconfig: its first
    // writes (the cluster's ConfigMap) need no FoundationDB tools.
    let operator = Operator::start(&operators, served.dir.path());
    eventually(&kubectl, &users, &["get", "configmaps"], |out| {
        out.contains("sample-config")
    });
    // No transparent huge pages for the operator (cli/src/main.rs): on Linux the
    // kernel reports it in the process's status.
    if let Some(enabled) = operator.transparent_huge_pages() {
        assert!(!enabled, "the operator runs with transparent huge pages");
    }
    assert_eq!(operator.stop(), Some(0), "SIGTERM is a clean stop");

    // A write the API server refuses, made with the operator's identity, is the
    // operator's `write-refused`; the same write as a user is not judged.
    let patch = r#"{"status":{"processGroups":[{"processGroupID":"storage-1","processClass":"nonsense"}]}}"#;
    for kubeconfig in [&users, &operators] {
        let refused = run(
            &kubectl,
            kubeconfig,
            &[
                "patch",
                "fdb",
                "sample",
                "--subresource=status",
                "--type=merge",
                "-p",
                patch,
            ],
        );
        assert!(!refused.status.success());
    }

    let (code, result) = served.stop();
    assert_eq!(code, Some(1), "one violation: {}", result["violations"]);
    let violations = result["violations"].as_array().unwrap();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(violations[0]["invariant"], "write-refused");
    let events = result["events"].as_array().unwrap();
    assert!(
        events.iter().any(|e| e["action"] == "create"
            && e["target"] == "configmap/sample-config"
            && e["by"] == "operator"),
        "the operator's ConfigMap is not among its events: {events:?}"
    );
    let last = result["steps"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["step"]["serve"]["externalOperator"], true);
    assert_eq!(last["passes"], 0, "the world ran no operator of its own");
}
