//! `fdbbackup status --json`: the status of one backup.

use serde::{Deserialize, Serialize};

use super::lenient;

/// The document `fdbbackup status --json` prints (PascalCase keys).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BackupStatus {
    /// Schema version of the document.
    #[serde(default)]
    pub schema_version: Option<String>,
    /// Whether backup agents are paused.
    #[serde(default)]
    pub backup_agents_paused: Option<bool>,
    /// The backup tag.
    #[serde(default)]
    pub tag: Option<String>,
    /// The backup's unique ID.
    #[serde(default, rename = "UID")]
    pub uid: Option<String>,
    /// The backup's state.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub status: BackupState,
    /// Whether the backup can be restored.
    #[serde(default)]
    pub restorable: Option<bool>,
    /// Where the backup is written.
    #[serde(default, rename = "DestinationURL")]
    pub destination_url: Option<String>,
    /// Snapshot period.
    #[serde(default, deserialize_with = "lenient::int")]
    pub snapshot_interval_seconds: Option<i64>,
    /// The end of the last completed snapshot.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub latest_snapshot_end: Option<BackupPoint>,
    /// The last version the mutation log reached.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub latest_log_end: Option<BackupPoint>,
    /// The latest version the backup can be restored to.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub latest_restorable_point: Option<BackupPoint>,
    /// Errors reported by the agents.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub errors: Vec<serde_json::Value>,
}

/// `Status` of a backup.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BackupState {
    /// State name (`Running`, `Completed`, ...).
    #[serde(default)]
    pub name: Option<String>,
    /// Human-readable description.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether the backup is complete.
    #[serde(default)]
    pub completed: Option<bool>,
    /// Whether the backup is running.
    #[serde(default)]
    pub running: Option<bool>,
}

/// A point of a backup: a database version and when it was.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BackupPoint {
    /// The database version.
    #[serde(default, deserialize_with = "lenient::int")]
    pub version: Option<i64>,
    /// Unix seconds.
    #[serde(default, deserialize_with = "lenient::int")]
    pub epoch_seconds: Option<i64>,
    /// The time as fdbbackup prints it.
    #[serde(default)]
    pub timestamp: Option<String>,
}

impl BackupStatus {
    /// Parses fdbbackup's output, starting at the first `{`.
    pub fn parse_output(text: &str) -> Result<Self, super::StatusParseError> {
        let start = text
            .find('{')
            .ok_or_else(|| super::StatusParseError::NoDocument {
                prefix: text.chars().take(120).collect(),
            })?;
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Self>();
        match stream.next() {
            Some(Ok(status)) => Ok(status),
            Some(Err(source)) => Err(super::StatusParseError::Json {
                line: source.line(),
                column: source.column(),
                source,
            }),
            None => Err(super::StatusParseError::NoDocument {
                prefix: text.chars().take(120).collect(),
            }),
        }
    }
}
