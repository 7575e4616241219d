//! RemoveServices (operator-behavior §8): deletes the per-group Service of each group
//! marked for removal whose pod and PVC are gone (see RemovePods for the order; a pod
//! stuck Terminating past `ignoreTerminatingPodsSeconds` no longer holds it back).

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;

use super::Subreconciler;
use super::remove_pods::{pod_released, pvc_released};
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass_io::PassIo;
use crate::controller::removals::ready_for_deletion;
use crate::controller::snapshot::ClusterSnapshot;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct RemoveServices;

/// The Services to delete, by name.
pub fn decide(snapshot: &ClusterSnapshot) -> Vec<String> {
    snapshot
        .groups()
        .filter(|g| ready_for_deletion(snapshot, g))
        .filter(|g| pod_released(snapshot, g) && pvc_released(g))
        .filter_map(|g| g.service)
        .filter(|service| service.metadata.deletion_timestamp.is_none())
        .map(ResourceExt::name_any)
        .collect()
}

#[async_trait]
impl Subreconciler for RemoveServices {
    fn name(&self) -> &'static str {
        "RemoveServices"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        snapshot: &ClusterSnapshot,
        io: &mut PassIo,
        _facts: &mut crate::controller::plan::PassFacts,
    ) -> Result<StepOutcome, StepError> {
        let namespace = snapshot.namespace();
        for name in decide(snapshot) {
            tracing::info!(step = self.name(), service = %name, "deleting the service of a removed process group");
            io.delete::<Service>(ctx, &name, format!("delete service {namespace}/{name}"))
                .await?;
        }
        Ok(StepOutcome::Continue)
    }
}
