//! The fdbcli admin client against a stand-in `fdbcli` script that records its
//! arguments and replays canned outputs, exit codes and delays per invocation.

// Test-support helpers outside `#[test]` fns: failing loudly is what a test wants.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fdb_operator::fdb::{
    AdminClient, AdminError, ExclusionTarget, FdbcliAdminClient, FdbcliConfig, LockValue,
    PassScopedAdmin, PendingUpgrade, TlsFiles,
};
use fdb_shared::address::ProcessAddress;

const SCRIPT: &str = r#"#!/bin/sh
dir="$(dirname "$0")"
n=$(cat "$dir/count" 2>/dev/null || echo 0)
n=$((n+1))
echo "$n" > "$dir/count"
for arg in "$@"; do printf '%s\n' "$arg" >> "$dir/args.$n"; done
if [ -f "$dir/sleep.$n" ]; then exec sleep "$(cat "$dir/sleep.$n")"; fi
if [ -f "$dir/out.$n" ]; then cat "$dir/out.$n"; fi
if [ -f "$dir/err.$n" ]; then cat "$dir/err.$n" >&2; fi
exit "$(cat "$dir/code.$n" 2>/dev/null || echo 0)"
"#;

struct StandIn {
    dir: tempfile::TempDir,
}

impl StandIn {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("fdbcli");
        std::fs::write(&script, SCRIPT).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn config(&self) -> FdbcliConfig {
        FdbcliConfig::new(self.path().join("fdbcli"), "/var/fdb/fdb.cluster")
    }

    fn client(&self) -> FdbcliAdminClient {
        FdbcliAdminClient::new(self.config())
    }

    /// What invocation `n` (1-based) prints, exits with, or how long it sleeps.
    fn reply(&self, n: usize, stdout: &str, stderr: &str, code: i32) {
        std::fs::write(self.path().join(format!("out.{n}")), stdout).unwrap();
        std::fs::write(self.path().join(format!("err.{n}")), stderr).unwrap();
        std::fs::write(self.path().join(format!("code.{n}")), code.to_string()).unwrap();
    }

    fn sleep(&self, n: usize, seconds: u32) {
        std::fs::write(self.path().join(format!("sleep.{n}")), seconds.to_string()).unwrap();
    }

    fn args(&self, n: usize) -> Vec<String> {
        std::fs::read_to_string(self.path().join(format!("args.{n}")))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn invocations(&self) -> usize {
        std::fs::read_to_string(self.path().join("count"))
            .map(|text| text.trim().parse().unwrap())
            .unwrap_or(0)
    }
}

fn fixture(name: &str) -> String {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "shared",
        "tests",
        "fixtures",
        name,
    ]
    .iter()
    .collect();
    std::fs::read_to_string(path).unwrap()
}

/// fdbcli's printable form of bytes: printable ASCII as is, `\` doubled, others `\xNN`.
fn printable(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| match b {
            b'\\' => "\\\\".to_owned(),
            32..=126 => char::from(b).to_string(),
            _ => format!("\\x{b:02x}"),
        })
        .collect()
}

#[tokio::test]
async fn status_runs_one_invocation_with_cluster_file_timeout_and_tls() {
    let stand_in = StandIn::new();
    let mut config = stand_in.config();
    config.tls = Some(TlsFiles {
        certificate_file: "/tls/cert.pem".into(),
        key_file: "/tls/key.pem".into(),
        ca_file: "/tls/ca.pem".into(),
        verify_peers: Some("Check.Valid=1".to_owned()),
    });
    config.extra_args = vec!["--log".to_owned()];
    stand_in.reply(
        1,
        &format!("Using cluster file.\n{}", fixture("status-7.1.0-rc1.json")),
        "",
        0,
    );
    let status = FdbcliAdminClient::new(config).status().await.unwrap();
    assert!(status.is_available());
    assert_eq!(status.cluster.processes.len(), 8);
    assert_eq!(
        stand_in.args(1),
        [
            "-C",
            "/var/fdb/fdb.cluster",
            "--timeout",
            "10",
            "--tls_certificate_file",
            "/tls/cert.pem",
            "--tls_key_file",
            "/tls/key.pem",
            "--tls_ca_file",
            "/tls/ca.pem",
            "--tls_verify_peers",
            "Check.Valid=1",
            "--log",
            "--exec",
            "status json"
        ]
    );
}

#[tokio::test]
async fn pass_scoped_cache_reads_status_once_per_pass_and_after_writes() {
    let stand_in = StandIn::new();
    let status = fixture("status-7.1.0-rc1.json");
    for n in [1, 3, 4] {
        stand_in.reply(n, &status, "", 0);
    }
    let admin = PassScopedAdmin::new(Arc::new(stand_in.client()));
    admin.status().await.unwrap();
    admin.status().await.unwrap();
    let report = admin
        .exclusion_status(&[ExclusionTarget::instance_id("log-3").unwrap()])
        .await
        .unwrap();
    assert_eq!(stand_in.invocations(), 1, "one status json per pass");
    assert!(report.incomplete[0].1.contains("not excluded"));

    admin
        .exclude(&[ExclusionTarget::instance_id("storage-1").unwrap()], false)
        .await
        .unwrap();
    assert_eq!(
        stand_in.args(2).last().unwrap(),
        "exclude no_wait locality_instance_id:storage-1"
    );
    admin.status().await.unwrap();
    assert_eq!(stand_in.invocations(), 3, "a write invalidates the cache");
    admin.new_pass();
    admin.status().await.unwrap();
    assert_eq!(stand_in.invocations(), 4, "a new pass reads again");
}

#[tokio::test]
async fn failures_map_to_typed_errors_naming_the_command() {
    let stand_in = StandIn::new();
    stand_in.reply(1, "", "ERROR: The database is unavailable\n", 1);
    stand_in.reply(2, "ERROR: No addresses were specified\n", "", 1);
    stand_in.reply(3, "ERROR: something odd\n", "", 0);
    stand_in.reply(4, "not json at all", "", 0);
    stand_in.reply(
        5,
        "Specified timeout reached -- Failed to get status.\n",
        "",
        1,
    );
    let client = stand_in.client();

    let error = client.reset_maintenance_zone().await.unwrap_err();
    assert!(matches!(error, AdminError::Unavailable { .. }), "{error}");
    assert!(error.to_string().contains("maintenance off"), "{error}");
    assert!(error.is_transient());

    let address = ProcessAddress::parse("10.0.0.1:4501").unwrap();
    let error = client.kill(&[address]).await.unwrap_err();
    assert!(
        matches!(error, AdminError::Failed { code: Some(1), .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("kill; kill 10.0.0.1:4501; sleep 5")
    );
    assert_eq!(error.category(), "CommandFailed");

    let error = client
        .include(&[ExclusionTarget::instance_id("storage-1").unwrap()])
        .await
        .unwrap_err();
    assert!(
        matches!(error, AdminError::Failed { code: Some(0), .. }),
        "an ERROR line fails even with exit code 0: {error}"
    );

    let error = client.status().await.unwrap_err();
    assert!(matches!(error, AdminError::Parse { .. }), "{error}");
    assert!(error.to_string().contains("status json"));
    assert!(!error.is_transient());

    let error = client.status().await.unwrap_err();
    assert!(matches!(error, AdminError::Timeout { .. }), "{error}");
}

#[tokio::test]
async fn a_hanging_fdbcli_is_killed_and_reported_as_timeout() {
    let stand_in = StandIn::new();
    stand_in.sleep(1, 30);
    let mut config = stand_in.config();
    config.timeout = Duration::from_millis(300);
    config.process_grace = Duration::ZERO;
    let error = FdbcliAdminClient::new(config).status().await.unwrap_err();
    assert!(matches!(error, AdminError::Timeout { .. }), "{error}");
    assert_eq!(error.command(), "status json");

    let missing = FdbcliAdminClient::new(FdbcliConfig::new(
        stand_in.path().join("no-such-fdbcli"),
        "/x",
    ));
    let error = missing.status().await.unwrap_err();
    assert!(matches!(error, AdminError::Spawn { .. }), "{error}");
}

#[tokio::test]
async fn lock_keys_and_deny_list_through_get_and_set() {
    let stand_in = StandIn::new();
    let lock = LockValue::new("sample", 1_700_000_000);
    let key = b"\xff\x02/org.foundationdb.kubernetes-operator/global";
    stand_in.reply(
        1,
        &format!("`{}' is `{}'\n", printable(key), printable(&lock.encode())),
        "",
        0,
    );
    stand_in.reply(2, &format!("`{}': not found\n", printable(key)), "", 0);
    stand_in.reply(
        4,
        "Range limited to 10000 keys\n`\\xff\\x02/org.foundationdb.kubernetes-operator/denyList/op-a' is `op-a'\n`\\xff\\x02/org.foundationdb.kubernetes-operator/denyList/op-b' is `op-b'\n",
        "",
        0,
    );
    let client = stand_in.client();
    assert_eq!(client.read_lock().await.unwrap(), Some(lock.clone()));
    assert_eq!(
        stand_in.args(1).last().unwrap(),
        "option on ACCESS_SYSTEM_KEYS; get \\xff\\x02/org.foundationdb.kubernetes-operator/global"
    );
    assert_eq!(client.read_lock().await.unwrap(), None);

    client.write_lock(&lock).await.unwrap();
    let write = stand_in.args(3).last().unwrap().clone();
    assert!(
        write.starts_with(
            "writemode on; option on ACCESS_SYSTEM_KEYS; begin; set \\xff\\x02/org.foundationdb.kubernetes-operator/global \\x02sample\\x00"
        ),
        "{write}"
    );
    assert!(write.ends_with("; commit"), "{write}");

    assert_eq!(client.deny_list().await.unwrap(), ["op-a", "op-b"]);
    assert!(stand_in.args(4).last().unwrap().contains(
        "getrange \\xff\\x02/org.foundationdb.kubernetes-operator/denyList/ \\xff\\x02/org.foundationdb.kubernetes-operator/denyList0 10000"
    ));

    client
        .update_deny_list(&["op-c".to_owned()], &["op-a".to_owned()])
        .await
        .unwrap();
    let update = stand_in.args(5).last().unwrap().clone();
    assert!(
        update.contains("set \\xff\\x02/org.foundationdb.kubernetes-operator/denyList/op-c op-c"),
        "{update}"
    );
    assert!(
        update.contains("clear \\xff\\x02/org.foundationdb.kubernetes-operator/denyList/op-a"),
        "{update}"
    );
}

#[tokio::test]
async fn coordinator_change_returns_the_new_connection_string() {
    let stand_in = StandIn::new();
    stand_in.reply(1, "Coordination state changed\n", "", 0);
    stand_in.reply(2, &fixture("status-7.1.0-rc1.json"), "", 0);
    let coordinators: Vec<ProcessAddress> =
        ["10.1.18.253:4501", "10.1.18.254:4501", "10.1.19.0:4501"]
            .iter()
            .map(|a| ProcessAddress::parse(a).unwrap())
            .collect();
    let connection = stand_in
        .client()
        .change_coordinators(&coordinators)
        .await
        .unwrap();
    assert_eq!(connection.coordinators, coordinators);
    assert_eq!(
        stand_in.args(1).last().unwrap(),
        "coordinators 10.1.18.253:4501 10.1.18.254:4501 10.1.19.0:4501"
    );
    assert_eq!(stand_in.args(2).last().unwrap(), "status json");
}

/// The stand-in also answers as `fdbbackup` and `fdbrestore` beside `fdbcli`.
fn with_backup_tools(stand_in: &StandIn) {
    for tool in ["fdbbackup", "fdbrestore"] {
        std::fs::copy(stand_in.path().join("fdbcli"), stand_in.path().join(tool)).unwrap();
    }
}

#[tokio::test]
async fn backup_and_restore_tools_get_their_command_lines_and_outputs_are_parsed() {
    use fdb_operator::fdb::{BackupModify, BackupStart, KeyRange, RestoreStart, RestoreState};

    let stand_in = StandIn::new();
    with_backup_tools(&stand_in);
    let client = stand_in.client();
    let url = "blobstore://a@s3.example:443/b?bucket=fdb-backups";
    client
        .start_backup(&BackupStart {
            tag: "default".into(),
            url: url.into(),
            snapshot_period_seconds: 3600,
            encryption_key_path: None,
        })
        .await
        .unwrap();
    assert_eq!(
        stand_in.args(1),
        [
            "start",
            "-d",
            url,
            "-s",
            "3600",
            "-t",
            "default",
            "-z",
            "-C",
            "/var/fdb/fdb.cluster"
        ]
    );
    client
        .modify_backup(&BackupModify {
            tag: "default".into(),
            url: None,
            snapshot_period_seconds: Some(60),
            encryption_key_path: None,
        })
        .await
        .unwrap();
    assert_eq!(
        stand_in.args(2),
        [
            "modify",
            "-t",
            "default",
            "-s",
            "60",
            "-C",
            "/var/fdb/fdb.cluster"
        ]
    );
    // The real output shape of `fdbbackup status --json` (FoundationDB 6.2).
    let fixture = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/tests/fixtures/backup-status-6.2.json"),
    )
    .unwrap();
    stand_in.reply(3, &fixture, "", 0);
    let status = client.backup_status("default").await.unwrap();
    assert_eq!(status.status.running, Some(true));
    assert_eq!(
        status.latest_snapshot_end.and_then(|p| p.version),
        Some(334_573_197)
    );
    assert_eq!(
        stand_in.args(3),
        [
            "status",
            "--json",
            "-t",
            "default",
            "-C",
            "/var/fdb/fdb.cluster"
        ]
    );
    client
        .start_restore(&RestoreStart {
            url: url.into(),
            key_ranges: vec![KeyRange::parse("a", "b").unwrap()],
            version: Some(7),
            encryption_key_path: Some("/keys/k".into()),
            custom_parameters: Vec::new(),
        })
        .await
        .unwrap();
    assert_eq!(
        stand_in.args(4),
        [
            "start",
            "-r",
            url,
            "-k",
            "a b",
            "-v",
            "7",
            "--encryption-key-file",
            "/keys/k",
            "--dest-cluster-file",
            "/var/fdb/fdb.cluster"
        ]
    );
    stand_in.reply(
        5,
        &format!("Tag: default  UID: 01  State: running  Blocks: 1/9  URL: {url}\n"),
        "",
        0,
    );
    let progress = client.restore_status().await.unwrap();
    assert_eq!(progress.state, Some(RestoreState::Running));
    assert_eq!(progress.url.as_deref(), Some(url));
    // A failing tool is an error naming the command.
    stand_in.reply(6, "", "ERROR: No backup is running on tag `default'\n", 1);
    let error = client.discontinue_backup("default").await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("fdbbackup discontinue -t default"),
        "{error}"
    );
}

#[tokio::test]
async fn pending_upgrade_list_through_getrange_set_and_clearrange() {
    let stand_in = StandIn::new();
    stand_in.reply(
        1,
        "`\\xff\\x02/org.foundationdb.kubernetes-operator/upgrades/7.3.43/kc1-log-1' is `kc1-log-1'\n`\\xff\\x02/org.foundationdb.kubernetes-operator/upgrades/7.3.43/kc2-log-1' is `kc2-log-1'\n",
        "",
        0,
    );
    let client = stand_in.client();
    let target: fdb_shared::FdbVersion = "7.3.43".parse().unwrap();
    assert_eq!(
        client.pending_upgrades().await.unwrap(),
        [
            PendingUpgrade::new(&target, "kc1-log-1"),
            PendingUpgrade::new(&target, "kc2-log-1")
        ]
    );
    assert!(stand_in.args(1).last().unwrap().contains(
        "getrange \\xff\\x02/org.foundationdb.kubernetes-operator/upgrades/ \\xff\\x02/org.foundationdb.kubernetes-operator/upgrades0 10000"
    ));
    client
        .update_pending_upgrades(
            &[PendingUpgrade::new(&target, "kc1-log-2")],
            &[PendingUpgrade::new(&"7.1.57".parse().unwrap(), "kc1-log-9")],
        )
        .await
        .unwrap();
    let update = stand_in.args(2).last().unwrap().clone();
    assert!(
        update.contains(
            "set \\xff\\x02/org.foundationdb.kubernetes-operator/upgrades/7.3.43/kc1-log-2 kc1-log-2"
        ),
        "{update}"
    );
    assert!(
        update.contains(
            "clear \\xff\\x02/org.foundationdb.kubernetes-operator/upgrades/7.1.57/kc1-log-9"
        ),
        "{update}"
    );
    client.clear_pending_upgrades().await.unwrap();
    assert_eq!(
        stand_in.args(3).last().unwrap(),
        "writemode on; option on ACCESS_SYSTEM_KEYS; clearrange \\xff\\x02/org.foundationdb.kubernetes-operator/upgrades/ \\xff\\x02/org.foundationdb.kubernetes-operator/upgrades0"
    );
}
