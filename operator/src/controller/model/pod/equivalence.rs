//! Whether a live pod runs its processes as the desired pod would, whatever the spec hash
//! on it says: the judgement that lets this operator take over pods another operator
//! (or an older version of this one) made without recreating them.
//!
//! What matters to the processes: each container's image, command, arguments,
//! environment, volume mounts and resources; the pod's volumes (what each is made
//! from); its scheduling (node selector, affinity, tolerations asked for). What the API
//! server adds on admission (default modes, pull policies, termination paths, default
//! tolerations, ports' protocol, probe defaults, requests copied from limits, quantities
//! in canonical form, and the ServiceAccount plugin's `kube-api-access-*` token volume
//! with its mount in every container) is not compared: the desired pod does not ask for
//! it. Nor is what the desired pod leaves to the user's defaults (no resources, no
//! security context asked). The rules the server applies are in
//! `simulation/src/kube/core_defaults.rs` and `service_account.rs`.
//!
//! Forms that run the same processes are the same ([`super::invocation`]): fdbmonitor
//! started directly or through `sh -c "fdbmonitor ... >> log 2>&1"` (the Go operator's
//! form), the sidecar's flags in any order, a variable set to the empty string or not
//! set, and, in the main container of a split-image pod, the conf variables only the
//! sidecar needs (it renders the conf fdbmonitor reads) when the sidecar carries them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, EnvVar, PersistentVolumeClaimSpec, PodSpec, Probe, Volume,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::{Value, json};

use crate::controller::model::quantity::parse_quantity;

use super::containers::{INIT_CONTAINER, MAIN_CONTAINER, SIDECAR_CONTAINER};
use super::invocation::{fdbmonitor_invocation, flag_set};

/// The prefix of the token volume the ServiceAccount admission plugin adds to every pod
/// (`ServiceAccountVolumeName` in kubernetes/kubernetes
/// `plugin/pkg/admission/serviceaccount/admission.go`).
const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";

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
        let admitted = admitted_token_volumes(desired, live);
        for wanted in desired_list {
            let Some(running) = live_list.iter().find(|c| c.name == wanted.name) else {
                return Some(format!("{list}[{}]", wanted.name));
            };
            let context = LiveContext {
                sidecar_env: &sidecar_env,
                admitted_volumes: &admitted,
            };
            if let Some(field) = container_difference(wanted, running, &context) {
                return Some(format!("{list}[{}].{field}", wanted.name));
            }
        }
    }
    None
}

/// The first volume whose source differs (or a different number of volumes).
fn volumes_difference(desired: &PodSpec, live: &PodSpec) -> Option<String> {
    let desired_volumes = desired.volumes.as_deref().unwrap_or_default();
    let live_volumes: Vec<&Volume> = live
        .volumes
        .iter()
        .flatten()
        .filter(|v| !admitted_token_volume(v, desired_volumes))
        .collect();
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

/// The service account plugin's volume: a projected `kube-api-access-*` volume holding a
/// service account token, which the desired pod did not ask for.
fn admitted_token_volume(volume: &Volume, desired: &[Volume]) -> bool {
    volume.name.starts_with(TOKEN_VOLUME_PREFIX)
        && !desired.iter().any(|v| v.name == volume.name)
        && volume.projected.as_ref().is_some_and(|p| {
            p.sources
                .iter()
                .flatten()
                .any(|s| s.service_account_token.is_some())
        })
}

/// The names of the live pod's admitted token volumes.
fn admitted_token_volumes(desired: &PodSpec, live: &PodSpec) -> Vec<String> {
    let desired_volumes = desired.volumes.as_deref().unwrap_or_default();
    live.volumes
        .iter()
        .flatten()
        .filter(|v| admitted_token_volume(v, desired_volumes))
        .map(|v| v.name.clone())
        .collect()
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

/// What a container is judged with besides itself.
struct LiveContext<'a> {
    /// The variables the live sidecar carries.
    sidecar_env: &'a [Value],
    /// The live pod's admitted service account token volumes.
    admitted_volumes: &'a [String],
}

fn container_difference(
    desired: &Container,
    live: &Container,
    context: &LiveContext<'_>,
) -> Option<&'static str> {
    if desired.image != live.image {
        return Some("image");
    }
    command_difference(desired, live)
        .or_else(|| env_difference(desired, live, context.sidecar_env))
        .or_else(|| container_settings_difference(desired, live, context.admitted_volumes))
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
fn container_settings_difference(
    desired: &Container,
    live: &Container,
    admitted_volumes: &[String],
) -> Option<&'static str> {
    let mounts = |c: &Container| -> Vec<Value> {
        let mut mounts: Vec<Value> = c
            .volume_mounts
            .iter()
            .flatten()
            .filter(|m| !admitted_volumes.contains(&m.name))
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
        ("ports", ports(desired), ports(live)),
    ];
    for (field, wanted, running) in asked {
        if !wanted.is_null() && wanted != running {
            return Some(field);
        }
    }
    let asked = resources(desired);
    let asked_any = !asked.0.is_empty() || !asked.1.is_empty();
    if asked_any && asked != resources(live) {
        return Some("resources");
    }
    None
}

/// Ports with the protocol the server defaults (`TCP`) filled in.
fn ports(container: &Container) -> Value {
    let Some(ports) = &container.ports else {
        return Value::Null;
    };
    let mut ports = ports.clone();
    for port in &mut ports {
        port.protocol.get_or_insert_with(|| "TCP".to_owned());
    }
    json!(ports)
}

/// A resource list as amounts in milli-units, rounded up as the server rounds them, so
/// `0.5` and `500m`, `1024Mi` and `1Gi` are one amount; text that is not a quantity is
/// kept as text.
type Amounts = BTreeMap<String, Result<i128, String>>;

fn amounts(list: Option<&BTreeMap<String, Quantity>>) -> Amounts {
    list.into_iter()
        .flatten()
        .map(|(key, quantity)| {
            let amount = parse_quantity(&quantity.0)
                .ok()
                .filter(|value| value.is_finite())
                // Milli-units, rounded up as SetDefaults_ResourceList does.
                .map(|value| (value * 1000.0).ceil() as i128)
                .ok_or_else(|| quantity.0.clone());
            (key.clone(), amount)
        })
        .collect()
}

/// Requests (those left out default to the limits, as the server defaults them) and
/// limits.
fn resources(container: &Container) -> (Amounts, Amounts) {
    let resources = container.resources.clone().unwrap_or_default();
    let limits = amounts(resources.limits.as_ref());
    let mut requests = amounts(resources.requests.as_ref());
    for (key, amount) in &limits {
        requests
            .entry(key.clone())
            .or_insert_with(|| amount.clone());
    }
    (requests, limits)
}

/// A probe with the API server's defaults filled in (timeout 1 s, period 10 s, success
/// threshold 1, failure threshold 3, an HTTP check's path `/` and scheme `HTTP`), so a probe as asked and as admitted compare equal.
fn probe(probe: Option<&Probe>) -> Value {
    let Some(probe) = probe else {
        return Value::Null;
    };
    let mut probe = probe.clone();
    probe.timeout_seconds.get_or_insert(1);
    probe.period_seconds.get_or_insert(10);
    probe.success_threshold.get_or_insert(1);
    probe.failure_threshold.get_or_insert(3);
    if let Some(get) = probe.http_get.as_mut() {
        get.path.get_or_insert_with(|| "/".to_owned());
        get.scheme.get_or_insert_with(|| "HTTP".to_owned());
    }
    json!(probe)
}

/// The first field of a PVC's spec the desired claim asks for that the live claim does
/// not have as asked (`spec.resources`, `spec.storageClassName`), or `None`: a claim
/// made by another operator (another spec hash) is kept when it has what ours would ask
/// for. What the desired claim leaves unset (a default storage class, the volume mode,
/// the bound volume) is the server's and not judged; sizes are compared as amounts (the
/// server stores `0.5Gi` as `512Mi`).
pub(crate) fn pvc_difference(
    desired: &PersistentVolumeClaimSpec,
    live: &PersistentVolumeClaimSpec,
) -> Option<String> {
    let claim_amounts = |spec: &PersistentVolumeClaimSpec| {
        spec.resources
            .as_ref()
            .map(|r| (amounts(r.requests.as_ref()), amounts(r.limits.as_ref())))
    };
    let resources_asked = claim_amounts(desired);
    if resources_asked.is_some() && resources_asked != claim_amounts(live) {
        return Some("spec.resources".to_owned());
    }
    let desired = json!(desired);
    let live = json!(live);
    let Value::Object(asked) = desired else {
        return None;
    };
    asked
        .iter()
        .filter(|(field, value)| !value.is_null() && field.as_str() != "resources")
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
