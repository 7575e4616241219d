//! Simulated nodes `node-1..node-N`: Node objects with hostname and zone labels, taints,
//! cordoning, and whether the node is up (and since when it is down).

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use serde_json::{Value, json};

use super::error::WorldError;
use crate::kube::{FakeApiServer, PatchType, ResourceKey};

/// The actor node registration and node status are written as.
pub const NODE_ACTOR: &str = "kubelet";
/// The actor taints are written as (an administrator).
pub const ADMIN_ACTOR: &str = "admin";
/// Label naming the node.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// Label naming the node's zone.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// The actor of the node lifecycle controller (NotReady, taints, taint eviction).
pub const NODE_LIFECYCLE_ACTOR: &str = "node-lifecycle-controller";
/// The taint of a node whose kubelet stopped reporting.
pub const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";
/// The taint of a cordoned node.
pub const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// The world's nodes, in creation order (`node-1`, `node-2`, ...).
#[derive(Debug, Clone, Default)]
pub struct Nodes {
    names: Vec<String>,
    zones: Option<u32>,
    /// Down nodes, with when they went down.
    down: BTreeMap<String, Timestamp>,
    /// Down nodes the node lifecycle controller has declared NotReady (and tainted).
    declared: BTreeSet<String>,
    /// Taint keys added by faults, per node (healing removes exactly these).
    fault_taints: BTreeMap<String, BTreeSet<String>>,
}

impl Nodes {
    /// No nodes yet; `zones` labels nodes as they are created.
    pub fn new(zones: Option<u32>) -> Self {
        Self {
            zones: zones.filter(|z| *z > 0),
            ..Self::default()
        }
    }

    /// Node names in order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Whether `name` exists.
    pub fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    /// Whether the node is down.
    pub fn is_down(&self, name: &str) -> bool {
        self.down.contains_key(name)
    }

    /// When the node went down, if it is down.
    pub fn down_since(&self, name: &str) -> Option<Timestamp> {
        self.down.get(name).copied()
    }

    /// Whether the node lifecycle controller has declared the (down) node NotReady.
    pub fn is_declared_not_ready(&self, name: &str) -> bool {
        self.declared.contains(name)
    }

    /// Checks that `name` exists.
    pub fn require(&self, name: &str) -> Result<(), WorldError> {
        if self.contains(name) {
            Ok(())
        } else {
            Err(WorldError::UnknownNode {
                node: name.to_owned(),
                known: self.names.join(","),
            })
        }
    }

    /// The labels node number `index` (1-based) gets.
    fn labels(&self, name: &str, index: usize) -> Value {
        let mut labels = json!({ HOSTNAME_LABEL: name });
        if let Some(zones) = self.zones {
            labels[ZONE_LABEL] = json!(format!("zone-{}", index % zones as usize));
        }
        labels
    }

    /// Takes a node that is already in the API (a snapshot's) as one of the world's.
    pub fn adopt(&mut self, name: &str) {
        if !self.contains(name) {
            self.names.push(name.to_owned());
        }
    }

    /// Creates the next node (`node-<n+1>`) in the API and returns its name.
    pub fn add(&mut self, api: &FakeApiServer) -> Result<String, WorldError> {
        let index = self.names.len() + 1;
        let name = format!("node-{index}");
        let node = json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": { "name": name, "labels": self.labels(&name, index) },
            "spec": {},
        });
        api.create_as(NODE_ACTOR, node)
            .map_err(|source| api_error("create", &name, source))?;
        self.names.push(name.clone());
        self.write_ready(api, &name, true)?;
        Ok(name)
    }

    /// Marks the node down since `at` (nothing is written: a dead kubelet reports nothing;
    /// the node lifecycle controller notices later). Returns whether it was up.
    pub fn mark_down(&mut self, name: &str, at: Timestamp) -> Result<bool, WorldError> {
        self.require(name)?;
        if self.down.contains_key(name) {
            return Ok(false);
        }
        self.down.insert(name.to_owned(), at);
        Ok(true)
    }

    /// Marks the node up: its kubelet reports Ready again, and the lifecycle controller's
    /// `unreachable` taints go. Returns whether it was down.
    pub fn mark_up(&mut self, api: &FakeApiServer, name: &str) -> Result<bool, WorldError> {
        self.require(name)?;
        if self.down.remove(name).is_none() {
            return Ok(false);
        }
        if self.declared.remove(name) {
            self.write_ready(api, name, true)?;
            let taints: Vec<Value> = current_taints(api, name)
                .into_iter()
                .filter(|t| t.get("key").and_then(Value::as_str) != Some(UNREACHABLE_TAINT))
                .collect();
            write_taints(api, NODE_LIFECYCLE_ACTOR, name, taints)?;
        }
        Ok(true)
    }

    /// The node lifecycle controller's verdict on a down node: Ready `Unknown` and the
    /// `node.kubernetes.io/unreachable` taints (`NoSchedule`, and `NoExecute` stamped
    /// with `now`).
    pub fn declare_not_ready(
        &mut self,
        api: &FakeApiServer,
        name: &str,
        now: Timestamp,
    ) -> Result<(), WorldError> {
        self.require(name)?;
        self.write_ready(api, name, false)?;
        let mut taints: Vec<Value> = current_taints(api, name)
            .into_iter()
            .filter(|t| t.get("key").and_then(Value::as_str) != Some(UNREACHABLE_TAINT))
            .collect();
        taints.push(json!({ "key": UNREACHABLE_TAINT, "effect": "NoSchedule" }));
        taints.push(json!({ "key": UNREACHABLE_TAINT, "effect": "NoExecute",
                            "timeAdded": now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string() }));
        write_taints(api, NODE_LIFECYCLE_ACTOR, name, taints)?;
        self.declared.insert(name.to_owned());
        Ok(())
    }

    /// The nodes that are down.
    pub fn down_nodes(&self) -> Vec<String> {
        self.down.keys().cloned().collect()
    }

    fn write_ready(&self, api: &FakeApiServer, name: &str, ready: bool) -> Result<(), WorldError> {
        let condition = if ready {
            json!({ "type": "Ready", "status": "True", "reason": "KubeletReady",
                    "message": "kubelet is posting ready status" })
        } else {
            json!({ "type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                    "message": "Kubelet stopped posting node status." })
        };
        let patch = json!({ "status": {
            "conditions": [condition],
            "addresses": [{ "type": "Hostname", "address": name }],
        }});
        let actor = if ready {
            NODE_ACTOR
        } else {
            NODE_LIFECYCLE_ACTOR
        };
        api.patch_as(actor, &node_key(name), PatchType::Merge, &patch, true)
            .map_err(|source| api_error("patch status of", name, source))?;
        Ok(())
    }

    /// Cordons (`spec.unschedulable: true` and the `node.kubernetes.io/unschedulable`
    /// taint, as the node lifecycle controller adds it) or uncordons the node.
    pub fn set_unschedulable(
        &mut self,
        api: &FakeApiServer,
        actor: &str,
        name: &str,
        unschedulable: bool,
    ) -> Result<(), WorldError> {
        self.require(name)?;
        let value = if unschedulable {
            json!(true)
        } else {
            Value::Null
        };
        api.patch_as(
            actor,
            &node_key(name),
            PatchType::Merge,
            &json!({ "spec": { "unschedulable": value } }),
            false,
        )
        .map_err(|source| api_error("cordon", name, source))?;
        let mut taints: Vec<Value> = current_taints(api, name)
            .into_iter()
            .filter(|t| t.get("key").and_then(Value::as_str) != Some(UNSCHEDULABLE_TAINT))
            .collect();
        if unschedulable {
            taints.push(json!({ "key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule" }));
        }
        write_taints(api, NODE_LIFECYCLE_ACTOR, name, taints)
    }

    /// Adds a `NoSchedule` taint with `key` to the node (a fault).
    pub fn add_taint(
        &mut self,
        api: &FakeApiServer,
        name: &str,
        key: &str,
    ) -> Result<(), WorldError> {
        self.require(name)?;
        let mut taints = current_taints(api, name);
        if !taints
            .iter()
            .any(|t| t.get("key").and_then(Value::as_str) == Some(key))
        {
            taints.push(json!({ "key": key, "effect": "NoSchedule" }));
            write_taints(api, ADMIN_ACTOR, name, taints)?;
        }
        self.fault_taints
            .entry(name.to_owned())
            .or_default()
            .insert(key.to_owned());
        Ok(())
    }

    /// Removes the taints faults added to the node.
    pub fn remove_fault_taints(
        &mut self,
        api: &FakeApiServer,
        name: &str,
    ) -> Result<(), WorldError> {
        let Some(keys) = self.fault_taints.remove(name) else {
            return Ok(());
        };
        let taints: Vec<Value> = current_taints(api, name)
            .into_iter()
            .filter(|t| {
                t.get("key")
                    .and_then(Value::as_str)
                    .is_none_or(|k| !keys.contains(k))
            })
            .collect();
        write_taints(api, ADMIN_ACTOR, name, taints)
    }

    /// Nodes that carry fault taints.
    pub fn tainted_nodes(&self) -> Vec<String> {
        self.fault_taints.keys().cloned().collect()
    }
}

fn node_key(name: &str) -> ResourceKey {
    ResourceKey::new("", "v1", "nodes", "", name)
}

/// The node's labels as stored (empty for an unknown node).
pub fn current_labels(api: &FakeApiServer, name: &str) -> BTreeMap<String, String> {
    api.get(&node_key(name))
        .and_then(|node| node.pointer("/metadata/labels").cloned())
        .and_then(|labels| serde_json::from_value(labels).ok())
        .unwrap_or_default()
}

/// The environment variables fdb-kubernetes-monitor derives from its node's labels
/// when `ENABLE_NODE_WATCH` is `true`: `NODE_LABEL_` and the key upper-cased, with `/`
/// and `.` as `_` (`topology.kubernetes.io/zone` ->
/// `NODE_LABEL_TOPOLOGY_KUBERNETES_IO_ZONE`), as the Go operator's manual describes it.
pub fn node_label_environment(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    labels
        .iter()
        .map(|(key, value)| {
            let name: String = key
                .chars()
                .map(|c| match c {
                    '/' | '.' => '_',
                    c => c.to_ascii_uppercase(),
                })
                .collect();
            (format!("NODE_LABEL_{name}"), value.clone())
        })
        .collect()
}

/// The node's taints as stored.
pub fn current_taints(api: &FakeApiServer, name: &str) -> Vec<Value> {
    api.get(&node_key(name))
        .and_then(|node| node.pointer("/spec/taints").cloned())
        .and_then(|t| t.as_array().cloned())
        .unwrap_or_default()
}

fn write_taints(
    api: &FakeApiServer,
    actor: &str,
    name: &str,
    taints: Vec<Value>,
) -> Result<(), WorldError> {
    let value = if taints.is_empty() {
        Value::Null
    } else {
        Value::Array(taints)
    };
    let patch = json!({ "spec": { "taints": value } });
    api.patch_as(actor, &node_key(name), PatchType::Merge, &patch, false)
        .map_err(|source| api_error("patch taints of", name, source))?;
    Ok(())
}

fn api_error(action: &'static str, name: &str, source: crate::kube::ApiError) -> WorldError {
    WorldError::Api {
        actor: NODE_ACTOR,
        action,
        target: format!("node/{name}"),
        source,
    }
}
