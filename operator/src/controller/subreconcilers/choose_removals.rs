//! ChooseRemovals (operator-behavior §8). Not implemented yet: this step never acts.
//!
//! Will, when a class has more live process groups than desired, mark the surplus for removal, choosing them so the survivors span as many zones as possible.
//! Until then it only logs (at debug level) when it sees work of its kind; the
//! Reconciled check stays false while such work exists, so nothing claims to be done.

use async_trait::async_trait;

use super::Subreconciler;
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass_io::PassIo;
use crate::controller::snapshot::ClusterSnapshot;

/// Will, when a class has more live process groups than desired, mark the surplus for removal, choosing them so the survivors span as many zones as possible.
#[derive(Debug, Default, Clone, Copy)]
pub struct ChooseRemovals;

#[async_trait]
impl Subreconciler for ChooseRemovals {
    fn name(&self) -> &'static str {
        "ChooseRemovals"
    }

    async fn reconcile(
        &self,
        _ctx: &Context,
        snapshot: &ClusterSnapshot,
        _io: &mut PassIo,
    ) -> Result<StepOutcome, StepError> {
        if snapshot.status().generations.needs_shrink.is_some() {
            tracing::debug!(
                step = self.name(),
                "a class has more process groups than desired; shrinking is not handled yet"
            );
        }
        Ok(StepOutcome::Continue)
    }
}
