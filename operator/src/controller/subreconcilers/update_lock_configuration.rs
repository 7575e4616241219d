//! UpdateLockConfiguration (operator-behavior §8). Not implemented yet: this step never acts.
//!
//! Will take, renew and release the global operator lock and apply `spec.lockOptions.lockDenyList` to the deny list, when locks are in use (multi-region, `faultDomain.zoneCount` > 1, three_data_hall, unless `lockOptions.disableLocks`).
//! Until then it only logs (at debug level) when it sees work of its kind; the
//! Reconciled check stays false while such work exists, so nothing claims to be done.

use async_trait::async_trait;

use super::Subreconciler;
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass_io::PassIo;
use crate::controller::snapshot::ClusterSnapshot;

/// Will take, renew and release the global operator lock and apply `spec.lockOptions.lockDenyList` to the deny list, when locks are in use (multi-region, `faultDomain.zoneCount` > 1, three_data_hall, unless `lockOptions.disableLocks`).
#[derive(Debug, Default, Clone, Copy)]
pub struct UpdateLockConfiguration;

#[async_trait]
impl Subreconciler for UpdateLockConfiguration {
    fn name(&self) -> &'static str {
        "UpdateLockConfiguration"
    }

    async fn reconcile(
        &self,
        _ctx: &Context,
        snapshot: &ClusterSnapshot,
        _io: &mut PassIo,
    ) -> Result<StepOutcome, StepError> {
        if fdb_shared::cluster_math::uses_locks(snapshot.spec()) {
            tracing::debug!(
                step = self.name(),
                "the cluster uses locks, which this operator does not manage yet"
            );
        }
        Ok(StepOutcome::Continue)
    }
}
