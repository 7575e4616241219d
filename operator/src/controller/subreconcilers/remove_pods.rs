//! RemovePods (operator-behavior §8). Not implemented yet: this step never acts.
//!
//! Will delete the pods and then PVCs of fully excluded groups marked for removal, include them again and drop them from the status; never a coordinator's pod.
//! Until then it only logs (at debug level) when it sees work of its kind; the
//! Reconciled check stays false while such work exists, so nothing claims to be done.

use async_trait::async_trait;

use super::Subreconciler;
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass_io::PassIo;
use crate::controller::snapshot::ClusterSnapshot;

/// Will delete the pods and then PVCs of fully excluded groups marked for removal, include them again and drop them from the status; never a coordinator's pod.
#[derive(Debug, Default, Clone, Copy)]
pub struct RemovePods;

#[async_trait]
impl Subreconciler for RemovePods {
    fn name(&self) -> &'static str {
        "RemovePods"
    }

    async fn reconcile(
        &self,
        _ctx: &Context,
        snapshot: &ClusterSnapshot,
        _io: &mut PassIo,
    ) -> Result<StepOutcome, StepError> {
        if super::any_marked_for_removal(snapshot) {
            tracing::debug!(
                step = self.name(),
                "process groups are marked for removal; removals are not handled yet"
            );
        }
        Ok(StepOutcome::Continue)
    }
}
