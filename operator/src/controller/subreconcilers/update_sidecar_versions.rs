//! UpdateSidecarVersions (operator-behavior §8). Not implemented yet: this step never acts.
//!
//! Will, during an incompatible upgrade, patch only the sidecar container image to the target version so the sidecar stages the new binaries.
//! Until then it only logs (at debug level) when it sees work of its kind; the
//! Reconciled check stays false while such work exists, so nothing claims to be done.

use async_trait::async_trait;

use super::Subreconciler;
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass_io::PassIo;
use crate::controller::snapshot::ClusterSnapshot;

/// Will, during an incompatible upgrade, patch only the sidecar container image to the target version so the sidecar stages the new binaries.
#[derive(Debug, Default, Clone, Copy)]
pub struct UpdateSidecarVersions;

#[async_trait]
impl Subreconciler for UpdateSidecarVersions {
    fn name(&self) -> &'static str {
        "UpdateSidecarVersions"
    }

    async fn reconcile(
        &self,
        _ctx: &Context,
        snapshot: &ClusterSnapshot,
        _io: &mut PassIo,
    ) -> Result<StepOutcome, StepError> {
        if snapshot
            .status()
            .running_version
            .as_deref()
            .is_some_and(|v| v != snapshot.spec().version)
        {
            tracing::debug!(
                step = self.name(),
                "the running version differs from spec.version; upgrades are not handled yet"
            );
        }
        Ok(StepOutcome::Continue)
    }
}
