//! Errors of the simulated world's runtime.

use std::path::PathBuf;

use crate::simulation::kube::{ApiError, DirectAccessError};

/// Why the world could not do its work. Problems of a single pod (a bad image tag, a
/// sidecar that cannot start, an unparsable monitor conf) are not errors: they show in
/// the pod's status and in the [`super::SettleReport`], as on a real cluster.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// A write to the simulated API server failed.
    #[error("{actor} could not {action} {target}: {source}")]
    Api {
        /// The actor writing (`kubelet`, `scheduler`, ...).
        actor: &'static str,
        /// What it tried (`patch status of`, `create`, ...).
        action: &'static str,
        /// The object (`pod/default/sample-storage-1`).
        target: String,
        /// The API error.
        #[source]
        source: ApiError,
    },
    /// Stored objects could not be read as their typed form.
    #[error("cannot read stored objects: {0}")]
    Read(#[from] DirectAccessError),
    /// A file or directory of the world could not be written or read.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was done (`create directory`, `write`, ...).
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// A fault names a node that does not exist.
    #[error("fault or heal names node {node:?}, which does not exist (nodes: {known})")]
    UnknownNode {
        /// The node named.
        node: String,
        /// The existing nodes, comma separated.
        known: String,
    },
    /// The fault is not applied by the world (the runner applies it to the API server or
    /// the simulated FoundationDB).
    #[error("fault {kind} is not a world fault; the runner applies it")]
    NotAWorldFault {
        /// The fault kind (`apiConflicts`, ...).
        kind: &'static str,
    },
}

impl WorldError {
    /// Builds an [`WorldError::Io`] (for `map_err`).
    pub fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io {
            action,
            path,
            source,
        }
    }
}
