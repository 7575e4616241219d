//! Errors of the simulated world's runtime.

use std::path::PathBuf;

use crate::kube::{ApiError, DirectAccessError};

/// Why the world could not do its work. Problems of a single pod (a bad image tag, a
/// sidecar that cannot start, an unparsable monitor conf) are not errors: they show in
/// the pod's status and in the [`super::SettleReport`], as on a real cluster.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// A write to the simulated API server failed.
    #[error("{actor} could not {action} {target}")]
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
    #[error("cannot read stored objects")]
    Read(#[from] DirectAccessError),
    /// A file or directory of the world could not be written or read.
    #[error("{action} {}", path.display())]
    Io {
        /// What was done (`create directory`, `write`, ...).
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// A host path of the world would be outside its root (`world/confine.rs`).
    #[error(
        "refused to {action} {}: not inside the world's root {}",
        path.display(),
        root.display()
    )]
    OutsideRoot {
        /// What was to be done (`create directory`, `write`, `remove`, ...).
        action: &'static str,
        /// The path refused.
        path: PathBuf,
        /// The world's root.
        root: PathBuf,
    },
    /// A fault names a node that does not exist.
    #[error("fault or heal names node {node:?}, which does not exist (nodes: {known})")]
    UnknownNode {
        /// The node named.
        node: String,
        /// The existing nodes, comma separated.
        known: String,
    },
    /// Another world on this machine holds the loopback block.
    #[error(
        "loopback block 127.{block}.0.0/16 is in use by another simulation on this machine \
         (lock {}); choose another block or let the run pick a free one",
        path.display()
    )]
    BlockInUse {
        /// The block (second octet).
        block: u8,
        /// Its lock file.
        path: PathBuf,
    },
    /// Every loopback block is held by another world.
    #[error("no free loopback block: every block has a lock held in {}", dir.display())]
    NoFreeBlock {
        /// The lock directory.
        dir: PathBuf,
    },
    /// A pod's sidecar address cannot be bound: the run cannot be isolated.
    #[error(
        "cannot listen on {address} for the sidecar of pod {pod}: {error}; something else \
         on this machine uses the address (stop it, or run in another block with --ip-block)"
    )]
    Listen {
        /// `namespace/name` of the pod.
        pod: String,
        /// The host address.
        address: std::net::SocketAddr,
        /// Why binding failed (shown in the message, so not a `source()`).
        error: std::io::Error,
    },
    /// Something that is not this world's sidecar answers on a pod's sidecar address.
    #[error(
        "something else already answers on {address}, the sidecar address of pod {pod}; the \
         run stops rather than talk to it (stop it, or run in another block with --ip-block)"
    )]
    ForeignListener {
        /// `namespace/name` of the pod.
        pod: String,
        /// The host address.
        address: std::net::SocketAddr,
    },
    /// A fault's values cannot be used.
    #[error("fault {kind}: {message}")]
    InvalidFault {
        /// The fault kind.
        kind: &'static str,
        /// What is wrong.
        message: String,
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
