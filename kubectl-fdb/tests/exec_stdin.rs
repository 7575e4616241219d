//! `kubectl fdb exec` fed far more standard input than the served container reads
//! (issue 40: 200 MB of stdin made the plugin hang, the served world once kept it whole):
//! the refusal names the limit, nothing hangs, and neither side's memory grows with the
//! input. A test binary of its own, so the memory measured is this one world's.

// Test-only: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

/// The input fed to the command: 200 MB.
const INPUT: usize = 200 * 1000 * 1000;
/// The memory growth allowed to each side (issue 40's "Done when").
const GROWTH_LIMIT_KIB: u64 = 64 * 1024;

/// A `VmHWM`/`VmRSS` line of a process's status, in KiB.
fn kib(pid: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

#[test]
fn two_hundred_mb_of_exec_stdin_is_refused_naming_the_limit_without_hanging_or_growing() {
    let world = World::serve(
        &scenario("stdin", "{nodes: 11}", "  - reconcile: {}\n"),
        1.0,
    );
    // The peak so far forgotten (Linux: 5 to clear_refs resets VmHWM), so the peak read
    // after is this exec's.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let before = kib("self", if reset { "VmHWM:" } else { "VmRSS:" }).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-fdb"))
        .arg("--kubeconfig")
        .arg(&world.kubeconfig)
        .args(["exec", "-c", "sample", "--", "fdbcli"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let mut input = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let chunk = vec![0u8; 64 * 1024];
        let mut sent = 0;
        // The plugin may stop reading (it exits): a broken pipe ends the feeding.
        while sent < INPUT && input.write_all(&chunk).is_ok() {
            sent += chunk.len();
        }
    });
    let started = Instant::now();
    let mut plugin_peak = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        plugin_peak = plugin_peak.max(kib(&pid, "VmHWM:").unwrap_or(0));
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("kubectl fdb exec with 200 MB of stdin still runs after 120 s (a hang)");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    feeder.join().unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("standard input above 1048576 bytes"),
        "the refusal names the limit: {stderr}"
    );
    let after = kib("self", if reset { "VmHWM:" } else { "VmRSS:" }).unwrap();
    let growth = after.saturating_sub(before);
    eprintln!(
        "200 MB of exec stdin: served world grew {growth} KiB, plugin peaked at \
         {plugin_peak} KiB, {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        growth < GROWTH_LIMIT_KIB,
        "the served world grew {growth} KiB"
    );
    assert!(
        plugin_peak < GROWTH_LIMIT_KIB,
        "the plugin peaked at {plugin_peak} KiB"
    );
    let result = world.stop();
    assert!(result.violations.is_empty(), "{:?}", result.violations);
}
