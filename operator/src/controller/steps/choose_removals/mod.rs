//! ChooseRemovals (docs/operator.md, "The steps"): marks for removal the groups listed in
//! `processGroupsToRemove` / `processGroupsToRemoveWithoutExclusion`, and, when a class
//! has more live groups than desired, the surplus, chosen so that the survivors span as
//! many zones as possible (see [`choice`]). Marking only sets `removalTimestamp`; the
//! exclusion and the deletions are the later steps' work.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use fdb_shared::api::ProcessClass;
use fdb_shared::cluster_math::desired_process_counts;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::model::pod::parse_any_process_group_id;
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict};
use crate::controller::removals::choice::{self, Candidate};
use crate::controller::removals::placement;
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::status::mutations::StatusMutation;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ChooseRemovals;

/// What ChooseRemovals marks, with why (for the Event).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct RemovalDecision {
    /// The status edits.
    pub mutations: Vec<StatusMutation>,
    /// One line per marked group.
    pub reasons: Vec<String>,
}

/// Decides from the snapshot.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> RemovalDecision {
    let spec = snapshot.spec();
    let mut decision = RemovalDecision::default();
    let mut marked: BTreeSet<String> = BTreeSet::new();
    for group in snapshot.live_groups() {
        let id = group.id();
        let without = spec
            .process_groups_to_remove_without_exclusion
            .iter()
            .any(|g| g == id);
        if without || spec.process_groups_to_remove.iter().any(|g| g == id) {
            marked.insert(id.to_owned());
            decision.mutations.push(StatusMutation::MarkForRemoval {
                group: id.to_owned(),
            });
            if without {
                decision.mutations.push(StatusMutation::SkipExclusion {
                    group: id.to_owned(),
                });
            }
            decision.reasons.push(format!(
                "{id}: listed in {}",
                if without {
                    "processGroupsToRemoveWithoutExclusion"
                } else {
                    "processGroupsToRemove"
                }
            ));
        }
    }
    let desired = desired_process_counts(spec);
    // Candidates (with their zones) are built only for the classes that have more
    // groups than desired: in a steady pass none has (issue 37).
    let mut live_per_class: BTreeMap<ProcessClass, usize> = BTreeMap::new();
    for group in snapshot.live_groups() {
        if !marked.contains(group.id()) {
            *live_per_class
                .entry(group.status.process_class)
                .or_default() += 1;
        }
    }
    let surplus_classes: BTreeSet<ProcessClass> = live_per_class
        .into_iter()
        .filter(|(class, live)| *live > usize::try_from(desired.count(*class)).unwrap_or(0))
        .map(|(class, _)| class)
        .collect();
    let mut by_class: BTreeMap<ProcessClass, Vec<Candidate>> = BTreeMap::new();
    for group in snapshot.live_groups() {
        if marked.contains(group.id()) || !surplus_classes.contains(&group.status.process_class) {
            continue;
        }
        by_class
            .entry(group.status.process_class)
            .or_default()
            .push(Candidate {
                id: group.id().to_owned(),
                zone: placement::zone(&group),
                healthy: group.status.process_group_conditions.is_empty(),
                number: parse_any_process_group_id(group.id()).map_or(u32::MAX, |(_, n)| n),
            });
    }
    for (class, candidates) in by_class {
        let keep = usize::try_from(desired.count(class)).unwrap_or(0);
        if candidates.len() <= keep {
            continue;
        }
        for id in choice::surplus(&candidates, keep) {
            decision.reasons.push(format!(
                "{id}: {class} has {} live process groups, {keep} desired",
                candidates.len()
            ));
            decision
                .mutations
                .push(StatusMutation::MarkForRemoval { group: id });
        }
    }
    decision
}

#[async_trait]
impl Subreconciler for ChooseRemovals {
    fn name(&self) -> &'static str {
        "ChooseRemovals"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        let decision = decide(snapshot);
        if decision.mutations.is_empty() {
            return Ok(Verdict::Continue);
        }
        // Only live groups are marked, so the write always changes the status: the
        // Event follows it. The marks are written at once: ExcludeInstances acts on them.
        Ok(Verdict::plain([
            Action::WriteStatus(decision.mutations),
            Action::Event {
                reason: EventReason::RemovalChosen,
                action: self.name().to_owned(),
                note: decision.reasons.join("; "),
            },
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, group, pod};

    fn marked(decision: &RemovalDecision) -> Vec<String> {
        decision
            .mutations
            .iter()
            .filter_map(|m| match m {
                StatusMutation::MarkForRemoval { group } => Some(group.clone()),
                _ => None,
            })
            .collect()
    }

    fn four_storage(spec: &str) -> Fixture {
        let ids = ["storage-1", "storage-2", "storage-3", "storage-4"];
        let nodes = ["node-a", "node-a", "node-b", "node-c"];
        Fixture::new(spec)
            .groups(ids.map(group))
            .pods(ids.iter().zip(nodes).enumerate().map(|(i, (id, node))| {
                pod(
                    &format!("sample-{id}"),
                    id,
                    node,
                    &format!("10.0.0.{}", i + 1),
                )
            }))
    }

    #[test]
    fn a_shrink_keeps_survivors_in_distinct_zones() {
        let snapshot = four_storage(
            "{version: 7.1.57, processCounts: {storage: 3, log: -1, stateless: -1, cluster_controller: -1}}",
        )
        .build();
        assert_eq!(marked(&decide(&snapshot)), ["storage-2"]);
        let verdict = ChooseRemovals
            .decide(&snapshot, &PassFacts::default())
            .unwrap();
        assert!(
            matches!(
                &verdict.actions()[..],
                [Action::WriteStatus(marks), Action::Event { reason: EventReason::RemovalChosen, .. }]
                    if *marks == [StatusMutation::MarkForRemoval { group: "storage-2".into() }]
            ),
            "{verdict:?}"
        );
    }

    #[test]
    fn listed_groups_are_marked_and_nothing_else() {
        let snapshot = four_storage(
            "{version: 7.1.57, processCounts: {storage: 4, log: -1, stateless: -1, cluster_controller: -1}, processGroupsToRemove: [storage-3], processGroupsToRemoveWithoutExclusion: [storage-4]}",
        )
        .build();
        let decision = decide(&snapshot);
        assert_eq!(marked(&decision), ["storage-3", "storage-4"]);
        assert!(decision.mutations.contains(&StatusMutation::SkipExclusion {
            group: "storage-4".into()
        }));
        let exact = four_storage(
            "{version: 7.1.57, processCounts: {storage: 4, log: -1, stateless: -1, cluster_controller: -1}}",
        )
        .build();
        assert_eq!(decide(&exact), RemovalDecision::default());
    }
}
