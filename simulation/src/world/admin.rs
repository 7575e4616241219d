//! What a cluster administrator does to nodes, for `act` steps: cordon, drain (as
//! `kubectl drain`: cordon, then evict each pod through the Eviction API), add nodes.
//! These write to the API as the given actor and return; the caller settles the world
//! (which is when the evicted pods' containers stop and their deletion completes).

use super::World;
use super::error::WorldError;

/// What [`World::drain`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DrainReport {
    /// Pods evicted (now terminating), in name order.
    pub evicted: Vec<String>,
    /// Pods whose eviction the API refused, with the API's message.
    pub refused: Vec<(String, String)>,
}

impl World {
    /// Cordons `node` as `actor`: `spec.unschedulable: true` (and the
    /// `node.kubernetes.io/unschedulable:NoSchedule` taint the node lifecycle controller
    /// adds). The scheduler places no new pod there; running pods stay.
    pub fn cordon(&mut self, actor: &str, node: &str) -> Result<(), WorldError> {
        self.nodes.set_unschedulable(&self.api, actor, node, true)?;
        self.record("cordon", format!("node/{node}"), format!("by {actor}"));
        Ok(())
    }

    /// Uncordons `node` as `actor` (undoes [`World::cordon`]).
    pub fn uncordon(&mut self, actor: &str, node: &str) -> Result<(), WorldError> {
        self.nodes
            .set_unschedulable(&self.api, actor, node, false)?;
        self.record("uncordon", format!("node/{node}"), format!("by {actor}"));
        Ok(())
    }

    /// Drains `node` as `actor`, like `kubectl drain`: cordons it, then evicts every pod
    /// bound to it that is not already terminating, one `pods/<name>/eviction` request
    /// each, in namespace and name order. Pods that are gone meanwhile are skipped;
    /// refusals are reported, not errors.
    pub fn drain(&mut self, actor: &str, node: &str) -> Result<DrainReport, WorldError> {
        self.cordon(actor, node)?;
        let pods = self.list_pods()?;
        let mut report = DrainReport::default();
        for pod in pods.iter().filter(|p| {
            p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node)
                && p.metadata.deletion_timestamp.is_none()
        }) {
            let namespace = pod.metadata.namespace.clone().unwrap_or_default();
            let name = pod.metadata.name.clone().unwrap_or_default();
            match self.api.evict_as(actor, &namespace, &name) {
                Ok(()) => {
                    self.record(
                        "evict",
                        format!("pod/{namespace}/{name}"),
                        format!("drain {node}"),
                    );
                    report.evicted.push(name);
                }
                Err(error) if error.code == 404 => {}
                Err(error) => report.refused.push((name, error.to_string())),
            }
        }
        Ok(report)
    }

    /// Adds `count` nodes after the existing ones (`node-<n+1>`, ...), labelled (and
    /// zoned) like them; returns their names.
    pub fn add_nodes(&mut self, count: u32) -> Result<Vec<String>, WorldError> {
        let mut added = Vec::new();
        for _ in 0..count {
            let node = self.nodes.add(&self.api)?;
            self.record("add-node", format!("node/{node}"), "added".into());
            added.push(node);
        }
        Ok(added)
    }
}
