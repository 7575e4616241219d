//! The containers and volumes of a unified-image pod (`imageType: unified`), as the Go
//! operator v2 builds them: the main `foundationdb` container runs
//! `fdb-kubernetes-monitor`, which reads the class's process configuration JSON from the
//! ConfigMap mount and starts the fdbserver processes itself; the
//! `foundationdb-kubernetes-sidecar` container runs the same image in sidecar mode and
//! only copies the binaries of its version into the shared-binaries volume (for
//! upgrades). There is no init container and no HTTP API: the monitor reports through
//! pod annotations, which needs the pod's service account to get, watch and patch pods.

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::monitor_conf::process_config::process_config_key;
use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, Container, EnvVar, SecurityContext, Volume, VolumeMount,
};

use super::env::{MAIN_CA_FILE, MAIN_CLUSTER_FILE, USER_OVERRIDABLE_ENV, field, merge_env, value};
use super::volumes::{
    CA_FILE, CA_FILE_KEY, CLUSTER_FILE, CLUSTER_FILE_KEY, CONFIG_MAP_VOLUME, DATA_MOUNT,
    DATA_VOLUME, DYNAMIC_CONF_MOUNT, TRACE_LOGS_MOUNT, TRACE_LOGS_VOLUME, config_map_name,
    data_volume, empty_dir, item, merge_mounts,
};
use super::{MAIN_CONTAINER, SIDECAR_CONTAINER, servers_per_pod};

/// The volume the sidecar-mode container copies binaries into.
pub(crate) const SHARED_BINARIES_VOLUME: &str = "shared-binaries";
/// Where both containers mount it.
pub(crate) const SHARED_BINARIES_MOUNT: &str = "/var/fdb/shared-binaries";
/// The file the monitor reads its process configuration from, in its input directory.
pub(crate) const PROCESS_CONFIG_FILE: &str = "config.json";
/// The monitor's own log file.
pub(crate) const MONITOR_LOG: &str = "/var/log/fdb-trace-logs/monitor.log";
/// The monitor argument giving the number of processes of the pod.
pub(crate) const PROCESS_COUNT_FLAG: &str = "--process-count";
/// The client trace log group of the main container's tools.
pub(crate) const TRACE_LOG_GROUP_VARIABLE: &str = "FDB_NETWORK_OPTION_TRACE_LOG_GROUP";
/// The directory the main container's tools write client traces to.
pub(crate) const TRACE_ENABLE_VARIABLE: &str = "FDB_NETWORK_OPTION_TRACE_ENABLE";

fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.to_owned(),
        mount_path: path.to_owned(),
        ..VolumeMount::default()
    }
}

/// The environment variable telling a pod's density to the monitor (the Go operator's
/// `FDB_STORAGE_SERVERS_PER_POD` / `FDB_LOG_SERVERS_PER_POD`).
fn servers_per_pod_variable(group: &ProcessGroupStatus) -> &'static str {
    if group.process_class.is_log_process() {
        "FDB_LOG_SERVERS_PER_POD"
    } else {
        "FDB_STORAGE_SERVERS_PER_POD"
    }
}

/// Read-only root filesystems unless the user's container says otherwise.
fn ensure_security_context(container: &mut Container) {
    let context = container
        .security_context
        .get_or_insert_with(SecurityContext::default);
    if context.read_only_root_filesystem.is_none() {
        context.read_only_root_filesystem = Some(true);
    }
}

/// The main container: `fdb-kubernetes-monitor --input-dir /var/dynamic-conf --log-path
/// ...` (with `--process-count N` when the pod runs several processes), merged over the
/// user's entry of that name.
pub(crate) fn main_container(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
    user: Option<&Container>,
    image: &str,
    shared_env: &[EnvVar],
) -> Container {
    let mut container = user.cloned().unwrap_or_default();
    container.name = MAIN_CONTAINER.to_owned();
    container.image = Some(image.to_owned());
    container.command = None;
    let mut args = vec![
        "--input-dir".to_owned(),
        DYNAMIC_CONF_MOUNT.to_owned(),
        "--log-path".to_owned(),
        MONITOR_LOG.to_owned(),
    ];
    let servers = servers_per_pod(cluster, group.process_class);
    let mut env = Vec::new();
    if servers > 1 {
        args.extend([PROCESS_COUNT_FLAG.to_owned(), servers.to_string()]);
        env.push(value(servers_per_pod_variable(group), servers.to_string()));
    }
    container.args = Some(args);
    env.push(value("FDB_CLUSTER_FILE", MAIN_CLUSTER_FILE));
    if !cluster.spec.trusted_cas.is_empty() {
        env.push(value("FDB_TLS_CA_FILE", MAIN_CA_FILE));
    }
    let cluster_name = cluster.metadata.name.as_deref().unwrap_or_default();
    env.extend([
        field("FDB_POD_NAME", "metadata.name"),
        field("FDB_POD_NAMESPACE", "metadata.namespace"),
        // The client trace options of the tools run in the container (fdbcli), as the
        // Go operator v2 sets them: its pods and ours then carry the same environment.
        value(
            TRACE_LOG_GROUP_VARIABLE,
            cluster.spec.log_group(cluster_name).to_owned(),
        ),
        value(TRACE_ENABLE_VARIABLE, TRACE_LOGS_MOUNT),
        field("FDB_NODE_NAME", "spec.nodeName"),
    ]);
    env.extend(shared_env.iter().cloned());
    container.env = Some(merge_env(
        env,
        user.and_then(|u| u.env.as_ref()),
        USER_OVERRIDABLE_ENV,
    ));
    container.volume_mounts = Some(merge_mounts(
        vec![
            mount(DATA_VOLUME, DATA_MOUNT),
            mount(CONFIG_MAP_VOLUME, DYNAMIC_CONF_MOUNT),
            mount(SHARED_BINARIES_VOLUME, SHARED_BINARIES_MOUNT),
            mount(TRACE_LOGS_VOLUME, TRACE_LOGS_MOUNT),
        ],
        user.and_then(|u| u.volume_mounts.as_ref()),
    ));
    ensure_security_context(&mut container);
    container
}

/// The sidecar-mode container: the monitor image of `version` copying its `fdbserver`
/// and `fdbcli` into the shared-binaries volume.
pub(crate) fn sidecar_container(user: Option<&Container>, image: &str, version: &str) -> Container {
    let mut container = user.cloned().unwrap_or_default();
    container.name = SIDECAR_CONTAINER.to_owned();
    container.image = Some(image.to_owned());
    container.command = None;
    container.args = Some(
        [
            "--mode",
            "sidecar",
            "--output-dir",
            SHARED_BINARIES_MOUNT,
            "--main-container-version",
            version,
            "--copy-binary",
            "fdbserver",
            "--copy-binary",
            "fdbcli",
            "--log-path",
            MONITOR_LOG,
        ]
        .map(str::to_owned)
        .to_vec(),
    );
    container.volume_mounts = Some(merge_mounts(
        vec![
            mount(SHARED_BINARIES_VOLUME, SHARED_BINARIES_MOUNT),
            mount(TRACE_LOGS_VOLUME, TRACE_LOGS_MOUNT),
        ],
        user.and_then(|u| u.volume_mounts.as_ref()),
    ));
    ensure_security_context(&mut container);
    container
}

/// The volumes of a unified pod, in a fixed order: data, shared binaries, the ConfigMap
/// (the class's process configuration as `config.json`, the cluster file, the CAs),
/// trace logs.
pub(crate) fn pod_volumes(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
) -> Vec<Volume> {
    let class = group.process_class;
    let data = data_volume(cluster, group);
    let mut items = vec![
        item(process_config_key(class), PROCESS_CONFIG_FILE),
        item(CLUSTER_FILE_KEY, CLUSTER_FILE),
    ];
    if !cluster.spec.trusted_cas.is_empty() {
        items.push(item(CA_FILE_KEY, CA_FILE));
    }
    vec![
        data,
        empty_dir(SHARED_BINARIES_VOLUME),
        Volume {
            name: CONFIG_MAP_VOLUME.to_owned(),
            config_map: Some(ConfigMapVolumeSource {
                name: config_map_name(cluster),
                items: Some(items),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        },
        empty_dir(TRACE_LOGS_VOLUME),
    ]
}

/// The number of processes a unified pod's monitor runs: its `--process-count`, else 1.
/// `None` when the pod has no main container running the monitor.
pub(crate) fn monitor_process_count(pod: &k8s_openapi::api::core::v1::Pod) -> Option<u32> {
    let main = pod
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == MAIN_CONTAINER)?;
    let args = main.args.as_deref().unwrap_or_default();
    if !args.iter().any(|a| a == "--input-dir") {
        return None;
    }
    Some(
        args.iter()
            .position(|a| a == PROCESS_COUNT_FLAG)
            .and_then(|i| args.get(i + 1))
            .and_then(|n| n.parse().ok())
            .filter(|n| *n > 0)
            .unwrap_or(1),
    )
}
