//! What `fdbbackup describe` reports of a backup container, and how `fdbbackup expire`
//! deletes its old data, as apple/foundationdb does: `BackupDescription::toJSON`
//! (`fdbclient/BackupContainer.actor.cpp`) and `expireData`
//! (`fdbclient/BackupContainerFileSystem.actor.cpp`), per release branch.
//!
//! The model keeps the log as one contiguous run from `log_begin` to `log_end` and
//! deletes exactly up to the requested version; FoundationDB keeps a log file that
//! spans the cutoff and moves the cutoff back to its beginning, which only keeps more
//! data than asked.

use fdb_shared::FdbVersion;
use serde_json::{Value, json};

use super::backup::{BlobContainer, BlobSnapshot};
use super::user_data::VERSIONS_PER_SECOND;

/// Versions per day (`CLIENT_KNOBS->CORE_VERSIONSPERSECOND` times a day), the unit of
/// `--delete-before-days`, `--min-restorable-days` and `RelativeDays`.
pub const VERSIONS_PER_DAY: i64 = VERSIONS_PER_SECOND * 24 * 60 * 60;

/// What `fdbbackup expire` was asked: `--expire-before-version`/`--delete-before-days`
/// and `--restorable-after-version`/`--min-restorable-days` (a negative version counts
/// back from the log's end, as the tool turns days into one), and `--force`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpireRequest {
    /// Delete the data before this version.
    pub before: i64,
    /// Keep the backup restorable from this version on (`i64::MAX` when not given).
    pub restorable_after: i64,
    /// Delete even when no restorable snapshot would be left.
    pub force: bool,
}

/// Why `fdbbackup expire` refused; `Display` is the tool's text on standard error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpireRefusal {
    /// `backup_cannot_expire`, as `expireBackupData` in `fdbbackup/backup.actor.cpp`
    /// prints it.
    #[error(
        "ERROR: Requested expiration would be unsafe.  Backup would not meet minimum restorability.  Use --force to delete data anyway."
    )]
    Unsafe,
    /// `invalid_option_value`: a relative version with no log to count back from.
    #[error("ERROR: Option set with an invalid value")]
    InvalidOption,
}

impl BlobContainer {
    /// Whether `snapshot` can be restored: the log holds every change from its
    /// beginning to its end.
    pub(crate) fn is_restorable(&self, snapshot: &BlobSnapshot) -> bool {
        let begins_covered = self
            .log_begin
            .is_none_or(|begin| begin <= snapshot.begin_version);
        let ends_covered = self.log_end.is_none_or(|end| end >= snapshot.version);
        begins_covered && ends_covered
    }

    /// `fdbbackup describe -d URL --json` as `version`'s tool prints it (without
    /// `--version_timestamps`: versions relative to the log's end in days).
    pub fn describe_json(&self, url: &str, version: &FdbVersion) -> Value {
        let max_log_end = self.log_end;
        let point = |at: i64| match max_log_end {
            Some(end) => {
                json!({"Version": at, "RelativeDays": (at - end) as f64 / VERSIONS_PER_DAY as f64})
            }
            None => json!({"Version": at}),
        };
        let snapshots: Vec<Value> = self
            .snapshots
            .iter()
            .map(|snapshot| {
                json!({
                    "Start": point(snapshot.begin_version),
                    "End": point(snapshot.version),
                    "Restorable": self.is_restorable(snapshot),
                    "TotalBytes": snapshot.bytes,
                    "PercentageExpired": self.percentage_expired(snapshot),
                })
            })
            .collect();
        let restorable = self.restorable_range();
        let mut document = json!({"SchemaVersion": "1.0.0", "URL": url,
            "Restorable": restorable.is_some(), "Partitioned": false});
        // The encryption keys appear with release-7.3's `toJSON` (absent in 7.1 and 7.2).
        if version.is_at_least(&FdbVersion::new(7, 3, 0)) {
            let encrypted = self.encryption_key_path.is_some();
            document["FileLevelEncryption"] = json!(encrypted);
            document["EncryptionBlockSize"] = json!(if encrypted { 4096 } else { 0 });
        }
        document["Snapshots"] = json!(snapshots);
        document["TotalSnapshotBytes"] = json!(self.snapshots.iter().map(|s| s.bytes).sum::<i64>());
        let optional = [
            ("ExpiredEnd", self.expired_end),
            ("UnreliableEnd", self.expired_end),
            ("MinLogBegin", self.log_end.and(self.log_begin)),
            ("ContiguousLogEnd", self.log_end),
            ("MaxLogEnd", self.log_end),
            ("MinRestorablePoint", restorable.map(|(first, _)| first)),
            ("MaxRestorablePoint", restorable.map(|(_, last)| last)),
        ];
        for (key, value) in optional {
            if let Some(at) = value {
                document[key] = point(at);
            }
        }
        document
    }

    /// How much of `snapshot` an expiry deleted, in percent (`expiredPct`).
    fn percentage_expired(&self, snapshot: &BlobSnapshot) -> i64 {
        match self.expired_end {
            Some(end)
                if end > snapshot.begin_version && snapshot.version > snapshot.begin_version =>
            {
                let done = (end.min(snapshot.version) - snapshot.begin_version) * 100;
                done / (snapshot.version - snapshot.begin_version)
            }
            _ => 0,
        }
    }

    /// `fdbbackup expire`: deletes the snapshots that end before the cutoff and the log
    /// before it, unless that would leave no restorable snapshot within the bounds and
    /// `force` is not given. Returns the cutoff the data before which is gone.
    pub fn expire(&mut self, request: ExpireRequest) -> Result<i64, ExpireRefusal> {
        let resolve = |at: i64| -> Result<i64, ExpireRefusal> {
            if at >= 0 {
                return Ok(at);
            }
            self.log_end
                .map(|end| end + at)
                .ok_or(ExpireRefusal::InvalidOption)
        };
        let before = resolve(request.before)?;
        let restorable_after = resolve(request.restorable_after)?;
        if restorable_after < before {
            return Err(ExpireRefusal::Unsafe);
        }
        if self.expired_end.is_some_and(|end| before <= end) {
            return Ok(before);
        }
        let still_restorable = self.snapshots.iter().any(|snapshot| {
            self.is_restorable(snapshot)
                && snapshot.begin_version >= before
                && snapshot.version <= restorable_after
        });
        if !still_restorable && !request.force {
            return Err(ExpireRefusal::Unsafe);
        }
        self.snapshots.retain(|snapshot| snapshot.version >= before);
        self.log.retain(|(at, _)| *at >= before);
        if let Some(begin) = self.log_begin.as_mut() {
            *begin = (*begin).max(before);
        }
        self.expired_end = Some(before);
        Ok(before)
    }
}
