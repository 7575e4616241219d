//! ExcludeInstances (docs/operator.md, "The steps"): excludes the processes of groups
//! marked for removal and records `exclusionTimestamp` once their exclusion is complete
//! (see
//! [`exclusions`] for the targets and the completion rule).
//!
//! A group is excluded only when:
//! - it has targets (a locality, or at least one address ever seen);
//! - it hosts no current coordinator (ChangeCoordinators moves them first; this step
//!   leaves the group for a later pass);
//! - the database is available, its last recovery is at least 120 s old, and no live
//!   group of its class went missing less than 5 minutes ago (`safety::paced` and
//!   `MISSING_PROCESSES_GRACE_SECONDS`);
//! - for a group still serving, its class's budget: the live groups of its class that
//!   report and are not excluded are at least the desired count, i.e. replacements are
//!   up before the process they replace is drained. A group that does not serve costs
//!   nothing to exclude.
//!
//! Groups in `processGroupsToRemoveWithoutExclusion` are never excluded.
//!
//! On a database shared with other operator instances (and exclusions by locality),
//! the groups that pass these gates are only marked ready in the database's exclusion
//! lists; one instance excludes every instance's ready groups at once
//! ([`crate::controller::safety::exclusion_sync`]), so that replacing the transaction
//! groups of every instance costs one recovery, not one per instance.

use std::time::Duration;

use super::Subreconciler;
use crate::controller::coordinators::change::{self, CoordinatorAction};
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::pass::facts::Answers;
use crate::controller::pass::plan::{
    Action, Barrier, PassFacts, Plan, Planned, Verdict, Wait, WaitOn,
};
use crate::controller::removals::exclusion_decision::{ExcludeDecision, decide};
use crate::controller::removals::exclusion_retries::retry_wait;
use crate::controller::removals::{exclusions, placement, skips_exclusion};
use crate::controller::safety::exclusion_sync::{
    SharedExclusion, decide_shared_exclusion, shares_exclusions,
};
use crate::controller::safety::{self, LockedAction};
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::status::mutations::StatusMutation;
use crate::fdb::ExclusionTarget;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ExcludeInstances;

/// What of the group makes excluding it cause a recovery, if anything.
fn exclusion_recovery(snapshot: &ClusterSnapshot, id: &str) -> Option<String> {
    safety::causes_recovery(snapshot, &snapshot.group(id)?)
}

/// The order that costs the fewest recoveries: when a coordinator must move off a
/// group marked for removal (its exclusion waits for that) and the coordinators can move
/// now, the exclusions that cause a recovery wait too, so that after the coordinators
/// change one recovery excludes every group, instead of one recovery for these, one for
/// the coordinators and one more for the group that hosted a coordinator. Exclusions
/// that cause no recovery (storage) go on. When the coordinators cannot move now
/// (nowhere to place them), nothing waits for them.
pub(crate) fn order_after_coordinators(
    snapshot: &ClusterSnapshot,
    facts: &PassFacts,
    mut decision: ExcludeDecision,
) -> ExcludeDecision {
    let nothing_to_order = decision.exclude.is_empty()
        || !snapshot.groups().any(|g| {
            g.is_marked_for_removal()
                && g.status.exclusion_timestamp.is_none()
                && placement::hosted_coordinator(snapshot, &g).is_some()
        });
    if nothing_to_order {
        return decision;
    }
    let recovering = |id: &str| exclusion_recovery(snapshot, id).is_some();
    if !decision.exclude.iter().any(|(id, _)| recovering(id)) {
        return decision;
    }
    let movable = matches!(
        change::decide(snapshot, facts),
        CoordinatorAction::Change { .. }
    );
    if !movable {
        return decision;
    }
    let (held, go): (Vec<_>, Vec<_>) = std::mem::take(&mut decision.exclude)
        .into_iter()
        .partition(|(id, _)| recovering(id));
    decision.exclude = go;
    decision.waiting.extend(held.into_iter().map(|(id, _)| {
        (
            id,
            "not excluded: the coordinators move first, so one recovery excludes every group"
                .to_owned(),
        )
    }));
    decision
}

/// The actions that exclude `groups` (this instance's, with their targets, recorded in
/// its status first) and `others` (groups of other instances of the database, from the
/// exclusion lists) in one command under the lock.
fn exclusion_actions(
    snapshot: &ClusterSnapshot,
    step: &str,
    groups: &[(String, Vec<ExclusionTarget>)],
    others: &[(String, Vec<ExclusionTarget>)],
) -> Vec<Planned> {
    let all = || groups.iter().chain(others);
    let targets: Vec<ExclusionTarget> = all().flat_map(|(_, t)| t.iter().cloned()).collect();
    let text: Vec<String> = targets.iter().map(ToString::to_string).collect();
    let names: Vec<&str> = all().map(|(g, _)| g.as_str()).collect();
    // Another instance's group is counted as a recovery: this instance cannot tell its
    // class, and pacing a storage exclusion costs only time.
    let recovering: Vec<String> = groups
        .iter()
        .filter_map(|(id, _)| exclusion_recovery(snapshot, id))
        .chain(
            others
                .iter()
                .map(|(id, _)| format!("{id} of another operator instance")),
        )
        .collect();
    let recovery = (!recovering.is_empty()).then(|| format!("excluded {}", recovering.join(", ")));
    // Recorded before the command: whatever changes later (options, version, an
    // operator restart), exactly these targets are included again. Paced and locked
    // with the exclusion, so they are never recorded without it.
    let records: Vec<StatusMutation> = groups
        .iter()
        .map(|(group, targets)| StatusMutation::RecordExcludedTargets {
            group: group.clone(),
            targets: targets.iter().map(ToString::to_string).collect(),
        })
        .collect();
    let mut actions = Vec::new();
    if !records.is_empty() {
        actions.push(
            Planned::locked(Action::WriteStatus(records), LockedAction::Exclude)
                .recovering(recovery.clone()),
        );
    }
    actions.push(
        Planned::locked(Action::Exclude(targets), LockedAction::Exclude).recovering(recovery),
    );
    actions.push(Planned::plain(Action::Event {
        reason: EventReason::ProcessesExcluded,
        action: step.to_owned(),
        note: format!("excluded {} ({})", names.join(", "), text.join(" ")),
    }));
    actions
}

/// The record of complete exclusions, with their targets when none were recorded (the
/// group was excluded by another instance of the database, through the lists).
fn completion_actions(snapshot: &ClusterSnapshot, step: &str, complete: &[String]) -> Vec<Planned> {
    if complete.is_empty() {
        return Vec::new();
    }
    let mut mutations: Vec<StatusMutation> = Vec::new();
    for id in complete {
        let unrecorded = snapshot
            .group(id)
            .filter(|g| g.status.excluded_targets.is_empty());
        if let Some(Ok(targets)) = unrecorded.map(|g| exclusions::targets(snapshot, &g)) {
            mutations.push(StatusMutation::RecordExcludedTargets {
                group: id.clone(),
                targets: targets.iter().map(ToString::to_string).collect(),
            });
        }
        mutations.push(StatusMutation::RecordExclusion { group: id.clone() });
    }
    vec![
        Planned::plain(Action::WriteStatus(mutations)),
        Planned::plain(Action::Event {
            reason: EventReason::ExclusionComplete,
            action: step.to_owned(),
            note: format!("fully excluded: {}", complete.join(", ")),
        }),
    ]
}

/// The wait of `groups`' exclusion while the back-off after FoundationDB's last refusal
/// runs ([`crate::controller::removals::exclusion_retries`]): independent, so the later
/// steps go on.
fn refusal_wait(
    snapshot: &ClusterSnapshot,
    facts: &PassFacts,
    groups: &[(String, Vec<ExclusionTarget>)],
) -> Option<Wait> {
    let record = facts.remembered.exclusion_refusal.as_ref()?;
    let left = retry_wait(Some(record), snapshot.now_unix())?;
    let names: Vec<&str> = groups.iter().map(|(g, _)| g.as_str()).collect();
    Some(Wait::independent(
        WaitOn::After(left),
        format!(
            "{} wait to be excluded: {} ({} refusal(s) in a row); trying again in {}s",
            names.join(", "),
            record.refusal.describe(),
            record.refusals,
            left.as_secs()
        ),
    ))
}

/// Whether this pass excludes through the database's lists.
fn shared(snapshot: &ClusterSnapshot, facts: &PassFacts) -> bool {
    facts.rules.shared_exclusions && shares_exclusions(snapshot)
}

/// This instance's groups that need the exclude command: marked for removal, not
/// skipping the exclusion, and not every target in the exclusion list yet.
fn needing_exclusion(snapshot: &ClusterSnapshot) -> Vec<String> {
    let db = safety::database(snapshot).ok();
    snapshot
        .groups()
        .filter(|g| {
            g.is_marked_for_removal()
                && g.status.exclusion_timestamp.is_none()
                && !skips_exclusion(snapshot, g)
        })
        .filter(|g| match (exclusions::targets(snapshot, g), db) {
            (Ok(targets), Some(db)) => !targets.iter().all(|t| exclusions::is_listed(db, t)),
            _ => true,
        })
        .map(|g| g.id().to_owned())
        .collect()
}

impl Subreconciler for ExcludeInstances {
    fn name(&self) -> &'static str {
        "ExcludeInstances"
    }

    fn barrier(&self) -> Barrier {
        Barrier::GoesOn
    }

    /// The exclusion of this instance's groups; shared with the other instances of the
    /// database ([`crate::controller::safety::exclusion_sync`]), the lists are written
    /// first and the exclusion left to [`Subreconciler::conclude`].
    fn decide(&self, snapshot: &ClusterSnapshot, facts: &PassFacts) -> Result<Verdict, StepError> {
        let decision = order_after_coordinators(snapshot, facts, decide(snapshot));
        for (group, reason) in &decision.waiting {
            tracing::info!(step = self.name(), %group, %reason, "exclusion waits");
        }
        let mut actions = completion_actions(snapshot, self.name(), &decision.complete);
        let mut held = None;
        if shared(snapshot, facts) {
            // Every pass, also with nothing to list: ChangeCoordinators reads the
            // other instances' groups from the lists.
            let pending = needing_exclusion(snapshot);
            let ready = decision.exclude.iter().map(|(g, _)| g.clone()).collect();
            actions.push(Planned::plain(Action::SyncExclusionLists {
                pending,
                ready,
            }));
        } else if !decision.exclude.is_empty() {
            match refusal_wait(snapshot, facts, &decision.exclude) {
                Some(wait) => held = Some(wait),
                None => actions.extend(exclusion_actions(
                    snapshot,
                    self.name(),
                    &decision.exclude,
                    &[],
                )),
            }
        }
        if actions.is_empty() {
            return Ok(held.map_or(Verdict::Continue, Verdict::Wait));
        }
        let groups: Vec<&str> = decision.exclude.iter().map(|(g, _)| g.as_str()).collect();
        let mut plan = Plan::new(
            actions,
            format!("{} wait to be excluded: ", groups.join(", ")),
        );
        plan.then = held;
        Ok(Verdict::Act(plan))
    }

    /// Shared exclusions: once the lists were written and read, when this instance has
    /// groups ready, the exclusion of every ready group of the database if the lists
    /// allow it, else the wait.
    fn conclude(
        &self,
        snapshot: &ClusterSnapshot,
        facts: &PassFacts,
        answers: &mut Answers,
    ) -> Result<Verdict, StepError> {
        // Left in the facts for ChangeCoordinators, which places no coordinator on a
        // group another instance listed.
        let lists = answers.exclusion_lists.clone();
        if !shared(snapshot, facts) {
            return Ok(Verdict::Continue);
        }
        let decision = order_after_coordinators(snapshot, facts, decide(snapshot));
        if decision.exclude.is_empty() {
            return Ok(Verdict::Continue);
        }
        // The waits let the later steps (coordinators, removals) go on: they do not
        // depend on this exclusion (RemovePods waits for it).
        let Some(lists) = lists else {
            return Ok(Verdict::Wait(Wait::independent(
                WaitOn::Database,
                "process groups wait to be excluded; waiting to read the database's exclusion lists",
            )));
        };
        let owner = snapshot.spec().process_group_id_prefix();
        let now = snapshot.now_unix();
        match decide_shared_exclusion(&lists, owner, &decision.exclude, now) {
            SharedExclusion::Wait {
                reason,
                after_seconds,
            } => Ok(Verdict::Wait(Wait::independent(
                WaitOn::After(Duration::from_secs(after_seconds.max(1))),
                reason,
            ))),
            SharedExclusion::Exclude { groups, .. }
                if let Some(wait) = refusal_wait(snapshot, facts, &groups) =>
            {
                Ok(Verdict::Wait(wait))
            }
            SharedExclusion::Exclude { groups, served } => {
                let (own, others): (Vec<_>, Vec<_>) = groups
                    .into_iter()
                    .partition(|(g, _)| snapshot.group(g).is_some());
                let mut actions = exclusion_actions(snapshot, self.name(), &own, &others);
                // After the exclusion only: entries left by a refused or failed one
                // make the next pass try again.
                actions.push(Planned::plain(Action::ClearExclusionEntries(served)));
                let names: Vec<&str> = own.iter().chain(&others).map(|(g, _)| g.as_str()).collect();
                Ok(Verdict::Act(Plan::new(
                    actions,
                    format!("{} wait to be excluded: ", names.join(", ")),
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests;
