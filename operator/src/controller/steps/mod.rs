//! The steps of a pass (the subreconcilers), one folder each, and their order: see
//! docs/operator.md, "The steps".

pub(crate) mod add_pods;
pub(crate) mod add_process_groups;
pub(crate) mod add_pvcs;
pub(crate) mod add_services;
pub(crate) mod bounce_processes;
pub(crate) mod change_coordinators;
pub(crate) mod check_client_compatibility;
pub(crate) mod choose_removals;
pub(crate) mod delete_pods_for_buggification;
pub(crate) mod delete_terminal_pods;
pub(crate) mod exclude_instances;
pub(crate) mod generate_initial_cluster_file;
pub(crate) mod maintenance_mode_checker;
pub(crate) mod remove_incompatible_processes;
pub(crate) mod remove_pods;
pub(crate) mod remove_services;
pub(crate) mod replace_failed_pods;
pub(crate) mod replace_misconfigured_pods;
pub(crate) mod update_config_map;
pub(crate) mod update_database_configuration;
pub(crate) mod update_labels;
pub(crate) mod update_lock_configuration;
pub(crate) mod update_pod_config;
pub(crate) mod update_pods;
pub(crate) mod update_sidecar_versions;
pub(crate) mod update_status;

use super::context::Context;
use super::errors::StepError;
use super::pass::executor;
use super::pass::facts::Answers;
use super::pass::io::PassIo;
use super::pass::outcome::StepOutcome;
use super::pass::plan::{Barrier, PassFacts, Verdict};
use super::snapshot::ClusterSnapshot;
use async_trait::async_trait;

/// One step of a reconcile pass.
///
/// A step is a pure `decide(&ClusterSnapshot, &PassFacts) -> Verdict` (unit-tested from
/// fixtures): go on, wait, or a plan of typed actions that the one executor
/// ([`super::pass::executor`]) runs under the shared rules. The snapshot is read-only; what
/// the plan writes, the next step sees (see [`super::snapshot`]). No step overrides
/// `reconcile`: all I/O is the executor's.
///
/// A step that must hear from the world before it can decide (UpdatePodConfig asks the
/// pods' agents) plans a query action; the executor puts the answers into the facts, and
/// the step's pure [`Subreconciler::conclude`] turns them into a second verdict.
#[async_trait]
pub(crate) trait Subreconciler: Send + Sync {
    /// The step's name (`AddPods`), as docs/operator.md, "The steps", lists it.
    fn name(&self) -> &'static str;

    /// Whether a wait of the step ends the pass (no default: each step states it).
    fn barrier(&self) -> Barrier;

    /// Fills what the step's `decide` reads of the pass's look-ahead
    /// ([`super::pass::facts::LookAhead`]), once per snapshot version, so that `decide`
    /// stays pure: nothing by default.
    fn look_ahead(
        &self,
        _snapshot: &ClusterSnapshot,
        _facts: &mut PassFacts,
    ) -> Result<(), StepError> {
        Ok(())
    }

    /// What the step decides from the snapshot and what the pass learned so far.
    fn decide(
        &self,
        _snapshot: &ClusterSnapshot,
        _facts: &PassFacts,
    ) -> Result<Verdict, StepError> {
        Ok(Verdict::Continue)
    }

    /// What the step concludes once its plan ran, from the `answers` its query actions
    /// left (it takes those it consumes): nothing more by default.
    fn conclude(
        &self,
        _snapshot: &ClusterSnapshot,
        _facts: &PassFacts,
        _answers: &mut Answers,
    ) -> Result<Verdict, StepError> {
        Ok(Verdict::Continue)
    }

    /// Runs the step: its decision through the executor, then its conclusion.
    async fn reconcile(
        &self,
        ctx: &Context,
        snapshot: &ClusterSnapshot,
        io: &mut PassIo,
        facts: &mut PassFacts,
    ) -> Result<StepOutcome, StepError> {
        self.look_ahead(snapshot, facts)?;
        let verdict = self.decide(snapshot, facts)?;
        let outcome = executor::execute(ctx, snapshot, io, facts, self.barrier(), verdict).await?;
        if outcome != StepOutcome::Continue {
            return Ok(outcome);
        }
        let mut answers = std::mem::take(&mut facts.answers);
        let then = self.conclude(snapshot, facts, &mut answers);
        facts.answers = answers;
        let then = then?;
        executor::execute(ctx, snapshot, io, facts, self.barrier(), then).await
    }
}

/// The steps of a pass, in the order of docs/operator.md, "The steps".
pub(crate) fn ordered_steps() -> Vec<Box<dyn Subreconciler>> {
    vec![
        Box::new(update_status::UpdateStatus),
        Box::new(update_lock_configuration::UpdateLockConfiguration),
        Box::new(update_config_map::UpdateConfigMap),
        Box::new(check_client_compatibility::CheckClientCompatibility),
        Box::new(replace_misconfigured_pods::ReplaceMisconfiguredPods),
        Box::new(replace_failed_pods::ReplaceFailedPods),
        Box::new(delete_terminal_pods::DeleteTerminalPods),
        Box::new(delete_pods_for_buggification::DeletePodsForBuggification),
        Box::new(add_process_groups::AddProcessGroups),
        Box::new(add_services::AddServices),
        Box::new(add_pvcs::AddPvcs),
        Box::new(add_pods::AddPods),
        Box::new(generate_initial_cluster_file::GenerateInitialClusterFile),
        Box::new(update_sidecar_versions::UpdateSidecarVersions),
        Box::new(update_pod_config::UpdatePodConfig),
        Box::new(update_labels::UpdateLabels),
        Box::new(update_database_configuration::UpdateDatabaseConfiguration),
        Box::new(choose_removals::ChooseRemovals),
        Box::new(exclude_instances::ExcludeInstances),
        Box::new(change_coordinators::ChangeCoordinators),
        Box::new(bounce_processes::BounceProcesses),
        Box::new(remove_incompatible_processes::RemoveIncompatibleProcesses),
        Box::new(maintenance_mode_checker::MaintenanceModeChecker),
        Box::new(update_pods::UpdatePods),
        Box::new(remove_services::RemoveServices),
        Box::new(remove_pods::RemovePods),
        Box::new(update_status::UpdateStatus),
    ]
}

/// Whether any process group is marked for removal.
pub(crate) fn any_marked_for_removal(snapshot: &ClusterSnapshot) -> bool {
    snapshot.groups().any(|g| g.is_marked_for_removal())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_in_the_documented_order() {
        let names: Vec<_> = ordered_steps().iter().map(|s| s.name()).collect();
        assert_eq!(
            names,
            [
                "UpdateStatus",
                "UpdateLockConfiguration",
                "UpdateConfigMap",
                "CheckClientCompatibility",
                "ReplaceMisconfiguredPods",
                "ReplaceFailedPods",
                "DeleteTerminalPods",
                "DeletePodsForBuggification",
                "AddProcessGroups",
                "AddServices",
                "AddPVCs",
                "AddPods",
                "GenerateInitialClusterFile",
                "UpdateSidecarVersions",
                "UpdatePodConfig",
                "UpdateLabels",
                "UpdateDatabaseConfiguration",
                "ChooseRemovals",
                "ExcludeInstances",
                "ChangeCoordinators",
                "BounceProcesses",
                "RemoveIncompatibleProcesses",
                "MaintenanceModeChecker",
                "UpdatePods",
                "RemoveServices",
                "RemovePods",
                "UpdateStatus",
            ]
        );
    }

    #[test]
    fn the_steps_that_wait_on_something_of_their_own_let_the_pass_go_on() {
        let going_on: Vec<_> = ordered_steps()
            .iter()
            .filter(|s| s.barrier() == Barrier::GoesOn)
            .map(|s| s.name())
            .collect();
        assert_eq!(
            going_on,
            [
                "ReplaceMisconfiguredPods",
                "ReplaceFailedPods",
                "DeleteTerminalPods",
                "DeletePodsForBuggification",
                "ExcludeInstances",
                "ChangeCoordinators",
                "RemoveServices",
                "RemovePods",
            ]
        );
    }
}
