//! What happens to a node that goes down, as Kubernetes' node lifecycle controller and
//! taint-eviction controller do it:
//!
//! 1. At once: the node's kubelet is gone. Its pods' sidecars and processes stop; nothing
//!    on the node starts, reports status or confirms a deletion. The API does not know
//!    yet: the node is still Ready, its pods still Ready.
//! 2. After [`NODE_MONITOR_GRACE_SECONDS`]: the node is `Ready: Unknown`
//!    (`NodeStatusUnknown`, shown NotReady), tainted `node.kubernetes.io/unreachable`
//!    with `NoSchedule` and `NoExecute`, and its pods' `Ready` condition turns False.
//! 3. Taint eviction: a pod on a node with a `NoExecute` taint it does not tolerate is
//!    deleted (gracefully, with a `DisruptionTarget` condition) when the taint appears;
//!    one that tolerates it for `tolerationSeconds` is deleted that long after the taint
//!    was added. Every pod gets a 300 s toleration of `unreachable` at creation (the API
//!    server's DefaultTolerationSeconds), so pods are marked for deletion 340 s after the
//!    node went down. They stay Terminating while the node is down: no kubelet confirms.
//! 4. When the node comes back: Ready again, the `unreachable` taints go, its kubelet
//!    finishes the pending deletions and restarts the containers of the other pods.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use serde_json::{Value, json};
use std::sync::Arc;

use super::World;
use super::error::WorldError;
use super::nodes::NODE_LIFECYCLE_ACTOR;
use super::scheduler::tolerates;
use crate::kube::{DeleteOptions, PatchType, ResourceKey};

/// How long a node may stay silent before it is declared NotReady (the controller
/// manager's `--node-monitor-grace-period`).
pub const NODE_MONITOR_GRACE_SECONDS: i64 = 40;

/// When a pod on a node with `taints` is due for eviction: at once for an untolerated
/// `NoExecute` taint, `tolerationSeconds` after the taint was added for a tolerated one,
/// never when every `NoExecute` taint is tolerated forever.
pub fn eviction_deadline(pod: &Pod, taints: &[Taint]) -> Option<Timestamp> {
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.clone())
        .unwrap_or_default();
    taints
        .iter()
        .filter(|t| t.effect == "NoExecute")
        .filter_map(|taint| {
            let added = taint
                .time_added
                .as_ref()
                .map(|t| t.0)
                .unwrap_or(Timestamp::UNIX_EPOCH);
            let matching: Vec<_> = tolerations.iter().filter(|t| tolerates(t, taint)).collect();
            if matching.is_empty() {
                return Some(added);
            }
            if matching.iter().any(|t| t.toleration_seconds.is_none()) {
                return None;
            }
            let seconds = matching
                .iter()
                .filter_map(|t| t.toleration_seconds)
                .min()
                .unwrap_or(0)
                .max(0);
            Some(added + SignedDuration::from_secs(seconds))
        })
        .min()
}

fn bound_to<'a>(pods: &'a [Arc<Pod>], node: &'a str) -> impl Iterator<Item = &'a Pod> + 'a {
    pods.iter().map(|p| &**p).filter(move |p| {
        p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node)
            && p.metadata.deletion_timestamp.is_none()
            && !matches!(
                p.status.as_ref().and_then(|s| s.phase.as_deref()),
                Some("Failed" | "Succeeded")
            )
    })
}

impl World {
    /// The nodes running the pods named (in any namespace), each once.
    pub fn nodes_of_pods(&self, pods: &std::collections::BTreeSet<String>) -> Vec<String> {
        let nodes: std::collections::BTreeSet<String> = self
            .pods
            .values()
            .filter(|runtime| {
                pods.contains(&runtime.name) || pods.contains(&runtime.qualified_name())
            })
            .map(|runtime| runtime.node.clone())
            .collect();
        nodes.into_iter().collect()
    }

    /// The node goes down now (its containers stop at the next round).
    pub(super) fn node_down(&mut self, node: &str) -> Result<(), WorldError> {
        let now = self.now();
        self.nodes.mark_down(node, now)?;
        Ok(())
    }

    /// The nodes labelled `topology.kubernetes.io/zone=<zone>`, in node order; an error
    /// when there is none.
    pub(super) fn zone_nodes(&self, zone: &str) -> Result<Vec<String>, WorldError> {
        let nodes: Vec<String> = self
            .nodes
            .names()
            .iter()
            .filter(|node| {
                super::nodes::current_labels(&self.api, node)
                    .get(super::nodes::ZONE_LABEL)
                    .is_some_and(|value| value == zone)
            })
            .cloned()
            .collect();
        if nodes.is_empty() {
            return Err(WorldError::InvalidFault {
                kind: "zoneDown",
                message: format!("no node is labelled {}={zone}", super::nodes::ZONE_LABEL),
            });
        }
        Ok(nodes)
    }

    /// The node is back: Ready, untainted; its kubelet writes its pods' status afresh.
    pub(super) fn node_up(&mut self, node: &str) -> Result<(), WorldError> {
        if self.nodes.mark_up(&self.api, node)? {
            for runtime in self.pods.values_mut().filter(|r| r.node == node) {
                runtime.last_status = None;
            }
            self.record("node-ready", format!("node/{node}"), "back up".into());
        }
        Ok(())
    }

    /// Declares silent nodes NotReady and evicts the pods of nodes with `NoExecute`
    /// taints whose time has come.
    pub(super) fn sync_node_lifecycle(&mut self, pods: &[Arc<Pod>]) -> Result<(), WorldError> {
        let now = self.now();
        for node in self.nodes.down_nodes() {
            let Some(since) = self.nodes.down_since(&node) else {
                continue;
            };
            if self.nodes.is_declared_not_ready(&node)
                || since + SignedDuration::from_secs(NODE_MONITOR_GRACE_SECONDS) > now
            {
                continue;
            }
            self.nodes.declare_not_ready(&self.api, &node, now)?;
            self.record(
                "node-not-ready",
                format!("node/{node}"),
                "kubelet stopped posting node status; tainted unreachable".into(),
            );
            for pod in bound_to(pods, &node) {
                self.mark_pod_not_ready(pod, now)?;
            }
        }
        let nodes: Vec<Node> = self.api.list_typed(None)?;
        for node in &nodes {
            let name = node.metadata.name.clone().unwrap_or_default();
            let taints = node
                .spec
                .as_ref()
                .and_then(|s| s.taints.clone())
                .unwrap_or_default();
            if !taints.iter().any(|t| t.effect == "NoExecute") {
                continue;
            }
            for pod in bound_to(pods, &name) {
                if eviction_deadline(pod, &taints).is_some_and(|at| at <= now) {
                    self.evict_for_taint(pod, &name)?;
                }
            }
        }
        Ok(())
    }

    /// When the next node lifecycle step falls due: a down node declared NotReady, a pod
    /// evicted from a tainted node.
    pub(super) fn node_lifecycle_due(&self) -> Vec<Timestamp> {
        let mut due: Vec<Timestamp> = self
            .nodes
            .down_nodes()
            .iter()
            .filter(|node| !self.nodes.is_declared_not_ready(node))
            .filter_map(|node| self.nodes.down_since(node))
            .map(|since| since + SignedDuration::from_secs(NODE_MONITOR_GRACE_SECONDS))
            .collect();
        let (Ok(nodes), Ok(pods)) = (self.api.list_typed::<Node>(None), self.list_pods()) else {
            return due;
        };
        for node in &nodes {
            let name = node.metadata.name.clone().unwrap_or_default();
            let taints = node
                .spec
                .as_ref()
                .and_then(|s| s.taints.clone())
                .unwrap_or_default();
            due.extend(bound_to(&pods, &name).filter_map(|p| eviction_deadline(p, &taints)));
        }
        due
    }

    fn mark_pod_not_ready(&mut self, pod: &Pod, now: Timestamp) -> Result<(), WorldError> {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let mut conditions = conditions_json(pod);
        for condition in &mut conditions {
            if condition.get("type").and_then(Value::as_str) == Some("Ready") {
                condition["status"] = json!("False");
                condition["lastTransitionTime"] = json!(stamp);
            }
        }
        let key = ResourceKey::new("", "v1", "pods", &namespace, &name);
        self.patch_pod_status(&key, json!({"status": {"conditions": conditions}}))?;
        if let Some(uid) = &pod.metadata.uid
            && let Some(runtime) = self.pods.get_mut(uid)
        {
            // The kubelet writes its own view again once it is back.
            runtime.last_status = None;
        }
        Ok(())
    }

    fn evict_for_taint(&mut self, pod: &Pod, node: &str) -> Result<(), WorldError> {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let key = ResourceKey::new("", "v1", "pods", &namespace, &name);
        let now = self.now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let mut conditions = conditions_json(pod);
        conditions.push(json!({"type": "DisruptionTarget", "status": "True",
            "reason": "DeletionByTaintManager", "message": "Taint manager: deleting due to NoExecute taint",
            "lastTransitionTime": now}));
        self.patch_pod_status(&key, json!({"status": {"conditions": conditions}}))?;
        match self
            .api
            .delete_as(NODE_LIFECYCLE_ACTOR, &key, DeleteOptions::default())
        {
            Ok(_) => {}
            Err(e) if e.code == 404 => return Ok(()),
            Err(source) => {
                return Err(WorldError::Api {
                    actor: NODE_LIFECYCLE_ACTOR,
                    action: "evict",
                    target: format!("pod/{namespace}/{name}"),
                    source,
                });
            }
        }
        self.record(
            "evict",
            format!("pod/{namespace}/{name}"),
            format!("NoExecute taint on node {node}"),
        );
        Ok(())
    }

    fn patch_pod_status(&self, key: &ResourceKey, body: Value) -> Result<(), WorldError> {
        match self
            .api
            .patch_as(NODE_LIFECYCLE_ACTOR, key, PatchType::Merge, &body, true)
        {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 => Ok(()),
            Err(source) => Err(WorldError::Api {
                actor: NODE_LIFECYCLE_ACTOR,
                action: "patch status of",
                target: format!("pod/{}/{}", key.namespace, key.name),
                source,
            }),
        }
    }
}

/// The pod's status conditions as JSON values, to be edited and patched back whole.
fn conditions_json(pod: &Pod) -> Vec<Value> {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(|c| {
            c.iter()
                .filter_map(|c| serde_json::to_value(c).ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(tolerations: Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"},
            "spec": {"containers": [], "tolerations": tolerations}}))
        .unwrap()
    }

    fn taint(at: i64) -> Taint {
        serde_json::from_value(json!({"key": "node.kubernetes.io/unreachable",
            "effect": "NoExecute",
            "timeAdded": Timestamp::from_second(at).unwrap().to_string()}))
        .unwrap()
    }

    #[test]
    fn eviction_follows_the_tolerations() {
        let taints = [taint(1000)];
        let at = |p: &Pod| eviction_deadline(p, &taints).map(|t| t.as_second());
        assert_eq!(at(&pod(json!([]))), Some(1000), "untolerated: at once");
        assert_eq!(
            at(&pod(
                json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                            "effect": "NoExecute", "tolerationSeconds": 300}])
            )),
            Some(1300)
        );
        assert_eq!(
            at(&pod(
                json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}])
            )),
            None,
            "tolerated forever"
        );
        let no_execute_free: [Taint; 0] = [];
        assert_eq!(eviction_deadline(&pod(json!([])), &no_execute_free), None);
    }
}
