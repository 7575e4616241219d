//! DeletePodsForBuggification (docs/operator.md, "The steps"): deletes the pods whose
//! buggify state (`crashLoop`, `crashLoopContainers`, `noSchedule`; see
//! [`crate::controller::model::pod::buggify`]) differs from the spec's, so AddPods
//! recreates them with the fault turned on or off.
//!
//! Buggify is fault injection a user asks for on named groups, yet a deletion never
//! takes more zones down than the fault tolerance allows (`noSchedule` on every log
//! group would otherwise take them all down at once, for good: their pods never come
//! back). A pod running its processes is deleted only while the database is available
//! and within the zone budget; a pod that runs nothing (pending, crash-looping, failed)
//! is down already and is deleted at once, so turning a fault off is never held back by
//! the outage it caused. A pod hosting a coordinator waits for the coordinators to move;
//! a pod already terminating is left alone. (The Go operator's
//! deletePodsForBuggification deletes them all at once.)

use super::Subreconciler;
use crate::controller::buggify_deletions::decide;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::pass::plan::{
    Action, Barrier, PassFacts, Plan, Planned, Verdict, Wait, WaitOn,
};
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::status::mutations::StatusMutation;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct DeletePodsForBuggification;

impl Subreconciler for DeletePodsForBuggification {
    fn name(&self) -> &'static str {
        "DeletePodsForBuggification"
    }

    fn barrier(&self) -> Barrier {
        Barrier::GoesOn
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        let decision = decide(snapshot);
        // A pod recreated on purpose starts a new failure-detection window: the
        // conditions of its old life (a crash loop's MissingProcesses) must not make
        // ReplaceFailedPods replace it the moment it is recreated.
        let reset: Vec<StatusMutation> = decision
            .delete
            .iter()
            .flat_map(|(group, _)| {
                snapshot
                    .group(group)
                    .into_iter()
                    .flat_map(|g| g.status.process_group_conditions.iter())
                    .filter(|c| c.condition_type.is_eligible_for_automatic_replacement())
                    .map(|c| StatusMutation::ClearCondition {
                        group: group.clone(),
                        condition: c.condition_type.clone(),
                    })
            })
            .collect();
        let mut actions = Vec::new();
        if !reset.is_empty() {
            actions.push(Planned::plain(Action::WriteStatus(reset)));
        }
        for (group, pod) in &decision.delete {
            tracing::info!(%group, %pod, "deleting the pod to apply spec.buggify");
            // Deleted at once, without the lock and whatever else the pass deleted, as
            // before plans (a test feature); a later kill of the pass still waits for them.
            actions.push(Planned::plain(Action::DeletePod(pod.clone())));
        }
        if !decision.delete.is_empty() {
            let names: Vec<&str> = decision.delete.iter().map(|(g, _)| g.as_str()).collect();
            actions.push(Planned::plain(Action::Event {
                reason: EventReason::PodsUpdated,
                action: self.name().to_owned(),
                note: format!(
                    "deleted the pods of {} to apply spec.buggify",
                    names.join(", ")
                ),
            }));
        }
        // The rest of the pass goes on: the waiting groups must not hold other work.
        let wait = (!decision.waiting.is_empty()).then(|| {
            Wait::independent(
                WaitOn::Database,
                format!("buggify changes wait: {}", decision.waiting.join("; ")),
            )
        });
        Ok(match (actions.is_empty(), wait) {
            (true, None) => Verdict::Continue,
            (true, Some(wait)) => Verdict::Wait(wait),
            (false, wait) => {
                let plan = Plan::new(actions, "spec.buggify changes pods: ");
                Verdict::Act(match wait {
                    Some(wait) => plan.then(wait),
                    None => plan,
                })
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, group, pod, reporting};
    use crate::controller::model::pod::build_pod;

    /// storage-1 and storage-2 with pods built for `built_with`, the spec `spec`.
    fn snapshot(built_with: &str, spec: &str, coordinator: bool) -> ClusterSnapshot {
        use crate::controller::fixtures::cluster;
        use crate::controller::model::desired::pod_options;
        let old = cluster(built_with);
        let pods: Vec<k8s_openapi::api::core::v1::Pod> = ["storage-1", "storage-2"]
            .iter()
            .enumerate()
            .map(|(n, id)| {
                let status = group(id);
                let mut built = build_pod(&old, &status, &pod_options(&old, &status)).unwrap();
                let placed = pod(
                    &format!("sample-{id}"),
                    id,
                    "node",
                    &format!("10.0.0.{}", n + 1),
                );
                built.status = placed.status;
                built
            })
            .collect();
        let fixture = Fixture::new(spec)
            .groups([group("storage-1"), group("storage-2")])
            .pods(pods)
            .status(|s| s.configured = true)
            .database(reporting(&["storage-1", "storage-2"]));
        if coordinator {
            fixture.connection_string("s:abc@10.0.0.1:4501").build()
        } else {
            fixture.build()
        }
    }

    const PLAIN: &str = "{version: 7.1.57, routing: {useDNSInClusterFile: false}}";
    const LOOPING: &str = "{version: 7.1.57, routing: {useDNSInClusterFile: false}, buggify: {crashLoop: [storage-1]}}";

    #[test]
    fn only_the_groups_whose_buggify_state_changed_are_deleted() {
        assert_eq!(
            decide(&snapshot(PLAIN, PLAIN, false)),
            crate::controller::buggify_deletions::BuggifyDecision::default()
        );
        let on = decide(&snapshot(PLAIN, LOOPING, false));
        assert_eq!(
            on.delete,
            [("storage-1".to_owned(), "sample-storage-1".to_owned())]
        );
        // And back when it leaves the spec.
        let off = decide(&snapshot(LOOPING, PLAIN, false));
        assert_eq!(off.delete.len(), 1);
    }

    #[test]
    fn a_coordinators_pod_waits() {
        let decision = decide(&snapshot(PLAIN, LOOPING, true));
        assert!(decision.delete.is_empty());
        assert!(
            decision.waiting[0].contains("coordinator 10.0.0.1:4501"),
            "{decision:?}"
        );
    }
}
