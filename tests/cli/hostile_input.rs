//! `explain` and `simulate` on hostile or careless input: they fail cleanly (exit 1 or 2,
//! never a panic or a hang), naming the field, the line where known, and the limit.

use std::time::{Duration, Instant};

use super::fdb_operator;

const CLUSTER: &str = "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata:\n  name: sample\nspec:\n  version: 7.1.57\n";

pub(super) fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// A scenario around a cluster spec (indented under `spec:`) and steps.
pub(super) fn scenario(spec: &str, body: &str) -> String {
    format!(
        "name: hostile\ncluster:\n  apiVersion: apps.foundationdb.org/v1beta2\n  kind: FoundationDBCluster\n  metadata: {{name: sample}}\n  spec: {spec}\n{body}"
    )
}

/// Runs `simulate` on the text; asserts exit 2, no result, and every needle in stderr.
pub(super) fn simulate_refuses(dir: &tempfile::TempDir, text: &str, needles: &[&str]) {
    let file = write(dir, "scenario.yaml", text);
    let started = Instant::now();
    let output = fdb_operator(&["simulate", "--quiet", &file]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{needles:?}: {stderr}");
    assert!(output.stdout.is_empty(), "{needles:?}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} missing in {stderr}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{needles:?} took {:?}",
        started.elapsed()
    );
}

#[test]
fn simulate_refuses_a_step_longer_than_ten_years_up_front() {
    let dir = tempfile::tempdir().unwrap();
    simulate_refuses(
        &dir,
        &scenario("{version: 7.1.57}", "steps:\n  - advance: 253402207200\n"),
        &["steps[0].advance", "253402207200", "10 years"],
    );
    simulate_refuses(
        &dir,
        &scenario(
            "{version: 7.1.57}",
            "steps:\n  - expect: {within: 18446744073709551615, available: true}\n",
        ),
        &["steps[0].expect.within"],
    );
}

#[test]
fn deep_nesting_fails_fast_in_explain_and_simulate() {
    let dir = tempfile::tempdir().unwrap();
    let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let manifest = write(&dir, "deep.yaml", &format!("{CLUSTER}  extra: {deep}\n"));
    let started = Instant::now();
    let output = fdb_operator(&["explain", "-f", &manifest]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("deeper than 64 levels"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20));
    let json = write(
        &dir,
        "deep.json",
        &format!("{}{}", "{\"a\": ".repeat(100_000), "}".repeat(100_000)),
    );
    assert_eq!(
        fdb_operator(&["explain", "-f", &json]).status.code(),
        Some(2)
    );
    simulate_refuses(
        &dir,
        &scenario("{version: 7.1.57}", &format!("steps:\n  - apply: {deep}\n")),
        &["deeper than 64 levels", "line 8"],
    );
}

#[test]
fn huge_files_are_refused_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let big = format!("{CLUSTER}# {}\n", "x".repeat(5 * 1024 * 1024));
    let manifest = write(&dir, "big.yaml", &big);
    let output = fdb_operator(&["explain", "-f", &manifest]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("4 MiB"));
    simulate_refuses(
        &dir,
        &format!(
            "{}# {}\n",
            scenario("{version: 7.1.57}", ""),
            "x".repeat(5 << 20)
        ),
        &["4 MiB"],
    );
}

#[test]
fn simulate_bounds_the_world_and_checks_the_cluster_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let plain = "{version: 7.1.57}";
    simulate_refuses(
        &dir,
        &scenario(plain, "world: {nodes: 100000}\n"),
        &["world.nodes", "above the limit of 1000 simulated nodes"],
    );
    simulate_refuses(
        &dir,
        &scenario("{version: 7.1.57, processCounts: {storage: 5000}}", ""),
        &[
            "cluster.spec.processCounts",
            "limit of 1000 simulated process groups",
        ],
    );
    simulate_refuses(
        &dir,
        &scenario("{version: 7.1.57, processCounts: {storage: 100000}}", ""),
        &["cluster.spec.processCounts.storage", "above 10000"],
    );
    simulate_refuses(
        &dir,
        &scenario(
            plain,
            &format!("steps:\n{}", "  - advance: 1\n".repeat(10_001)),
        ),
        &["steps:", "limit of 10000 steps"],
    );
    simulate_refuses(
        &dir,
        "cluster:\n  kind: FoundationDBCluster\n  metadata: {name: sample}\n  spec: {version: 7.1.57}\n",
        &["cluster.apiVersion", "apps.foundationdb.org/v1beta2"],
    );
    simulate_refuses(
        &dir,
        &scenario(plain, "steps:\n  - apply: {metadata: {name: renamed}}\n"),
        &["steps[0].apply.metadata.name"],
    );
    simulate_refuses(
        &dir,
        &scenario(
            plain,
            "world: {nodes: 4}\nsteps:\n  - act: {as: user, drain: node-99}\n",
        ),
        &["steps[0].act.drain", "node-99"],
    );
    simulate_refuses(
        &dir,
        &scenario(
            "{version: 7.1.57, processCounts: {storage: 4}}",
            "steps:\n  - fault: {kind: processMissing, processGroup: storage-99}\n",
        ),
        &["steps[0].fault.processGroup", "storage-99"],
    );
    simulate_refuses(
        &dir,
        &scenario(plain, "steps:\n  - advance: 1\n    advance: 2\n"),
        &["duplicate key \"advance\"", "line 9"],
    );
}

/// Runs `explain` on a manifest; returns the exit code and the JSON it printed.
pub(super) fn explain(dir: &tempfile::TempDir, text: &str) -> (Option<i32>, serde_json::Value) {
    let file = write(dir, "cluster.yaml", text);
    let output = fdb_operator(&["explain", "-f", &file]);
    let json = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("no JSON: {}", String::from_utf8_lossy(&output.stderr)));
    (output.status.code(), json)
}

#[test]
fn explain_accepts_a_byte_order_mark() {
    let dir = tempfile::tempdir().unwrap();
    let (code, json) = explain(&dir, &format!("\u{feff}{CLUSTER}"));
    assert_eq!(code, Some(0), "{json}");
    let (code, _) = explain(
        &dir,
        &format!(
            "\u{feff}apiVersion: v1\nkind: Namespace\nmetadata: {{name: fdb}}\n---\n{CLUSTER}"
        ),
    );
    assert_eq!(code, Some(0));
}

#[test]
fn explain_refuses_nan_duplicate_keys_and_clusters_that_cannot_converge() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "  processCounts:\n    storage: .nan\n",
            ["spec.processCounts.storage", "line 8"],
        ),
        (
            "  processCounts:\n    storage: .inf\n",
            ["spec.processCounts.storage", "line 8"],
        ),
        (
            "  processCounts:\n    storage: 5\n    storage: 3\n",
            ["duplicate key \"storage\"", "line 9"],
        ),
        (
            "  processCounts:\n    log: lots\n",
            ["spec.processCounts.log: invalid type", "line 8"],
        ),
        (
            "  processCounts: {storage: -1}\n",
            ["spec.processCounts.storage: -1", "never reconciles"],
        ),
        (
            "  databaseConfiguration: {logs: 2147483647}\n",
            ["spec.databaseConfiguration.logs", "above 10000"],
        ),
    ];
    for (spec, needles) in cases {
        let (code, json) = explain(&dir, &format!("{CLUSTER}{spec}"));
        assert_eq!(code, Some(1), "{spec}: {json}");
        assert_eq!(json["valid"], false);
        let error = json["errors"][0].as_str().unwrap();
        for needle in needles {
            assert!(error.contains(needle), "{needle:?} missing in {error}");
        }
    }
}

#[test]
fn speed_out_of_bounds_is_refused_by_the_command_line() {
    for speed in ["1e308", "1e9", "1001", "0", "-1", "NaN", "inf", "fast"] {
        let output = fdb_operator(&[
            "simulate",
            "scenario.yaml",
            "--serve",
            "127.0.0.1:0",
            "--kubeconfig",
            "k",
            &format!("--speed={speed}"),
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{speed}: {stderr}");
        assert!(
            stderr.contains("--speed") && stderr.contains(speed),
            "{speed}: {stderr}"
        );
    }
}
