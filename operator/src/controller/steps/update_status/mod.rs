//! UpdateStatus (first and last step): builds the status (docs/controller-model.md,
//! "Process group status") from the snapshot's observation (see
//! [`crate::controller::snapshot::observe`]) and stages it; the pass writes it once, at its
//! end, only when something differs.

use async_trait::async_trait;
use fdb_shared::api::cluster::RequiredAddressSet;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict};
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::snapshot::observe::{config_map_in_sync, observe_groups};
pub(crate) use crate::controller::status::StatusDecision;
use crate::controller::status::{StatusInputs, build_status_judged};

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct UpdateStatus;

/// Decides from the snapshot.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> Result<StatusDecision, StepError> {
    let observations = observe_groups(snapshot)?;
    let (status, reconciled) = build_status_judged(&StatusInputs {
        cluster: snapshot.cluster(),
        previous: snapshot.status(),
        observations: &observations,
        database: snapshot.database().view(),
        config_map_in_sync: config_map_in_sync(snapshot)?,
        now_unix: snapshot.now_unix(),
    });
    Ok(StatusDecision { status, reconciled })
}

#[async_trait]
impl Subreconciler for UpdateStatus {
    fn name(&self) -> &'static str {
        "UpdateStatus"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    fn look_ahead(
        &self,
        snapshot: &ClusterSnapshot,
        facts: &mut PassFacts,
    ) -> Result<(), StepError> {
        facts.look_ahead.fill_status(snapshot, || decide(snapshot))
    }

    fn decide(&self, snapshot: &ClusterSnapshot, facts: &PassFacts) -> Result<Verdict, StepError> {
        // The last UpdateStatus of a pass that changed nothing since the first would
        // decide the same again: the first decision is reused (see `look_ahead`).
        let mut decision = match facts.look_ahead.status(snapshot) {
            Some(made) => made.clone(),
            None => decide(snapshot)?,
        };
        if !facts.rules.tls_migration {
            // The mutation test's operator: no migration through both kinds of address.
            decision.status.required_addresses =
                RequiredAddressSet::needed(snapshot.cluster().spec.tls_enabled(), []);
        }
        // Staged: written once at the end of the pass (or by a step that must persist
        // first), so a pass makes one status write, not one per step.
        Ok(Verdict::plain([Action::StageStatusDecision(Box::new(
            decision,
        ))]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, group, pod, reporting};
    use fdb_shared::api::cluster::ProcessGroupConditionType as C;

    fn conditions(decision: &StatusDecision, id: &str) -> Vec<C> {
        decision
            .status
            .process_groups
            .iter()
            .find(|g| g.process_group_id == id)
            .map(|g| {
                g.process_group_conditions
                    .iter()
                    .map(|c| c.condition_type.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn a_new_cluster_is_not_reconciled_and_its_groups_are_missing_everything() {
        let snapshot = Fixture::new("version: 7.1.57")
            .groups([group("storage-1"), group("stateless-1")])
            .build();
        let decision = decide(&snapshot).unwrap();
        assert!(!decision.reconciled);
        assert_eq!(
            conditions(&decision, "storage-1"),
            [C::MissingPod, C::MissingPvc]
        );
        assert_eq!(conditions(&decision, "stateless-1"), [C::MissingPod]);
        assert_eq!(decision.status.running_version.as_deref(), Some("7.1.57"));
        assert!(decision.status.has_incorrect_config_map);
    }

    #[test]
    fn addresses_zones_and_processes_come_from_the_snapshot() {
        let snapshot = Fixture::new("version: 7.1.57")
            .groups([group("log-1"), group("log-2")])
            .pods([
                pod("sample-log-1", "log-1", "node-a", "10.1.0.1"),
                pod("sample-log-2", "log-2", "node-b", "10.1.0.2"),
            ])
            .connection_string("sample:abc@10.1.0.1:4501")
            .database(reporting(&["log-1"]))
            .build();
        let decision = decide(&snapshot).unwrap();
        let groups = &decision.status.process_groups;
        assert_eq!(groups[0].addresses, ["10.1.0.1"]);
        assert_eq!(
            groups[0].fault_domain.as_deref(),
            Some("z-log-1"),
            "the zone FDB sees"
        );
        assert_eq!(
            groups[1].fault_domain.as_deref(),
            Some("node-b"),
            "else the pod's"
        );
        assert!(!conditions(&decision, "log-1").contains(&C::MissingProcesses));
        assert!(conditions(&decision, "log-2").contains(&C::MissingProcesses));
    }
}
