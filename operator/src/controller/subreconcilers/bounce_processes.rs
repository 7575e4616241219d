//! BounceProcesses (operator-behavior §8). Not implemented yet: this step never acts.
//!
//! Will restart (`kill`) processes with IncorrectCommandLine once every process has been up `minimumUptimeSecondsForBounce` and the database is available, and bounce all processes at once for incompatible upgrades.
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

/// Will restart (`kill`) processes with IncorrectCommandLine once every process has been up `minimumUptimeSecondsForBounce` and the database is available, and bounce all processes at once for incompatible upgrades.
#[derive(Debug, Default, Clone, Copy)]
pub struct BounceProcesses;

#[async_trait]
impl Subreconciler for BounceProcesses {
    fn name(&self) -> &'static str {
        "BounceProcesses"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        snapshot: &ClusterSnapshot,
        io: &mut PassIo,
    ) -> Result<StepOutcome, StepError> {
        // --- Incompatible upgrades (day2-upgrades): one cluster-wide kill, and nothing
        // else of this step while one is pending. Self-contained: see upgrade_bounce.rs.
        if let Some(outcome) = super::upgrade_bounce::reconcile(ctx, snapshot, io).await? {
            return Ok(outcome);
        }
        // --- End of the upgrade's part.
        if has_condition(snapshot, ProcessGroupConditionType::IncorrectCommandLine) {
            tracing::debug!(
                step = self.name(),
                "processes run with an outdated command line; bounces are not handled yet"
            );
        }
        Ok(StepOutcome::Continue)
    }
}
