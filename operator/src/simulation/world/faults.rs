//! World-side faults and healing.

use std::collections::BTreeSet;

use super::error::WorldError;
use super::{SettleReport, World};
use crate::simulation::scenario::{Fault, Heal};

/// Faults on process groups (by `foundationdb.org/fdb-process-group-id`).
#[derive(Debug, Clone, Default)]
pub struct FaultState {
    /// The groups' processes stay stopped.
    pub process_missing: BTreeSet<String>,
    /// The groups' unscheduled pods stay Pending.
    pub pod_pending: BTreeSet<String>,
    /// The groups' pods fail.
    pub pod_failed: BTreeSet<String>,
    /// The groups' pods never finish terminating.
    pub stuck_terminating: BTreeSet<String>,
    /// The groups' sidecars do not serve.
    pub sidecar_unreachable: BTreeSet<String>,
}

impl FaultState {
    fn heal_group(&mut self, group: &str) {
        for set in [
            &mut self.process_missing,
            &mut self.pod_pending,
            &mut self.pod_failed,
            &mut self.stuck_terminating,
            &mut self.sidecar_unreachable,
        ] {
            set.remove(group);
        }
    }
}

impl World {
    /// Applies a world-side fault, then settles so it takes effect at once.
    /// `apiConflicts`, `fdbcliTimeouts` and `clientConnected` are the runner's
    /// ([`WorldError::NotAWorldFault`]).
    pub async fn apply_fault(&mut self, fault: &Fault) -> Result<SettleReport, WorldError> {
        let (set, group) = match fault {
            Fault::ProcessMissing { process_group } => {
                (&mut self.faults.process_missing, process_group)
            }
            Fault::PodPending { process_group } => (&mut self.faults.pod_pending, process_group),
            Fault::PodFailed { process_group } => (&mut self.faults.pod_failed, process_group),
            Fault::PodStuckTerminating { process_group } => {
                (&mut self.faults.stuck_terminating, process_group)
            }
            Fault::SidecarUnreachable { process_group } => {
                (&mut self.faults.sidecar_unreachable, process_group)
            }
            Fault::NodeDown { node } => {
                self.nodes.set_down(&self.api, node, true)?;
                self.record("fault", format!("node/{node}"), "node down".into());
                return self.settle().await;
            }
            Fault::NodeTaint { node, key } => {
                self.nodes.add_taint(&self.api, node, key)?;
                self.record(
                    "fault",
                    format!("node/{node}"),
                    format!("taint {key}:NoSchedule"),
                );
                return self.settle().await;
            }
            Fault::ApiConflicts { .. } => {
                return Err(WorldError::NotAWorldFault {
                    kind: "apiConflicts",
                });
            }
            Fault::FdbcliTimeouts { .. } => {
                return Err(WorldError::NotAWorldFault {
                    kind: "fdbcliTimeouts",
                });
            }
            Fault::ClientConnected { .. } => {
                return Err(WorldError::NotAWorldFault {
                    kind: "clientConnected",
                });
            }
            Fault::ClientDisconnected { .. }
            | Fault::IoError { .. }
            | Fault::SlowRecovery { .. }
            | Fault::IgnoreKill { .. }
            | Fault::ProcessCrashLoop { .. }
            | Fault::BinaryMissing { .. }
            | Fault::OutputNotWritable { .. } => {
                return Err(WorldError::NotAWorldFault {
                    kind: "not implemented by the world yet",
                });
            }
        };
        set.insert(group.clone());
        self.record(
            "fault",
            format!("processGroup/{group}"),
            format!("{fault:?}"),
        );
        self.settle().await
    }

    /// Undoes faults on a process group, a node, or everything, then settles.
    pub async fn heal(&mut self, heal: &Heal) -> Result<SettleReport, WorldError> {
        if heal.all == Some(true) {
            self.faults = FaultState::default();
            for node in self.nodes.down_nodes() {
                self.nodes.set_down(&self.api, &node, false)?;
            }
            for node in self.nodes.tainted_nodes() {
                self.nodes.remove_fault_taints(&self.api, &node)?;
            }
            self.record("heal", "world/all".into(), String::new());
        }
        if let Some(group) = &heal.process_group {
            self.faults.heal_group(group);
            self.record("heal", format!("processGroup/{group}"), String::new());
        }
        if let Some(node) = &heal.node {
            self.nodes.require(node)?;
            self.nodes.set_down(&self.api, node, false)?;
            self.nodes.remove_fault_taints(&self.api, node)?;
            self.record("heal", format!("node/{node}"), String::new());
        }
        self.settle().await
    }
}
