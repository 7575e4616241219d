//! GenerateInitialClusterFile: writes the first connection string to
//! `status.connectionString` — `spec.seedConnectionString` when set, else coordinators
//! chosen among the stateful process groups, each in a distinct zone. UpdateConfigMap
//! then puts it in the ConfigMap and UpdatePodConfig into the pods.

use async_trait::async_trait;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::cluster_math::desired_coordinator_count;
use fdb_shared::connection_string::ConnectionString;
use k8s_openapi::api::core::v1::Pod;
use sha2::{Digest, Sha256};

use super::Subreconciler;
use crate::controller::context::Context;
use crate::controller::coordinators::{
    CoordinatorCandidate, coordinator_address, select_coordinators,
};
use crate::controller::errors::StepError;
use crate::controller::events::{EventReason, publish};
use crate::controller::objects::{object_of_group, public_ip};
use crate::controller::outcome::StepOutcome;
use crate::controller::pass::PassState;
use crate::controller::pod_model::parse_any_process_group_id;
use crate::controller::process_groups::pod_zone;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct GenerateInitialClusterFile;

/// The connection string description: the cluster name with every character FoundationDB
/// does not allow (anything but letters, digits and `_`) replaced by `_`.
pub fn description_for(name: &str) -> String {
    let description: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if description.is_empty() {
        "fdb".to_owned()
    } else {
        description
    }
}

/// A generation ID derived from the cluster's UID and the time: 16 hex digits, random
/// enough to tell databases apart, and reproducible in simulations.
pub fn generation_id(uid: &str, now_unix: i64) -> String {
    let digest = Sha256::digest(format!("{uid}/{now_unix}").as_bytes());
    hex::encode(digest)[..16].to_owned()
}

/// Why candidates could not all be examined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateGaps {
    /// Stateful groups without a pod, or whose pod is not scheduled (or has no IP when
    /// IPs are used).
    pub waiting: Vec<String>,
}

/// The coordinator candidates of a cluster from its live stateful process groups and
/// their pods; groups whose pod cannot be placed yet are listed in the gaps.
pub fn coordinator_candidates(
    cluster: &FoundationDBCluster,
    pods: &[Pod],
    current: &[String],
    excluded_or_maintained: &dyn Fn(&str) -> bool,
) -> (Vec<CoordinatorCandidate>, CandidateGaps) {
    let mut candidates = Vec::new();
    let mut waiting = Vec::new();
    let status = cluster.status.clone().unwrap_or_default();
    for group in &status.process_groups {
        if group.is_marked_for_removal()
            || !group.process_class.is_stateful()
            || excluded_or_maintained(&group.process_group_id)
        {
            continue;
        }
        let Some((_, number)) = parse_any_process_group_id(&group.process_group_id) else {
            continue;
        };
        let class = group.process_class;
        let pod = object_of_group(cluster, pods, &group.process_group_id)
            .filter(|pod| pod.metadata.deletion_timestamp.is_none());
        let placed = pod.and_then(|pod| {
            let zone = pod_zone(cluster, pod)?;
            let name = pod.metadata.name.as_deref()?;
            let address = coordinator_address(cluster, name, public_ip(cluster, pod))?;
            Some((zone, address))
        });
        match placed {
            Some((zone, address)) => candidates.push(CoordinatorCandidate {
                current: current.contains(&address.to_string()),
                process_group_id: group.process_group_id.clone(),
                class,
                number,
                zone,
                address,
            }),
            None => waiting.push(group.process_group_id.clone()),
        }
    }
    (candidates, CandidateGaps { waiting })
}

#[async_trait]
impl Subreconciler for GenerateInitialClusterFile {
    fn name(&self) -> &'static str {
        "GenerateInitialClusterFile"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        pass: &mut PassState,
    ) -> Result<StepOutcome, StepError> {
        if pass.status().connection_string.is_some() {
            return Ok(StepOutcome::Continue);
        }
        let cluster = pass.cluster().clone();
        let connection_string = if let Some(seed) = &cluster.spec.seed_connection_string {
            ConnectionString::parse(seed)
                .map_err(|e| StepError::InvalidState(format!("spec.seedConnectionString: {e}")))?
                .to_string()
        } else {
            let pods = pass.pods(ctx).await?.to_vec();
            let (candidates, gaps) = coordinator_candidates(&cluster, &pods, &[], &|_| false);
            if !gaps.waiting.is_empty() {
                return Ok(StepOutcome::Requeue {
                    delay: ctx.settings.kube_wait,
                    reason: format!(
                        "waiting for {} stateful pods to be scheduled{} before choosing coordinators",
                        gaps.waiting.len(),
                        if cluster.spec.routing.use_dns_in_cluster_file() {
                            ""
                        } else {
                            " and get IPs"
                        }
                    ),
                });
            }
            let wanted = desired_coordinator_count(
                &cluster.spec.redundancy_mode(),
                cluster.spec.usable_regions(),
            );
            let wanted = usize::try_from(wanted).unwrap_or(1);
            let chosen = match select_coordinators(
                &candidates,
                &cluster.spec.coordinator_selection(),
                wanted,
            ) {
                Ok(chosen) => chosen,
                Err(error) => {
                    return Ok(StepOutcome::Requeue {
                        delay: ctx.settings.kube_wait * 6,
                        reason: error.to_string(),
                    });
                }
            };
            let name = pass.name().to_owned();
            ConnectionString {
                description: description_for(&name),
                generation_id: generation_id(
                    cluster.metadata.uid.as_deref().unwrap_or(&name),
                    pass.now_unix(),
                ),
                coordinators: chosen.into_iter().map(|c| c.address).collect(),
            }
            .to_string()
        };
        tracing::info!(%connection_string, "writing the initial connection string");
        pass.update_status(ctx, |status| {
            status.connection_string = Some(connection_string.clone());
        })
        .await?;
        publish(
            ctx,
            pass.cluster(),
            EventReason::ConnectionStringGenerated,
            "GenerateInitialClusterFile",
            format!("initial connection string {connection_string}"),
        )
        .await;
        // The ConfigMap must carry the new cluster file before the pods can be updated.
        Ok(StepOutcome::requeue(
            1,
            "connection string generated; the ConfigMap is updated next",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::process_groups::new_process_group;
    use fdb_shared::api::ProcessClass;

    #[test]
    fn description_and_generation_id() {
        assert_eq!(description_for("my-cluster.1"), "my_cluster_1");
        let id = generation_id("uid-1", 100);
        assert_eq!(id.len(), 16);
        assert!(id.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(id, generation_id("uid-1", 100));
        assert_ne!(id, generation_id("uid-1", 101));
        let parsed =
            ConnectionString::parse(&format!("{}:{}@10.0.0.1:4501", description_for("a-b"), id));
        assert!(parsed.is_ok());
    }

    fn pod(name: &str, group: &str, node: Option<&str>) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {"foundationdb.org/fdb-process-group-id": group}},
            "spec": {"containers": [], "nodeName": node},
        }))
        .unwrap()
    }

    #[test]
    fn candidates_need_scheduled_pods() {
        let mut cluster: FoundationDBCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample", "namespace": "ns"}, "spec": {"version": "7.1.57"}
        }))
        .unwrap();
        let status = fdb_shared::api::FoundationDBClusterStatus {
            process_groups: vec![
                new_process_group("log-1".into(), ProcessClass::Log, 0),
                new_process_group("storage-1".into(), ProcessClass::Storage, 0),
                new_process_group("stateless-1".into(), ProcessClass::Stateless, 0),
            ],
            ..Default::default()
        };
        cluster.status = Some(status);
        let pods = [
            pod("sample-log-1", "log-1", Some("node-1")),
            pod("sample-storage-1", "storage-1", None),
            pod("sample-stateless-1", "stateless-1", Some("node-3")),
        ];
        let (candidates, gaps) = coordinator_candidates(&cluster, &pods, &[], &|_| false);
        assert_eq!(gaps.waiting, ["storage-1"]);
        assert_eq!(candidates.len(), 1);
        assert_eq!(
            candidates[0].address.to_string(),
            "sample-log-1.sample.ns.svc.cluster.local:4501"
        );
        assert_eq!(candidates[0].zone, "node-1");
        let (candidates, _) = coordinator_candidates(&cluster, &pods, &[], &|id| id == "log-1");
        assert!(candidates.is_empty());
    }
}
