//! ReplaceMisconfiguredPods (operator-behavior §8). Not implemented yet: this step never acts.
//!
//! Will mark for replacement the process groups whose pod needs a new process group to change (ID prefix, public IP source, servers per pod, node selector, PVC spec, bigger resources with `replaceInstancesWhenResourcesChange`), at most `maxConcurrentReplacements` at a time.
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

/// Will mark for replacement the process groups whose pod needs a new process group to change (ID prefix, public IP source, servers per pod, node selector, PVC spec, bigger resources with `replaceInstancesWhenResourcesChange`), at most `maxConcurrentReplacements` at a time.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReplaceMisconfiguredPods;

#[async_trait]
impl Subreconciler for ReplaceMisconfiguredPods {
    fn name(&self) -> &'static str {
        "ReplaceMisconfiguredPods"
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
