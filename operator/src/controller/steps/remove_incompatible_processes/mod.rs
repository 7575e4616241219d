//! RemoveIncompatibleProcesses (docs/upgrades.md, "Incompatible upgrades" step 5): after an
//! incompatible upgrade's kill, processes that did not restart with the rest of the cluster
//! (the kill never reached them) cannot join it: they show in `incompatible_connections`,
//! or still report the old version. Their pods are deleted, so AddPods recreates them on
//! the running version's image and they come back on the binary of their own image. Pods
//! hosting a coordinator wait for ChangeCoordinators (a coordinator's pod is never
//! deleted). The decision is
//! [`crate::controller::versions::incompatible_processes::decide_incompatible`].

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::pass::plan::{
    Action, Barrier, PassFacts, Plan, Planned, Verdict, Wait, WaitOn,
};
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::versions::incompatible_processes::decide_incompatible;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct RemoveIncompatibleProcesses;

impl Subreconciler for RemoveIncompatibleProcesses {
    fn name(&self) -> &'static str {
        "RemoveIncompatibleProcesses"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        let decision = decide_incompatible(snapshot);
        if decision.delete.is_empty() && decision.waiting.is_empty() {
            return Ok(Verdict::Continue);
        }
        let mut actions = Vec::new();
        for target in &decision.delete {
            tracing::info!(group = %target.group, pod = %target.pod, reason = %target.reason,
                "deleting the pod of a process that missed the upgrade");
            // The process cannot join the cluster: deleting its pod takes nothing of the
            // database down (no disruption, no recovery), and needs no lock, as before.
            actions.push(Planned::plain(Action::DeletePod(target.pod.clone())));
            actions.push(Planned::plain(Action::Event {
                reason: EventReason::IncompatibleProcessRemoved,
                action: self.name().to_owned(),
                note: format!(
                    "deleted pod {} of {}: {}",
                    target.pod, target.group, target.reason
                ),
            }));
        }
        let mut reasons: Vec<String> = decision
            .delete
            .iter()
            .map(|t| format!("deleted pod {} of {} ({})", t.pod, t.group, t.reason))
            .collect();
        reasons.extend(decision.waiting.iter().cloned());
        let wait = Wait::new(
            WaitOn::Kubernetes,
            format!("processes missed the upgrade: {}", reasons.join("; ")),
        );
        Ok(Verdict::Act(Plan::new(actions, "").then(wait)))
    }
}
