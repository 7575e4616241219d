//! The pod status the kubelet reports (through `/status`, as actor `kubelet`).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use serde_json::{Value, json};
use std::sync::Arc;

use super::World;
use super::containers;
use super::error::WorldError;
use super::pod_runtime::{ContainerRuntime, PodPhase, PodRuntime, SIDECAR_CONTAINER};
use super::sidecar::backoff;
use crate::kube::{KUBELET_ACTOR, PatchType, ResourceKey};

impl World {
    /// Writes the status of every pod the kubelet runs, when it changed.
    pub(super) fn write_statuses(&mut self, pods: &[Arc<Pod>]) -> Result<(), WorldError> {
        for pod in pods {
            let Some(uid) = pod.metadata.uid.clone() else {
                continue;
            };
            if self
                .pods
                .get(&uid)
                .is_none_or(|r| self.nodes.is_down(&r.node))
            {
                // A kubelet whose node is down reports nothing.
                continue;
            }
            let Some(mut runtime) = self.pods.remove(&uid) else {
                continue;
            };
            let status = self.desired_status(pod, &mut runtime);
            let result = if runtime.last_status.as_ref() != Some(&status) {
                let key = ResourceKey::new("", "v1", "pods", &runtime.namespace, &runtime.name);
                match self.api.patch_as(
                    KUBELET_ACTOR,
                    &key,
                    PatchType::Merge,
                    &json!({"status": status}),
                    true,
                ) {
                    Ok(_) => {
                        self.record(
                            "status",
                            format!("pod/{}/{}", runtime.namespace, runtime.name),
                            summary(&status),
                        );
                        runtime.last_status = Some(status);
                        Ok(())
                    }
                    Err(e) if e.code == 404 => Ok(()),
                    Err(source) => Err(WorldError::Api {
                        actor: KUBELET_ACTOR,
                        action: "patch status of",
                        target: format!("pod/{}/{}", runtime.namespace, runtime.name),
                        source,
                    }),
                }
            } else {
                Ok(())
            };
            self.pods.insert(uid, runtime);
            result?;
        }
        Ok(())
    }

    fn desired_status(&self, pod: &Pod, runtime: &mut PodRuntime) -> Value {
        let now = self.now();
        let no_spec = PodSpec::default();
        let spec = pod.spec.as_ref().unwrap_or(&no_spec);
        let started = runtime.started_at.unwrap_or(now);
        // A unified pod's sidecar-mode container serves nothing: it runs like any other.
        let unified = spec
            .containers
            .iter()
            .any(super::unified_monitor::runs_monitor);
        let statuses: Vec<(bool, Value)> = spec
            .containers
            .iter()
            .map(|container| container_status(runtime, container, unified, started))
            .collect();
        let all_ready = !statuses.is_empty() && statuses.iter().all(|(r, _)| *r);
        let initialized = !matches!(&runtime.phase, PodPhase::Waiting { reason, .. } if reason.starts_with("Init"));
        let init_statuses = init_container_statuses(spec, runtime, initialized);
        let conditions = pod_conditions(runtime, now, initialized, all_ready);
        let phase = match runtime.phase {
            PodPhase::Waiting { .. } => "Pending",
            PodPhase::Running | PodPhase::Terminating => "Running",
            PodPhase::Failed => "Failed",
        };
        let host_ip = self.node_ip(&runtime.node);
        let mut status = json!({
            "phase": phase,
            "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
            "conditions": conditions,
            "containerStatuses": statuses.into_iter().map(|(_, s)| s).collect::<Vec<_>>(),
            "initContainerStatuses": init_statuses,
        });
        if let Some(ip) = runtime.ip {
            let families = self.network.map().families();
            status["podIP"] = json!(families.primary(ip).to_string());
            let ips: Vec<_> = families
                .addresses(ip)
                .iter()
                .map(|ip| json!({"ip": ip.to_string()}))
                .collect();
            status["podIPs"] = json!(ips);
            status["startTime"] = json!(ts(started));
        }
        if phase == "Failed" && self.faults.evicted_pods.contains(&runtime.uid) {
            // The kubelet's eviction for a pod over its ephemeral-storage limit
            // (pkg/kubelet/eviction/helpers.go in kubernetes/kubernetes).
            status["reason"] = json!("Evicted");
            status["message"] = json!(
                "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. "
            );
        } else if phase == "Failed" {
            status["reason"] = json!("Error");
            status["message"] = json!("the pod failed (simulated fault)");
        }
        status
    }

    /// The address a node reports (`127.<block>.0.<index>`; pods use `y >= 1`).
    pub(super) fn node_ip(&self, node: &str) -> String {
        let index = self
            .nodes
            .names()
            .iter()
            .position(|n| n == node)
            .unwrap_or(0)
            + 1;
        format!("127.{}.0.{}", self.options.ip_block, index.min(254))
    }
}

/// One container's status: ready or not, and its `containerStatuses` entry.
fn container_status(
    runtime: &PodRuntime,
    container: &Container,
    unified: bool,
    started: Timestamp,
) -> (bool, Value) {
    let state = runtime.containers.get(&container.name);
    let image = state
        .map(|s| s.image.clone())
        .or_else(|| container.image.clone())
        .unwrap_or_default();
    let restarts = state.map_or(0, |s| s.restarts);
    let is_sidecar = container.name == SIDECAR_CONTAINER && !unified;
    let (ready, container_state) = container_state(runtime, container, state, is_sidecar, started);
    let ran = state.is_some_and(|s| s.started_at.is_some() || s.last_exit.is_some());
    let mut status = json!({
        "name": container.name, "image": image,
        "imageID": if ran { containers::image_id(&image) } else { String::new() },
        "ready": ready, "started": container_state.get("running").is_some(),
        "restartCount": restarts, "state": container_state,
    });
    if let Some(exit) = state.and_then(|s| s.last_exit.as_ref()) {
        status["lastState"] = json!({"terminated": {
            "exitCode": exit.exit_code, "reason": exit.reason, "message": exit.message,
            "finishedAt": ts(exit.at),
        }});
    }
    (ready, status)
}

/// A container's readiness and `state`, from the pod's phase, a crash-looping command,
/// and (for the split sidecar) whether the simulated sidecar serves.
fn container_state(
    runtime: &PodRuntime,
    container: &Container,
    state: Option<&ContainerRuntime>,
    is_sidecar: bool,
    started: Timestamp,
) -> (bool, Value) {
    let crash_loops = fdb_operator::controller::crash_loops(container.command.as_deref());
    match &runtime.phase {
        PodPhase::Running if crash_loops => (
            false,
            json!({"waiting": {
                "reason": "CrashLoopBackOff",
                "message": format!(
                    "back-off 5m0s restarting failed container={} pod={}_{}",
                    container.name, runtime.name, runtime.namespace
                ),
            }}),
        ),
        PodPhase::Waiting { reason, message } => {
            let reason = if reason.starts_with("Init") {
                "PodInitializing"
            } else {
                reason.as_str()
            };
            (
                false,
                json!({"waiting": {"reason": reason, "message": message}}),
            )
        }
        PodPhase::Failed => (
            false,
            json!({"terminated": {"exitCode": 137, "reason": "Error"}}),
        ),
        PodPhase::Terminating => (
            false,
            json!({"terminated": {"exitCode": 0, "reason": "Completed"}}),
        ),
        PodPhase::Running if is_sidecar => match &runtime.sidecar {
            Some(s) if s.running.is_some() => (
                true,
                json!({"running": {"startedAt": ts(state.and_then(|c| c.started_at).unwrap_or(started))}}),
            ),
            Some(s) => {
                let reason = if s.error.is_some() {
                    "CrashLoopBackOff"
                } else {
                    "ContainerNotRunning"
                };
                let message = if s.error.is_some() {
                    format!(
                        "back-off {}s restarting failed container={} pod={}_{}",
                        backoff(s.failures).as_secs(),
                        container.name,
                        runtime.name,
                        runtime.namespace
                    )
                } else {
                    String::new()
                };
                (
                    false,
                    json!({"waiting": {"reason": reason, "message": message}}),
                )
            }
            None => (false, json!({"waiting": {"reason": "ContainerCreating"}})),
        },
        PodPhase::Running => (
            true,
            json!({"running": {"startedAt": ts(state.and_then(|c| c.started_at).unwrap_or(started))}}),
        ),
    }
}

/// The init containers' statuses: completed once the pod started, else initializing.
fn init_container_statuses(spec: &PodSpec, runtime: &PodRuntime, initialized: bool) -> Vec<Value> {
    spec.init_containers
        .iter()
        .flatten()
        .map(|c| {
            let state = runtime.containers.get(&c.name);
            let image = state
                .map(|s| s.image.clone())
                .or_else(|| c.image.clone())
                .unwrap_or_default();
            let done = initialized && runtime.started_at.is_some();
            let container_state = if done {
                json!({"terminated": {"exitCode": 0, "reason": "Completed"}})
            } else {
                json!({"waiting": {"reason": "PodInitializing"}})
            };
            let ran = done || state.is_some_and(|s| s.last_exit.is_some());
            json!({"name": c.name, "image": image,
                   "imageID": if ran { containers::image_id(&image) } else { String::new() },
                   "ready": done, "restartCount": state.map_or(0, |s| s.restarts),
                   "state": container_state})
        })
        .collect()
}

/// The pod's conditions, each keeping the time it last changed.
fn pod_conditions(
    runtime: &mut PodRuntime,
    now: Timestamp,
    initialized: bool,
    all_ready: bool,
) -> Vec<Value> {
    let mut conditions = Vec::new();
    for (kind, value) in [
        ("PodScheduled", true),
        ("Initialized", initialized && runtime.started_at.is_some()),
        ("ContainersReady", all_ready),
        ("Ready", all_ready),
    ] {
        let since = match runtime.condition_since.get(kind) {
            Some((previous, at)) if *previous == value => *at,
            _ => {
                runtime
                    .condition_since
                    .insert(kind.to_owned(), (value, now));
                now
            }
        };
        conditions.push(
            json!({"type": kind, "status": if value { "True" } else { "False" },
                               "lastTransitionTime": ts(since)}),
        );
    }
    conditions
}

fn ts(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn summary(status: &Value) -> String {
    let ready = status
        .pointer("/conditions/3/status")
        .and_then(Value::as_str)
        .unwrap_or("False");
    format!(
        "phase {} ready {ready}",
        status
            .get("phase")
            .and_then(Value::as_str)
            .unwrap_or_default()
    )
}
