//! DeletePodsForBuggification (operator-behavior §8). Not implemented yet: this step never acts.
//!
//! Will delete (to recreate) the pods whose crash-loop or no-schedule buggify settings differ from what the pod runs.
//! Until then it only logs (at debug level) when it sees work of its kind; the
//! Reconciled check stays false while such work exists, so nothing claims to be done.

use async_trait::async_trait;

use super::Subreconciler;
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass_io::PassIo;
use crate::controller::snapshot::ClusterSnapshot;

/// Will delete (to recreate) the pods whose crash-loop or no-schedule buggify settings differ from what the pod runs.
#[derive(Debug, Default, Clone, Copy)]
pub struct DeletePodsForBuggification;

#[async_trait]
impl Subreconciler for DeletePodsForBuggification {
    fn name(&self) -> &'static str {
        "DeletePodsForBuggification"
    }

    async fn reconcile(
        &self,
        _ctx: &Context,
        snapshot: &ClusterSnapshot,
        _io: &mut PassIo,
    ) -> Result<StepOutcome, StepError> {
        let b = &snapshot.spec().buggify;
        if !b.crash_loop.is_empty()
            || !b.no_schedule.is_empty()
            || !b.crash_loop_containers.is_empty()
        {
            tracing::debug!(
                step = self.name(),
                "buggify settings are present; they are not applied yet"
            );
        }
        Ok(StepOutcome::Continue)
    }
}
