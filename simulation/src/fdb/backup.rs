//! Backups and restores of the simulated database, and the blob store they write to.
//!
//! Backup agents do the work, as in FoundationDB: the world reports how many agent pods
//! run ([`crate::fdb::SimulatedFdb::set_backup_agents`]). A running backup,
//! not paused, with at least one agent and an available database, copies the mutation
//! log (every change of the user data) to its blob store container and makes progress
//! on its snapshot: a snapshot completes after `snapshotPeriodSeconds` of such time and
//! holds the data at the version it completed; the next one starts then. A backup is
//! restorable once one snapshot is complete, to any version from that snapshot to the end
//! of the copied log. A restore (also run by the agents) needs an empty database, takes
//! [`RESTORE_SECONDS`] of agent time, and then the database holds the content the blob
//! store recorded at the restore's version.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use super::user_data::{UserData, version_at};
use fdb_operator::fdb::{KeyRange, RestoreState};

/// Seconds of agent time a restore takes.
pub const RESTORE_SECONDS: i64 = 60;

/// The size the model gives a snapshot holding the data at `version`: 64 bytes per
/// workload write made up to it (`user_data.rs` writes one key every 10 s).
fn snapshot_bytes(version: i64) -> i64 {
    64 * (version / (10 * super::user_data::VERSIONS_PER_SECOND) + 1)
}

/// One backup, by tag.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SimBackup {
    pub url: String,
    pub uid: String,
    pub snapshot_period_seconds: i64,
    /// Still running (not discontinued).
    pub running: bool,
    /// Seconds of progress on the current snapshot.
    pub progress: i64,
    /// Whether it was started with an encryption key (then a restore needs one too).
    pub encryption_key_path: Option<String>,
    /// The end version of its first completed snapshot, as the database's backup
    /// config records it (`firstSnapshotEndVersion`).
    pub first_snapshot_end: Option<i64>,
    /// The end version of its latest completed snapshot (`latestSnapshotEndVersion`).
    pub latest_snapshot_end: Option<i64>,
    /// The version its mutation log was copied up to, as the config records it
    /// (`latestLogEndVersion`).
    pub log_end: Option<i64>,
}

impl SimBackup {
    /// The latest restorable version the database reports for this backup
    /// (`BackupConfig::getLatestRestorableVersion`, fdbclient/BackupAgent.actor.h in
    /// apple/foundationdb release-7.1): from the config alone, once the log has gone
    /// past the first snapshot's end. The container is not read, so what `fdbbackup
    /// expire` deleted, or a new destination set by `fdbbackup modify`, does not
    /// change it; `fdbbackup describe` reads the container (`backup_expiry.rs`).
    pub fn latest_restorable_version(&self) -> Option<i64> {
        let (first, log) = (self.first_snapshot_end?, self.log_end?);
        (log > first).then(|| (log - 1).max(first))
    }
}

/// One completed snapshot in the blob store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobSnapshot {
    /// The database version the snapshot holds (its end: it is consistent there).
    pub version: i64,
    /// The version its agents began copying at (`fdbbackup describe`'s `Start`).
    #[serde(skip)]
    pub begin_version: i64,
    /// Its size in the container (`TotalBytes`): the model's data is a digest, so the
    /// size stands for it as 64 bytes per workload write up to `version`.
    #[serde(skip)]
    pub bytes: i64,
    /// The user data digest at that version.
    pub digest: String,
    /// When it completed (unix seconds).
    pub completed_unix: i64,
}

/// A backup's container in the blob store (one per URL).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobContainer {
    /// Completed snapshots, oldest first.
    pub snapshots: Vec<BlobSnapshot>,
    /// The mutation log: the data's digest after each change, by version.
    #[serde(skip)]
    pub log: Vec<(i64, String)>,
    /// The version the log is copied up to.
    pub log_end: Option<i64>,
    /// The first version the log holds (`None`: no log yet); an expiry moves it up.
    #[serde(skip)]
    pub log_begin: Option<i64>,
    /// Everything before this version was deleted by `fdbbackup expire`.
    #[serde(skip)]
    pub expired_end: Option<i64>,
    /// The key file the container is encrypted with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encryption_key_path: Option<String>,
}

impl BlobContainer {
    /// The versions a restore can reach: from the first snapshot to the log's end (or
    /// the last snapshot).
    pub fn restorable_range(&self) -> Option<(i64, i64)> {
        let first = self
            .snapshots
            .iter()
            .find(|snapshot| self.is_restorable(snapshot))?
            .version;
        let last_snapshot = self.snapshots.last().map_or(first, |s| s.version);
        Some((first, self.log_end.unwrap_or(first).max(last_snapshot)))
    }

    /// The data the container recorded at `version`: the last snapshot at or before it,
    /// with the log's changes after that snapshot up to `version` applied.
    pub fn digest_at(&self, version: i64) -> Option<String> {
        let snapshot = self.snapshots.iter().rev().find(|s| s.version <= version)?;
        let from_log = self
            .log
            .iter()
            .rev()
            .find(|(at, _)| *at > snapshot.version && *at <= version)
            .map(|(_, digest)| digest.clone());
        Some(from_log.unwrap_or_else(|| snapshot.digest.clone()))
    }
}

/// The restore in progress or done.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SimRestore {
    pub url: String,
    pub version: i64,
    /// The content the database gets (`None`: the key ranges miss the user data).
    pub digest: Option<String>,
    pub state: RestoreState,
    /// Seconds of agent time done.
    pub progress: i64,
}

/// Backups, restores and the blob store.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Backups {
    pub tags: BTreeMap<String, SimBackup>,
    pub paused: bool,
    pub agents: u32,
    pub blob: BTreeMap<String, BlobContainer>,
    pub restore: Option<SimRestore>,
    /// Seconds since the origin up to which backups and restores have progressed.
    pub advanced_until: i64,
    /// Backups started so far (their UIDs).
    pub started: u64,
}

/// Whether the restore's key ranges cover the user data (`user/...` keys): all of it,
/// none of it, or part of it (which the model cannot represent).
fn coverage(ranges: &[KeyRange]) -> Result<bool, String> {
    if ranges.is_empty() {
        return Ok(true);
    }
    let (first, last) = ("user/", "user0");
    let mut covered = false;
    for range in ranges {
        let (begin, end) = (range.begin(), range.end());
        let overlaps = begin < last.as_bytes() && end > first.as_bytes();
        let contains = begin <= first.as_bytes() && end >= last.as_bytes();
        if overlaps && !contains {
            return Err(format!(
                "the key range {:?}-{:?} covers part of the user data; the simulated database \
                 restores the user keys (`user/...`) whole or not at all",
                fdb_shared::printable::escape_bytes(begin),
                fdb_shared::printable::escape_bytes(end)
            ));
        }
        covered |= contains;
    }
    Ok(covered)
}

impl Backups {
    /// Progress up to `seconds` since the origin: the log copies and snapshots of running
    /// backups, and the restore, while agents run and the database is available.
    pub fn advance(&mut self, data: &mut UserData, seconds: i64, available: bool, origin: i64) {
        let from = self.advanced_until;
        if seconds <= from {
            return;
        }
        self.advanced_until = seconds;
        if self.agents == 0 || !available {
            return;
        }
        let elapsed = seconds - from;
        if !self.paused {
            for backup in self.tags.values_mut().filter(|b| b.running) {
                let container = self.blob.entry(backup.url.clone()).or_default();
                let mut done = backup.progress + elapsed;
                let mut at = from - backup.progress;
                container.log_begin.get_or_insert(version_at(from));
                while done >= backup.snapshot_period_seconds {
                    let begin_version = version_at(at);
                    at += backup.snapshot_period_seconds;
                    done -= backup.snapshot_period_seconds;
                    let version = version_at(at);
                    container.snapshots.push(BlobSnapshot {
                        version,
                        begin_version,
                        bytes: snapshot_bytes(version),
                        digest: data.digest_at(version),
                        completed_unix: origin + at,
                    });
                    backup.first_snapshot_end.get_or_insert(version);
                    backup.latest_snapshot_end = Some(version);
                }
                backup.progress = done;
                let end = version_at(seconds);
                let after = container.log_end.unwrap_or(i64::MIN);
                container.log.extend(data.changes_between(after, end));
                container.log_end = Some(end);
                backup.log_end = Some(end);
            }
        }
        if let Some(restore) = self
            .restore
            .as_mut()
            .filter(|restore| restore.state.is_running())
        {
            restore.progress += elapsed;
            restore.state = RestoreState::Running;
            if restore.progress >= RESTORE_SECONDS {
                let done_at = seconds - (restore.progress - RESTORE_SECONDS);
                if let Some(digest) = &restore.digest {
                    let _ = data.set(version_at(done_at), digest.clone());
                }
                restore.state = RestoreState::Completed;
            }
        }
    }

    /// `fdbbackup start`.
    pub fn start(
        &mut self,
        tag: &str,
        url: &str,
        snapshot_period_seconds: i64,
        encryption_key_path: Option<String>,
    ) -> Result<(), String> {
        if self.tags.get(tag).is_some_and(|b| b.running) {
            return Err(format!("ERROR: A backup is already running on tag `{tag}'"));
        }
        if snapshot_period_seconds <= 0 {
            return Err("ERROR: the snapshot interval must be positive".to_owned());
        }
        self.started += 1;
        let container = self.blob.entry(url.to_owned()).or_default();
        container.encryption_key_path = encryption_key_path.clone();
        self.tags.insert(
            tag.to_owned(),
            SimBackup {
                url: url.to_owned(),
                uid: format!("{:032x}", self.started),
                snapshot_period_seconds,
                running: true,
                progress: 0,
                encryption_key_path,
                first_snapshot_end: None,
                latest_snapshot_end: None,
                log_end: None,
            },
        );
        Ok(())
    }

    /// `fdbbackup modify`.
    /// `fdbbackup modify`. A new destination is a new container, encrypted with the key
    /// given here or not at all: the backup's former key is not carried over
    /// (`modifyBackup` in fdbbackup/backup.actor.cpp opens the new container with the
    /// options' key only); the same destination with another key is refused.
    pub fn modify(
        &mut self,
        tag: &str,
        url: Option<&str>,
        period: Option<i64>,
        encryption_key_path: Option<&str>,
    ) -> Result<(), String> {
        let backup = self
            .tags
            .get_mut(tag)
            .filter(|b| b.running)
            .ok_or_else(|| format!("ERROR: No backup is running on tag `{tag}'"))?;
        if let Some(period) = period {
            if period <= 0 {
                return Err("ERROR: the snapshot interval must be positive".to_owned());
            }
            backup.snapshot_period_seconds = period;
        }
        if let Some(url) = url {
            let same = backup.url.trim_end_matches('/') == url.trim_end_matches('/');
            if same && backup.encryption_key_path.as_deref() != encryption_key_path {
                return Err(format!(
                    "Destination URL matches the existing backup URL for tag '{tag}', but the encryption key file does not match."
                ));
            }
            backup.url = url.to_owned();
            backup.encryption_key_path = encryption_key_path.map(str::to_owned);
            // The next snapshot starts over in the new container.
            backup.progress = 0;
            let container = self.blob.entry(url.to_owned()).or_default();
            if container.snapshots.is_empty() {
                container.encryption_key_path = encryption_key_path.map(str::to_owned);
            }
        }
        Ok(())
    }

    /// `fdbbackup discontinue`.
    pub fn discontinue(&mut self, tag: &str) -> Result<(), String> {
        let backup = self
            .tags
            .get_mut(tag)
            .filter(|b| b.running)
            .ok_or_else(|| format!("ERROR: No backup is running on tag `{tag}'"))?;
        backup.running = false;
        Ok(())
    }

    /// `fdbbackup delete`: the container's files go (nothing to do when there are none).
    pub fn delete_container(&mut self, url: &str) -> Result<(), String> {
        if self.tags.values().any(|b| b.running && b.url == url) {
            return Err(format!(
                "ERROR: a running backup writes to {url}; discontinue it first"
            ));
        }
        self.blob.remove(url);
        Ok(())
    }

    /// `fdbrestore start`; `data` must be empty.
    pub fn start_restore(
        &mut self,
        data: &UserData,
        url: &str,
        version: Option<i64>,
        ranges: &[KeyRange],
        encryption_key_path: Option<&str>,
    ) -> Result<(), String> {
        if self.restore.as_ref().is_some_and(|r| r.state.is_running()) {
            return Err("ERROR: A restore is already running".to_owned());
        }
        let container = self
            .blob
            .get(url)
            .ok_or_else(|| format!("ERROR: {url} does not contain a backup"))?;
        if container.encryption_key_path.is_some()
            && container.encryption_key_path.as_deref() != encryption_key_path
        {
            return Err("ERROR: the backup is encrypted and needs its key file".to_owned());
        }
        let (first, last) = container
            .restorable_range()
            .ok_or_else(|| format!("ERROR: the backup at {url} is not restorable yet"))?;
        let version = version.unwrap_or(last);
        if version < first || version > last {
            return Err(format!(
                "ERROR: version {version} is not restorable; restorable versions are {first} to {last}"
            ));
        }
        let covered = coverage(ranges).map_err(|e| format!("ERROR: {e}"))?;
        if !data.is_empty() && covered {
            return Err(
                "ERROR: Attempted to restore into a non-empty destination database".to_owned(),
            );
        }
        self.restore = Some(SimRestore {
            url: url.to_owned(),
            version,
            digest: if covered {
                container.digest_at(version)
            } else {
                None
            },
            state: RestoreState::Queued,
            progress: 0,
        });
        Ok(())
    }

    /// What `fdbbackup status --json -t <tag>` prints.
    pub fn status_json(&self, tag: &str, origin: i64) -> Value {
        let point = |version: i64| {
            json!({
                "Version": version,
                "EpochSeconds": origin + version / super::user_data::VERSIONS_PER_SECOND,
            })
        };
        let Some(backup) = self.tags.get(tag) else {
            return json!({
                "SchemaVersion": "1.0.0",
                "BackupAgentsPaused": self.paused,
                "Tag": tag,
                "Status": {"Name": "NeverRan", "Description": "has never been started",
                           "Completed": false, "Running": false},
                "Restorable": false,
                "Errors": [],
            });
        };
        let restorable = backup.latest_restorable_version();
        let (name, description) = match (backup.running, restorable.is_some()) {
            (true, false) => ("Running", "has been started"),
            (true, true) => (
                "RunningDifferentially",
                "is restorable and continues to write the mutation log",
            ),
            (false, _) => ("Completed", "has been discontinued"),
        };
        let mut errors = Vec::new();
        if backup.running && self.agents == 0 {
            errors.push(json!({"Message": "no backup agents are running"}));
        }
        let mut document = json!({
            "SchemaVersion": "1.0.0",
            "BackupAgentsPaused": self.paused,
            "Tag": tag,
            "UID": backup.uid,
            "Status": {"Name": name, "Description": description,
                       "Completed": !backup.running, "Running": backup.running},
            "Restorable": restorable.is_some(),
            "DestinationURL": backup.url,
            "StopAfterSnapshot": false,
            "SnapshotIntervalSeconds": backup.snapshot_period_seconds,
            "Errors": errors,
        });
        // The config's versions, not the container's (`getStatusJSON` in
        // fdbclient/FileBackupAgent.actor.cpp).
        if let Some(end) = backup.latest_snapshot_end {
            document["LatestSnapshotEnd"] = point(end);
        }
        if let Some(end) = backup.log_end {
            document["LatestLogEnd"] = point(end);
        }
        if let Some(last) = restorable {
            document["LatestRestorablePoint"] = point(last);
        }
        document
    }

    /// `cluster.layers.backup` of `status json`.
    pub fn layer_json(&self) -> Value {
        let tags: serde_json::Map<String, Value> = self
            .tags
            .iter()
            .map(|(tag, backup)| {
                let restorable = backup.latest_restorable_version();
                (
                    tag.clone(),
                    json!({
                        "current_container": backup.url,
                        "running_backup": backup.running,
                        "running_backup_is_restorable": backup.running && restorable.is_some(),
                        "last_restorable_version": restorable,
                    }),
                )
            })
            .collect();
        json!({
            "paused": self.paused,
            "instances_running": self.agents,
            "tags": tags,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_need_agents_and_restores_bring_back_the_version() {
        let mut data = UserData::default();
        let mut backups = Backups::default();
        backups
            .start("default", "blobstore://x/y", 100, None)
            .unwrap();
        data.play(150, true);
        backups.advance(&mut data, 150, true, 0);
        assert!(
            backups.blob["blobstore://x/y"].snapshots.is_empty(),
            "no agents"
        );
        backups.agents = 2;
        data.play(300, true);
        backups.advance(&mut data, 300, true, 0);
        let container = &backups.blob["blobstore://x/y"];
        assert_eq!(container.snapshots.len(), 1);
        assert_eq!(container.snapshots[0].version, version_at(250));
        assert_eq!(
            container.snapshots[0].digest,
            data.digest_at(version_at(250))
        );
        let (_, last) = container.restorable_range().unwrap();
        assert_eq!(last, version_at(300));
        let at_300 = data.digest_at(version_at(300));
        backups.discontinue("default").unwrap();
        assert!(
            backups
                .start_restore(&data, "blobstore://x/y", None, &[], None)
                .unwrap_err()
                .contains("non-empty")
        );
        let _ = data.clear(version_at(310));
        backups
            .start_restore(&data, "blobstore://x/y", None, &[], None)
            .unwrap();
        backups.advance(&mut data, 400, true, 0);
        assert_eq!(
            backups.restore.as_ref().map(|r| r.state),
            Some(RestoreState::Completed)
        );
        assert_eq!(data.digest(), at_300);
    }

    /// `fdbbackup status` reads the backup's config in the database
    /// (`getLatestRestorableVersion`), `describe` the container: an expiry of every
    /// snapshot changes the second only.
    #[test]
    fn the_status_says_restorable_from_the_config_whatever_an_expiry_deleted() {
        let mut data = UserData::default();
        let mut backups = Backups {
            agents: 1,
            ..Backups::default()
        };
        backups
            .start("default", "blobstore://x/y", 100, None)
            .unwrap();
        data.play(250, true);
        backups.advance(&mut data, 250, true, 0);
        let status = backups.status_json("default", 0);
        assert_eq!(status["Restorable"], true);
        assert_eq!(
            status["LatestRestorablePoint"]["Version"],
            version_at(250) - 1
        );
        let container = backups.blob.get_mut("blobstore://x/y").unwrap();
        container
            .expire(crate::fdb::backup_expiry::ExpireRequest {
                before: -2,
                restorable_after: i64::MAX,
                force: true,
            })
            .unwrap();
        assert!(container.restorable_range().is_none());
        let after = backups.status_json("default", 0);
        assert_eq!(after["Restorable"], true);
        assert_eq!(after["LatestSnapshotEnd"], status["LatestSnapshotEnd"]);
        assert_eq!(
            backups.layer_json()["tags"]["default"]["running_backup_is_restorable"],
            true
        );
    }

    #[test]
    fn key_ranges_cover_all_or_nothing() {
        let range = |b: &str, e: &str| KeyRange::parse(b, e).unwrap();
        assert_eq!(coverage(&[range("\\x00", "\\xff")]), Ok(true));
        assert_eq!(coverage(&[range("a", "b")]), Ok(false));
        assert!(coverage(&[range("user/5", "\\xff")]).is_err());
    }
}
