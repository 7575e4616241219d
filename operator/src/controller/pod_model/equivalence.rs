//! Whether a live pod runs its processes as the desired pod would, whatever the spec hash
//! on it says: the judgement that lets this operator take over pods another operator
//! (or an older version of this one) made without recreating them.
//!
//! What matters to the processes: each container's image, command, arguments,
//! environment, volume mounts and resources; the pod's volumes (what each is made
//! from); its scheduling (node selector, affinity, tolerations asked for). What the API
//! server adds on admission (default modes, pull policies, termination paths, default
//! tolerations) is not compared: the desired pod does not ask for it. Nor is what the
//! desired pod leaves to the user's defaults (no resources, no security context asked).
//!
//! Forms that run the same processes are the same ([`super::invocation`]): fdbmonitor
//! started directly or through `sh -c "fdbmonitor ... >> log 2>&1"` (the Go operator's
//! form), the sidecar's flags in any order, a variable set to the empty string or not
//! set, and, in the main container of a split-image pod, the conf variables only the
//! sidecar needs (it renders the conf fdbmonitor reads) when the sidecar carries them.

use k8s_openapi::api::core::v1::{
    Container, EnvVar, PersistentVolumeClaimSpec, PodSpec, Probe, Volume,
};
use serde_json::{Value, json};

use super::containers::{INIT_CONTAINER, MAIN_CONTAINER, SIDECAR_CONTAINER};
use super::invocation::{fdbmonitor_invocation, flag_set};

/// The first field in which `live` runs its processes differently from `desired`
/// (`containers[foundationdb].env`, `volumes[config-map]`), or `None` when it runs them
/// as desired.
pub fn process_difference(desired: &PodSpec, live: &PodSpec) -> Option<String> {
    containers_difference(desired, live)
        .or_else(|| volumes_difference(desired, live))
        .or_else(|| scheduling_difference(desired, live))
}

/// The first container (init or main list) that runs differently.
fn containers_difference(desired: &PodSpec, live: &PodSpec) -> Option<String> {
    let lists = [
        (
            "initContainers",
            desired.init_containers.as_deref(),
            live.init_containers.as_deref(),
        ),
        (
            "containers",
            Some(desired.containers.as_slice()),
            Some(live.containers.as_slice()),
        ),
    ];
    for (list, desired_list, live_list) in lists {
        let desired_list = desired_list.unwrap_or_default();
        let live_list = live_list.unwrap_or_default();
        if desired_list.len() != live_list.len() {
            return Some(format!("{list} (count)"));
        }
        // The variables the live sidecar carries (it renders the conf fdbmonitor reads).
        let sidecar_env: Vec<Value> = live
            .containers
            .iter()
            .filter(|c| c.name == SIDECAR_CONTAINER)
            .flat_map(env)
            .collect();
        for wanted in desired_list {
            let Some(running) = live_list.iter().find(|c| c.name == wanted.name) else {
                return Some(format!("{list}[{}]", wanted.name));
            };
            if let Some(field) = container_difference(wanted, running, &sidecar_env) {
                return Some(format!("{list}[{}].{field}", wanted.name));
            }
        }
    }
    None
}

/// The first volume whose source differs (or a different number of volumes).
fn volumes_difference(desired: &PodSpec, live: &PodSpec) -> Option<String> {
    let desired_volumes = desired.volumes.as_deref().unwrap_or_default();
    let live_volumes = live.volumes.as_deref().unwrap_or_default();
    if desired_volumes.len() != live_volumes.len() {
        return Some("volumes (count)".to_owned());
    }
    for wanted in desired_volumes {
        let same = live_volumes
            .iter()
            .find(|v| v.name == wanted.name)
            .is_some_and(|v| volume_source(v) == volume_source(wanted));
        if !same {
            return Some(format!("volumes[{}]", wanted.name));
        }
    }
    None
}

/// Node selection, affinity, what the desired pod asks of the pod's security and
/// scheduling, and its tolerations.
fn scheduling_difference(desired: &PodSpec, live: &PodSpec) -> Option<String> {
    if desired.node_selector.clone().unwrap_or_default()
        != live.node_selector.clone().unwrap_or_default()
    {
        return Some("nodeSelector".to_owned());
    }
    if desired.affinity != live.affinity {
        return Some("affinity".to_owned());
    }
    // Whatever else the desired pod asks for must be as asked (what it leaves to the
    // server's defaults is not judged).
    let asked = [
        (
            "securityContext",
            json!(desired.security_context),
            json!(live.security_context),
        ),
        (
            "hostNetwork",
            json!(desired.host_network),
            json!(live.host_network),
        ),
        (
            "serviceAccountName",
            json!(desired.service_account_name),
            json!(live.service_account_name),
        ),
        (
            "priorityClassName",
            json!(desired.priority_class_name),
            json!(live.priority_class_name),
        ),
        (
            "topologySpreadConstraints",
            json!(desired.topology_spread_constraints),
            json!(live.topology_spread_constraints),
        ),
        (
            "terminationGracePeriodSeconds",
            json!(desired.termination_grace_period_seconds),
            json!(live.termination_grace_period_seconds),
        ),
    ];
    for (field, wanted, running) in asked {
        if !wanted.is_null() && wanted != running {
            return Some(field.to_owned());
        }
    }
    let live_tolerations = live.tolerations.as_deref().unwrap_or_default();
    if desired
        .tolerations
        .iter()
        .flatten()
        .any(|t| !live_tolerations.contains(t))
    {
        return Some("tolerations".to_owned());
    }
    None
}

fn container_difference(
    desired: &Container,
    live: &Container,
    sidecar_env: &[Value],
) -> Option<&'static str> {
    if desired.image != live.image {
        return Some("image");
    }
    command_difference(desired, live)
        .or_else(|| env_difference(desired, live, sidecar_env))
        .or_else(|| container_settings_difference(desired, live))
}

/// The command and arguments (fdbmonitor's invocation compared as such, the sidecar's
/// flags as a set).
fn command_difference(desired: &Container, live: &Container) -> Option<&'static str> {
    let command = |c: &Container| c.command.clone().unwrap_or_default();
    let args = |c: &Container| c.args.clone().unwrap_or_default();
    let monitors = (
        fdbmonitor_invocation(&command(desired), &args(desired)),
        fdbmonitor_invocation(&command(live), &args(live)),
    );
    match monitors {
        (Some(wanted), Some(running)) => {
            if wanted != running {
                return Some("command");
            }
        }
        _ => {
            if command(desired) != command(live) {
                return Some("command");
            }
            let sidecar = [SIDECAR_CONTAINER, INIT_CONTAINER].contains(&desired.name.as_str());
            let same_args = if sidecar {
                flag_set(&args(desired)) == flag_set(&args(live))
            } else {
                args(desired) == args(live)
            };
            if !same_args {
                return Some("args");
            }
        }
    }
    None
}

/// The environment; the main container's may leave out what the sidecar substitutes.
fn env_difference(
    desired: &Container,
    live: &Container,
    sidecar_env: &[Value],
) -> Option<&'static str> {
    let mut wanted_env = env(desired);
    let running_env = env(live);
    if desired.name == MAIN_CONTAINER {
        // fdbmonitor does not read the conf variables; the sidecar substitutes them.
        wanted_env.retain(|entry| {
            running_env.iter().any(|r| r[0] == entry[0]) || !sidecar_env.contains(entry)
        });
    }
    if wanted_env != running_env {
        return Some("env");
    }
    None
}

/// Mounts, what the container asks of security, probes and ports, and its resources.
fn container_settings_difference(desired: &Container, live: &Container) -> Option<&'static str> {
    let mounts = |c: &Container| -> Vec<Value> {
        let mut mounts: Vec<Value> = c
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| {
                json!([
                    m.name,
                    m.mount_path,
                    m.sub_path.clone().unwrap_or_default(),
                    m.read_only.unwrap_or(false)
                ])
            })
            .collect();
        mounts.sort_by_key(Value::to_string);
        mounts
    };
    if mounts(desired) != mounts(live) {
        return Some("volumeMounts");
    }
    let asked = [
        (
            "securityContext",
            json!(desired.security_context),
            json!(live.security_context),
        ),
        (
            "readinessProbe",
            probe(desired.readiness_probe.as_ref()),
            probe(live.readiness_probe.as_ref()),
        ),
        (
            "livenessProbe",
            probe(desired.liveness_probe.as_ref()),
            probe(live.liveness_probe.as_ref()),
        ),
        (
            "startupProbe",
            probe(desired.startup_probe.as_ref()),
            probe(live.startup_probe.as_ref()),
        ),
        ("ports", json!(desired.ports), json!(live.ports)),
    ];
    for (field, wanted, running) in asked {
        if !wanted.is_null() && wanted != running {
            return Some(field);
        }
    }
    let resources = |c: &Container| {
        let r = c.resources.clone().unwrap_or_default();
        (r.requests.unwrap_or_default(), r.limits.unwrap_or_default())
    };
    let asked = resources(desired);
    let asked_any = !asked.0.is_empty() || !asked.1.is_empty();
    if asked_any && asked != resources(live) {
        return Some("resources");
    }
    None
}

/// A probe with the API server's defaults filled in (timeout 1 s, period 10 s, success
/// threshold 1, failure threshold 3), so a probe as asked and as admitted compare equal.
fn probe(probe: Option<&Probe>) -> Value {
    let Some(probe) = probe else {
        return Value::Null;
    };
    let mut probe = probe.clone();
    probe.timeout_seconds.get_or_insert(1);
    probe.period_seconds.get_or_insert(10);
    probe.success_threshold.get_or_insert(1);
    probe.failure_threshold.get_or_insert(3);
    json!(probe)
}

/// The first field of a PVC's spec the desired claim asks for that the live claim does
/// not have as asked (`spec.resources`, `spec.storageClassName`), or `None`: a claim
/// made by another operator (another spec hash) is kept when it has what ours would ask
/// for. What the desired claim leaves unset (a default storage class, the volume mode,
/// the bound volume) is the server's and not judged.
pub fn pvc_difference(
    desired: &PersistentVolumeClaimSpec,
    live: &PersistentVolumeClaimSpec,
) -> Option<String> {
    let desired = json!(desired);
    let live = json!(live);
    let Value::Object(asked) = desired else {
        return None;
    };
    asked
        .iter()
        .filter(|(_, value)| !value.is_null())
        .find(|(field, value)| live.get(field.as_str()) != Some(value))
        .map(|(field, _)| format!("spec.{field}"))
}

/// A container's environment as the processes see it: names with their values or the
/// field, ConfigMap or Secret key they come from (the API version the server adds to a
/// field reference aside); a variable set to the empty string is as one not set.
fn env(container: &Container) -> Vec<Value> {
    let entry = |e: &EnvVar| {
        let from = e.value_from.as_ref().map(|from| {
            json!({
                "field": from.field_ref.as_ref().map(|f| f.field_path.clone()),
                "configMap": from.config_map_key_ref.as_ref().map(|k| (k.name.clone(), k.key.clone())),
                "secret": from.secret_key_ref.as_ref().map(|k| (k.name.clone(), k.key.clone())),
                "resource": from.resource_field_ref.as_ref().map(|r| r.resource.clone()),
            })
        });
        json!([e.name, e.value.clone().unwrap_or_default(), from])
    };
    let set =
        |e: &&EnvVar| e.value_from.is_some() || e.value.as_deref().is_some_and(|v| !v.is_empty());
    let mut list: Vec<Value> = container
        .env
        .iter()
        .flatten()
        .filter(set)
        .map(entry)
        .collect();
    list.sort_by_key(Value::to_string);
    list
}

/// What a volume is made from (the name of its ConfigMap, Secret or claim, and the keys
/// it projects), without the modes the server defaults.
fn volume_source(volume: &Volume) -> Value {
    let items = |items: Option<&Vec<k8s_openapi::api::core::v1::KeyToPath>>| {
        items
            .into_iter()
            .flatten()
            .map(|i| (i.key.clone(), i.path.clone()))
            .collect::<Vec<_>>()
    };
    json!({
        "configMap": volume.config_map.as_ref().map(|c| (c.name.clone(), items(c.items.as_ref()))),
        "secret": volume.secret.as_ref().map(|s| (s.secret_name.clone(), items(s.items.as_ref()))),
        "claim": volume.persistent_volume_claim.as_ref().map(|c| c.claim_name.clone()),
        "emptyDir": volume.empty_dir.is_some(),
        "projected": volume.projected.as_ref().map(|p| {
            p.sources.iter().flatten().map(|s| json!({
                "configMap": s.config_map.as_ref().map(|c| (c.name.clone(), items(c.items.as_ref()))),
                "secret": s.secret.as_ref().map(|c| (c.name.clone(), items(c.items.as_ref()))),
            })).collect::<Vec<_>>()
        }),
        "hostPath": volume.host_path.as_ref().map(|h| h.path.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMapVolumeSource, Toleration};

    fn spec() -> PodSpec {
        serde_json::from_value(json!({
            "containers": [
                {"name": "foundationdb", "image": "foundationdb/foundationdb:7.1.57",
                 "command": ["sh", "-c"], "args": ["fdbmonitor"],
                 "env": [{"name": "FDB_CLUSTER_FILE", "value": "/var/fdb/data/fdb.cluster"}],
                 "volumeMounts": [{"name": "data", "mountPath": "/var/fdb/data"}]},
                {"name": "foundationdb-kubernetes-sidecar",
                 "image": "foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1",
                 "env": [{"name": "FDB_PUBLIC_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]},
            ],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "sample-storage-1-data"}},
                {"name": "config-map", "configMap": {"name": "sample-config"}},
            ],
        }))
        .unwrap()
    }

    #[test]
    fn what_the_api_server_adds_is_not_a_difference() {
        let desired = spec();
        let mut live = spec();
        for container in &mut live.containers {
            container.image_pull_policy = Some("IfNotPresent".into());
            container.termination_message_path = Some("/dev/termination-log".into());
            for env in container.env.iter_mut().flatten() {
                if let Some(field) = env.value_from.as_mut().and_then(|f| f.field_ref.as_mut()) {
                    field.api_version = Some("v1".into());
                }
            }
        }
        for volume in live.volumes.iter_mut().flatten() {
            if let Some(config_map) = volume.config_map.as_mut() {
                *config_map = ConfigMapVolumeSource {
                    default_mode: Some(420),
                    ..config_map.clone()
                };
            }
        }
        live.tolerations = Some(vec![Toleration {
            key: Some("node.kubernetes.io/not-ready".into()),
            effect: Some("NoExecute".into()),
            operator: Some("Exists".into()),
            toleration_seconds: Some(300),
            value: None,
        }]);
        live.restart_policy = Some("Always".into());
        assert_eq!(process_difference(&desired, &live), None);
    }

    #[test]
    fn each_difference_that_matters_is_named() {
        let desired = spec();
        let mut live = spec();
        live.containers[1].image =
            Some("foundationdb/foundationdb-kubernetes-sidecar:7.1.57-0".into());
        assert_eq!(
            process_difference(&desired, &live).as_deref(),
            Some("containers[foundationdb-kubernetes-sidecar].image")
        );
        let mut live = spec();
        live.containers[0].env = Some(vec![EnvVar {
            name: "FDB_CLUSTER_FILE".into(),
            value: Some("/other".into()),
            value_from: None,
        }]);
        assert_eq!(
            process_difference(&desired, &live).as_deref(),
            Some("containers[foundationdb].env")
        );
        let mut live = spec();
        live.volumes.as_mut().unwrap()[1]
            .config_map
            .as_mut()
            .unwrap()
            .name = "other".into();
        assert_eq!(
            process_difference(&desired, &live).as_deref(),
            Some("volumes[config-map]")
        );
        let mut live = spec();
        live.node_selector = Some([("a".to_owned(), "b".to_owned())].into());
        assert_eq!(
            process_difference(&desired, &live).as_deref(),
            Some("nodeSelector")
        );
    }
}
