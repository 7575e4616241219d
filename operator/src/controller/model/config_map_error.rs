//! Why the cluster's ConfigMap (or a monitor conf or process configuration in it) cannot
//! be built: its own file, so the builders of its parts (`config_map.rs`,
//! `process_config.rs`) share it without importing each other.

use fdb_shared::api::ProcessClass;
use fdb_shared::monitor_conf::render::RenderError;
use fdb_shared::monitor_conf::substitute::SubstitutionError;
use fdb_shared::validation::config_map_size::CONFIG_MAP_SIZE_LIMIT;

use super::pod::PodModelError;

/// Why the ConfigMap or a monitor conf cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigMapError {
    /// The cluster's identity or image type is unusable (see [`PodModelError`]).
    #[error(transparent)]
    Cluster(#[from] PodModelError),
    /// The sidecar's substitutions do not cover the template's variables.
    #[error("expected monitor conf of class {class}")]
    Substitution {
        /// The process class whose conf was rendered.
        class: ProcessClass,
        /// What was missing or malformed.
        #[source]
        source: SubstitutionError,
    },
    /// The spec holds a value that cannot be written into the monitor conf (validation
    /// refuses such specs; this guards the rendering itself).
    #[error("monitor conf of class {class}")]
    Render {
        /// The process class whose conf was rendered.
        class: ProcessClass,
        /// The refused key or value.
        #[source]
        source: RenderError,
    },
    /// A unified pod's process configuration could not be written as JSON.
    #[error("process configuration of class {class}: {message}")]
    Json {
        /// The process class.
        class: ProcessClass,
        /// The serializer's message.
        message: String,
    },
    /// The ConfigMap would be larger than the API server accepts.
    #[error(
        "the ConfigMap would hold {size} bytes of data, more than the API server's limit of {CONFIG_MAP_SIZE_LIMIT} bytes (its largest parts: {largest}); shrink spec.configMap.data, spec.trustedCAs or the custom parameters"
    )]
    TooLarge {
        /// Bytes of data (keys and values).
        size: usize,
        /// The largest keys with their sizes, for the message.
        largest: String,
    },
}
