//! Volumes of a FoundationDB pod and where each container mounts them
//! (docs/controller-model.md, "The pod").

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::monitor_conf::render::monitor_conf_key;
use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, EmptyDirVolumeSource, KeyToPath, PersistentVolumeClaimVolumeSource,
    Volume, VolumeMount,
};

use super::{names, servers_per_pod};

// The ConfigMap's name and cluster-file key are shared with the plugin, which repairs
// the connection string in an emergency.
pub(crate) use fdb_shared::api::cluster::{CLUSTER_FILE_KEY, config_map_name};

/// ConfigMap key of the version the processes run.
pub(crate) const RUNNING_VERSION_KEY: &str = "running-version";
/// ConfigMap key of the trusted CAs.
pub(crate) const CA_FILE_KEY: &str = "ca-file";

/// The data volume (PVC or emptyDir).
pub(crate) const DATA_VOLUME: &str = "data";
/// The sidecar's output directory, the main container's conf directory.
pub(crate) const DYNAMIC_CONF_VOLUME: &str = "dynamic-conf";
/// The ConfigMap projection, the sidecar's input directory.
pub(crate) const CONFIG_MAP_VOLUME: &str = "config-map";
/// The trace log directory.
pub(crate) const TRACE_LOGS_VOLUME: &str = "fdb-trace-logs";

/// Where the data volume is mounted in the main container.
pub(crate) const DATA_MOUNT: &str = "/var/fdb/data";
/// Where the main container reads the files the sidecar writes.
pub(crate) const DYNAMIC_CONF_MOUNT: &str = "/var/dynamic-conf";
/// The sidecar's input directory (ConfigMap mount).
pub(crate) const SIDECAR_INPUT_MOUNT: &str = "/var/input-files";
/// The sidecar's output directory (shared with the main container).
pub(crate) const SIDECAR_OUTPUT_MOUNT: &str = "/var/output-files";
/// Where fdbserver writes its trace logs.
pub(crate) const TRACE_LOGS_MOUNT: &str = "/var/log/fdb-trace-logs";

/// File names in the sidecar's input directory.
pub(crate) const MONITOR_CONF_FILE: &str = "fdbmonitor.conf";

/// The ConfigMap key a pod spec mounts as its monitor conf.
pub(crate) fn mounted_monitor_conf_key(spec: &k8s_openapi::api::core::v1::PodSpec) -> Option<&str> {
    spec.volumes
        .as_ref()?
        .iter()
        .find(|v| v.name == super::CONFIG_MAP_VOLUME)?
        .config_map
        .as_ref()?
        .items
        .as_ref()?
        .iter()
        .find(|item| item.path == MONITOR_CONF_FILE)
        .map(|item| item.key.as_str())
}
/// The cluster file name in the sidecar's input and output directories.
pub(crate) const CLUSTER_FILE: &str = "fdb.cluster";
/// The trusted CA file name in the sidecar's input and output directories.
pub(crate) const CA_FILE: &str = "ca.pem";

/// An `emptyDir` volume named `name`.
pub(crate) fn empty_dir(name: &str) -> Volume {
    Volume {
        name: name.to_owned(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Volume::default()
    }
}

/// A ConfigMap item: `key` projected as `path`.
pub(crate) fn item(key: impl Into<String>, path: &str) -> KeyToPath {
    KeyToPath {
        key: key.into(),
        path: path.to_owned(),
        mode: None,
    }
}

/// The data volume of a group: its PVC for a stateful class, else an `emptyDir`.
pub(crate) fn data_volume(cluster: &FoundationDBCluster, group: &ProcessGroupStatus) -> Volume {
    if group.process_class.is_stateful() {
        Volume {
            name: DATA_VOLUME.to_owned(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: names::pvc_name(cluster, group),
                read_only: None,
            }),
            ..Volume::default()
        }
    } else {
        empty_dir(DATA_VOLUME)
    }
}

/// The operator's volumes for a group, in a fixed order.
pub(crate) fn pod_volumes(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
) -> Vec<Volume> {
    let class = group.process_class;
    let data = data_volume(cluster, group);
    let mut items = vec![
        item(
            monitor_conf_key(class, servers_per_pod(cluster, class)),
            MONITOR_CONF_FILE,
        ),
        item(CLUSTER_FILE_KEY, CLUSTER_FILE),
    ];
    if !cluster.spec.trusted_cas.is_empty() {
        items.push(item(CA_FILE_KEY, CA_FILE));
    }
    let config_map = Volume {
        name: CONFIG_MAP_VOLUME.to_owned(),
        config_map: Some(ConfigMapVolumeSource {
            name: config_map_name(cluster),
            items: Some(items),
            ..ConfigMapVolumeSource::default()
        }),
        ..Volume::default()
    };
    vec![
        data,
        empty_dir(DYNAMIC_CONF_VOLUME),
        config_map,
        empty_dir(TRACE_LOGS_VOLUME),
    ]
}

/// Adds the operator's volumes to the user's: a user volume named `data` is kept (the
/// user chose the storage; no PVC is made), every other volume of ours replaces a user
/// volume of the same name; the user's other volumes follow ours.
pub(crate) fn merge_volumes(ours: Vec<Volume>, user: Option<&Vec<Volume>>) -> Vec<Volume> {
    let user = user.map(Vec::as_slice).unwrap_or_default();
    let mut merged: Vec<Volume> = ours
        .into_iter()
        .map(|volume| {
            match user
                .iter()
                .find(|u| u.name == DATA_VOLUME && volume.name == DATA_VOLUME)
            {
                Some(user_data) => user_data.clone(),
                None => volume,
            }
        })
        .collect();
    for volume in user {
        if !merged.iter().any(|ours| ours.name == volume.name) {
            merged.push(volume.clone());
        }
    }
    merged
}

fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.to_owned(),
        mount_path: path.to_owned(),
        ..VolumeMount::default()
    }
}

/// Mounts of the main container.
pub(crate) fn main_mounts() -> Vec<VolumeMount> {
    vec![
        mount(DATA_VOLUME, DATA_MOUNT),
        mount(DYNAMIC_CONF_VOLUME, DYNAMIC_CONF_MOUNT),
        mount(TRACE_LOGS_VOLUME, TRACE_LOGS_MOUNT),
    ]
}

/// Mounts of the sidecar and init containers.
pub(crate) fn sidecar_mounts() -> Vec<VolumeMount> {
    vec![
        mount(CONFIG_MAP_VOLUME, SIDECAR_INPUT_MOUNT),
        mount(DYNAMIC_CONF_VOLUME, SIDECAR_OUTPUT_MOUNT),
    ]
}

/// Our mounts first, then the user's mounts at other paths (a user mount at one of our
/// paths is replaced by ours).
pub(crate) fn merge_mounts(
    ours: Vec<VolumeMount>,
    user: Option<&Vec<VolumeMount>>,
) -> Vec<VolumeMount> {
    let user = user.map(Vec::as_slice).unwrap_or_default();
    let mut merged = ours;
    for user_mount in user {
        if !merged.iter().any(|m| m.mount_path == user_mount.mount_path) {
            merged.push(user_mount.clone());
        }
    }
    merged
}
