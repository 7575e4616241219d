//! UpdatePodConfig: brings every pod's dynamic configuration (cluster file and
//! fdbmonitor.conf) up to date through its sidecar (sidecar-api.md "How the operator uses
//! it"): substitutions -> expected conf; check_hash, copy, check again; then the
//! `last-applied-config-map` annotation. Unreachable sidecars get SidecarUnreachable,
//! content the kubelet has not projected yet IncorrectConfigMap; both requeue.
//!
//! During an incompatible upgrade (operator-behavior §9 step 3) a pod is confirmed only
//! once its sidecar also answers `is_present/bin/<target>/fdbserver` (after a
//! `copy_binaries` when it does not yet); the desired hash then includes the staged
//! binary (see [`crate::controller::desired::upgrade_staging_hash`]), so every pod is
//! asked again, and the requeue reason names the pods still waiting.

use std::collections::BTreeMap;

pub use super::update_pod_config_monitor::{
    monitor_report_unreadable, monitor_result, outdated_monitors,
};
pub use super::update_pod_config_plan::{Candidate, PodConfigPlan, PodConfigResult};
use async_trait::async_trait;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::{ProcessGroupConditionType, ProcessGroupStatus};
use fdb_shared::monitor_conf::process_config::OUTDATED_CONFIG_MAP_ANNOTATION;
use fdb_shared::sidecar::protocol::{CLUSTER_FILE, MONITOR_CONF_FILE};
use fdb_shared::sidecar::{SidecarApi, SidecarClientError};
use futures::future::BoxFuture;
use futures::{FutureExt as _, StreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use super::Subreconciler;
use crate::controller::config_map::{expected_monitor_conf, sha256_hex};
use crate::controller::context::Context;
use crate::controller::desired::ConfigHashes;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::objects::pod_is_running;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass_io::{PassIo, publish};
use crate::controller::pod_agent::PodAgent;
use crate::controller::pod_config_memo::PodMemo;
use crate::controller::pod_model::{
    LAST_APPLIED_CONFIG_MAP_ANNOTATION, expected_substitutions, pod_image_type, pod_servers_per_pod,
};
use crate::controller::removals::kept_running;
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::status_mutations::StatusMutation;
use crate::controller::upgrade::{
    live_sidecar_image, pending_upgrade_target, restarted_by_the_kill, staged_fdbserver,
};

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct UpdatePodConfig;

fn classify(error: SidecarClientError) -> PodConfigResult {
    if error.is_unreachable() {
        PodConfigResult::Unreachable(error.to_string())
    } else {
        PodConfigResult::Incorrect(error.to_string())
    }
}

/// Makes sure the upgrade's binary is staged: `is_present`, else `copy_binaries` and
/// `is_present` again.
async fn ensure_staged(sidecar: &dyn SidecarApi, binary: &str) -> Result<bool, SidecarClientError> {
    if sidecar.is_present(binary).await? {
        return Ok(true);
    }
    sidecar.copy_binaries().await?;
    sidecar.is_present(binary).await
}

/// The cluster file: checked first (fdbserver rewrites it itself when coordinators
/// change, and a copy of a ConfigMap the kubelet has not projected yet would put the
/// old one back), copied only when it differs, then checked again. A pod whose file was
/// already seen to differ for this hash is copied at once.
async fn ensure_cluster_file(
    sidecar: &dyn SidecarApi,
    want: &str,
    memo: &mut PodMemo,
) -> Result<bool, SidecarClientError> {
    if !memo.cluster_file_differs
        && sidecar.check_hash(CLUSTER_FILE).await?.as_deref() == Some(want)
    {
        return Ok(true);
    }
    sidecar.copy_files().await?;
    let matches = sidecar.check_hash(CLUSTER_FILE).await?.as_deref() == Some(want);
    memo.cluster_file_differs = !matches;
    Ok(matches)
}

/// The monitor conf: rendered by the sidecar from the projected template and the pod's
/// own values, so a copy can never put an older conf in place; copied at once, then its
/// hash compared with the conf expected from the substitutions. These come from the pod
/// spec when it tells them all, else from `GET /substitutions` (once per pod); a
/// mismatch with values read from the spec asks the sidecar before concluding.
async fn ensure_monitor_conf(
    sidecar: &dyn SidecarApi,
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
    pod: &Pod,
    memo: &mut PodMemo,
) -> Result<Result<bool, String>, SidecarClientError> {
    let servers = pod_servers_per_pod(cluster, group.process_class, Some(pod));
    let expected = |substitutions: &BTreeMap<String, String>| {
        expected_monitor_conf(cluster, group.process_class, servers, substitutions)
            .map(|conf| sha256_hex(conf.as_bytes()))
            .map_err(|error| error.to_string())
    };
    // Substitutions a sidecar of another image answered are stale (its version decides
    // `BINARY_DIR`): an upgrade changes the sidecar's image in place.
    let image = live_sidecar_image(pod).map(str::to_owned);
    if memo.substitutions_image != image {
        memo.substitutions = None;
    }
    let (substitutions, asked) = match (&memo.substitutions, expected_substitutions(pod)) {
        (Some(known), _) => (known.clone(), true),
        (None, Some(derived)) => (derived, false),
        (None, None) => {
            let asked = sidecar.substitutions().await?;
            memo.substitutions = Some(asked.clone());
            memo.substitutions_image = image.clone();
            (asked, true)
        }
    };
    let want = match expected(&substitutions) {
        Ok(want) => want,
        Err(error) => return Ok(Err(error)),
    };
    sidecar.copy_monitor_conf().await?;
    let Some(got) = sidecar.check_hash(MONITOR_CONF_FILE).await? else {
        return Ok(Ok(false));
    };
    if got == want {
        return Ok(Ok(true));
    }
    if asked {
        return Ok(Ok(false));
    }
    let asked = sidecar.substitutions().await?;
    memo.substitutions = Some(asked.clone());
    memo.substitutions_image = image;
    Ok(expected(&asked).map(|want| got == want))
}

/// Runs the protocol against one pod's sidecar, with what earlier tries taught about
/// it (`memo`, updated).
pub async fn check_pod(
    sidecar: &dyn SidecarApi,
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
    pod: &Pod,
    cluster_file: &str,
    staged: Option<&str>,
    memo: &mut PodMemo,
) -> PodConfigResult {
    if let Some(binary) = staged {
        match ensure_staged(sidecar, binary).await {
            Ok(true) => {}
            Ok(false) => {
                return PodConfigResult::Incorrect(format!("{binary} is not staged yet"));
            }
            Err(error) => return classify(error),
        }
    }
    let want = sha256_hex(cluster_file.as_bytes());
    match ensure_cluster_file(sidecar, &want, memo).await {
        Ok(true) => {}
        Ok(false) => {
            memo.attempts += 1;
            return PodConfigResult::Incorrect(format!(
                "{CLUSTER_FILE} still differs after the copy"
            ));
        }
        Err(error) => return classify(error),
    }
    match ensure_monitor_conf(sidecar, cluster, group, pod, memo).await {
        Ok(Ok(true)) => PodConfigResult::Confirmed,
        Ok(Ok(false)) => {
            memo.attempts += 1;
            PodConfigResult::Incorrect(format!("{MONITOR_CONF_FILE} still differs after the copy"))
        }
        Ok(Err(error)) => PodConfigResult::Incorrect(error),
        Err(error) => classify(error),
    }
}

/// Runs the protocol against the sidecar of `pod`; returns what to remember.
async fn check_candidate(
    ctx: &Context,
    cluster: &FoundationDBCluster,
    candidate: &Candidate<'_>,
    cluster_file: &str,
    staged: Option<&str>,
    mut memo: PodMemo,
) -> (PodConfigResult, PodMemo) {
    if PodAgent::of(candidate.pod) == PodAgent::Monitor {
        return (monitor_result(cluster, candidate), memo);
    }
    let result = match ctx.sidecars.sidecar_for(cluster, candidate.pod) {
        Ok(sidecar) => {
            check_pod(
                sidecar.as_ref(),
                cluster,
                candidate.group,
                candidate.pod,
                cluster_file,
                staged,
                &mut memo,
            )
            .await
        }
        Err(error) => classify(error),
    };
    (result, memo)
}

/// Decides which pods to ask (`None` before there is a connection string).
pub fn decide(snapshot: &ClusterSnapshot) -> Result<Option<PodConfigPlan<'_>>, StepError> {
    let cluster = snapshot.cluster();
    let Some(cluster_file) = snapshot.status().connection_string.clone() else {
        return Ok(None);
    };
    let mut hashes = ConfigHashes::default();
    let mut plan = PodConfigPlan {
        cluster_file,
        staged: pending_upgrade_target(cluster).map(|target| staged_fdbserver(&target)),
        ..PodConfigPlan::default()
    };
    // Groups whose removal is held keep running: they get the new conf too. So do, while
    // an incompatible upgrade is pending, groups being removed whose pod still runs: the
    // cluster-wide kill restarts them with the others (issue 26).
    let staging = plan.staged.is_some();
    let groups = snapshot
        .groups()
        .filter(|g| kept_running(snapshot, g) || (staging && restarted_by_the_kill(g)));
    for group in groups {
        let Some(pod) = group.pod else {
            continue;
        };
        let Some(desired_hash) = hashes.of(
            cluster,
            group.status,
            group.servers_per_pod(),
            pod_image_type(pod),
        )?
        else {
            continue;
        };
        // A confirmed pod is asked again only when its monitor's report cannot be read
        // (someone overwrote it): the pod is named, and its monitor asked to report.
        if pod.annotations().get(LAST_APPLIED_CONFIG_MAP_ANNOTATION) == Some(&desired_hash)
            && !monitor_report_unreadable(pod)
        {
            continue;
        }
        // A pod in a terminal phase never runs again: DeleteTerminalPods recreates it
        // (with its own back-off), so there is nothing to wait for here.
        if super::delete_terminal_pods::is_terminal(pod) {
            continue;
        }
        if !pod_is_running(pod) {
            plan.not_running += 1;
            continue;
        }
        plan.candidates.push(Candidate {
            group: group.status,
            pod,
            desired_hash,
        });
    }
    Ok(Some(plan))
}

/// What the sidecars' answers mean.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodConfigOutcome {
    /// Pods (by name) to annotate with the hash they confirmed, in status order.
    pub annotate: Vec<(String, String)>,
    /// Conditions to set and clear.
    pub mutations: Vec<StatusMutation>,
    /// Pods that do not run yet.
    pub not_running: usize,
    /// Sidecars that did not answer.
    pub unreachable: usize,
    /// Pods whose files still differ (the kubelet has not projected the ConfigMap).
    pub incorrect: usize,
    /// The process groups whose sidecars did not answer, in status order (named in the
    /// requeue reason).
    pub unreachable_groups: Vec<String>,
    /// The pods that did not confirm, with why, in status order.
    pub waiting: Vec<String>,
}

impl PodConfigOutcome {
    /// Why the pass must come back, if it must.
    pub fn waiting_reason(&self) -> Option<String> {
        let mut reasons = Vec::new();
        if self.not_running > 0 {
            reasons.push(format!(
                "waiting for {} pods to run with an IP",
                self.not_running
            ));
        }
        if self.unreachable > 0 {
            let mut text = format!("{} sidecars are unreachable", self.unreachable);
            if !self.unreachable_groups.is_empty() {
                let shown: Vec<&str> = self
                    .unreachable_groups
                    .iter()
                    .take(5)
                    .map(String::as_str)
                    .collect();
                let more = self.unreachable_groups.len().saturating_sub(shown.len());
                text.push_str(&format!(" (process groups {}", shown.join(", ")));
                if more > 0 {
                    text.push_str(&format!(", and {more} more"));
                }
                text.push(')');
            }
            reasons.push(text);
        }
        if self.incorrect > 0 {
            reasons.push(format!(
                "waiting for the kubelet to project the ConfigMap into {} pods",
                self.incorrect
            ));
        }
        if !self.waiting.is_empty() {
            reasons.push(format!("pods not confirmed: {}", self.waiting.join("; ")));
        }
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }
}

/// Concludes from the answers (one per candidate, in order): confirmed pods get their
/// annotation, unreachable sidecars SidecarUnreachable (cleared once reachable), pods
/// whose files still differ IncorrectConfigMap.
pub fn conclude(plan: &PodConfigPlan<'_>, results: &[PodConfigResult]) -> PodConfigOutcome {
    let mut outcome = PodConfigOutcome {
        not_running: plan.not_running,
        ..PodConfigOutcome::default()
    };
    for (candidate, result) in plan.candidates.iter().zip(results) {
        if *result == PodConfigResult::NotAsked {
            // Its conditions stay as UpdateStatus observes them.
            outcome.incorrect += 1;
            continue;
        }
        let group = candidate.group.process_group_id.clone();
        let condition = ProcessGroupConditionType::SidecarUnreachable;
        outcome
            .mutations
            .push(if matches!(result, PodConfigResult::Unreachable(_)) {
                StatusMutation::SetCondition { group, condition }
            } else {
                StatusMutation::ClearCondition { group, condition }
            });
        match result {
            PodConfigResult::Confirmed => {
                outcome
                    .annotate
                    .push((candidate.pod.name_any(), candidate.desired_hash.clone()));
            }
            PodConfigResult::Unreachable(message) => {
                outcome.unreachable += 1;
                outcome
                    .unreachable_groups
                    .push(candidate.group.process_group_id.clone());
                if plan.staged.is_some() {
                    outcome.waiting.push(format!(
                        "{} (sidecar unreachable: {message})",
                        candidate.pod.name_any()
                    ));
                }
            }
            PodConfigResult::NotAsked => {}
            PodConfigResult::Incorrect(message) | PodConfigResult::Unreadable(message) => {
                if plan.staged.is_some() || matches!(result, PodConfigResult::Unreadable(_)) {
                    outcome
                        .waiting
                        .push(format!("{} ({message})", candidate.pod.name_any()));
                }
                outcome.mutations.push(StatusMutation::SetCondition {
                    group: candidate.group.process_group_id.clone(),
                    condition: ProcessGroupConditionType::IncorrectConfigMap,
                });
                outcome.incorrect += 1;
            }
        }
    }
    outcome
}

/// How many times a pod may answer "still differs" for one hash before it stops being
/// the probe (a pod whose copy keeps failing must not hold the others back).
pub const PROBE_LIMIT: u32 = 8;

/// Asks the candidates' sidecars; the answers are in candidate order.
///
/// While the kubelet has not projected a changed ConfigMap no pod can confirm it, and
/// it projects into all pods about the same time: so one pod is asked first (the first
/// in status order that has not kept failing, past pods whose sidecar does not answer),
/// and the others only once it confirmed; until then they are [`PodConfigResult::NotAsked`].
/// During an incompatible upgrade every pod stages its own binary: all are asked.
/// Sidecars are asked concurrently (a few unreachable ones must not stall a large
/// cluster for their timeouts one after the other); the results are in process-group
/// order, so the writes are the same whatever answered first.
async fn ask_sidecars(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    plan: &PodConfigPlan<'_>,
) -> Vec<PodConfigResult> {
    let cluster = snapshot.cluster();
    let (namespace, name) = (snapshot.namespace(), snapshot.name());
    let memo = &ctx.pod_config;
    let uid = |pod: &Pod| pod.metadata.uid.clone().unwrap_or_else(|| pod.name_any());
    let memo_of = |c: &Candidate<'_>| memo.get(namespace, name, &uid(c.pod), &c.desired_hash);
    let staged = plan.staged.as_deref();
    let mut results: Vec<Option<PodConfigResult>> = vec![None; plan.candidates.len()];
    let mut projected = true;
    if staged.is_none() {
        for (index, candidate) in plan.candidates.iter().enumerate() {
            let known = memo_of(candidate);
            if known.attempts >= PROBE_LIMIT {
                continue;
            }
            let (result, learned) =
                check_candidate(ctx, cluster, candidate, &plan.cluster_file, staged, known).await;
            memo.put(namespace, name, &uid(candidate.pod), learned);
            let decisive = !matches!(result, PodConfigResult::Unreachable(_));
            projected = !matches!(
                result,
                PodConfigResult::Incorrect(_) | PodConfigResult::Unreadable(_)
            );
            if let Some(slot) = results.get_mut(index) {
                *slot = Some(result);
            }
            if decisive {
                break;
            }
        }
    }
    if projected {
        let mut indices = Vec::new();
        let mut rest: Vec<BoxFuture<'_, (PodConfigResult, PodMemo)>> = Vec::new();
        for (index, c) in plan.candidates.iter().enumerate() {
            if results.get(index).is_some_and(Option::is_none) {
                indices.push(index);
                let known = memo_of(c);
                rest.push(
                    check_candidate(ctx, cluster, c, &plan.cluster_file, staged, known).boxed(),
                );
            }
        }
        let answers: Vec<(PodConfigResult, PodMemo)> = futures::stream::iter(rest)
            .buffered(ctx.settings.sidecar_concurrency.max(1))
            .collect()
            .await;
        for (index, (result, learned)) in indices.into_iter().zip(answers) {
            if let Some(candidate) = plan.candidates.get(index) {
                memo.put(namespace, name, &uid(candidate.pod), learned);
            }
            if let Some(slot) = results.get_mut(index) {
                *slot = Some(result);
            }
        }
    }
    let live: std::collections::BTreeSet<&str> = snapshot
        .pods()
        .filter_map(|pod| pod.metadata.uid.as_deref())
        .collect();
    memo.retain(namespace, name, &live);
    results
        .into_iter()
        .map(|result| result.unwrap_or(PodConfigResult::NotAsked))
        .collect()
}

#[async_trait]
impl Subreconciler for UpdatePodConfig {
    fn name(&self) -> &'static str {
        "UpdatePodConfig"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        snapshot: &ClusterSnapshot,
        io: &mut PassIo,
        _facts: &mut crate::controller::plan::PassFacts,
    ) -> Result<StepOutcome, StepError> {
        let Some(plan) = decide(snapshot)? else {
            return Ok(StepOutcome::Continue);
        };
        let results = ask_sidecars(ctx, snapshot, &plan).await;
        for (candidate, result) in plan.candidates.iter().zip(&results) {
            let group = candidate.group.process_group_id.as_str();
            match result {
                PodConfigResult::Confirmed | PodConfigResult::NotAsked => {}
                PodConfigResult::Unreachable(message) => {
                    tracing::info!(group, %message, "sidecar unreachable");
                }
                PodConfigResult::Incorrect(message) => {
                    tracing::debug!(group, %message, "configuration not yet in place");
                }
                PodConfigResult::Unreadable(message) => {
                    tracing::warn!(group, %message, "monitor annotations unreadable");
                }
            }
        }
        let outcome = conclude(&plan, &results);
        let unreadable: Vec<&str> = results
            .iter()
            .filter_map(|result| match result {
                PodConfigResult::Unreadable(message) => Some(message.as_str()),
                _ => None,
            })
            .collect();
        if !unreadable.is_empty() {
            // Users must see which pod and annotation: the monitor is asked to report
            // again below, and nothing is deleted because of it.
            publish(
                ctx,
                snapshot.cluster(),
                EventReason::MonitorAnnotationsUnreadable,
                self.name(),
                unreadable.join("; "),
            )
            .await;
        }
        for pod in outdated_monitors(&plan, &results) {
            let name = pod.name_any();
            let seen = ctx.clock.now_unix().to_string();
            let patch = serde_json::json!({"metadata": {"annotations": {
                OUTDATED_CONFIG_MAP_ANNOTATION: seen
            }}});
            io.patch::<Pod>(
                ctx,
                &name,
                &patch,
                format!("ask the monitor of pod {name} to reload"),
            )
            .await?;
        }
        for (name, hash) in &outcome.annotate {
            // A monitor that confirmed needs no nudge any more (null removes it).
            let patch = serde_json::json!({"metadata": {"annotations": {
                LAST_APPLIED_CONFIG_MAP_ANNOTATION: hash,
                OUTDATED_CONFIG_MAP_ANNOTATION: null
            }}});
            io.patch::<Pod>(ctx, name, &patch, format!("annotate pod {name}"))
                .await?;
        }
        // Conditions only: nothing later depends on their being stored before the end
        // of the pass.
        io.stage_mutations(snapshot, &outcome.mutations)?;
        let Some(reason) = outcome.waiting_reason() else {
            return Ok(StepOutcome::Continue);
        };
        if outcome.incorrect > 0 {
            return Ok(StepOutcome::Requeue {
                delay: ctx.settings.config_map_wait,
                reason,
            });
        }
        // Pods that do not run or whose sidecar does not answer (a node down) cannot
        // take the configuration now; they must not hold back the later steps, which
        // replace and remove such groups.
        Ok(StepOutcome::DelayedRequeue {
            delay: ctx.settings.kube_wait,
            reason,
        })
    }
}

#[cfg(test)]
#[path = "update_pod_config_tests.rs"]
mod tests;
