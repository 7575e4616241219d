//! The plugin's errors: each is one line naming what failed, and an exit status.

/// Why a command could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The command line is wrong (unknown flag, missing argument, invalid value).
    #[error("{0}")]
    Usage(String),
    /// No usable kubeconfig.
    #[error("kubeconfig: {0}")]
    Config(String),
    /// The API server does not answer.
    #[error("cannot reach the Kubernetes API at {server}: {detail}")]
    Unreachable {
        /// The server URL.
        server: String,
        /// What failed.
        detail: String,
    },
    /// The named FoundationDBCluster does not exist.
    #[error("FoundationDBCluster {namespace}/{name} not found")]
    ClusterNotFound {
        /// Namespace searched.
        namespace: String,
        /// Cluster name.
        name: String,
    },
    /// A pod, process group or node named on the command line does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The API server refused a request.
    #[error("the Kubernetes API refused to {action}: {message} ({code})")]
    Refused {
        /// What was asked.
        action: String,
        /// The server's message.
        message: String,
        /// HTTP status.
        code: u16,
    },
    /// The user answered no.
    #[error("aborted: nothing was changed")]
    Aborted,
    /// The plugin declined an action that endangers the database (unless forced).
    #[error("{0}")]
    Declined(String),
    /// The command needs something this plugin cannot do here.
    #[error("{0}")]
    Unsupported(String),
    /// A command run in a pod could not be followed to its end (its output past what is
    /// kept, or not writable here).
    #[error("{action}: {message}")]
    Exec {
        /// What was run.
        action: String,
        /// What went wrong.
        message: String,
    },
}

impl PluginError {
    /// The exit status: 1 when the user or the plugin declined, 2 for everything else (bad usage, a
    /// missing object, an unreachable API).
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Aborted | Self::Declined(_) => 1,
            _ => 2,
        }
    }

    /// Wraps a kube error from `action` against the API at `server`.
    pub fn from_kube(error: kube::Error, action: &str, server: &str) -> Self {
        match error {
            kube::Error::Api(status) => Self::Refused {
                action: action.to_owned(),
                message: status.message.clone(),
                code: status.code,
            },
            other => Self::Unreachable {
                server: server.to_owned(),
                detail: one_line(&other.to_string()),
            },
        }
    }
}

/// The first line of a message, so every error stays on one line.
pub fn one_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().trim().to_owned()
}
