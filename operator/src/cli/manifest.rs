//! What `explain` reads, for every kind: the API version served and why a manifest
//! could not be read (exit 2). Shared by the cluster and the backup/restore explanations.

use std::path::PathBuf;

use fdb_shared::yaml_input::{InputError, ReadError};

/// The API version this operator reads.
pub const API_VERSION: &str = "apps.foundationdb.org/v1beta2";

/// The manifest could not be read as a FoundationDBCluster (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum UnreadableManifest {
    /// The file could not be read (missing, not UTF-8, larger than 4 MiB).
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The file is not YAML, or nests deeper than the reader accepts.
    #[error("{path} is not readable YAML")]
    NotYaml {
        /// The file.
        path: PathBuf,
        /// The reader's error, with its line.
        #[source]
        source: InputError,
    },
    /// The file holds no FoundationDBCluster.
    #[error(
        "{path} holds no FoundationDBCluster (found kinds: {found}){}",
        kind_hint(found)
    )]
    NotACluster {
        /// The file.
        path: PathBuf,
        /// The kinds found instead.
        found: String,
    },
    /// The file holds no resource of the kind asked for.
    #[error("{path} holds no {kind} (found kinds: {found})")]
    NotAKind {
        /// The file.
        path: PathBuf,
        /// The kind asked for.
        kind: &'static str,
        /// The kinds found instead.
        found: String,
    },
}

/// A hint to use `--kind` when the file holds a backup or restore.
fn kind_hint(found: &str) -> String {
    ["FoundationDBBackup", "FoundationDBRestore"]
        .into_iter()
        .find(|kind| found.split(", ").any(|k| k == *kind))
        .map(|kind| format!("; explain it with --kind {kind}"))
        .unwrap_or_default()
}
