//! Errors of a reconcile pass and of its steps, each with a short fixed `category()` for
//! metric labels, Event reasons and the error policy.

use fdb_shared::sidecar::SidecarClientError;

use crate::fdb::AdminError;

/// A step failed (not "waiting": that is a requeue).
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// A Kubernetes request failed.
    #[error("{action}")]
    Kube {
        /// What was attempted ("create pod default/sample-storage-1").
        action: String,
        /// The client error.
        source: kube::Error,
    },
    /// An admin command on the database failed.
    #[error("{action}")]
    Admin {
        /// What was attempted ("configure the new database").
        action: String,
        /// The admin error (names the command).
        source: AdminError,
    },
    /// A sidecar could not be used in a way that is not just "unreachable".
    #[error("sidecar of pod {pod}")]
    Sidecar {
        /// The pod.
        pod: String,
        /// The client error.
        source: SidecarClientError,
    },
    /// A desired object could not be built from the spec.
    #[error("cannot build {what}: {message}")]
    Build {
        /// What was being built ("pod for storage-1").
        what: String,
        /// Why not.
        message: String,
    },
    /// An object could not be converted to or from JSON.
    #[error("{what}")]
    Json {
        /// What was converted.
        what: String,
        /// The serde error.
        source: serde_json::Error,
    },
    /// A status edit did not fit the live status (a bug, or the status changed under us).
    #[error(transparent)]
    Status(#[from] super::status::mutations::StatusMutationError),
    /// Live state the operator cannot work with (e.g. an unparsable connection string in
    /// the status).
    #[error("{0}")]
    InvalidState(String),
}

impl StepError {
    /// A Kubernetes error with what was attempted.
    pub fn kube(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let action = action.into();
        move |source| Self::Kube { action, source }
    }

    /// An admin error with what was attempted.
    pub fn admin(action: impl Into<String>) -> impl FnOnce(AdminError) -> Self {
        let action = action.into();
        move |source| Self::Admin { action, source }
    }

    /// A short fixed name of the kind of failure.
    pub fn category(&self) -> &'static str {
        match self {
            Self::Kube { source, .. } => kube_category(source),
            Self::Admin { source, .. } => source.category(),
            Self::Sidecar { .. } => "SidecarError",
            Self::Build { .. } => "BuildFailed",
            Self::Json { .. } => "SerializationFailed",
            Self::Status(_) | Self::InvalidState(_) => "InvalidState",
        }
    }

    /// Whether trying again soon may help (conflicts, timeouts, unavailable database).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Kube { source, .. } => !matches!(kube_category(source), "KubeInvalid"),
            Self::Admin { source, .. } => source.is_transient(),
            Self::Sidecar { .. } => true,
            Self::Build { .. } | Self::Json { .. } | Self::Status(_) | Self::InvalidState(_) => {
                false
            }
        }
    }
}

fn kube_category(error: &kube::Error) -> &'static str {
    match error {
        kube::Error::Api(status) if status.code == 409 => "KubeConflict",
        kube::Error::Api(status) if status.code == 404 => "KubeNotFound",
        kube::Error::Api(status) if status.code == 422 || status.code == 400 => "KubeInvalid",
        kube::Error::Api(_) => "KubeApiError",
        _ => "KubeUnreachable",
    }
}

/// A reconcile pass failed.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The cluster could not be read.
    #[error("cannot read FoundationDBCluster {namespace}/{name}")]
    ReadCluster {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// The client error.
        source: kube::Error,
    },
    /// The cluster does not exist (any more).
    #[error("FoundationDBCluster {namespace}/{name} does not exist")]
    ClusterNotFound {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// The spec is invalid; the operator waits for the user to change it.
    #[error(transparent)]
    InvalidSpec(#[from] fdb_shared::validation::InvalidCluster),
    /// A pod template asks for more than the operator's policy allows; the operator
    /// waits for the user to change it.
    #[error(transparent)]
    PodTemplateRefused(#[from] super::model::pod_template_policy::PodTemplateRefused),
    /// A step failed.
    #[error("step {step} failed")]
    Step {
        /// The step.
        step: &'static str,
        /// What went wrong.
        source: StepError,
    },
}

impl ReconcileError {
    /// A short fixed name of the kind of failure.
    pub fn category(&self) -> &'static str {
        match self {
            Self::ReadCluster { source, .. } => kube_category(source),
            Self::ClusterNotFound { .. } => "ClusterNotFound",
            Self::InvalidSpec(_) => "InvalidSpec",
            Self::PodTemplateRefused(_) => "PodTemplateRefused",
            Self::Step { source, .. } => source.category(),
        }
    }

    /// Whether retrying soon may help (an invalid spec waits for the next change).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::ReadCluster { .. } => true,
            Self::ClusterNotFound { .. } | Self::InvalidSpec(_) | Self::PodTemplateRefused(_) => {
                false
            }
            Self::Step { source, .. } => source.is_transient(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("test", "Test")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn categories_are_fixed_names() {
        let conflict = StepError::kube("patch status")(api_error(409));
        assert_eq!(conflict.category(), "KubeConflict");
        assert!(conflict.is_transient());
        let invalid = StepError::kube("create pod")(api_error(422));
        assert_eq!(invalid.category(), "KubeInvalid");
        assert!(!invalid.is_transient());
        let step = ReconcileError::Step {
            step: "AddPods",
            source: invalid,
        };
        assert_eq!(step.category(), "KubeInvalid");
        assert_eq!(step.to_string(), "step AddPods failed");
        // kube's message already holds its Status: the chain shows it once.
        assert_eq!(
            fdb_shared::error_chain::chain_text(&step),
            format!("step AddPods failed: create pod: {}", api_error(422))
        );
    }
}
