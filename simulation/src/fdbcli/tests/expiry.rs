//! `fdbbackup describe --json` and `fdbbackup expire` as a user runs them in an agent
//! pod (the Go operator's e2e test of PR 2496 does exactly this): the container's
//! snapshots and log, the refusal without `--force`, and what is left after.

use super::*;
use fdb_operator::fdb::{BackupStart, FdbTool};
use serde_json::Value;

const URL: &str = "blobstore://a@b:443/c?bucket=fdb-backups";

impl Fixture {
    async fn backup_tool(&self, version: &str, words: &[&str]) -> super::super::Printed {
        let mut args: Vec<String> = vec!["-C".to_owned(), self.cluster_file.display().to_string()];
        args.extend(words.iter().map(|w| (*w).to_owned()));
        self.tools
            .run_tool(FdbTool::Fdbbackup, v(version), &args, "default", true)
            .await
    }

    async fn describe(&self, version: &str) -> Value {
        let printed = self
            .backup_tool(version, &["describe", "-d", URL, "--json"])
            .await;
        assert_eq!(printed.code, 0, "{printed:?}");
        serde_json::from_str(&printed.stdout).unwrap()
    }
}

/// A database with a backup of three hourly snapshots and its log.
async fn backed_up() -> Fixture {
    let (fixture, client) = configured().await;
    fixture.fdb.set_backup_agents(1);
    let start = BackupStart {
        tag: "default".into(),
        url: URL.into(),
        snapshot_period_seconds: 3600,
        encryption_key_path: None,
    };
    client.start_backup(&start).await.unwrap();
    fixture.clock.advance_seconds(3 * 3600 + 600);
    let status = fixture.exec("7.1", "status minimal").await;
    assert_eq!(status.stdout, "The database is available.\n", "{status:?}");
    fixture
}

#[tokio::test]
async fn describe_reports_snapshots_log_and_restorability_per_version() {
    let fixture = backed_up().await;
    let described = fixture.describe("7.1.57").await;
    assert_eq!(described["Restorable"], true, "{described}");
    assert_eq!(described["Snapshots"].as_array().unwrap().len(), 3);
    assert!(described["TotalSnapshotBytes"].as_i64().unwrap() > 0);
    // release-7.1's toJSON has no encryption keys; 7.3's has (the tool must speak the
    // database's protocol, so 7.3's text is read from the container directly).
    assert!(
        described.get("FileLevelEncryption").is_none(),
        "{described}"
    );
    let text = fixture.fdb.describe_backup(URL, &v("7.3.43")).unwrap();
    let described_73: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(described_73["FileLevelEncryption"], false);
    assert_eq!(described_73["EncryptionBlockSize"], 0);
    let first = &described["Snapshots"][0];
    assert_eq!(first["Restorable"], true);
    assert!(first["Start"]["Version"].as_i64() < first["End"]["Version"].as_i64());
    assert_eq!(described["MaxLogEnd"]["RelativeDays"], 0.0);
    assert!(described.get("ExpiredEnd").is_none());
    // release-7.1's toJSON has no encryption keys.
    let described = fixture.describe("7.1.57").await;
    assert!(
        described.get("FileLevelEncryption").is_none(),
        "{described}"
    );
    let missing = fixture
        .backup_tool(
            "7.1.57",
            &["describe", "-d", "blobstore://x@y:443/none", "--json"],
        )
        .await;
    assert_eq!(
        (missing.code, missing.stderr.as_str()),
        (1, "ERROR: Backup does not exist\n")
    );
}

#[tokio::test]
async fn expire_refuses_without_force_what_leaves_nothing_restorable() {
    let fixture = backed_up().await;
    let before = fixture.describe("7.1.57").await;
    let end = before["MaxLogEnd"]["Version"].as_i64().unwrap().to_string();
    let refused = fixture
        .backup_tool(
            "7.1.57",
            &["expire", "-d", URL, "--expire-before-version", &end],
        )
        .await;
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused
            .stderr
            .starts_with("ERROR: Requested expiration would be unsafe."),
        "{refused:?}"
    );
    assert_eq!(fixture.describe("7.1.57").await, before, "nothing deleted");
    // The Go e2e test's command: everything up to the log's end, forced.
    let forced = fixture
        .backup_tool(
            "7.1.57",
            &[
                "expire",
                "-d",
                URL,
                "--expire-before-version",
                &end,
                "--force",
            ],
        )
        .await;
    assert_eq!(forced.code, 0, "{forced:?}");
    assert!(
        forced
            .stdout
            .trim()
            .starts_with("Final metadata update...\nAll data before version"),
        "{forced:?}"
    );
    let after = fixture.describe("7.1.57").await;
    assert_eq!(after["TotalSnapshotBytes"], 0, "{after}");
    assert_eq!(after["Restorable"], false);
    assert_eq!(after["ExpiredEnd"]["Version"].to_string(), end);
}

#[tokio::test]
async fn expire_keeps_the_snapshots_after_the_cutoff_restorable() {
    let fixture = backed_up().await;
    let before = fixture.describe("7.1.57").await;
    let second = before["Snapshots"][1]["Start"]["Version"].as_i64().unwrap();
    let printed = fixture
        .backup_tool(
            "7.1.57",
            &[
                "expire",
                "-d",
                URL,
                "--expire-before-version",
                &second.to_string(),
            ],
        )
        .await;
    assert_eq!(printed.code, 0, "{printed:?}");
    let after = fixture.describe("7.1.57").await;
    // The first snapshot ends at the cutoff: kept (only those ending before it go), all
    // its range data gone, no longer restorable.
    assert_eq!(after["Snapshots"].as_array().unwrap().len(), 3, "{after}");
    assert_eq!(after["Snapshots"][0]["PercentageExpired"], 100);
    assert_eq!(after["Snapshots"][0]["Restorable"], false);
    assert_eq!(after["Restorable"], true);
    assert_eq!(after["MinLogBegin"]["Version"], second);
    assert_eq!(after["MinRestorablePoint"], before["Snapshots"][1]["End"]);
    // Days count back from the log's end; the text says so.
    let printed = fixture
        .backup_tool(
            "7.1.57",
            &["expire", "-d", URL, "--delete-before-days", "1", "--force"],
        )
        .await;
    assert_eq!(printed.code, 0, "{printed:?}");
    assert!(
        printed.stdout.contains(
            "All data before 86400000000 versions (1 days) prior to latest backup log has been deleted."
        ),
        "{printed:?}"
    );
}
