//! Environment of the FoundationDB containers (docs/controller-model.md, "The pod"): the
//! addresses and localities the sidecar substitutes into the monitor conf.

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::api::cluster::PublicIpSource;
use fdb_shared::api::cluster::settings::{
    KUBERNETES_CLUSTER_FAULT_DOMAIN_KEY, NO_FAULT_DOMAIN_KEY,
};
use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector};

use super::{PUBLIC_IP_ANNOTATION, PodModelError, PodOptions, names};

/// The variable carrying the process group ID (also usable as `faultDomain.valueFrom:
/// $FDB_INSTANCE_ID`).
const INSTANCE_ID_VARIABLE: &str = "FDB_INSTANCE_ID";

/// Where the main container finds the cluster file the sidecar copies.
pub(super) const MAIN_CLUSTER_FILE: &str = "/var/dynamic-conf/fdb.cluster";
/// Where the main container finds the trusted CAs the sidecar copies.
pub(super) const MAIN_CA_FILE: &str = "/var/dynamic-conf/ca.pem";
/// Where the sidecar finds the trusted CAs in its ConfigMap mount.
pub(super) const SIDECAR_CA_FILE: &str = "/var/input-files/ca.pem";

/// A variable with a literal value.
pub(super) fn value(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.into()),
        value_from: None,
    }
}

/// A variable taken from a field of the pod (the downward API).
pub(super) fn field(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: path.to_owned(),
            }),
            ..EnvVarSource::default()
        }),
    }
}

/// The environment shared by the main, sidecar and init containers: `FDB_PUBLIC_IP`,
/// `FDB_POD_IP`, `FDB_MACHINE_ID`, `FDB_ZONE_ID`, `FDB_INSTANCE_ID` and, with DNS
/// locality fields, `FDB_DNS_NAME`.
pub(crate) fn shared_env(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
    options: &PodOptions,
) -> Result<Vec<EnvVar>, PodModelError> {
    let spec = &cluster.spec;
    // With an IP family the sidecar picks the address of that family from the list.
    let pod_ip_path = if spec.routing.chosen_pod_ip_family().is_some() {
        "status.podIPs"
    } else {
        "status.podIP"
    };
    let public_ip = match spec.routing.public_ip_source() {
        PublicIpSource::Service => field(
            "FDB_PUBLIC_IP",
            &format!("metadata.annotations['{PUBLIC_IP_ANNOTATION}']"),
        ),
        _ => field("FDB_PUBLIC_IP", pod_ip_path),
    };
    let fault_domain = &spec.fault_domain;
    let value_from = fault_domain.value_from();
    // `$VARIABLE`: the zone is an environment variable of the pod (the Go operator's
    // convention). Only the one the operator itself defines is known to resolve:
    // `$FDB_INSTANCE_ID`, every process group its own zone.
    let instance_zone = match value_from.strip_prefix('$') {
        None => None,
        Some(INSTANCE_ID_VARIABLE) => Some(value("FDB_ZONE_ID", group.process_group_id.clone())),
        Some(_) => {
            return Err(PodModelError::UnsupportedFaultDomainValueFrom {
                value_from: value_from.to_owned(),
            });
        }
    };
    let (machine_id, zone_id) = match (instance_zone, fault_domain.key()) {
        (Some(zone), _) => (field("FDB_MACHINE_ID", "spec.nodeName"), zone),
        (None, KUBERNETES_CLUSTER_FAULT_DOMAIN_KEY) => {
            let zone = fault_domain
                .value
                .clone()
                .filter(|zone| !zone.is_empty())
                .ok_or(PodModelError::MissingFaultDomainValue)?;
            (
                field("FDB_MACHINE_ID", "spec.nodeName"),
                value("FDB_ZONE_ID", zone),
            )
        }
        (None, NO_FAULT_DOMAIN_KEY) => (
            field("FDB_MACHINE_ID", value_from),
            field("FDB_ZONE_ID", value_from),
        ),
        (None, _) => {
            // Bin packing: the logical fault domain is the zone.
            let zone = match &options.distribution_key {
                Some(key) => value("FDB_ZONE_ID", key.clone()),
                None => field("FDB_ZONE_ID", value_from),
            };
            (field("FDB_MACHINE_ID", value_from), zone)
        }
    };
    let mut env = vec![
        public_ip,
        field("FDB_POD_IP", pod_ip_path),
        machine_id,
        zone_id,
        value(INSTANCE_ID_VARIABLE, group.process_group_id.clone()),
    ];
    if spec.routing.define_dns_locality_fields() {
        env.push(value("FDB_DNS_NAME", names::pod_dns_name(cluster, group)?));
    }
    Ok(env)
}

/// Environment of the main container: the shared variables, `FDB_CLUSTER_FILE`, and
/// `FDB_TLS_CA_FILE` pointing at the copied trusted CAs when the cluster has some.
pub(crate) fn main_env(cluster: &FoundationDBCluster, shared: &[EnvVar]) -> Vec<EnvVar> {
    let mut env = shared.to_vec();
    env.push(value("FDB_CLUSTER_FILE", MAIN_CLUSTER_FILE));
    if !cluster.spec.trusted_cas.is_empty() {
        env.push(value("FDB_TLS_CA_FILE", MAIN_CA_FILE));
    }
    env
}

/// Environment of the sidecar and init containers: the shared variables and, when the
/// sidecar serves TLS, its CA file (the trusted CAs) and peer verification rules.
pub(crate) fn sidecar_env(cluster: &FoundationDBCluster, shared: &[EnvVar]) -> Vec<EnvVar> {
    let mut env = shared.to_vec();
    let sidecar = &cluster.spec.sidecar_container;
    if sidecar.tls_enabled() {
        if !cluster.spec.trusted_cas.is_empty() {
            env.push(value("FDB_TLS_CA_FILE", SIDECAR_CA_FILE));
        }
        if let Some(rules) = sidecar
            .peer_verification_rules
            .as_deref()
            .filter(|rules| !rules.is_empty())
        {
            env.push(value("FDB_TLS_VERIFY_PEERS", rules));
        }
    }
    env
}

/// Merges the operator's variables with the user's: ours first (so user variables may
/// refer to them with `$(NAME)`), replacing user variables of the same name — except the
/// defaults ours only offers (`optional`), which a user value keeps.
pub(crate) fn merge_env(
    ours: Vec<EnvVar>,
    user: Option<&Vec<EnvVar>>,
    optional: &[&str],
) -> Vec<EnvVar> {
    let user = user.map(Vec::as_slice).unwrap_or_default();
    let mut merged: Vec<EnvVar> = ours
        .into_iter()
        .filter(|var| {
            !(optional.contains(&var.name.as_str()) && user.iter().any(|u| u.name == var.name))
        })
        .collect();
    for var in user {
        if !merged.iter().any(|ours| ours.name == var.name) {
            merged.push(var.clone());
        }
    }
    merged
}

/// Variables a user value overrides (everything else the operator sets wins).
pub(crate) const USER_OVERRIDABLE_ENV: &[&str] = &["FDB_TLS_CA_FILE", "FDB_TLS_VERIFY_PEERS"];
