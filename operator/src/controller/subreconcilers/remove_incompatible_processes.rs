//! RemoveIncompatibleProcesses (operator-behavior §9 step 5): after an incompatible
//! upgrade's kill, processes that did not restart with the rest of the cluster (the kill
//! never reached them) cannot join it: they show in `incompatible_connections`, or still
//! report the old version. Their pods are deleted, so AddPods recreates them on the
//! running version's image and they come back on the binary of their own image. Pods
//! hosting a coordinator wait for ChangeCoordinators (a coordinator's pod is never
//! deleted). The decision is [`crate::controller::upgrade::decide_incompatible`].

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod;

use super::Subreconciler;
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::events::{EventReason, publish};
use crate::controller::outcome::StepOutcome;
use crate::controller::pass_io::PassIo;
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::upgrade::decide_incompatible;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct RemoveIncompatibleProcesses;

#[async_trait]
impl Subreconciler for RemoveIncompatibleProcesses {
    fn name(&self) -> &'static str {
        "RemoveIncompatibleProcesses"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        snapshot: &ClusterSnapshot,
        io: &mut PassIo,
        _facts: &mut crate::controller::plan::PassFacts,
    ) -> Result<StepOutcome, StepError> {
        let decision = decide_incompatible(snapshot);
        for target in &decision.delete {
            tracing::info!(group = %target.group, pod = %target.pod, reason = %target.reason,
                "deleting the pod of a process that missed the upgrade");
            io.delete::<Pod>(
                ctx,
                &target.pod,
                format!("delete pod {} (incompatible process)", target.pod),
            )
            .await?;
            publish(
                ctx,
                snapshot.cluster(),
                EventReason::IncompatibleProcessRemoved,
                self.name(),
                format!(
                    "deleted pod {} of {}: {}",
                    target.pod, target.group, target.reason
                ),
            )
            .await;
        }
        if decision.delete.is_empty() && decision.waiting.is_empty() {
            return Ok(StepOutcome::Continue);
        }
        let mut reasons: Vec<String> = decision
            .delete
            .iter()
            .map(|t| format!("deleted pod {} of {} ({})", t.pod, t.group, t.reason))
            .collect();
        reasons.extend(decision.waiting.iter().cloned());
        Ok(StepOutcome::Requeue {
            delay: ctx.settings.kube_wait,
            reason: format!("processes missed the upgrade: {}", reasons.join("; ")),
        })
    }
}
