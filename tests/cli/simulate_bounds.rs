//! What a `fdb-operator simulate` run costs and leaves behind does not depend on how long
//! it simulates or how it ends: ten idle years fit in a bounded memory, and SIGTERM is
//! honoured promptly (tests of the real binary).

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// A two-process cluster (single redundancy: one storage, one log).
const TWO_PROCESSES: &str = "name: idle\ncluster:\n  apiVersion: apps.foundationdb.org/v1beta2\n  kind: FoundationDBCluster\n  metadata: {name: sample}\n  spec:\n    version: 7.1.57\n    databaseConfiguration: {redundancy_mode: single}\n    processCounts: {storage: 1, log: 1, stateless: -1}\n";

/// Ten years of simulated time, the longest step a scenario may take.
const TEN_YEARS: u64 = 315_360_000;

fn write_scenario(dir: &Path, steps: &str) -> std::path::PathBuf {
    let path = dir.join("scenario.yaml");
    std::fs::write(&path, format!("{TWO_PROCESSES}steps:\n{steps}")).unwrap();
    path
}

/// The peak resident memory of a running process so far (`VmHWM`), in bytes.
fn peak_rss(child: &Child) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[test]
fn ten_idle_years_on_a_two_process_world_stay_under_200_mib() {
    const LIMIT: u64 = 200 * 1024 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let scenario = write_scenario(dir.path(), &format!("  - advance: {TEN_YEARS}\n"));
    let result = dir.path().join("result.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fdb-operator"))
        .args(["simulate", "--quiet", "--output"])
        .arg(&result)
        .arg(&scenario)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut peak = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        peak = peak.max(peak_rss(&child).unwrap_or(0));
        if peak > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ten idle years reached {} MiB", peak >> 20);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
    assert_eq!(result["steps"][0]["time"], TEN_YEARS);
    assert_ne!(
        result["steps"][0]["fdb"]["dataDigest"].as_str().unwrap(),
        "empty",
        "the workload wrote"
    );
    assert!(peak > 0, "the child's memory was never read");
}

/// A cluster whose pods no node takes: the operator requeues for as long as the run
/// lasts (up to the pass limit of an `advance`), so the run is busy when signalled.
const NEVER_SCHEDULED: &str = "    processes:\n      general:\n        podTemplate:\n          spec:\n            nodeSelector: {no-such-label: x}\n            containers: []\n";

/// A `simulate` run with its progress lines arriving on a channel.
struct Run {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Run {
    fn start(args: &[&std::ffi::OsStr]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fdb-operator"))
            .arg("simulate")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a progress line containing `needle`; returns it.
    fn wait_for(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => {
                    self.seen.push(line.clone());
                    return line;
                }
                Ok(line) => self.seen.push(line),
                Err(error) => panic!("no line with {needle:?} ({error}): {:#?}", self.seen),
            }
        }
    }

    /// The world directory the run announced.
    fn world_dir(&mut self) -> std::path::PathBuf {
        let line = self.wait_for("world files in ");
        let rest = line.split("world files in ").nth(1).unwrap();
        std::path::PathBuf::from(rest.split(" (").next().unwrap())
    }

    /// SIGTERM; the exit code and how long the process took to end.
    fn terminate(&mut self) -> (Option<i32>, Duration) {
        let sent = Instant::now();
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        (status.code(), sent.elapsed())
    }

    /// The rest of the progress lines (the process has ended).
    fn rest(&mut self) -> String {
        self.seen.extend(self.lines.iter());
        self.seen.join("\n")
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How long a signalled run may take to end in these tests: a liveness bound, wide enough
/// for a loaded CI machine, not a performance figure. The run itself answers within a
/// second (the signal thread and the served loop's one-wall-second rounds,
/// `cli/src/stop_signals.rs`); an ignored signal shows in the exit code and the files
/// (a busy run goes on to its end and writes its result, a served world serves on).
const HONOURED_WITHIN: Duration = Duration::from_secs(10);

#[test]
fn sigterm_abandons_a_busy_run_at_once_and_removes_its_world() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(
        &scenario,
        format!("{TWO_PROCESSES}{NEVER_SCHEDULED}steps:\n  - advance: {TEN_YEARS}\n"),
    )
    .unwrap();
    let result = dir.path().join("result.json");
    let mut run = Run::start(&[
        "--output".as_ref(),
        result.as_os_str(),
        scenario.as_os_str(),
    ]);
    let world = run.world_dir();
    assert!(world.is_dir(), "{}", world.display());
    run.wait_for("pass 2:");
    let (code, took) = run.terminate();
    let rest = run.rest();
    assert_eq!(code, Some(143), "128 + SIGTERM: {rest}");
    assert!(took < HONOURED_WITHIN, "took {took:?}");
    assert!(!world.exists(), "{} left behind", world.display());
    assert!(!result.exists(), "no result for an abandoned run");
    assert!(rest.contains("SIGTERM: the run is abandoned"), "{rest}");
}

#[test]
fn sigterm_before_serving_abandons_the_run_and_while_serving_writes_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let busy = dir.path().join("busy.yaml");
    std::fs::write(
        &busy,
        format!("{TWO_PROCESSES}{NEVER_SCHEDULED}steps:\n  - advance: {TEN_YEARS}\n"),
    )
    .unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let result = dir.path().join("result.json");
    let serve = |scenario: &Path| {
        Run::start(&[
            scenario.as_os_str(),
            "--serve".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--kubeconfig".as_ref(),
            kubeconfig.as_os_str(),
            "--speed".as_ref(),
            "1000".as_ref(),
            "--output".as_ref(),
            result.as_os_str(),
        ])
    };
    // During the steps: abandoned at once.
    let mut run = serve(&busy);
    let world = run.world_dir();
    run.wait_for("pass 2:");
    let (code, took) = run.terminate();
    assert_eq!(code, Some(143), "{}", run.rest());
    assert!(took < HONOURED_WITHIN, "took {took:?}");
    assert!(!world.exists(), "{} left behind", world.display());
    assert!(!kubeconfig.exists() && !result.exists());
    // While serving at the highest speed: stopped at once, with the result.
    let idle = write_scenario(dir.path(), &format!("  - advance: {TEN_YEARS}\n"));
    let mut run = serve(&idle);
    let world = run.world_dir();
    run.wait_for("serving the Kubernetes API");
    std::thread::sleep(Duration::from_secs(2));
    let (code, took) = run.terminate();
    let rest = run.rest();
    assert_eq!(code, Some(0), "{rest}");
    assert!(took < HONOURED_WITHIN, "took {took:?}: {rest}");
    assert!(!world.exists(), "{} left behind", world.display());
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
    assert_eq!(result["steps"][1]["step"]["serve"]["speed"], 1000.0);
}
