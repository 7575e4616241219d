//! The values a pod's sidecar substitutes into the monitor conf, derived from the live pod
//! without asking the sidecar: the sidecar container's environment (plain values and
//! `fieldRef`s resolved against the pod) and its arguments, with the sidecar's fallback
//! rules (sidecar-api.md, "Substitutions").
//!
//! UpdateStatus uses them to tell whether a process runs the command line the current
//! conf asks for (IncorrectCommandLine) on every pass, without a request per pod.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};

use super::SIDECAR_CONTAINER;

/// The sidecar's default `--main-container-conf-dir`.
const DEFAULT_MAIN_CONTAINER_CONF_DIR: &str = "/var/dynamic-conf";

/// The substitutions the pod's sidecar uses, or `None` when they cannot be known from the
/// pod alone (no sidecar container, no IP yet, an environment source other than a value or
/// a supported `fieldRef`, or `--public-ip-family`).
pub fn expected_substitutions(pod: &Pod) -> Option<BTreeMap<String, String>> {
    let spec = pod.spec.as_ref()?;
    let sidecar = spec
        .containers
        .iter()
        .find(|container| container.name == SIDECAR_CONTAINER)?;
    let args = sidecar.args.clone().unwrap_or_default();
    if flag_values(&args, "--public-ip-family").next().is_some() {
        return None;
    }
    let env = container_env(pod, sidecar)?;
    let get = |name: &str| env.get(name).cloned().unwrap_or_default();

    let pod_ip = get("FDB_POD_IP");
    let public_ip = Some(get("FDB_PUBLIC_IP"))
        .filter(|ip| !ip.is_empty())
        .unwrap_or_else(|| pod_ip.clone());
    if public_ip.is_empty() {
        return None;
    }
    let machine = Some(get("FDB_MACHINE_ID"))
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| get("HOSTNAME"));
    let zone = Some(get("FDB_ZONE_ID"))
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| machine.clone());

    let primary = sidecar_image_version(sidecar)?;
    let main_version = flag_values(&args, "--main-container-version").last();
    let conf_dir = flag_values(&args, "--main-container-conf-dir")
        .last()
        .unwrap_or(DEFAULT_MAIN_CONTAINER_CONF_DIR);
    let binary_dir = match main_version {
        Some(main) if main.trim() == primary => "/usr/bin".to_owned(),
        _ => format!("{conf_dir}/bin/{primary}"),
    };

    let mut substitutions = BTreeMap::from([
        ("FDB_PUBLIC_IP".to_owned(), public_ip),
        ("FDB_POD_IP".to_owned(), pod_ip),
        ("FDB_MACHINE_ID".to_owned(), machine),
        ("FDB_ZONE_ID".to_owned(), zone),
        ("FDB_INSTANCE_ID".to_owned(), get("FDB_INSTANCE_ID")),
        ("BINARY_DIR".to_owned(), binary_dir),
    ]);
    for name in flag_values(&args, "--substitute-variable") {
        if !substitutions.contains_key(name) {
            substitutions.insert(name.to_owned(), env.get(name)?.clone());
        }
    }
    Some(substitutions)
}

/// Whether the pod has our sidecar container.
pub(crate) fn has_sidecar(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .is_some_and(|spec| spec.containers.iter().any(|c| c.name == SIDECAR_CONTAINER))
}

/// The image of the pod's sidecar container.
pub(crate) fn live_sidecar_image(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == SIDECAR_CONTAINER)?
        .image
        .as_deref()
}

/// The zone the pod's processes will report (`locality_zoneid`): the sidecar container's
/// `FDB_ZONE_ID` (the main container's in a unified pod), falling back like the sidecar to the machine ID and the hostname. `None`
/// while it resolves to nothing yet (e.g. `spec.nodeName` before scheduling) or cannot be
/// resolved from the pod.
pub(crate) fn expected_zone(pod: &Pod) -> Option<String> {
    let containers = &pod.spec.as_ref()?.containers;
    let declares_zone = |container: &&Container| {
        container
            .env
            .iter()
            .flatten()
            .any(|var| var.name == "FDB_ZONE_ID")
    };
    // A unified pod's zone variables are on its main container (fdb-kubernetes-monitor
    // reads them there); the split pod's on its sidecar.
    let sidecar = containers
        .iter()
        .filter(|container| container.name == SIDECAR_CONTAINER)
        .find(declares_zone)
        .or_else(|| {
            containers
                .iter()
                .filter(|container| container.name == super::MAIN_CONTAINER)
                .find(declares_zone)
        })
        .or_else(|| containers.iter().find(|c| c.name == SIDECAR_CONTAINER))?;
    let env = container_env(pod, sidecar)?;
    let declared = |name: &str| sidecar.env.iter().flatten().any(|var| var.name == name);
    for name in ["FDB_ZONE_ID", "FDB_MACHINE_ID"] {
        match env.get(name).filter(|value| !value.is_empty()) {
            Some(value) => return Some(value.clone()),
            // Declared but still empty: its source is not there yet; do not guess.
            None if declared(name) => return None,
            None => {}
        }
    }
    env.get("HOSTNAME")
        .filter(|value| !value.is_empty())
        .cloned()
}

/// The values of a repeatable flag, as `--flag value` or `--flag=value`.
fn flag_values<'a>(args: &'a [String], flag: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    args.iter().enumerate().filter_map(move |(index, arg)| {
        if arg == flag {
            args.get(index + 1).map(String::as_str)
        } else {
            arg.strip_prefix(flag)?.strip_prefix('=')
        }
    })
}

/// The FoundationDB version of the sidecar image: the tag before its `-N` suffix
/// (`foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1` gives `7.1.57`).
fn sidecar_image_version(sidecar: &Container) -> Option<String> {
    let image = sidecar.image.as_deref()?;
    let (_, tag) = image.rsplit_once(':')?;
    let version = tag.split_once('-').map_or(tag, |(version, _)| version);
    version
        .parse::<fdb_shared::FdbVersion>()
        .ok()
        .map(|parsed| parsed.to_string())
}

/// The container's environment as the kubelet resolves it; `None` when a variable comes
/// from a source that cannot be resolved from the pod object.
fn container_env(pod: &Pod, container: &Container) -> Option<BTreeMap<String, String>> {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref()?;
    let status = pod.status.as_ref();
    let pod_ip = status.and_then(|s| s.pod_ip.clone()).unwrap_or_default();
    // The downward API gives `status.podIPs` as a comma-separated list.
    let pod_ips = status
        .and_then(|s| s.pod_ips.as_ref())
        .map(|ips| {
            ips.iter()
                .map(|ip| ip.ip.as_str())
                .collect::<Vec<_>>()
                .join(",")
        })
        .filter(|list| !list.is_empty())
        .unwrap_or_else(|| pod_ip.clone());
    let hostname = spec.hostname.clone().or_else(|| meta.name.clone());
    let mut env = BTreeMap::from([("HOSTNAME".to_owned(), hostname.unwrap_or_default())]);
    for var in container.env.iter().flatten() {
        let value = match (&var.value, &var.value_from) {
            (Some(value), _) => value.clone(),
            (None, None) => String::new(),
            (None, Some(source)) => {
                let path = source.field_ref.as_ref()?.field_path.as_str();
                let keyed = |prefix: &str, map: &Option<BTreeMap<String, String>>| {
                    let key = path.strip_prefix(prefix)?.strip_suffix("']")?;
                    Some(map.as_ref()?.get(key).cloned().unwrap_or_default())
                };
                match path {
                    "status.podIP" => pod_ip.clone(),
                    "status.podIPs" => pod_ips.clone(),
                    "metadata.name" => meta.name.clone().unwrap_or_default(),
                    "metadata.namespace" => meta.namespace.clone().unwrap_or_default(),
                    "metadata.uid" => meta.uid.clone().unwrap_or_default(),
                    "spec.nodeName" => spec.node_name.clone().unwrap_or_default(),
                    _ if path.starts_with("metadata.labels['") => {
                        keyed("metadata.labels['", &meta.labels)?
                    }
                    _ if path.starts_with("metadata.annotations['") => {
                        keyed("metadata.annotations['", &meta.annotations)?
                    }
                    _ => return None,
                }
            }
        };
        env.insert(var.name.clone(), value);
    }
    Some(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(sidecar_image: &str, args: &[&str]) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "sample-storage-1", "namespace": "default",
                         "annotations": {"zone": "z1"}},
            "spec": {
                "nodeName": "node-3",
                "hostname": "sample-storage-1",
                "containers": [{
                    "name": SIDECAR_CONTAINER,
                    "image": sidecar_image,
                    "args": args,
                    "env": [
                        {"name": "FDB_PUBLIC_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                        {"name": "FDB_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                        {"name": "FDB_MACHINE_ID", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                        {"name": "FDB_ZONE_ID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['zone']"}}},
                        {"name": "FDB_INSTANCE_ID", "value": "storage-1"},
                        {"name": "FDB_DNS_NAME", "value": "sample-storage-1.sample.default.svc.cluster.local"}
                    ]
                }]
            },
            "status": {"podIP": "10.1.2.3"}
        }))
        .unwrap()
    }

    #[test]
    fn resolves_the_environment_and_the_binary_dir() {
        let subs = expected_substitutions(&pod(
            "foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1",
            &[
                "--main-container-version",
                "7.1.57",
                "--substitute-variable",
                "FDB_DNS_NAME",
            ],
        ))
        .unwrap();
        assert_eq!(subs["FDB_PUBLIC_IP"], "10.1.2.3");
        assert_eq!(subs["FDB_MACHINE_ID"], "node-3");
        assert_eq!(subs["FDB_ZONE_ID"], "z1");
        assert_eq!(subs["FDB_INSTANCE_ID"], "storage-1");
        assert_eq!(subs["BINARY_DIR"], "/usr/bin");
        assert_eq!(
            subs["FDB_DNS_NAME"],
            "sample-storage-1.sample.default.svc.cluster.local"
        );
    }

    #[test]
    fn a_newer_sidecar_points_at_its_staged_binaries() {
        let subs = expected_substitutions(&pod(
            "foundationdb/foundationdb-kubernetes-sidecar:7.3.43-1",
            &["--main-container-version=7.1.57"],
        ))
        .unwrap();
        assert_eq!(subs["BINARY_DIR"], "/var/dynamic-conf/bin/7.3.43");
        // Without the flag the versions count as different, as in the Python sidecar.
        let subs = expected_substitutions(&pod(
            "foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1",
            &[],
        ))
        .unwrap();
        assert_eq!(subs["BINARY_DIR"], "/var/dynamic-conf/bin/7.1.57");
    }

    #[test]
    fn the_zone_is_what_fdb_zone_id_resolves_to() {
        let pod = pod("foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1", &[]);
        assert_eq!(expected_zone(&pod).as_deref(), Some("z1"));
        let mut unscheduled: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": SIDECAR_CONTAINER, "env": [
                {"name": "FDB_ZONE_ID", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
            ]}]}
        }))
        .unwrap();
        assert_eq!(expected_zone(&unscheduled), None, "not scheduled yet");
        if let Some(spec) = unscheduled.spec.as_mut() {
            spec.node_name = Some("node-7".into());
        }
        assert_eq!(expected_zone(&unscheduled).as_deref(), Some("node-7"));
    }

    #[test]
    fn unknown_when_the_pod_alone_cannot_tell() {
        let mut no_ip = pod("foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1", &[]);
        no_ip.status = None;
        assert_eq!(expected_substitutions(&no_ip), None);
        let family = pod(
            "foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1",
            &["--public-ip-family", "6"],
        );
        assert_eq!(expected_substitutions(&family), None);
        let missing = pod(
            "foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1",
            &["--substitute-variable", "NOT_THERE"],
        );
        assert_eq!(expected_substitutions(&missing), None);
    }
}
