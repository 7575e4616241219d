//! Errors of a backup or restore pass.

use crate::fdb::AdminError;

/// A backup or restore pass failed (waiting is a requeue, not an error).
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// A Kubernetes request failed.
    #[error("{action}")]
    Kube {
        /// What was attempted ("create deployment default/sample-backup-agents").
        action: String,
        /// The client error.
        source: kube::Error,
    },
    /// A backup or restore command failed.
    #[error("{action}")]
    Admin {
        /// What was attempted ("start the backup").
        action: String,
        /// The admin error (names the command).
        source: AdminError,
    },
    /// An object could not be converted to or from JSON.
    #[error("{what}")]
    Json {
        /// What was converted.
        what: String,
        /// The serde error.
        source: serde_json::Error,
    },
}

impl BackupError {
    /// A Kubernetes error while doing `action`.
    pub fn kube(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let action = action.into();
        move |source| Self::Kube { action, source }
    }

    /// An admin error while doing `action`.
    pub fn admin(action: impl Into<String>) -> impl FnOnce(AdminError) -> Self {
        let action = action.into();
        move |source| Self::Admin { action, source }
    }
}
