//! A backup through the shipped binary: a FoundationDBBackup applied with kubectl to a
//! served world without its own operator reaches its running state through
//! `fdb-operator run` (the backup agents' Deployment, then `fdbbackup start` and
//! `fdbbackup status` through the world's stand-in fdbbackup); the world sees no
//! violation.

use std::time::{Duration, Instant};

use super::serve_run::{World, operator_events};

/// A continuous backup of the served cluster `sample` (docs/examples/backup.yaml, in the
/// world's namespace, one agent).
const BACKUP: &str = "apiVersion: apps.foundationdb.org/v1beta2
kind: FoundationDBBackup
metadata:
  name: sample-backup
  namespace: default
spec:
  version: 7.1.57
  clusterName: sample
  backupState: Running
  agentCount: 1
  snapshotPeriodSeconds: 86400
  blobStoreConfiguration:
    accountName: backup@s3.us-east-1.amazonaws.com
    bucket: fdb-backups
    backupName: sample
";

#[test]
fn a_backup_applied_with_kubectl_runs_through_the_shipped_binary() {
    let Some(world) = World::start() else { return };
    let operator = world.operator("operator", &[]);
    world.reconciled(Duration::from_secs(120));
    let manifest = world.dir.path().join("backup.yaml");
    std::fs::write(&manifest, BACKUP).unwrap();
    world.kubectl(&["apply", "-f", manifest.to_str().unwrap()]);
    let started = Instant::now();
    loop {
        let status = world.kubectl(&[
            "get",
            "foundationdbbackup",
            "sample-backup",
            "-o",
            "jsonpath={.status.backupDetails.running} {.status.generations.reconciled} {.metadata.generation}",
        ]);
        let fields: Vec<&str> = status.split_whitespace().collect();
        if fields.len() == 3 && fields[0] == "true" && fields[1] == fields[2] {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the backup never ran: {status:?}\n{}\n{}",
            world.kubectl(&["get", "foundationdbbackup", "sample-backup", "-o", "yaml"]),
            operator.log_tail()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(operator.stop(), Some(0), "SIGTERM is a clean stop");
    let (code, result) = world.served.stop();
    assert_eq!(code, Some(0), "violations: {}", result["violations"]);
    // The world saw the backup started by the operator, through the stand-in fdbbackup,
    // and the agents' Deployment it runs on.
    let started = operator_events(&result, "backup-start");
    assert!(
        started.iter().any(|e| e["target"] == "backup/default"),
        "no fdbbackup start by the operator: {started:?}"
    );
    assert!(
        operator_events(&result, "create")
            .iter()
            .any(|e| e["target"] == "deployment/sample-backup-backup-agents"),
        "no backup agents"
    );
}
