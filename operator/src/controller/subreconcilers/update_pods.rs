//! UpdatePods (operator-behavior §8). Not implemented yet: this step never acts.
//!
//! Will delete and recreate pods with IncorrectPodSpec zone by zone (`deletionMode`, `maxZonesWithUnavailablePods`), using maintenance mode for storage zones when enabled.
//! Until then it only logs (at debug level) when it sees work of its kind; the
//! Reconciled check stays false while such work exists, so nothing claims to be done.

use async_trait::async_trait;
use fdb_shared::api::cluster::ProcessGroupConditionType;

use super::{Subreconciler, has_condition};
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass_io::PassIo;
use crate::controller::snapshot::ClusterSnapshot;

/// Will delete and recreate pods with IncorrectPodSpec zone by zone (`deletionMode`, `maxZonesWithUnavailablePods`), using maintenance mode for storage zones when enabled.
#[derive(Debug, Default, Clone, Copy)]
pub struct UpdatePods;

#[async_trait]
impl Subreconciler for UpdatePods {
    fn name(&self) -> &'static str {
        "UpdatePods"
    }

    async fn reconcile(
        &self,
        _ctx: &Context,
        snapshot: &ClusterSnapshot,
        _io: &mut PassIo,
    ) -> Result<StepOutcome, StepError> {
        if has_condition(snapshot, ProcessGroupConditionType::IncorrectPodSpec) {
            tracing::debug!(
                step = self.name(),
                "some pods differ from the desired pod spec; pod updates are not handled yet"
            );
        }
        Ok(StepOutcome::Continue)
    }
}
