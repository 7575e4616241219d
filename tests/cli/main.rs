//! Tests of the real `fdb-operator` binary: output, exit codes and the committed CRDs.

// Test-only crate: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod command_values;
mod hostile_conf;
mod hostile_input;
mod hostile_names;
mod hostile_snapshot;
mod run_metrics;
mod serve;
mod serve_backup;
mod serve_external;
mod serve_fidelity;
mod serve_fleet;
mod serve_leader;
mod serve_outage;
mod serve_run;
mod serve_tools;
mod simulate_bounds;
mod simulate_isolation;
mod snapshot_tls;

fn fdb_operator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fdb-operator"))
        .args(args)
        .output()
        .unwrap()
}

fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

#[test]
fn crds_prints_exactly_the_committed_file() {
    let output = fdb_operator(&["crds"]);
    assert!(output.status.success());
    let committed = std::fs::read_to_string(repo_file("crds/foundationdb-crds.yaml")).unwrap();
    assert!(
        String::from_utf8(output.stdout).unwrap() == committed,
        "`fdb-operator crds` differs from crds/foundationdb-crds.yaml; run \
         UPDATE_CRDS=1 cargo test -p fdb-operator-cli committed_crds_are_up_to_date"
    );
}

#[test]
fn explain_a_valid_manifest_exits_zero_with_the_documented_json() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cluster.yaml");
    std::fs::write(
        &file,
        "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata:\n  name: sample\nspec:\n  version: 7.1.57\n  processCounts:\n    storage: 4\n    cluster_controller: 1\n",
    )
    .unwrap();
    let output = fdb_operator(&["explain", "-f", file.to_str().unwrap()]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "valid": true,
            "errors": [],
            "warnings": [],
            "version": "7.1.57",
            "faultTolerance": 1,
            "processCounts": {"storage": 4, "log": 4, "stateless": 8, "cluster_controller": 1},
            "coordinators": 3,
            "databaseConfiguration": {"redundancy_mode": "double", "storage_engine": "ssd-2",
                                      "logs": 3, "proxies": 3, "resolvers": 1, "usable_regions": 1},
            "images": {"main": "foundationdb/foundationdb:7.1.57",
                       "sidecar": "foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1"},
            "podModel": {"imageType": "split", "imageTypeSource": "imageType unset: this operator's default, split (a running cluster whose pods all run unified stays unified)", "containers": [
                "init:foundationdb-kubernetes-init: the sidecar in --init-mode (copies the cluster file and monitor conf)",
                "foundationdb: fdbmonitor",
                "foundationdb-kubernetes-sidecar: the HTTP sidecar (the operator's agent in the pod)"
            ]},
            "locks": false,
            "configureCommand": "configure new double ssd-2 logs=3 proxies=3 resolvers=1 usable_regions=1"
        })
    );
    let text = String::from_utf8(output.stdout).unwrap();
    let order: Vec<usize> = [
        "\"valid\"",
        "\"errors\"",
        "\"warnings\"",
        "\"version\"",
        "\"faultTolerance\"",
        "\"processCounts\"",
        "\"coordinators\"",
        "\"databaseConfiguration\"",
        "\"images\"",
        "\"locks\"",
    ]
    .iter()
    .map(|key| text.find(key).unwrap())
    .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "keys out of order:\n{text}"
    );
}

#[test]
fn explain_the_production_example() {
    let output = fdb_operator(&[
        "explain",
        "-f",
        repo_file("docs/examples/cluster-production.yaml")
            .to_str()
            .unwrap(),
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        json["processCounts"],
        serde_json::json!({"storage": 9, "log": 6, "cluster_controller": 1})
    );
    assert_eq!(json["coordinators"], 5);
    assert_eq!(
        json["images"]["main"],
        "registry.example.com/foundationdb/foundationdb:7.1.57"
    );
}

#[test]
fn explain_an_invalid_manifest_exits_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cluster.yaml");
    std::fs::write(
        &file,
        "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata: {name: bad}\nspec:\n  version: \"7.0\"\n  fooBar: true\n",
    )
    .unwrap();
    let output = fdb_operator(&["explain", "-f", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["valid"], false);
    assert_eq!(
        json["errors"][0],
        "spec.version: \"7.0\" is not a valid FoundationDB version (expected MAJOR.MINOR.PATCH with an optional -rcN, e.g. 7.1.57)"
    );
    assert_eq!(
        json["warnings"][0],
        "unknown field spec.fooBar: ignored by this operator"
    );
}

#[test]
fn explain_unreadable_inputs_exit_two() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yaml");
    let output = fdb_operator(&["explain", "-f", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    // The message and its cause, each once (the printer walks the error's chain).
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("error: cannot read {}: ", missing.display()))
            && stderr.matches("No such file").count() == 1,
        "{stderr}"
    );
    let output = fdb_operator(&["simulate", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "error: invalid scenario: cannot read scenario {}: ",
            missing.display()
        )) && stderr.matches("No such file").count() == 1,
        "{stderr}"
    );

    let not_yaml = dir.path().join("bad.yaml");
    std::fs::write(&not_yaml, "key: [unclosed\n").unwrap();
    let output = fdb_operator(&["explain", "-f", not_yaml.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let cause = stderr
        .split_once("bad.yaml is not readable YAML: ")
        .map(|(_, cause)| cause.trim())
        .unwrap_or_default();
    assert!(
        !cause.is_empty() && stderr.matches(cause).count() == 1,
        "{stderr}"
    );

    let backup = repo_file("docs/examples/backup.yaml");
    let output = fdb_operator(&["explain", "-f", backup.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("holds no FoundationDBCluster"));
}

#[test]
fn help_teaches_with_examples() {
    let output = fdb_operator(&["explain", "--help"]);
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    assert!(
        help.contains("fdb-operator explain -f cluster.yaml"),
        "{help}"
    );
    assert!(help.contains("Exit status"), "{help}");
}

#[test]
fn simulate_the_quickstart_exits_zero_with_progress_and_a_reconciled_cluster() {
    let output = fdb_operator(&[
        "simulate",
        repo_file("docs/examples/quickstart.yaml").to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("pass 1: "), "progress per pass: {stderr}");
    assert!(stderr.contains("no invariant violated"), "{stderr}");
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["name"], "quickstart");
    assert_eq!(result["steps"][0]["reconciled"], true);
    assert_eq!(result["steps"][0]["fdb"]["available"], true);
    assert_eq!(result["violations"], serde_json::json!([]));
}

#[test]
fn simulate_an_invalid_scenario_exits_two_naming_the_field_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = "cluster:\n  apiVersion: apps.foundationdb.org/v1beta2\n  kind: FoundationDBCluster\n  metadata: {name: sample}\n";
    let cases = [
        (
            format!(
                "{cluster}  spec: {{version: 7.1.57}}\nsteps:\n  - fault: {{kind: podPendin, processGroup: log-1}}\n"
            ),
            ["steps[0].fault.kind", "line 7"],
        ),
        (
            format!("{cluster}  spec: {{version: \"7.0\"}}\nsteps:\n  - reconcile: {{}}\n"),
            ["spec.version", "7.0"],
        ),
    ];
    for (index, (yaml, expected)) in cases.iter().enumerate() {
        let file = dir.path().join(format!("scenario-{index}.yaml"));
        std::fs::write(&file, yaml).unwrap();
        let output = fdb_operator(&["simulate", file.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        for needle in expected {
            assert!(stderr.contains(needle), "{needle:?} missing in {stderr}");
        }
        assert!(output.stdout.is_empty());
    }
}

#[test]
fn explain_the_go_backup_sample_as_a_backup() {
    let sample = repo_file("tests/cli/data/go-backup-sample.yaml");
    let output = fdb_operator(&[
        "explain",
        "-f",
        sample.to_str().unwrap(),
        "--kind",
        "FoundationDBBackup",
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["kind"], "FoundationDBBackup");
    assert_eq!(json["valid"], true);
    assert_eq!(json["clusterName"], "test-cluster");
    assert_eq!(json["backupState"], "Running");
    assert_eq!(json["snapshotPeriodSeconds"], 3600);
    assert_eq!(
        json["agentDeployment"]["name"],
        "test-cluster-backup-agents"
    );
    assert_eq!(json["agentDeployment"]["replicas"], 2);
    assert_eq!(
        json["url"],
        "blobstore://seaweedfs@seaweedfs:8333/test-cluster?bucket=fdb-backups&secure_connection=0"
    );
    assert_eq!(
        json["startCommand"],
        "fdbbackup start -d blobstore://seaweedfs@seaweedfs:8333/test-cluster?bucket=fdb-backups&secure_connection=0 -s 3600 -t default -z"
    );
    // The same file still explains as its cluster by default.
    let output = fdb_operator(&["explain", "-f", sample.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["version"], "7.3.69");
}

#[test]
fn explain_the_go_restore_sample_as_a_restore() {
    let sample = repo_file("tests/cli/data/go-restore-sample.yaml");
    let output = fdb_operator(&[
        "explain",
        "-f",
        sample.to_str().unwrap(),
        "--kind",
        "fdbrestore",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["kind"], "FoundationDBRestore");
    assert_eq!(json["destinationClusterName"], "sample-cluster");
    assert_eq!(
        json["startCommand"],
        "fdbrestore start -r blobstore://account@object-store.example:443/sample-cluster?bucket=fdb-backups"
    );
    let warnings = json["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("bucketName")),
        "{warnings:?}"
    );
}

#[test]
fn explain_a_backup_without_kind_points_at_the_flag_and_an_invalid_one_exits_one() {
    let backup = repo_file("docs/examples/backup.yaml");
    let output = fdb_operator(&["explain", "-f", backup.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--kind FoundationDBBackup"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad-backup.yaml");
    std::fs::write(
        &file,
        "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBBackup\n\
         metadata: {name: b}\nspec: {clusterName: c, deletionPolicy: keep}\n",
    )
    .unwrap();
    let output = fdb_operator(&[
        "explain",
        "-f",
        file.to_str().unwrap(),
        "--kind",
        "FoundationDBBackup",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let errors: Vec<&str> = json["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert!(
        errors.iter().any(|e| e.starts_with("spec.deletionPolicy"))
            && errors
                .iter()
                .any(|e| e.starts_with("spec.blobStoreConfiguration.accountName")),
        "{errors:?}"
    );
}
