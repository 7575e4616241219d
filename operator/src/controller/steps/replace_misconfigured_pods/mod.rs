//! ReplaceMisconfiguredPods (docs/operator.md, "The steps"): marks for removal (so a
//! replacement with the new settings is added, and the old group is excluded and removed)
//! the live process groups with a change that only a new process group can apply: ID
//! prefix, public IP source, servers per pod, node selector, PVC spec, bigger resources
//! with `replaceInstancesWhenResourcesChange`, file ownership with
//! `--replace-on-security-context-change`, image type (the classification is
//! [`crate::controller::model::replace_only`], shared with UpdatePods, which leaves these
//! groups alone).
//!
//! - `automationOptions.maxConcurrentReplacements` (default unlimited) caps the groups in
//!   flight: marked and not yet fully excluded, whatever marked them. When the budget is
//!   used up, the pass goes on (the removals in flight must progress) and ends with a
//!   requeue naming the groups in flight.
//! - `automationOptions.podUpdateStrategy` only says how in-place pod changes roll out
//!   (UpdatePods): a replace-only change is replaced under every strategy, because
//!   deleting the pod cannot apply it. A group with both kinds of change is replaced
//!   once, carrying both.
//! - While TLS is turned on or off (`status.requiredAddresses` holds both kinds), the
//!   replacements wait, as UpdatePods' pod updates and the Go operator's replacements
//!   do: a new group, its exclusions and a coordinator change in the middle of the
//!   migration would be more changes at once than the migration's bounces account for.
//!   The later steps still run, so the migration goes on.
//! - While an incompatible upgrade is pending (staging, the cluster-wide kill, its
//!   retries), they wait too, as the Go operator's do: a replacement then adds a group
//!   that must be staged before the kill can go, and its exclusion or coordinator change
//!   is a recovery on top of the kill's.

use async_trait::async_trait;
use fdb_shared::FdbVersion;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::model::process_config::listens_on_both;
use crate::controller::model::replace_only::{
    ReplaceOnlyChange, ReplacePolicy, replace_only_change,
};
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict, Wait, WaitOn};
use crate::controller::removals::in_flight;
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::status::mutations::StatusMutation;
use crate::controller::versions::change::pending_upgrade_target;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ReplaceMisconfiguredPods;

/// What ReplaceMisconfiguredPods does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct MisconfigurationDecision {
    /// Groups to mark, with their change.
    pub replace: Vec<(String, ReplaceOnlyChange)>,
    /// Groups that wait for `maxConcurrentReplacements`, with their change.
    pub waiting: Vec<(String, ReplaceOnlyChange)>,
    /// The groups in flight that use up the budget (when something waits).
    pub in_flight: Vec<String>,
    /// Whether every candidate waits for the TLS migration (then they are all in
    /// `waiting`).
    pub tls_migration: bool,
    /// The target of the incompatible upgrade every candidate waits for (then they are
    /// all in `waiting`).
    pub upgrade: Option<FdbVersion>,
}

impl MisconfigurationDecision {
    /// The requeue reason while groups wait, naming the groups that block them.
    pub(crate) fn wait_reason(&self) -> Option<String> {
        let (first, _) = self.waiting.first()?;
        if let Some(target) = &self.upgrade {
            return Some(format!(
                "{} process groups wait for replacement (first {first}): they wait for the upgrade to {target}",
                self.waiting.len()
            ));
        }
        if self.tls_migration {
            return Some(format!(
                "{} process groups wait for replacement (first {first}): they wait for the TLS migration (status.requiredAddresses holds both kinds)",
                self.waiting.len()
            ));
        }
        Some(format!(
            "{} process groups wait for replacement (first {first}): maxConcurrentReplacements is used up by {}",
            self.waiting.len(),
            if self.in_flight.is_empty() {
                "the setting itself (0)".to_owned()
            } else {
                self.in_flight.join(", ")
            }
        ))
    }
}

/// Decides from the snapshot.
pub(crate) fn decide(
    snapshot: &ClusterSnapshot,
    policy: ReplacePolicy,
) -> Result<MisconfigurationDecision, StepError> {
    let mut decision = MisconfigurationDecision::default();
    let mut candidates = Vec::new();
    // The answer depends on the policy too: one memo per policy.
    let mut clean = snapshot.clean_groups(if policy.replace_on_security_context_change {
        "ReplaceMisconfiguredPods/security-context"
    } else {
        "ReplaceMisconfiguredPods"
    });
    for group in snapshot.live_groups() {
        if clean.was_clean(&group) {
            // Every test run checks the memo against the question asked again.
            debug_assert!(
                matches!(replace_only_change(snapshot, &group, policy), Ok(None)),
                "{} was remembered without a replace-only change",
                group.id()
            );
            continue;
        }
        let change =
            replace_only_change(snapshot, &group, policy).map_err(|e| StepError::Build {
                what: format!("desired objects of {}", group.id()),
                message: e.to_string(),
            })?;
        match change {
            Some(change) => candidates.push((group.id().to_owned(), change)),
            None => clean.mark_clean(&group),
        }
    }
    drop(clean);
    if candidates.is_empty() {
        return Ok(decision);
    }
    if listens_on_both(snapshot.cluster()) {
        decision.waiting = candidates;
        decision.tls_migration = true;
        return Ok(decision);
    }
    if let Some(target) = pending_upgrade_target(snapshot.cluster()) {
        decision.waiting = candidates;
        decision.upgrade = Some(target);
        return Ok(decision);
    }
    let busy = in_flight(snapshot);
    let slots = match snapshot
        .spec()
        .automation_options
        .max_concurrent_misconfiguration_replacements()
    {
        None => usize::MAX,
        Some(max) => usize::try_from(max).unwrap_or(0).saturating_sub(busy.len()),
    };
    let mut candidates = candidates.into_iter();
    decision.replace = candidates.by_ref().take(slots).collect();
    decision.waiting = candidates.collect();
    if !decision.waiting.is_empty() {
        decision.in_flight = busy;
    }
    Ok(decision)
}

fn describe(groups: &[(String, ReplaceOnlyChange)]) -> String {
    let text: Vec<String> = groups
        .iter()
        .map(|(group, change)| format!("{group}: {change}"))
        .collect();
    text.join("; ")
}

/// The plan of `decision`: the marks (written at once: the next steps add the
/// replacements), the Events, and a wait of its own when replacements wait for the budget.
pub(crate) fn verdict(decision: &MisconfigurationDecision) -> Verdict {
    let mut actions = Vec::new();
    if !decision.replace.is_empty() {
        // Only live groups are candidates, so the marks always change the status.
        actions.push(Action::WriteStatus(
            decision
                .replace
                .iter()
                .map(|(group, _)| StatusMutation::MarkForRemoval {
                    group: group.clone(),
                })
                .collect(),
        ));
        actions.push(Action::Event {
            reason: EventReason::ReplacementChosen,
            action: "ReplaceMisconfiguredPods".to_owned(),
            note: format!(
                "replacing misconfigured process groups: {}",
                describe(&decision.replace)
            ),
        });
    }
    let reason = decision.wait_reason();
    if let Some(reason) = &reason {
        tracing::info!(%reason, waiting = %describe(&decision.waiting), "replacements wait");
    }
    // The Event is for the budget the user set; the TLS migration and the upgrade end
    // on their own.
    let held = decision.tls_migration || decision.upgrade.is_some();
    if let Some(reason) = reason.as_ref().filter(|_| !held) {
        actions.push(Action::Event {
            reason: EventReason::ReplacementBlocked,
            action: "ReplaceMisconfiguredPods".to_owned(),
            note: reason.clone(),
        });
    }
    // The removals in flight free the budget, so the later steps must still run.
    Verdict::plain(actions).then(reason.map(|reason| Wait::independent(WaitOn::Database, reason)))
}

#[async_trait]
impl Subreconciler for ReplaceMisconfiguredPods {
    fn name(&self) -> &'static str {
        "ReplaceMisconfiguredPods"
    }

    fn barrier(&self) -> Barrier {
        Barrier::GoesOn
    }

    fn decide(&self, snapshot: &ClusterSnapshot, facts: &PassFacts) -> Result<Verdict, StepError> {
        Ok(verdict(&decide(snapshot, facts.settings.replace_policy)?))
    }
}

#[cfg(test)]
mod tests;
