//! UpdatePodConfig: brings every pod's dynamic configuration (cluster file and
//! fdbmonitor.conf) up to date through its agent (sidecar-api.md "How the operator uses
//! it"): it decides which pods to ask and plans the question
//! ([`Action::AskPodAgents`], which the executor runs: `executor/pod_agents.rs`), then
//! concludes from the answers: confirmed pods get the `last-applied-config-map`
//! annotation, unreachable sidecars SidecarUnreachable, content the kubelet has not
//! projected yet IncorrectConfigMap; both requeue. A pod whose new conf needs a variable
//! its spec does not give yet (`$FDB_DNS_NAME` once `useDNSInClusterFile` is turned on)
//! gets IncorrectConfigMap too, but its wait does not end the pass: UpdatePods, later in
//! it, gives the pod that variable.
//!
//! During an incompatible upgrade (docs/upgrades.md, "Incompatible upgrades" step 3) a pod
//! is confirmed only once its sidecar also answers `is_present/bin/<target>/fdbserver`
//! (after a `copy_binaries` when it does not yet); the desired hash then includes the
//! staged binary (see [`crate::controller::model::desired::upgrade_staging_hash`]), so
//! every pod is asked again, and the requeue reason names the pods still waiting.

pub(crate) mod monitor;

pub(crate) use self::monitor::{monitor_report_unreadable, outdated_monitors};
pub(crate) use crate::controller::pod_agent::config_query::{
    Candidate, PodConfigPlan, PodConfigQuery, PodConfigResult,
};
use async_trait::async_trait;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ProcessGroupConditionType;
use fdb_shared::monitor_conf::process_config::OUTDATED_CONFIG_MAP_ANNOTATION;
use kube::ResourceExt;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::model::desired::ConfigHashes;
use crate::controller::model::pod::{LAST_APPLIED_CONFIG_MAP_ANNOTATION, pod_image_type};
use crate::controller::object_kind::ObjectKind;
use crate::controller::objects::pod_is_running;
use crate::controller::pass::facts::Answers;
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict, Wait, WaitOn};
use crate::controller::removals::kept_running;
use crate::controller::snapshot::{ClusterSnapshot, GroupView};
use crate::controller::status::mutations::StatusMutation;
use crate::controller::upgrade::{pending_upgrade_target, restarted_by_the_kill, staged_fdbserver};

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct UpdatePodConfig;

/// Decides which pods to ask (`None` before there is a connection string).
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> Result<Option<PodConfigPlan<'_>>, StepError> {
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
    // A group whose pod confirmed its conf is asked about again only when its inputs
    // change (`snapshot/clean_memo.rs`; issue 37).
    let mut clean = snapshot.clean_groups("UpdatePodConfig");
    for group in groups {
        if clean.was_clean(&group) {
            // Every test run checks the memo against the question asked again.
            debug_assert!(
                matches!(
                    confirmation(cluster, &group, &mut ConfigHashes::default()),
                    Ok(Some((_, true)))
                ),
                "{} was remembered with its conf confirmed",
                group.id()
            );
            continue;
        }
        let (Some(pod), Some((desired_hash, confirmed))) = (
            group.pod_head(),
            confirmation(cluster, &group, &mut hashes)?,
        ) else {
            continue;
        };
        if confirmed {
            clean.mark_clean(&group);
            continue;
        }
        // A pod in a terminal phase never runs again: DeleteTerminalPods recreates it
        // (with its own back-off), so there is nothing to wait for here.
        if crate::controller::objects::is_terminal(pod) {
            continue;
        }
        if !pod_is_running(pod) {
            plan.not_running += 1;
            continue;
        }
        // A candidate is asked through its sidecar or monitor, which read its spec.
        let Some(pod) = group.pod() else {
            continue;
        };
        plan.candidates.push(Candidate {
            group: group.status,
            pod,
            desired_hash,
        });
    }
    Ok(Some(plan))
}

/// The conf hash `group`'s pod should have, and whether the pod confirmed it (`None`:
/// no pod, or no conf for it). A confirmed pod is asked again only when its monitor's
/// report cannot be read (someone overwrote it): the pod is named, and its monitor asked
/// to report.
fn confirmation(
    cluster: &FoundationDBCluster,
    group: &GroupView<'_>,
    hashes: &mut ConfigHashes,
) -> Result<Option<(String, bool)>, StepError> {
    let Some(pod) = group.pod_head() else {
        return Ok(None);
    };
    let Some(desired_hash) = hashes.of(
        cluster,
        group.status,
        group.servers_per_pod(),
        pod_image_type(pod),
    )?
    else {
        return Ok(None);
    };
    let confirmed = pod.annotations().get(LAST_APPLIED_CONFIG_MAP_ANNOTATION)
        == Some(&desired_hash)
        && !monitor_report_unreadable(pod);
    Ok(Some((desired_hash, confirmed)))
}

/// What the sidecars' answers mean.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PodConfigOutcome {
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
    /// The pods whose new conf needs their pod update first, with why: UpdatePods must
    /// still run in this pass, so they do not end it.
    pub awaiting_pod_update: Vec<String>,
}

impl PodConfigOutcome {
    /// Why the pass must come back, if it must.
    pub(crate) fn waiting_reason(&self) -> Option<String> {
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
        if let Some(first) = self.awaiting_pod_update.first() {
            reasons.push(format!(
                "{} pods need their pod update before their new conf, {first} first",
                self.awaiting_pod_update.len()
            ));
        }
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }
}

/// Concludes from the answers (one per candidate, in order): confirmed pods get their
/// annotation, unreachable sidecars SidecarUnreachable (cleared once reachable), pods
/// whose files still differ IncorrectConfigMap.
pub(crate) fn conclude(plan: &PodConfigPlan<'_>, results: &[PodConfigResult]) -> PodConfigOutcome {
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
            PodConfigResult::NeedsPodUpdate(message) => {
                outcome.mutations.push(StatusMutation::SetCondition {
                    group: candidate.group.process_group_id.clone(),
                    condition: ProcessGroupConditionType::IncorrectConfigMap,
                });
                outcome
                    .awaiting_pod_update
                    .push(format!("{} ({message})", candidate.pod.name_any()));
            }
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

/// The verdict once the agents answered (`results`, one per candidate of `plan`):
/// outdated monitors get a nudge, confirmed pods their annotation (a monitor that
/// confirmed loses its nudge), conditions are staged; then a wait while any pod did not
/// confirm: ending the pass while the kubelet has not projected the ConfigMap, letting
/// the later steps act when pods do not run or their sidecars do not answer (a node
/// down: the later steps replace and remove such groups).
pub(crate) fn verdict_from(plan: &PodConfigPlan<'_>, results: &[PodConfigResult]) -> Verdict {
    let outcome = conclude(plan, results);
    let mut actions: Vec<Action> = Vec::new();
    let unreadable: Vec<&str> = results
        .iter()
        .filter_map(|result| match result {
            PodConfigResult::Unreadable(message) => Some(message.as_str()),
            _ => None,
        })
        .collect();
    if !unreadable.is_empty() {
        // Users must see which pod and annotation: the monitor is asked to report again
        // below, and nothing is deleted because of it.
        actions.push(Action::Event {
            reason: EventReason::MonitorAnnotationsUnreadable,
            action: "UpdatePodConfig".to_owned(),
            note: unreadable.join("; "),
        });
    }
    actions.extend(
        outdated_monitors(plan, results)
            .into_iter()
            .map(|pod| Action::NudgeMonitor(pod.name_any())),
    );
    for (name, hash) in &outcome.annotate {
        // A monitor that confirmed needs no nudge any more (null removes it).
        actions.push(Action::Patch {
            kind: ObjectKind::Pods,
            name: name.clone(),
            patch: serde_json::json!({"metadata": {"annotations": {
                LAST_APPLIED_CONFIG_MAP_ANNOTATION: hash,
                OUTDATED_CONFIG_MAP_ANNOTATION: null
            }}}),
        });
    }
    // Conditions only: nothing later depends on their being stored before the end of
    // the pass.
    if !outcome.mutations.is_empty() {
        actions.push(Action::StageStatus(outcome.mutations.clone()));
    }
    let wait = outcome.waiting_reason().map(|reason| {
        if outcome.incorrect > 0 {
            Wait::new(WaitOn::ConfigMap, reason)
        } else {
            Wait::independent(WaitOn::Kubernetes, reason)
        }
    });
    Verdict::plain(actions).then(wait)
}

#[async_trait]
impl Subreconciler for UpdatePodConfig {
    fn name(&self) -> &'static str {
        "UpdatePodConfig"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    /// Asks the candidates' agents (the answers come to [`Self::conclude`]); with none to
    /// ask, waits for the pods that do not run yet.
    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        let Some(plan) = decide(snapshot)? else {
            return Ok(Verdict::Continue);
        };
        if plan.candidates.is_empty() {
            return Ok(verdict_from(&plan, &[]));
        }
        Ok(Verdict::plain([Action::AskPodAgents(PodConfigQuery::of(
            &plan,
        ))]))
    }

    /// The answers of the agents, as [`verdict_from`] turns them into writes and a wait
    /// (the plan is decided again from the same snapshot: the query asked its candidates
    /// in that order).
    fn conclude(
        &self,
        snapshot: &ClusterSnapshot,
        _facts: &PassFacts,
        answers: &mut Answers,
    ) -> Result<Verdict, StepError> {
        let Some(answers) = answers.pod_config_answers.take() else {
            return Ok(Verdict::Continue);
        };
        let Some(plan) = decide(snapshot)? else {
            return Ok(Verdict::Continue);
        };
        Ok(verdict_from(&plan, &answers))
    }
}

#[cfg(test)]
mod tests;
