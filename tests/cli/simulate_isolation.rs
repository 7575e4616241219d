//! `fdb-operator simulate` runs on one machine never see each other; something else on a
//! pod address stops a run; a terminal gets a result file instead of the JSON.

use std::process::{Command, Stdio};

use fdb_simulation::world::HostBlock;
use fdb_simulation::world::network::BlockLease;

use super::repo_file;

fn simulate_to(output: &std::path::Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_fdb-operator"))
        .args(["simulate", "--quiet", "--output"])
        .arg(output)
        .arg(repo_file("docs/examples/quickstart.yaml"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn result_without_wall_time(path: &std::path::Path) -> serde_json::Value {
    let mut result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    result["metrics"]["wallMillis"] = serde_json::json!(0);
    result
}

#[test]
fn two_runs_at_the_same_moment_give_the_result_of_one_alone() {
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("alone.json");
    let status = simulate_to(&alone).wait().unwrap();
    assert!(status.success());
    let (first, second) = (
        dir.path().join("first.json"),
        dir.path().join("second.json"),
    );
    let mut runs = [simulate_to(&first), simulate_to(&second)];
    for run in &mut runs {
        assert!(run.wait().unwrap().success());
    }
    let expected = result_without_wall_time(&alone);
    assert_eq!(expected["steps"][0]["reconciled"], true);
    assert_eq!(result_without_wall_time(&first), expected);
    assert_eq!(result_without_wall_time(&second), expected);
}

/// A block no run holds, from the top of the range (runs that pick a free block start
/// from the bottom, so they do not take it when it is handed over).
fn high_block() -> BlockLease {
    (120..=199)
        .rev()
        .find_map(|block| BlockLease::acquire(HostBlock::Fixed(block), 0).ok())
        .unwrap()
}

#[test]
fn a_foreign_listener_on_a_pod_address_stops_the_run_with_exit_two() {
    // Occupy the first pod address of a free block, and hand the block over.
    let lease = high_block();
    let block = lease.block();
    let address = format!("127.{block}.1.1:8080");
    let _foreign = std::net::TcpListener::bind(&address).unwrap();
    drop(lease);
    let output = Command::new(env!("CARGO_BIN_EXE_fdb-operator"))
        .args(["simulate", "--ip-block", &block.to_string()])
        .arg(repo_file("docs/examples/quickstart.yaml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&address), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn a_block_held_by_another_run_is_an_error() {
    let lease = high_block();
    let output = Command::new(env!("CARGO_BIN_EXE_fdb-operator"))
        .args(["simulate", "--ip-block", &lease.block().to_string()])
        .arg(repo_file("docs/examples/quickstart.yaml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("127.{}.0.0/16 is in use", lease.block())),
        "{stderr}"
    );
}

#[test]
fn on_a_terminal_the_result_goes_to_a_file_named_after_the_scenario() {
    // `script` gives the run a terminal as stdout (util-linux); without it there is no
    // terminal to test with.
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: `script` (util-linux) is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let command = format!(
        "{} simulate {}",
        env!("CARGO_BIN_EXE_fdb-operator"),
        repo_file("docs/examples/quickstart.yaml").display()
    );
    let output = Command::new("script")
        .args(["--quiet", "--return", "--command", &command, "/dev/null"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{shown}");
    assert!(
        shown.contains("result written to quickstart.result.json"),
        "{shown}"
    );
    assert!(
        !shown.contains("\"steps\""),
        "no JSON on the terminal: {shown}"
    );
    let written = dir.path().join("quickstart.result.json");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(written).unwrap()).unwrap();
    assert_eq!(result["name"], "quickstart");
}
