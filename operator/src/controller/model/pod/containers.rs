//! The FoundationDB containers of a pod (docs/controller-model.md, "The pod"): the main
//! `foundationdb` container running fdbmonitor, the `foundationdb-kubernetes-sidecar` and
//! its `foundationdb-kubernetes-init` twin, each merged over the user's entry of that name.

use std::collections::BTreeMap;

use fdb_shared::api::FoundationDBCluster;
use k8s_openapi::api::core::v1::{Container, EnvVar, Probe, ResourceRequirements, TCPSocketAction};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::env::{USER_OVERRIDABLE_ENV, main_env, merge_env, sidecar_env};
use super::volumes::{
    CA_FILE, CLUSTER_FILE, DYNAMIC_CONF_MOUNT, MONITOR_CONF_FILE, main_mounts, merge_mounts,
    sidecar_mounts,
};

/// Name of the main container.
pub const MAIN_CONTAINER: &str = "foundationdb";
/// Name of the sidecar container.
pub const SIDECAR_CONTAINER: &str = "foundationdb-kubernetes-sidecar";
/// Name of the init container.
pub(crate) const INIT_CONTAINER: &str = "foundationdb-kubernetes-init";
/// Port of the sidecar's HTTP API (its default bind port).
pub(crate) const SIDECAR_PORT: i32 = 8080;
/// Default CPU of the sidecar and init containers (requests and limits).
pub(crate) const SIDECAR_DEFAULT_CPU: &str = "100m";
/// Default memory of the sidecar and init containers (requests and limits).
pub(crate) const SIDECAR_DEFAULT_MEMORY: &str = "256Mi";

/// The images and the version the main container runs.
#[derive(Debug, Clone)]
pub(crate) struct ContainerImages {
    /// Image of the main container.
    pub main: String,
    /// Image of the sidecar and init containers.
    pub sidecar: String,
    /// FDB version of the main container (`--main-container-version`).
    pub main_version: String,
}

/// The main container merged over the user's entry.
pub(crate) fn main_container(
    cluster: &FoundationDBCluster,
    user: Option<&Container>,
    images: &ContainerImages,
    shared_env: &[EnvVar],
) -> Container {
    let mut container = user.cloned().unwrap_or_default();
    container.name = MAIN_CONTAINER.to_owned();
    container.image = Some(images.main.clone());
    container.command = Some(vec![
        "fdbmonitor".to_owned(),
        "--conffile".to_owned(),
        format!("{DYNAMIC_CONF_MOUNT}/{MONITOR_CONF_FILE}"),
        "--lockfile".to_owned(),
        format!("{DYNAMIC_CONF_MOUNT}/fdbmonitor.lockfile"),
    ]);
    container.args = None;
    container.env = Some(merge_env(
        main_env(cluster, shared_env),
        user.and_then(|u| u.env.as_ref()),
        USER_OVERRIDABLE_ENV,
    ));
    container.volume_mounts = Some(merge_mounts(
        main_mounts(),
        user.and_then(|u| u.volume_mounts.as_ref()),
    ));
    container
}

/// The sidecar's arguments (without `--init-mode`): copy the cluster file (and CAs), the
/// monitor conf template and the binaries for upgrades, with the variables it substitutes.
pub(crate) fn sidecar_args(
    cluster: &FoundationDBCluster,
    images: &ContainerImages,
    serve_tls: bool,
) -> Vec<String> {
    let spec = &cluster.spec;
    let mut args: Vec<String> = vec!["--copy-file".into(), CLUSTER_FILE.into()];
    if !spec.trusted_cas.is_empty() {
        args.extend(["--copy-file".into(), CA_FILE.into()]);
    }
    args.extend([
        "--input-monitor-conf".into(),
        MONITOR_CONF_FILE.into(),
        "--copy-binary".into(),
        "fdbserver".into(),
        "--copy-binary".into(),
        "fdbcli".into(),
        "--main-container-version".into(),
        images.main_version.clone(),
    ]);
    let mut variables = vec!["FDB_POD_IP".to_owned()];
    if spec.routing.define_dns_locality_fields() {
        variables.push("FDB_DNS_NAME".to_owned());
    }
    for variable in &spec.sidecar_variables {
        if !variables.contains(variable) {
            variables.push(variable.clone());
        }
    }
    for variable in variables {
        args.extend(["--substitute-variable".into(), variable]);
    }
    if let Some(family) = spec.routing.chosen_pod_ip_family() {
        args.extend(["--public-ip-family".into(), family.to_string()]);
    }
    if serve_tls {
        args.push("--tls".into());
    }
    args
}

fn default_resources() -> ResourceRequirements {
    let amounts: BTreeMap<String, Quantity> = [
        ("cpu", SIDECAR_DEFAULT_CPU),
        ("memory", SIDECAR_DEFAULT_MEMORY),
    ]
    .into_iter()
    .map(|(name, amount)| (name.to_owned(), Quantity(amount.to_owned())))
    .collect();
    ResourceRequirements {
        requests: Some(amounts.clone()),
        limits: Some(amounts),
        ..ResourceRequirements::default()
    }
}

fn has_resources(container: &Container) -> bool {
    container.resources.as_ref().is_some_and(|resources| {
        resources.requests.as_ref().is_some_and(|r| !r.is_empty())
            || resources.limits.as_ref().is_some_and(|l| !l.is_empty())
    })
}

fn tcp_probe() -> Probe {
    Probe {
        tcp_socket: Some(TCPSocketAction {
            host: None,
            port: IntOrString::Int(SIDECAR_PORT),
        }),
        timeout_seconds: Some(1),
        period_seconds: Some(30),
        failure_threshold: Some(5),
        ..Probe::default()
    }
}

/// The sidecar (or, with `init_mode`, the init container) merged over the user's entry.
pub(crate) fn sidecar_container(
    cluster: &FoundationDBCluster,
    user: Option<&Container>,
    images: &ContainerImages,
    shared_env: &[EnvVar],
    init_mode: bool,
) -> Container {
    let overrides = &cluster.spec.sidecar_container;
    let mut container = user.cloned().unwrap_or_default();
    container.name = if init_mode {
        INIT_CONTAINER
    } else {
        SIDECAR_CONTAINER
    }
    .to_owned();
    container.image = Some(images.sidecar.clone());
    // Only the long-running sidecar serves HTTP, so only it gets `--tls`.
    let mut args = sidecar_args(cluster, images, !init_mode && overrides.tls_enabled());
    if init_mode {
        args.insert(0, "--init-mode".to_owned());
    }
    container.args = Some(args);
    container.env = Some(merge_env(
        sidecar_env(cluster, shared_env),
        user.and_then(|u| u.env.as_ref()),
        USER_OVERRIDABLE_ENV,
    ));
    container.volume_mounts = Some(merge_mounts(
        sidecar_mounts(),
        user.and_then(|u| u.volume_mounts.as_ref()),
    ));
    if !has_resources(&container) {
        container.resources = Some(default_resources());
    }
    if !init_mode {
        if overrides.enable_liveness_probe.unwrap_or(true) && container.liveness_probe.is_none() {
            container.liveness_probe = Some(tcp_probe());
        }
        if overrides.enable_readiness_probe.unwrap_or(false) && container.readiness_probe.is_none()
        {
            container.readiness_probe = Some(tcp_probe());
        }
    }
    container
}
