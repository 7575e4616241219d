//! The production admin provider picks the FoundationDB tools of each cluster's version
//! from `--fdb-binaries-dir` (`DIR/<major.minor>/{fdbcli,fdbbackup,fdbrestore}`), with
//! stand-in tools that log which version ran, with which log group, and answer
//! `status json` only when their version "reaches" the processes.

// Test-support helpers outside `#[test]` fns: failing loudly is what a test wants.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use fdb_operator::controller::AdminClientProvider;
use fdb_operator::controller::FdbcliAdminProvider;
use fdb_operator::fdb::{AdminError, FdbTool, FdbTools};
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::FoundationDBCluster;

/// A tool of the minor version named by its directory: logs `<minor> <tool> <log group>
/// <args>` to `DIR/calls`; times out as an fdbcli of another protocol does when its
/// directory holds `unreachable`; prints the directory's `status.json` for `status json`.
const TOOL: &str = r#"#!/bin/sh
dir="$(dirname "$0")"
root="$(dirname "$dir")"
echo "$(basename "$dir") $(basename "$0") group=${FDB_NETWORK_OPTION_TRACE_LOG_GROUP:-unset} $*" >> "$root/calls"
if [ -f "$dir/unreachable" ]; then
  echo "Specified timeout reached -- Failed to get status."
  exit 1
fi
case "$*" in
  *"status json"*) cat "$dir/status.json" ;;
esac
exit 0
"#;

fn status_on(version: &str) -> String {
    serde_json::json!({
        "client": {"database_status": {"available": true, "healthy": true}},
        "cluster": {"processes": {"p1": {"address": "10.0.0.1:4501", "version": version}}}
    })
    .to_string()
}

/// A binaries dir holding the tools of `minors`.
fn binaries_dir(minors: &[&str]) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    for minor in minors {
        let version_dir = dir.path().join(minor);
        std::fs::create_dir_all(&version_dir).unwrap();
        for tool in ["fdbcli", "fdbbackup", "fdbrestore"] {
            let path = version_dir.join(tool);
            std::fs::write(&path, TOOL).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(
            version_dir.join("status.json"),
            status_on(&format!("{minor}.9")),
        )
        .unwrap();
    }
    dir
}

fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn provider(dir: &Path) -> FdbcliAdminProvider {
    FdbcliAdminProvider {
        tools: FdbTools::new(dir.to_owned(), None)
            .with_trace_log_group(Some("fdb-kubernetes-operator".into())),
        work_dir: dir.join("work"),
        tls: None,
        runner: fdb_operator::fdb::ProcessRunner::shared(),
    }
}

fn cluster(spec_version: &str, running: Option<&str>) -> FoundationDBCluster {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps.foundationdb.org/v1beta2",
        "kind": "FoundationDBCluster",
        "metadata": {"name": "sample", "namespace": "ns"},
        "spec": {"version": spec_version},
        "status": {"connectionString": "sample:abc@10.0.0.1:4501", "runningVersion": running}
    }))
    .unwrap()
}

fn address() -> ProcessAddress {
    ProcessAddress::parse("10.0.0.1:4501").unwrap()
}

#[tokio::test]
async fn each_cluster_runs_the_tools_of_its_running_version_with_the_operators_log_group() {
    let dir = binaries_dir(&["7.1", "7.3"]);
    let provider = provider(dir.path());
    let on_73 = provider
        .admin_for(&cluster("7.3.43", Some("7.3.43")))
        .unwrap();
    on_73.status().await.unwrap();
    on_73.set_backups_paused(true).await.unwrap();
    let on_71 = provider.admin_for(&cluster("7.1.57", None)).unwrap();
    on_71.status().await.unwrap();
    let calls = calls(dir.path());
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(
        calls[0].starts_with("7.3 fdbcli group=fdb-kubernetes-operator -C "),
        "{calls:?}"
    );
    assert!(calls[0].ends_with("--exec status json"), "{calls:?}");
    assert!(
        calls[1].starts_with("7.3 fdbbackup group=fdb-kubernetes-operator pause"),
        "{calls:?}"
    );
    // A new cluster (no running version yet) uses the spec's.
    assert!(calls[2].starts_with("7.1 fdbcli "), "{calls:?}");
}

#[tokio::test]
async fn an_upgrade_moves_to_the_targets_tools_once_the_kill_restarted_the_processes() {
    let dir = binaries_dir(&["7.1", "7.3"]);
    let provider = provider(dir.path());
    let upgrading = cluster("7.3.43", Some("7.1.57"));

    // Before the kill the running version's fdbcli reaches the processes.
    let before = provider.admin_for(&upgrading).unwrap();
    let status = before.status().await.unwrap();
    assert_eq!(status.cluster.processes.len(), 1);
    before.kill(&[address()]).await.unwrap();
    let seen = calls(dir.path());
    assert!(
        seen.iter().all(|call| call.starts_with("7.1 fdbcli")),
        "{seen:?}"
    );

    // After the kill the processes run 7.3: the 7.1 fdbcli times out, and the pass
    // reads the status, and runs every later command, with the 7.3 tools.
    std::fs::write(dir.path().join("7.1/unreachable"), "").unwrap();
    let after = provider.admin_for(&upgrading).unwrap();
    let status = after.status().await.unwrap();
    assert_eq!(
        status.cluster.processes.values().next().unwrap().version,
        Some("7.3.9".parse().unwrap())
    );
    after.kill(&[address()]).await.unwrap();
    after.set_backups_paused(false).await.unwrap();
    let after_kill: Vec<String> = calls(dir.path()).split_off(seen.len());
    let tools: Vec<&str> = after_kill
        .iter()
        .map(|call| call.split(" group=").next().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["7.1 fdbcli", "7.3 fdbcli", "7.3 fdbcli", "7.3 fdbbackup"],
        "{after_kill:?}"
    );

    // Once UpdateStatus recorded 7.3 as running, the 7.3 tools come first.
    let upgraded = provider
        .admin_for(&cluster("7.3.43", Some("7.3.43")))
        .unwrap();
    upgraded.status().await.unwrap();
    assert!(calls(dir.path()).last().unwrap().starts_with("7.3 fdbcli"));
}

#[tokio::test]
async fn when_neither_version_answers_the_first_failure_is_reported() {
    let dir = binaries_dir(&["7.1", "7.3"]);
    std::fs::write(dir.path().join("7.1/unreachable"), "").unwrap();
    std::fs::write(dir.path().join("7.3/unreachable"), "").unwrap();
    let admin = provider(dir.path())
        .admin_for(&cluster("7.3.43", Some("7.1.57")))
        .unwrap();
    let error = admin.status().await.unwrap_err();
    assert!(matches!(error, AdminError::Timeout { .. }), "{error}");
    // Later commands stay with the running version's tools.
    admin.kill(&[address()]).await.unwrap_err();
    let last = calls(dir.path()).last().cloned().unwrap();
    assert!(last.starts_with("7.1 fdbcli"), "{last}");
}

#[tokio::test]
async fn a_missing_version_is_named_with_its_path() {
    let dir = binaries_dir(&["7.1"]);
    let provider = provider(dir.path());
    let target = "7.3.43".parse().unwrap();
    let missing = provider.missing_tool(&target).unwrap();
    assert_eq!(missing.tool, FdbTool::Fdbcli);
    assert_eq!(missing.path, dir.path().join("7.3/fdbcli"));
    assert!(provider.missing_tool(&"7.1.57".parse().unwrap()).is_none());

    // A cluster running a version without tools cannot be read: the error names both.
    let error = provider
        .admin_for(&cluster("7.3.43", Some("7.3.43")))
        .unwrap_err();
    assert!(matches!(error, AdminError::MissingTool { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("no fdbcli for FoundationDB 7.3.43")
            && message.contains(&dir.path().join("7.3/fdbcli").display().to_string()),
        "{message}"
    );

    // An upgrade to it keeps reading with the running version's tools only.
    let admin = provider
        .admin_for(&cluster("7.3.43", Some("7.1.57")))
        .unwrap();
    admin.status().await.unwrap();

    // A backup tool missing from a version's directory is named as well.
    std::fs::remove_file(dir.path().join("7.1/fdbbackup")).unwrap();
    let error = admin.set_backups_paused(true).await.unwrap_err();
    let AdminError::MissingTool { missing, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!(missing.tool, FdbTool::Fdbbackup);
    assert_eq!(missing.path, dir.path().join("7.1/fdbbackup"));
}

#[tokio::test]
async fn one_fdbcli_overrides_the_layout_for_every_version() {
    let dir = binaries_dir(&["7.1"]);
    let provider = FdbcliAdminProvider {
        tools: FdbTools::new("/nonexistent".into(), Some(dir.path().join("7.1/fdbcli"))),
        work_dir: dir.path().join("work"),
        tls: None,
        runner: fdb_operator::fdb::ProcessRunner::shared(),
    };
    let admin = provider
        .admin_for(&cluster("7.3.43", Some("7.3.43")))
        .unwrap();
    admin.status().await.unwrap();
    let calls = calls(dir.path());
    // No log group given: the tools run with their default.
    assert!(calls[0].starts_with("7.1 fdbcli group=unset "), "{calls:?}");
}
