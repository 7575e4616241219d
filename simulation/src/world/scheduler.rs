//! The scheduler's decision: which node a Pending pod goes to.
//!
//! Honours `nodeSelector`, taints with effect `NoSchedule`/`NoExecute` (unless tolerated),
//! required pod anti-affinity, and spreads by the preferred pod anti-affinity terms: the
//! node whose topology domain holds the fewest (weighted) matching pods wins, ties broken
//! by node order. Cordoned nodes (`spec.unschedulable`) are skipped unless the pod
//! tolerates `node.kubernetes.io/unschedulable`. Like the real scheduler it judges nodes by
//! what the API says: a node that just died is still a candidate until the node lifecycle
//! controller taints it. Node affinity and pod affinity (as opposed to anti-affinity) are
//! not simulated. A pod's bound volumes restrict it to their node or zone
//! ([`VolumePin`], set by the world's storage model).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodAffinityTerm, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// A node as the scheduler sees it.
#[derive(Debug, Clone)]
pub struct NodeView {
    /// Node name.
    pub name: String,
    /// Node labels.
    pub labels: BTreeMap<String, String>,
    /// Node taints.
    pub taints: Vec<Taint>,
    /// Whether the node is cordoned (`spec.unschedulable`).
    pub unschedulable: bool,
}

/// A pod already bound to a node.
#[derive(Debug, Clone)]
pub struct PlacedPod {
    /// Namespace.
    pub namespace: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// The node.
    pub node: String,
}

/// The node label naming its zone.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// Where a bound volume can be used from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VolumePin {
    /// Only this node.
    Node(String),
    /// Only the nodes of this zone.
    Zone(String),
}

impl VolumePin {
    /// Whether a pod using the volume may run on `node`.
    pub fn admits(&self, node: &NodeView) -> bool {
        match self {
            Self::Node(name) => &node.name == name,
            Self::Zone(zone) => node.labels.get(ZONE_LABEL) == Some(zone),
        }
    }
}

/// Why no node fits (the `PodScheduled=False` message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unschedulable(pub String);

/// Whether the node satisfies the pod's required node affinity: any of its terms, each
/// with all of its match expressions (as the real scheduler reads them).
fn node_affinity_matches(spec: &k8s_openapi::api::core::v1::PodSpec, node: &NodeView) -> bool {
    let Some(required) = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
    else {
        return true;
    };
    required.node_selector_terms.iter().any(|term| {
        term.match_expressions.iter().flatten().all(|e| {
            let value = node.labels.get(&e.key);
            let values = e.values.as_deref().unwrap_or_default();
            match e.operator.as_str() {
                "In" => value.is_some_and(|v| values.contains(v)),
                "NotIn" => value.is_none_or(|v| !values.contains(v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                // Gt/Lt compare integers; anything unknown never matches.
                "Gt" | "Lt" => value
                    .and_then(|v| v.parse::<i64>().ok())
                    .zip(values.first().and_then(|w| w.parse::<i64>().ok()))
                    .is_some_and(|(v, w)| if e.operator == "Gt" { v > w } else { v < w }),
                _ => false,
            }
        })
    })
}

/// Picks the node for `pod` among `nodes` (in node order), given the pods already
/// placed. With `exclusive`, only nodes without any placed pod qualify (the default
/// world: one node per pod).
pub fn choose_node(
    pod: &Pod,
    nodes: &[NodeView],
    placed: &[PlacedPod],
    exclusive: bool,
    volumes: &[VolumePin],
) -> Result<String, Unschedulable> {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let spec = pod.spec.clone().unwrap_or_default();
    let selector = spec.node_selector.clone().unwrap_or_default();
    let tolerations = spec.tolerations.clone().unwrap_or_default();
    let anti = spec
        .affinity
        .as_ref()
        .and_then(|a| a.pod_anti_affinity.clone())
        .unwrap_or_default();
    let required = anti
        .required_during_scheduling_ignored_during_execution
        .unwrap_or_default();
    let preferred = anti
        .preferred_during_scheduling_ignored_during_execution
        .unwrap_or_default();

    let mut reasons: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut best: Option<(i64, &NodeView)> = None;
    for node in nodes {
        let cordon = Taint {
            key: "node.kubernetes.io/unschedulable".into(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        };
        let reject = if node.unschedulable && !tolerations.iter().any(|t| tolerates(t, &cordon)) {
            Some("node(s) were unschedulable")
        } else if exclusive && placed.iter().any(|p| p.node == node.name) {
            Some("node(s) already run a pod")
        } else if !selector.iter().all(|(k, v)| node.labels.get(k) == Some(v))
            || !node_affinity_matches(&spec, node)
        {
            Some("node(s) didn't match Pod's node affinity/selector")
        } else if node.taints.iter().any(|t| blocks(t, &tolerations)) {
            Some("node(s) had untolerated taint")
        } else if !volumes.iter().all(|pin| pin.admits(node)) {
            // ErrReasonNodeConflict of the VolumeBinding plugin.
            Some("node(s) had volume node affinity conflict")
        } else if required
            .iter()
            .any(|term| matching_in_domain(term, &namespace, node, nodes, placed) > 0)
        {
            Some("node(s) didn't satisfy existing pods anti-affinity rules")
        } else {
            None
        };
        if let Some(reason) = reject {
            *reasons.entry(reason).or_default() += 1;
            continue;
        }
        let score: i64 = preferred
            .iter()
            .map(|w| {
                i64::from(w.weight)
                    * matching_in_domain(&w.pod_affinity_term, &namespace, node, nodes, placed)
                        as i64
            })
            .sum();
        if best.is_none_or(|(s, _)| score < s) {
            best = Some((score, node));
        }
    }
    match best {
        Some((_, node)) => Ok(node.name.clone()),
        None => {
            let detail: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
            Err(Unschedulable(format!(
                "0/{} nodes are available: {}",
                nodes.len(),
                detail.join(", ")
            )))
        }
    }
}

/// How many placed pods matching the term share `node`'s topology domain.
fn matching_in_domain(
    term: &PodAffinityTerm,
    namespace: &str,
    node: &NodeView,
    nodes: &[NodeView],
    placed: &[PlacedPod],
) -> usize {
    let Some(domain) = node.labels.get(&term.topology_key) else {
        return 0;
    };
    let namespaces = term.namespaces.clone().unwrap_or_default();
    placed
        .iter()
        .filter(|p| {
            if namespaces.is_empty() {
                p.namespace == namespace
            } else {
                namespaces.contains(&p.namespace)
            }
        })
        .filter(|p| {
            term.label_selector
                .as_ref()
                .is_some_and(|s| selector_matches(s, &p.labels))
        })
        .filter(|p| {
            nodes
                .iter()
                .find(|n| n.name == p.node)
                .and_then(|n| n.labels.get(&term.topology_key))
                == Some(domain)
        })
        .count()
}

/// Whether a label selector matches `labels` (matchLabels and matchExpressions).
pub fn selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let by_labels = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let by_expressions = selector.match_expressions.iter().flatten().all(|req| {
        let values = req.values.clone().unwrap_or_default();
        let value = labels.get(&req.key);
        match req.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    by_labels && by_expressions
}

/// Whether an untolerated taint keeps new pods off the node.
fn blocks(taint: &Taint, tolerations: &[Toleration]) -> bool {
    if taint.effect != "NoSchedule" && taint.effect != "NoExecute" {
        return false;
    }
    !tolerations.iter().any(|t| tolerates(t, taint))
}

/// Whether the toleration tolerates the taint (key, operator, value and effect).
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let effect_ok = toleration
        .effect
        .as_deref()
        .is_none_or(|e| e.is_empty() || e == taint.effect);
    let exists = toleration.operator.as_deref() == Some("Exists");
    let key_ok = match toleration.key.as_deref() {
        None | Some("") => exists,
        Some(key) => key == taint.key,
    };
    let value_ok =
        exists || toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("");
    effect_ok && key_ok && value_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, zone: &str) -> NodeView {
        NodeView {
            name: name.into(),
            labels: BTreeMap::from([
                ("kubernetes.io/hostname".into(), name.into()),
                ("zone".into(), zone.into()),
            ]),
            taints: vec![],
            unschedulable: false,
        }
    }

    fn pod(class: &str, extra: serde_json::Value) -> Pod {
        let mut spec = json!({
            "containers": [],
            "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                 "labelSelector": {"matchLabels": {"class": class}}}}]}}
        });
        if let Some(obj) = extra.as_object() {
            for (k, v) in obj {
                spec[k] = v.clone();
            }
        }
        serde_json::from_value(json!({"metadata": {"namespace": "default", "name": "p",
            "labels": {"class": class}}, "spec": spec}))
        .unwrap()
    }

    fn placed(class: &str, node: &str) -> PlacedPod {
        PlacedPod {
            namespace: "default".into(),
            labels: BTreeMap::from([("class".into(), class.into())]),
            node: node.into(),
        }
    }

    #[test]
    fn spreads_by_preferred_anti_affinity_then_node_order() {
        let nodes = [
            node("node-1", "a"),
            node("node-2", "b"),
            node("node-3", "a"),
        ];
        let on = [placed("storage", "node-1"), placed("log", "node-2")];
        assert_eq!(
            choose_node(&pod("storage", json!({})), &nodes, &on, false, &[]),
            Ok("node-2".into())
        );
        assert_eq!(
            choose_node(&pod("log", json!({})), &nodes, &on, false, &[]),
            Ok("node-1".into())
        );
        assert_eq!(
            choose_node(&pod("log", json!({})), &nodes, &on, true, &[]),
            Ok("node-3".into())
        );
    }

    #[test]
    fn selector_taints_cordons_and_required_anti_affinity_filter() {
        let mut nodes = vec![
            node("node-1", "a"),
            node("node-2", "b"),
            node("node-3", "c"),
        ];
        nodes[0].unschedulable = true;
        nodes[1].taints.push(Taint {
            key: "example.com/maintenance".into(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        });
        let plain = pod("storage", json!({}));
        assert_eq!(
            choose_node(&plain, &nodes, &[], false, &[]),
            Ok("node-3".into())
        );
        let tolerant = pod(
            "storage",
            json!({"tolerations": [{"key": "example.com/maintenance", "operator": "Exists"}],
            "nodeSelector": {"zone": "b"}}),
        );
        assert_eq!(
            choose_node(&tolerant, &nodes, &[], false, &[]),
            Ok("node-2".into())
        );
        let required = pod(
            "storage",
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": "class", "operator": "In", "values": ["storage"]}]}}]}}}),
        );
        let err = choose_node(
            &required,
            &nodes,
            &[placed("storage", "node-3")],
            false,
            &[],
        )
        .unwrap_err();
        assert!(err.0.contains("anti-affinity"), "{}", err.0);
        assert!(err.0.contains("unschedulable"), "{}", err.0);
        let tolerates_cordon = pod(
            "storage",
            json!({"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]}),
        );
        assert_eq!(
            choose_node(&tolerates_cordon, &nodes, &[], false, &[]),
            Ok("node-1".into())
        );
    }

    /// A bound local volume pins its pod to its node, a zonal one to its zone; other
    /// nodes are refused with the VolumeBinding plugin's reason.
    #[test]
    fn bound_volumes_pin_the_pod_to_their_node_or_zone() {
        let mut nodes = vec![
            node("node-1", "a"),
            node("node-2", "b"),
            node("node-3", "a"),
        ];
        for n in &mut nodes {
            let zone = n.labels["zone"].clone();
            n.labels.insert(ZONE_LABEL.into(), zone);
        }
        let plain = pod("storage", json!({}));
        let local = [VolumePin::Node("node-2".into())];
        assert_eq!(
            choose_node(&plain, &nodes, &[], false, &local),
            Ok("node-2".into())
        );
        let zonal = [VolumePin::Zone("a".into())];
        assert_eq!(
            choose_node(
                &plain,
                &nodes,
                &[placed("storage", "node-1")],
                false,
                &zonal
            ),
            Ok("node-3".into())
        );
        nodes[1].unschedulable = true;
        let err = choose_node(&plain, &nodes, &[], false, &local).unwrap_err();
        assert_eq!(
            err.0,
            "0/3 nodes are available: 2 node(s) had volume node affinity conflict, 1 node(s) were unschedulable"
        );
    }
}
