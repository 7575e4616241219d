//! The `<cluster>-config` ConfigMap (operator-behavior §5): the cluster file, the running
//! version, the trusted CAs and one fdbmonitor conf template per process class in use,
//! plus what the sidecar must have written from them.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::api::cluster::{GENERAL_PROCESS_SETTINGS, ImageType};
use fdb_shared::api::{FoundationDBCluster, ProcessClass};
use fdb_shared::cluster_math::desired_process_counts;
use fdb_shared::monitor_conf::render::{
    MonitorConfParams, monitor_conf_key, render_monitor_conf, split_custom_parameter,
};
use fdb_shared::monitor_conf::substitute::{SubstitutionError, substitute};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

pub use super::pod_model::sha256_hex;
use super::pod_model::{
    ClusterIdentity, PodModelError, cluster_labels, merged_labels, running_version, servers_per_pod,
};

/// ConfigMap key of the cluster file (the connection string).
pub const CLUSTER_FILE_KEY: &str = "cluster-file";
/// ConfigMap key of the version the processes run.
pub const RUNNING_VERSION_KEY: &str = "running-version";
/// ConfigMap key of the trusted CAs.
pub const CA_FILE_KEY: &str = "ca-file";

/// Why the ConfigMap or a monitor conf cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigMapError {
    /// The cluster's identity or image type is unusable (see [`PodModelError`]).
    #[error(transparent)]
    Cluster(#[from] PodModelError),
    /// The sidecar's substitutions do not cover the template's variables.
    #[error("expected monitor conf of class {class}: {source}")]
    Substitution {
        /// The process class whose conf was rendered.
        class: ProcessClass,
        /// What was missing or malformed.
        #[source]
        source: SubstitutionError,
    },
}

/// The ConfigMap's name: `<cluster>-config`.
pub fn config_map_name(cluster: &FoundationDBCluster) -> String {
    format!(
        "{}-config",
        cluster.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The custom parameters of a class: `processes.general.customParameters`, then
/// `processes.<class>.customParameters`; when both set a key, the class's value wins (at
/// the class's position).
pub fn custom_parameters(cluster: &FoundationDBCluster, class: ProcessClass) -> Vec<String> {
    let of = |name: &str| {
        cluster
            .spec
            .processes
            .get(name)
            .map(|settings| settings.custom_parameters.clone())
            .unwrap_or_default()
    };
    let own = of(class.as_str());
    let key_of =
        |parameter: &String| split_custom_parameter(parameter).map(|(key, _)| key.to_owned());
    let own_keys: BTreeSet<String> = own.iter().filter_map(key_of).collect();
    let mut merged: Vec<String> = of(GENERAL_PROCESS_SETTINGS)
        .into_iter()
        .filter(|parameter| key_of(parameter).is_none_or(|key| !own_keys.contains(&key)))
        .collect();
    merged.extend(own);
    merged
}

fn render_template(
    cluster: &FoundationDBCluster,
    class: ProcessClass,
    servers_per_pod: u32,
) -> Result<String, ConfigMapError> {
    let spec = &cluster.spec;
    let image_type = spec.image_type();
    if image_type != ImageType::Split {
        return Err(PodModelError::UnsupportedImageType {
            image_type: image_type.as_str().to_owned(),
        }
        .into());
    }
    if spec.buggify.empty_monitor_conf.unwrap_or(false) {
        return Ok(String::new());
    }
    let cluster_name = cluster.metadata.name.as_deref().unwrap_or_default();
    let custom_parameters = custom_parameters(cluster, class);
    let params = MonitorConfParams {
        process_class: class,
        servers_per_pod,
        log_group: spec.log_group(cluster_name),
        tls: spec.tls_enabled(),
        peer_verification_rules: spec.main_container.peer_verification_rules.as_deref(),
        explicit_listen_address: spec.use_explicit_listen_address(),
        dns_locality: spec.routing.define_dns_locality_fields(),
        data_center: spec.data_center.as_deref().filter(|dc| !dc.is_empty()),
        data_hall: spec.data_hall.as_deref().filter(|hall| !hall.is_empty()),
        custom_parameters: &custom_parameters,
    };
    Ok(render_monitor_conf(&params))
}

/// The monitor conf template of a class as the cluster spec wants it now (servers per pod
/// from the spec), whether or not the connection string is known yet — the ConfigMap holds
/// it only once it is. Empty with `buggify.emptyMonitorConf`.
pub fn monitor_conf_template(
    cluster: &FoundationDBCluster,
    class: ProcessClass,
) -> Result<String, ConfigMapError> {
    render_template(cluster, class, servers_per_pod(cluster, class))
}

/// The `fdbmonitor.conf` the sidecar of a pod of `class` must have written: the class's
/// template with the sidecar's substitutions (`GET /substitutions`) applied, by the same
/// code the sidecar uses.
pub fn expected_monitor_conf(
    cluster: &FoundationDBCluster,
    class: ProcessClass,
    substitutions: &BTreeMap<String, String>,
) -> Result<String, ConfigMapError> {
    let template = monitor_conf_template(cluster, class)?;
    substitute(&template, substitutions)
        .map_err(|source| ConfigMapError::Substitution { class, source })
}

/// Hash of a pod's dynamic configuration, for `foundationdb.org/last-applied-config-map`:
/// SHA-256 hex over the cluster file, a NUL separator and the monitor conf.
pub fn dynamic_conf_hash(cluster_file: &str, monitor_conf: &str) -> String {
    let mut bytes = Vec::with_capacity(cluster_file.len() + monitor_conf.len() + 1);
    bytes.extend_from_slice(cluster_file.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(monitor_conf.as_bytes());
    sha256_hex(&bytes)
}

/// The monitor conf keys the ConfigMap must hold, with the class and density of each: every
/// class with desired process groups or with groups in the status (pods of a class being
/// removed still mount their key), at the spec's density and at every density still in
/// use according to `status.storageServersPerDisk` / `status.logServersPerDisk`.
pub fn monitor_conf_keys(cluster: &FoundationDBCluster) -> BTreeMap<String, (ProcessClass, u32)> {
    let mut classes: BTreeSet<ProcessClass> = desired_process_counts(&cluster.spec)
        .positive()
        .into_keys()
        .collect();
    let status = cluster.status.as_ref();
    if let Some(status) = status {
        classes.extend(
            status
                .process_groups
                .iter()
                .map(|group| group.process_class),
        );
    }
    let mut keys = BTreeMap::new();
    for class in classes {
        let mut densities = BTreeSet::from([servers_per_pod(cluster, class)]);
        let in_use = match (class, status) {
            (ProcessClass::Storage, Some(status)) => status.storage_servers_per_disk.as_slice(),
            (class, Some(status)) if class.is_log_process() => {
                status.log_servers_per_disk.as_slice()
            }
            _ => &[],
        };
        densities.extend(
            in_use
                .iter()
                .filter_map(|n| u32::try_from(*n).ok())
                .filter(|n| *n > 0),
        );
        for density in densities {
            keys.insert(monitor_conf_key(class, density), (class, density));
        }
    }
    keys
}

/// The desired `<cluster>-config` ConfigMap. `connection_string`: the cluster file once
/// known (`None` or empty before: every monitor conf is then empty, so no process starts
/// with a wrong cluster file); `running_version`: default `status.runningVersion`, else
/// `spec.version`. `spec.configMap` data, labels and annotations are merged in; the
/// operator's keys and labels win on conflicts.
pub fn build_config_map(
    cluster: &FoundationDBCluster,
    connection_string: Option<&str>,
    running_version_override: Option<&str>,
) -> Result<ConfigMap, ConfigMapError> {
    let identity = ClusterIdentity::of(cluster)?;
    let spec = &cluster.spec;
    let user = spec.config_map.clone().unwrap_or_default();
    let connection_string = connection_string.unwrap_or_default();

    let mut data = user.data.unwrap_or_default();
    data.insert(CLUSTER_FILE_KEY.to_owned(), connection_string.to_owned());
    data.insert(
        RUNNING_VERSION_KEY.to_owned(),
        running_version_override
            .unwrap_or_else(|| running_version(cluster))
            .to_owned(),
    );
    if !spec.trusted_cas.is_empty() {
        data.insert(CA_FILE_KEY.to_owned(), spec.trusted_cas.join("\n"));
    }
    for (key, (class, density)) in monitor_conf_keys(cluster) {
        let conf = if connection_string.is_empty() {
            String::new()
        } else {
            render_template(cluster, class, density)?
        };
        data.insert(key, conf);
    }

    let labels = merged_labels(
        cluster,
        user.metadata.labels.as_ref(),
        cluster_labels(cluster),
    );
    Ok(ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(cluster)),
            namespace: Some(identity.namespace),
            labels: Some(labels),
            annotations: user.metadata.annotations,
            owner_references: Some(vec![identity.owner]),
            ..ObjectMeta::default()
        },
        data: Some(data),
        binary_data: user.binary_data,
        immutable: None,
    })
}
