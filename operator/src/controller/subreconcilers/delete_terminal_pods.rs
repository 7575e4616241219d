//! DeleteTerminalPods: deletes the cluster's pods that ended in a terminal phase
//! (`Failed`, which includes `Evicted`, or `Succeeded`) so that AddPods recreates them.
//! A pod in such a phase never runs again on its own, and its processes are already
//! down, so deleting it takes nothing more out of service; its PVC stays.

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use super::Subreconciler;
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::events::{EventReason, publish};
use crate::controller::objects::pod_phase;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass_io::PassIo;
use crate::controller::snapshot::ClusterSnapshot;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct DeleteTerminalPods;

/// Whether the pod is in a terminal phase and not being deleted yet.
fn is_terminal(pod: &Pod) -> bool {
    let evicted = pod.status.as_ref().and_then(|s| s.reason.as_deref()) == Some("Evicted");
    pod.metadata.deletion_timestamp.is_none()
        && (evicted || matches!(pod_phase(pod), "Failed" | "Succeeded"))
}

/// The pods to delete, with their phase.
pub fn decide(snapshot: &ClusterSnapshot) -> Vec<(String, String)> {
    snapshot
        .pods()
        .iter()
        .filter(|pod| is_terminal(pod))
        .map(|pod| (pod.name_any(), pod_phase(pod).to_owned()))
        .collect()
}

#[async_trait]
impl Subreconciler for DeleteTerminalPods {
    fn name(&self) -> &'static str {
        "DeleteTerminalPods"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        snapshot: &ClusterSnapshot,
        io: &mut PassIo,
    ) -> Result<StepOutcome, StepError> {
        let pods = decide(snapshot);
        let namespace = snapshot.namespace();
        for (name, phase) in &pods {
            tracing::info!(step = self.name(), pod = %name, %phase, "deleting a pod in a terminal phase");
            io.delete::<Pod>(ctx, name, format!("delete pod {namespace}/{name}"))
                .await?;
            publish(
                ctx,
                snapshot.cluster(),
                EventReason::TerminalPodDeleted,
                self.name(),
                format!("pod {name} was {phase}; deleted so it is recreated"),
            )
            .await;
        }
        Ok(StepOutcome::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, group, pod};

    #[test]
    fn failed_and_evicted_pods_are_deleted_running_ones_are_not() {
        let mut failed = pod("sample-log-1", "log-1", "node-1", "10.0.0.1");
        failed.status.as_mut().unwrap().phase = Some("Failed".into());
        let mut evicted = pod("sample-log-2", "log-2", "node-2", "10.0.0.2");
        evicted.status.as_mut().unwrap().reason = Some("Evicted".into());
        let mut gone = failed.clone();
        gone.metadata.name = Some("sample-log-4".into());
        gone.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
        );
        let snapshot = Fixture::new("version: 7.1.57")
            .groups(["log-1", "log-2", "log-3", "log-4"].map(group))
            .pods([
                failed,
                evicted,
                pod("sample-log-3", "log-3", "node-3", "10.0.0.3"),
                gone,
            ])
            .build();
        assert_eq!(
            decide(&snapshot),
            [
                ("sample-log-1".to_owned(), "Failed".to_owned()),
                ("sample-log-2".to_owned(), "Running".to_owned())
            ]
        );
    }
}
