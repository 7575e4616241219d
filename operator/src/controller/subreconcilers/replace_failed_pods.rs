//! ReplaceFailedPods (operator-behavior §8). Not implemented yet: this step never acts.
//!
//! Will mark for replacement the process groups whose oldest condition eligible for automatic replacement is older than `failureDetectionTimeSeconds`, at most `maxConcurrentReplacements` marked-but-not-excluded at a time.
//! Until then it only logs (at debug level) when it sees work of its kind; the
//! Reconciled check stays false while such work exists, so nothing claims to be done.

use async_trait::async_trait;

use super::Subreconciler;
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass_io::PassIo;
use crate::controller::snapshot::ClusterSnapshot;

/// Will mark for replacement the process groups whose oldest condition eligible for automatic replacement is older than `failureDetectionTimeSeconds`, at most `maxConcurrentReplacements` marked-but-not-excluded at a time.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReplaceFailedPods;

#[async_trait]
impl Subreconciler for ReplaceFailedPods {
    fn name(&self) -> &'static str {
        "ReplaceFailedPods"
    }

    async fn reconcile(
        &self,
        _ctx: &Context,
        snapshot: &ClusterSnapshot,
        _io: &mut PassIo,
    ) -> Result<StepOutcome, StepError> {
        if snapshot.groups().any(|g| {
            g.status
                .process_group_conditions
                .iter()
                .any(|c| c.condition_type.is_eligible_for_automatic_replacement())
        }) {
            tracing::debug!(
                step = self.name(),
                "some process groups have conditions eligible for replacement; automatic replacement is not handled yet"
            );
        }
        Ok(StepOutcome::Continue)
    }
}
