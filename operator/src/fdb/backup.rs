//! Backup and restore requests of the admin interface (`fdbbackup`, `fdbrestore`), and
//! the restore progress they report.

use std::fmt;

/// `fdbbackup start`: a continuous backup of the database to a blob store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupStart {
    /// The backup tag (`-t`).
    pub tag: String,
    /// The destination, `blobstore://...` (`-d`).
    pub url: String,
    /// Seconds between snapshots (`-s`).
    pub snapshot_period_seconds: i64,
    /// The key file that encrypts the backup (`--encryption-key-file`), when set.
    pub encryption_key_path: Option<String>,
}

/// `fdbbackup modify`: changes a running backup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupModify {
    /// The backup tag (`-t`).
    pub tag: String,
    /// The new destination URL (`-d`), when it changes.
    pub url: Option<String>,
    /// The new snapshot period (`-s`), when it changes.
    pub snapshot_period_seconds: Option<i64>,
    /// The key file the new destination is encrypted with (`--encryption-key-file`, only
    /// with a new `url`; FoundationDB versions that take it on `modify`).
    pub encryption_key_path: Option<String>,
}

impl BackupModify {
    /// Whether there is anything to modify.
    pub fn is_empty(&self) -> bool {
        self.url.is_none() && self.snapshot_period_seconds.is_none()
    }
}

/// A key range to restore, as bytes: only [`KeyRange::new`] makes one, so a range is
/// never empty or reversed, and its keys are rendered escaped (one token each: a space
/// in a key can never split it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    begin: Vec<u8>,
    end: Vec<u8>,
}

/// Why a key range cannot be restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyRangeError {
    /// A key did not parse.
    #[error("key {text:?} {problem}")]
    Key {
        /// The key as written.
        text: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The begin key does not come before the end key.
    #[error("the range {begin:?} - {end:?} is empty or reversed")]
    Order {
        /// The begin key as written.
        begin: String,
        /// The end key as written.
        end: String,
    },
}

impl KeyRange {
    /// The range from `begin` (inclusive) to `end` (exclusive); both non-empty and
    /// `begin < end`.
    pub fn new(begin: Vec<u8>, end: Vec<u8>) -> Result<Self, KeyRangeError> {
        let printable = |key: &[u8]| fdb_shared::printable::escape_bytes(key);
        for key in [&begin, &end] {
            if key.is_empty() {
                return Err(KeyRangeError::Key {
                    text: String::new(),
                    problem: "must not be empty".to_owned(),
                });
            }
        }
        if begin >= end {
            return Err(KeyRangeError::Order {
                begin: printable(&begin),
                end: printable(&end),
            });
        }
        Ok(Self { begin, end })
    }

    /// Parses keys in FoundationDB's printable form (`\xNN` for a byte).
    pub fn parse(begin: &str, end: &str) -> Result<Self, KeyRangeError> {
        let key = |text: &str| {
            fdb_shared::validation::backup_values::parse_key(text).map_err(|problem| {
                KeyRangeError::Key {
                    text: text.to_owned(),
                    problem,
                }
            })
        };
        Self::new(key(begin)?, key(end)?)
    }

    /// The first key (inclusive).
    pub fn begin(&self) -> &[u8] {
        &self.begin
    }

    /// The end key (exclusive).
    pub fn end(&self) -> &[u8] {
        &self.end
    }
}

/// `fdbrestore start`: restores a backup into the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreStart {
    /// The backup to restore, `blobstore://...` (`-r`).
    pub url: String,
    /// Key ranges to restore (`-k`); empty: everything.
    pub key_ranges: Vec<KeyRange>,
    /// The version to restore to (`-v`); `None`: the latest restorable version.
    pub version: Option<i64>,
    /// The key file the backup was encrypted with (`--encryption-key-file`).
    pub encryption_key_path: Option<String>,
    /// Further `fdbrestore` arguments (`--knob_...`), from the restore's spec.
    pub custom_parameters: Vec<String>,
}

/// The state `fdbrestore status` reports for a restore.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RestoreState {
    /// Accepted, not begun.
    Queued,
    /// Preparing.
    Starting,
    /// Copying data.
    Running,
    /// Done: the data is restored.
    Completed,
    /// Given up.
    Aborted,
}

impl RestoreState {
    /// The name `fdbrestore status` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Aborted => "aborted",
        }
    }

    /// Parses a printed state name (case-insensitive).
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "queued" => Some(Self::Queued),
            "starting" => Some(Self::Starting),
            "running" => Some(Self::Running),
            "completed" => Some(Self::Completed),
            "aborted" => Some(Self::Aborted),
            _ => None,
        }
    }

    /// Whether the restore is still working.
    pub fn is_running(self) -> bool {
        matches!(self, Self::Queued | Self::Starting | Self::Running)
    }
}

impl fmt::Display for RestoreState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What `fdbrestore status` says about the restore of the default tag.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RestoreProgress {
    /// The restore's state; `None` when no restore was ever started.
    pub state: Option<RestoreState>,
    /// The backup URL being restored, when printed.
    pub url: Option<String>,
    /// The version restored to, when printed.
    pub version: Option<i64>,
}

/// Parses `fdbrestore status` text. Each restore prints one line of `Key: value` fields
/// separated by two spaces (`Tag: default  UID: ...  State: completed  ...  URL: ...`);
/// a database without restores prints no such line.
pub fn parse_restore_status(text: &str) -> Result<RestoreProgress, String> {
    let Some(line) = text.lines().find(|line| line.contains("State:")) else {
        return Ok(RestoreProgress::default());
    };
    let mut progress = RestoreProgress::default();
    for field in line.split("  ").map(str::trim).filter(|f| !f.is_empty()) {
        let Some((key, value)) = field.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "State" => {
                progress.state = Some(
                    RestoreState::parse(value)
                        .ok_or_else(|| format!("unknown restore state {value:?}"))?,
                );
            }
            "URL" => progress.url = Some(value.to_owned()),
            "TargetVersion" | "Version" => {
                progress.version = Some(
                    value
                        .parse()
                        .map_err(|_| format!("restore version {value:?} is not a number"))?,
                );
            }
            _ => {}
        }
    }
    Ok(progress)
}

/// The line `fdbrestore status` prints for one restore (the simulated tool prints it too,
/// so both sides of the parser are exercised).
pub fn render_restore_status(tag: &str, progress: &RestoreProgress) -> String {
    let mut fields = vec![format!("Tag: {tag}")];
    if let Some(state) = progress.state {
        fields.push(format!("State: {state}"));
    }
    if let Some(url) = &progress.url {
        fields.push(format!("URL: {url}"));
    }
    if let Some(version) = progress.version {
        fields.push(format!("TargetVersion: {version}"));
    }
    fields.join("  ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_restore_status_line() {
        let text = "Tag: default  UID: 0f2ab  State: completed  Blocks: 12/12  \
                    BlocksInProgress: 0  Files: 4  BytesWritten: 1024  ApplyVersionLag: 0  \
                    LastError: None  URL: blobstore://a@b:443/c?bucket=fdb-backups  \
                    Range: ''-'\\xff'  AddPrefix: ''  RemovePrefix: ''  TargetVersion: 9000\n";
        let progress = parse_restore_status(text).unwrap();
        assert_eq!(progress.state, Some(RestoreState::Completed));
        assert_eq!(
            progress.url.as_deref(),
            Some("blobstore://a@b:443/c?bucket=fdb-backups")
        );
        assert_eq!(progress.version, Some(9000));
        assert!(!RestoreState::Completed.is_running());
        assert!(RestoreState::Queued.is_running());
    }

    #[test]
    fn no_restore_and_bad_states() {
        assert_eq!(
            parse_restore_status("").unwrap(),
            RestoreProgress::default()
        );
        assert!(parse_restore_status("Tag: default  State: exploding").is_err());
        let progress = RestoreProgress {
            state: Some(RestoreState::Running),
            url: Some("blobstore://x/y".into()),
            version: Some(5),
        };
        assert_eq!(
            parse_restore_status(&render_restore_status("default", &progress)).unwrap(),
            progress
        );
    }
}
