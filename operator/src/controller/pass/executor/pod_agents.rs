//! How the executor asks the pods' agents to take the desired configuration and confirm
//! it ([`Action::AskPodAgents`](crate::controller::pass::plan::Action::AskPodAgents), planned by
//! UpdatePodConfig): for split pods the HTTP sidecar's protocol (sidecar-api.md "How the
//! operator uses it": substitutions -> expected conf; check_hash, copy, check again; and
//! during an incompatible upgrade `is_present`/`copy_binaries` of the staged binary), for
//! unified pods the monitor's annotations. What each pod taught (substitutions, copies
//! that keep failing) is kept in the operator's memo between passes.

use std::collections::BTreeMap;

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::sidecar::protocol::{CLUSTER_FILE, MONITOR_CONF_FILE};
use fdb_shared::sidecar::{SidecarApi, SidecarClientError};
use futures::future::BoxFuture;
use futures::{FutureExt as _, StreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::controller::context::Context;
use crate::controller::model::config_map::{expected_monitor_conf, sha256_hex};
use crate::controller::model::pod::live_sidecar_image;
use crate::controller::model::pod::{expected_substitutions, pod_servers_per_pod};
use crate::controller::pod_agent::PodAgent;
use crate::controller::pod_agent::config_memo::PodMemo;
use crate::controller::pod_agent::config_query::{
    Candidate, PodConfigPlan, PodConfigQuery, PodConfigResult, monitor_result,
};
use crate::controller::snapshot::ClusterSnapshot;

fn classify(error: SidecarClientError) -> PodConfigResult {
    if error.is_unreachable() {
        PodConfigResult::Unreachable(fdb_shared::error_chain::chain_text(&error))
    } else {
        PodConfigResult::Incorrect(fdb_shared::error_chain::chain_text(&error))
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
            .map_err(|error| fdb_shared::error_chain::chain_text(&error))
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
async fn check_pod(
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
        Ok(Err(error)) => PodConfigResult::NeedsPodUpdate(error),
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

/// How many times a pod may answer "still differs" for one hash before it stops being
/// the probe (a pod whose copy keeps failing must not hold the others back).
pub(super) const PROBE_LIMIT: u32 = 8;

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
        .pod_heads()
        .filter_map(|pod| pod.metadata.uid.as_deref())
        .collect();
    memo.retain(namespace, name, &live);
    results
        .into_iter()
        .map(|result| result.unwrap_or(PodConfigResult::NotAsked))
        .collect()
}

/// The query's candidates as they are in `snapshot` (a group or pod that is gone is
/// left out: its answer is [`PodConfigResult::NotAsked`]).
fn resolve<'a>(
    snapshot: &'a ClusterSnapshot,
    query: &PodConfigQuery,
) -> Vec<Option<Candidate<'a>>> {
    query
        .candidates
        .iter()
        .map(|wanted| {
            let group = snapshot.group(&wanted.group)?;
            group
                .pod_head()
                .filter(|pod| pod.name_any() == wanted.pod)?;
            let pod = group.pod()?;
            Some(Candidate {
                group: group.status,
                pod,
                desired_hash: wanted.desired_hash.clone(),
            })
        })
        .collect()
}

/// Asks the agents of the query's pods; the answers are in the query's order, each
/// logged.
pub(super) async fn ask(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    query: &PodConfigQuery,
) -> Vec<PodConfigResult> {
    let resolved = resolve(snapshot, query);
    let plan = PodConfigPlan {
        cluster_file: query.cluster_file.clone(),
        candidates: resolved.iter().flatten().cloned().collect(),
        not_running: 0,
        staged: query.staged.clone(),
    };
    let mut answers = ask_sidecars(ctx, snapshot, &plan).await.into_iter();
    let results: Vec<PodConfigResult> = resolved
        .iter()
        .map(|found| match found {
            Some(_) => answers.next().unwrap_or(PodConfigResult::NotAsked),
            None => PodConfigResult::NotAsked,
        })
        .collect();
    for (wanted, result) in query.candidates.iter().zip(&results) {
        let group = wanted.group.as_str();
        match result {
            PodConfigResult::Confirmed | PodConfigResult::NotAsked => {}
            PodConfigResult::Unreachable(message) => {
                tracing::info!(group, %message, "sidecar unreachable");
            }
            PodConfigResult::Incorrect(message) => {
                tracing::debug!(group, %message, "configuration not yet in place");
            }
            PodConfigResult::NeedsPodUpdate(message) => {
                tracing::info!(group, %message, "configuration waits for the pod update");
            }
            PodConfigResult::Unreadable(message) => {
                tracing::warn!(group, %message, "monitor annotations unreadable");
            }
        }
    }
    results
}
