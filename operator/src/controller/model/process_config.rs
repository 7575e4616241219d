//! The process configuration JSON of unified-image pods in the `<cluster>-config`
//! ConfigMap (one key per process class, `fdbmonitor-conf-<class>-json`), and which pod
//! models the ConfigMap must serve.
//!
//! Like the Go operator, the ConfigMap holds the split monitor confs only while split pods
//! are wanted or exist, and the JSON only while unified pods are wanted or exist (both
//! during a migration).

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::api::cluster::ImageType;
use fdb_shared::api::{FoundationDBCluster, ProcessClass};
use fdb_shared::monitor_conf::process_config::{
    ProcessConfiguration, build_process_configuration, process_config_key,
};
use fdb_shared::monitor_conf::render::MonitorConfParams;

use super::config_map_error::ConfigMapError;

/// The pod models the ConfigMap serves: the spec's, and every one the status says pods
/// still run.
pub(crate) fn image_types_in_use(cluster: &FoundationDBCluster) -> BTreeSet<ImageType> {
    let mut types = BTreeSet::from([cluster.image_type()]);
    for name in cluster
        .status
        .as_ref()
        .map(|status| status.image_types.as_slice())
        .unwrap_or_default()
    {
        match name.as_str() {
            "unified" => types.insert(ImageType::Unified),
            "split" => types.insert(ImageType::Split),
            _ => false,
        };
    }
    types
}

/// The process configuration of `class` the monitors must run: version `spec.version`,
/// servers stopped while the connection string is unknown.
pub fn desired_process_configuration(
    cluster: &FoundationDBCluster,
    class: ProcessClass,
    has_connection_string: bool,
) -> ProcessConfiguration {
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    // The density does not shape the JSON: the monitor's `--process-count` does.
    let mut params = MonitorConfParams::for_spec(&cluster.spec, name, class, 1);
    params.dual_listen = listens_on_both(cluster);
    build_process_configuration(&params, &cluster.spec.version, has_connection_string)
}

/// The JSON keys the ConfigMap must hold, one per class of `classes`.
pub(crate) fn process_config_entries(
    cluster: &FoundationDBCluster,
    classes: impl IntoIterator<Item = ProcessClass>,
    has_connection_string: bool,
) -> Result<BTreeMap<String, String>, ConfigMapError> {
    let mut entries = BTreeMap::new();
    for class in classes {
        let config = desired_process_configuration(cluster, class, has_connection_string);
        let json = serde_json::to_string(&config).map_err(|error| ConfigMapError::Json {
            class,
            message: error.to_string(),
        })?;
        entries.insert(process_config_key(class), json);
    }
    Ok(entries)
}

/// Whether the processes must listen on a TLS and a non-TLS address at once: TLS is
/// being turned on or off and the coordinators have not all moved to the spec's kind
/// (`status.requiredAddresses` holds both).
pub(crate) fn listens_on_both(cluster: &FoundationDBCluster) -> bool {
    cluster
        .status
        .as_ref()
        .is_some_and(|status| status.required_addresses.both())
}
