//! UpdatePodConfig: brings every pod's dynamic configuration (cluster file and
//! fdbmonitor.conf) up to date through its sidecar (sidecar-api.md "How the operator uses
//! it"): substitutions -> expected conf; check_hash, copy, check again; then the
//! `last-applied-config-map` annotation. Unreachable sidecars get SidecarUnreachable,
//! content the kubelet has not projected yet IncorrectConfigMap; both requeue.

use async_trait::async_trait;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::{
    ProcessGroupCondition, ProcessGroupConditionType, ProcessGroupStatus,
};
use fdb_shared::sidecar::protocol::{CLUSTER_FILE, MONITOR_CONF_FILE};
use fdb_shared::sidecar::{SidecarApi, SidecarClientError};
use futures::future::BoxFuture;
use futures::{FutureExt as _, StreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};

use super::Subreconciler;
use super::update_status::desired_config_hash;
use crate::controller::config_map::{expected_monitor_conf, sha256_hex};
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::objects::{object_of_group, pod_is_running};
use crate::controller::outcome::StepOutcome;
use crate::controller::pass::PassState;
use crate::controller::pod_model::LAST_APPLIED_CONFIG_MAP_ANNOTATION;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct UpdatePodConfig;

/// What the sidecar protocol found for one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodConfigResult {
    /// Both files are as desired.
    Confirmed,
    /// The sidecar did not answer.
    Unreachable(String),
    /// A file still differs after the copy (or the copy was refused), e.g. because the
    /// kubelet has not projected the new ConfigMap yet.
    Incorrect(String),
}

fn classify(error: SidecarClientError) -> PodConfigResult {
    if error.is_unreachable() {
        PodConfigResult::Unreachable(error.to_string())
    } else {
        PodConfigResult::Incorrect(error.to_string())
    }
}

/// Makes one file match `want` (SHA-256): check, copy when it differs, check again.
async fn ensure_file(
    sidecar: &dyn SidecarApi,
    file: &str,
    want: &str,
    copy_monitor_conf: bool,
) -> Result<bool, SidecarClientError> {
    if sidecar.check_hash(file).await?.as_deref() == Some(want) {
        return Ok(true);
    }
    if copy_monitor_conf {
        sidecar.copy_monitor_conf().await?;
    } else {
        sidecar.copy_files().await?;
    }
    Ok(sidecar.check_hash(file).await?.as_deref() == Some(want))
}

/// Runs the protocol against one pod's sidecar.
pub async fn check_pod(
    sidecar: &dyn SidecarApi,
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
    cluster_file: &str,
) -> PodConfigResult {
    let substitutions = match sidecar.substitutions().await {
        Ok(s) => s,
        Err(error) => return classify(error),
    };
    let conf = match expected_monitor_conf(cluster, group.process_class, &substitutions) {
        Ok(conf) => conf,
        Err(error) => return PodConfigResult::Incorrect(error.to_string()),
    };
    let wanted = [
        (CLUSTER_FILE, sha256_hex(cluster_file.as_bytes()), false),
        (MONITOR_CONF_FILE, sha256_hex(conf.as_bytes()), true),
    ];
    for (file, want, monitor) in wanted {
        match ensure_file(sidecar, file, &want, monitor).await {
            Ok(true) => {}
            Ok(false) => {
                return PodConfigResult::Incorrect(format!("{file} still differs after the copy"));
            }
            Err(error) => return classify(error),
        }
    }
    PodConfigResult::Confirmed
}

/// Runs the protocol against the sidecar of `pod`.
async fn check_candidate(
    ctx: &Context,
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
    pod: &Pod,
    cluster_file: &str,
) -> PodConfigResult {
    match ctx.sidecars.sidecar_for(cluster, pod) {
        Ok(sidecar) => check_pod(sidecar.as_ref(), cluster, group, cluster_file).await,
        Err(error) => classify(error),
    }
}

/// Sets (or clears) a condition on a group in `groups`, keeping first-seen timestamps.
fn set_condition(
    groups: &mut [ProcessGroupStatus],
    id: &str,
    condition: ProcessGroupConditionType,
    present: bool,
    now_unix: i64,
) {
    let Some(group) = groups.iter_mut().find(|g| g.process_group_id == id) else {
        return;
    };
    let has = group
        .process_group_conditions
        .iter()
        .any(|c| c.condition_type == condition);
    if present && !has {
        group.process_group_conditions.push(ProcessGroupCondition {
            condition_type: condition,
            timestamp: now_unix,
        });
    } else if !present && has {
        group
            .process_group_conditions
            .retain(|c| c.condition_type != condition);
    }
}

#[async_trait]
impl Subreconciler for UpdatePodConfig {
    fn name(&self) -> &'static str {
        "UpdatePodConfig"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        pass: &mut PassState,
    ) -> Result<StepOutcome, StepError> {
        let cluster = pass.cluster().clone();
        let mut status = pass.status();
        let Some(cluster_file) = status.connection_string.clone() else {
            return Ok(StepOutcome::Continue);
        };
        let pods: Vec<Pod> = pass.pods(ctx).await?.to_vec();
        let api = pass.api::<Pod>(ctx);
        let now = pass.now_unix();
        let (mut not_running, mut unreachable, mut incorrect, mut confirmed) = (0, 0, 0, 0);
        let mut candidates = Vec::new();
        for group in &status.process_groups {
            if group.is_marked_for_removal() {
                continue;
            }
            let Some(pod) = object_of_group(&cluster, &pods, &group.process_group_id) else {
                continue;
            };
            let Some(desired_hash) = desired_config_hash(&cluster, group)? else {
                continue;
            };
            if pod.annotations().get(LAST_APPLIED_CONFIG_MAP_ANNOTATION) == Some(&desired_hash) {
                continue;
            }
            if !pod_is_running(pod) {
                not_running += 1;
                continue;
            }
            candidates.push((group.clone(), pod.clone(), desired_hash));
        }
        // Sidecars are asked concurrently (a few unreachable ones must not stall a large
        // cluster for their timeouts one after the other), and the results are applied in
        // process-group order, so the writes are the same whatever answered first.
        let checks: Vec<BoxFuture<'_, PodConfigResult>> = candidates
            .iter()
            .map(|(group, pod, _)| {
                check_candidate(ctx, &cluster, group, pod, &cluster_file).boxed()
            })
            .collect();
        let results: Vec<PodConfigResult> = futures::stream::iter(checks)
            .buffered(ctx.settings.sidecar_concurrency.max(1))
            .collect()
            .await;
        for ((group, pod, desired_hash), result) in candidates.into_iter().zip(results) {
            let id = group.process_group_id.as_str();
            let reachable = !matches!(result, PodConfigResult::Unreachable(_));
            set_condition(
                &mut status.process_groups,
                id,
                ProcessGroupConditionType::SidecarUnreachable,
                !reachable,
                now,
            );
            match result {
                PodConfigResult::Confirmed => {
                    let name = pod.name_any();
                    let patch = serde_json::json!({"metadata": {"annotations": {
                        LAST_APPLIED_CONFIG_MAP_ANNOTATION: desired_hash
                    }}});
                    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .map_err(StepError::kube(format!("annotate pod {name}")))?;
                    confirmed += 1;
                }
                PodConfigResult::Unreachable(message) => {
                    tracing::info!(group = id, %message, "sidecar unreachable");
                    unreachable += 1;
                }
                PodConfigResult::Incorrect(message) => {
                    tracing::debug!(group = id, %message, "configuration not yet in place");
                    set_condition(
                        &mut status.process_groups,
                        id,
                        ProcessGroupConditionType::IncorrectConfigMap,
                        true,
                        now,
                    );
                    incorrect += 1;
                }
            }
        }
        if confirmed > 0 {
            pass.invalidate_pods();
        }
        pass.write_status(ctx, &status).await?;
        let mut reasons = Vec::new();
        if not_running > 0 {
            reasons.push(format!("waiting for {not_running} pods to run with an IP"));
        }
        if unreachable > 0 {
            reasons.push(format!("{unreachable} sidecars are unreachable"));
        }
        if incorrect > 0 {
            reasons.push(format!(
                "waiting for the kubelet to project the ConfigMap into {incorrect} pods"
            ));
        }
        if reasons.is_empty() {
            return Ok(StepOutcome::Continue);
        }
        let delay = if incorrect > 0 {
            ctx.settings.config_map_wait
        } else {
            ctx.settings.kube_wait
        };
        Ok(StepOutcome::Requeue {
            delay,
            reason: reasons.join("; "),
        })
    }
}
