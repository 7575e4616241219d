//! RemoveServices (operator-behavior §8). Not implemented yet: this step never acts.
//!
//! Will delete the per-group Services of fully excluded groups marked for removal (and Services no longer wanted).
//! Until then it only logs (at debug level) when it sees work of its kind; the
//! Reconciled check stays false while such work exists, so nothing claims to be done.

use async_trait::async_trait;

use super::Subreconciler;
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass_io::PassIo;
use crate::controller::snapshot::ClusterSnapshot;

/// Will delete the per-group Services of fully excluded groups marked for removal (and Services no longer wanted).
#[derive(Debug, Default, Clone, Copy)]
pub struct RemoveServices;

#[async_trait]
impl Subreconciler for RemoveServices {
    fn name(&self) -> &'static str {
        "RemoveServices"
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
