//! Storage classes and volume topology (`world.storageClasses`, spec/simulation.md
//! "Additions (v4)"): when a claim binds, and where its volume can then be used from.
//!
//! As in Kubernetes (kubernetes/kubernetes `pkg/controller/volume/persistentvolume`
//! and the scheduler's `pkg/scheduler/framework/plugins/volumebinding`):
//! - a claim naming a class that does not exist stays Pending (the PV controller treats
//!   it as an immediate claim it cannot provision: `IsDelayBindingMode` is false), and a
//!   pod using it is unschedulable: "pod has unbound immediate PersistentVolumeClaims";
//! - an `Immediate` claim binds at once, where the provisioner chooses (here: the first
//!   schedulable node, in name order), without knowing the pod;
//! - a `WaitForFirstConsumer` claim binds once its first pod is scheduled, on that pod's
//!   node (the scheduler writes `volume.kubernetes.io/selected-node`);
//! - a bound volume of topology `node` (local volumes) can be used only from its node,
//!   of topology `zone` only from its zone; any other node is refused with
//!   `ErrReasonNodeConflict`, "node(s) had volume node affinity conflict". A pod whose
//!   node is cordoned, drained or down therefore stays Pending until its claim goes.
//!
//! The world has no PersistentVolume objects: where a bound volume lives is the claim's
//! `volume.kubernetes.io/selected-node` annotation (set for both binding modes) and, for
//! `zone`, that node's `topology.kubernetes.io/zone` label.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use serde_json::json;

use super::World;
use super::claim_users::{ClaimUsers, claim_names};
use super::error::WorldError;
use super::lifecycle::{CONTROLLER_MANAGER_ACTOR, patch};
use super::scheduler::{NodeView, VolumePin, ZONE_LABEL};
use crate::kube::ResourceKey;
use crate::scenario::storage_classes::{BindingMode, StorageClassSettings, VolumeTopology};

/// The annotation naming the node a claim's volume was bound on.
pub const SELECTED_NODE_ANNOTATION: &str = "volume.kubernetes.io/selected-node";

/// The scheduler's message for a pod with a claim that cannot bind before it is placed.
pub fn unbound_immediate_message(nodes: usize) -> String {
    format!("0/{nodes} nodes are available: pod has unbound immediate PersistentVolumeClaims.")
}

fn claim_class(pvc: &PersistentVolumeClaim) -> Option<&str> {
    pvc.spec.as_ref()?.storage_class_name.as_deref()
}

fn selected_node(pvc: &PersistentVolumeClaim) -> Option<&str> {
    pvc.metadata
        .annotations
        .as_ref()?
        .get(SELECTED_NODE_ANNOTATION)
        .map(String::as_str)
}

fn is_bound(pvc: &PersistentVolumeClaim) -> bool {
    pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
}

impl World {
    /// The storage class a claim names, when the world has it.
    fn storage_class(&self, pvc: &PersistentVolumeClaim) -> Option<&StorageClassSettings> {
        let name = claim_class(pvc)?;
        self.options.storage_classes.iter().find(|c| c.name == name)
    }

    /// Binds one claim that is not bound yet, when its class allows it now: `Immediate`
    /// at once, `WaitForFirstConsumer` once a pod using it is scheduled (on its node); a
    /// claim of a class the world does not have stays Pending.
    pub(super) fn bind_claim(
        &mut self,
        pvc: &PersistentVolumeClaim,
        users: &ClaimUsers<'_>,
        key: &ResourceKey,
    ) -> Result<(), WorldError> {
        let Some(class) = self.storage_class(pvc).cloned() else {
            return Ok(());
        };
        let namespace = pvc.metadata.namespace.as_deref().unwrap_or_default();
        let name = pvc.metadata.name.as_deref().unwrap_or_default();
        let node = match class.binding_mode {
            BindingMode::Immediate => selected_node(pvc)
                .map(str::to_owned)
                .or_else(|| self.provisioner_node()),
            BindingMode::WaitForFirstConsumer => {
                let consumer = users.first_consumer(namespace, name);
                match consumer.and_then(|p| p.spec.as_ref()?.node_name.clone()) {
                    Some(node) => Some(node),
                    // Not consumed yet: it waits.
                    None => return Ok(()),
                }
            }
        };
        if let Some(node) = node.as_ref().filter(|_| selected_node(pvc).is_none()) {
            let body = json!({"metadata": {"annotations": {SELECTED_NODE_ANNOTATION: node}}});
            patch(&self.api, CONTROLLER_MANAGER_ACTOR, key, &body, false)?;
        }
        let spec = pvc.spec.as_ref();
        let requests = spec
            .and_then(|s| s.resources.as_ref()?.requests.clone())
            .unwrap_or_default();
        let modes = spec
            .and_then(|s| s.access_modes.clone())
            .unwrap_or_default();
        let status =
            json!({"status": {"phase": "Bound", "capacity": requests, "accessModes": modes}});
        patch(&self.api, CONTROLLER_MANAGER_ACTOR, key, &status, true)?;
        let place = node.map(|n| format!("on {n}")).unwrap_or_default();
        self.record("bind", format!("pvc/{namespace}/{name}"), place);
        Ok(())
    }

    /// Where an Immediate claim's volume is provisioned: the first schedulable node.
    fn provisioner_node(&self) -> Option<String> {
        let nodes = self.node_views().ok()?;
        nodes
            .iter()
            .find(|n| !n.unschedulable && !self.nodes.is_down(&n.name))
            .or(nodes.first())
            .map(|n| n.name.clone())
    }

    /// Where the volumes of `pod`'s bound claims can be used from, or the scheduler's
    /// message when a claim cannot bind before the pod is placed (its class is missing).
    pub(super) fn volume_pins(
        &self,
        pod: &Pod,
        pvcs: &[Arc<PersistentVolumeClaim>],
        nodes: &[NodeView],
    ) -> Result<Vec<VolumePin>, String> {
        let namespace = pod.metadata.namespace.as_deref();
        let mut pins = Vec::new();
        for claim in claim_names(pod) {
            let Some(pvc) = pvcs.iter().find(|p| {
                p.metadata.namespace.as_deref() == namespace
                    && p.metadata.name.as_deref() == Some(claim)
            }) else {
                continue;
            };
            let class = self.storage_class(pvc);
            if !is_bound(pvc) {
                // A missing class is treated as immediate: it never binds.
                if class.is_none_or(|c| c.binding_mode == BindingMode::Immediate) {
                    return Err(unbound_immediate_message(nodes.len()));
                }
                continue;
            }
            // A bound claim is usable whatever became of its class.
            let (Some(class), Some(node)) = (class, selected_node(pvc)) else {
                continue;
            };
            match class.topology {
                VolumeTopology::None => {}
                VolumeTopology::Node => pins.push(VolumePin::Node(node.to_owned())),
                VolumeTopology::Zone => {
                    let zone = nodes
                        .iter()
                        .find(|n| n.name == node)
                        .and_then(|n| n.labels.get(ZONE_LABEL));
                    if let Some(zone) = zone {
                        pins.push(VolumePin::Zone(zone.clone()));
                    }
                }
            }
        }
        Ok(pins)
    }
}
