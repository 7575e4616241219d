//! The subreconcilers, one module per step of operator-behavior §8, and their order.

pub mod add_pods;
pub mod add_process_groups;
pub mod add_pvcs;
pub mod add_services;
pub mod bounce_processes;
pub mod change_coordinators;
pub mod check_client_compatibility;
pub mod choose_removals;
pub mod delete_pods_for_buggification;
pub mod exclude_instances;
pub mod generate_initial_cluster_file;
pub mod remove_pods;
pub mod remove_services;
pub mod replace_failed_pods;
pub mod replace_misconfigured_pods;
pub mod update_config_map;
pub mod update_database_configuration;
pub mod update_labels;
pub mod update_lock_configuration;
pub mod update_pod_config;
pub mod update_pods;
pub mod update_sidecar_versions;
pub mod update_status;

use async_trait::async_trait;
use fdb_shared::api::cluster::ProcessGroupConditionType;

use super::context::Context;
use super::errors::StepError;
use super::outcome::StepOutcome;
use super::pass::PassState;

/// One step of a reconcile pass.
#[async_trait]
pub trait Subreconciler: Send + Sync {
    /// The step's name, as in operator-behavior §8 (`AddPods`).
    fn name(&self) -> &'static str;

    /// Runs the step against the live state: continue, or end the pass with a requeue.
    async fn reconcile(
        &self,
        ctx: &Context,
        pass: &mut PassState,
    ) -> Result<StepOutcome, StepError>;
}

/// The steps of a pass, in the order of operator-behavior §8.
pub fn ordered_steps() -> Vec<Box<dyn Subreconciler>> {
    vec![
        Box::new(update_status::UpdateStatus),
        Box::new(update_lock_configuration::UpdateLockConfiguration),
        Box::new(update_config_map::UpdateConfigMap),
        Box::new(check_client_compatibility::CheckClientCompatibility),
        Box::new(replace_misconfigured_pods::ReplaceMisconfiguredPods),
        Box::new(replace_failed_pods::ReplaceFailedPods),
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
        Box::new(update_pods::UpdatePods),
        Box::new(remove_services::RemoveServices),
        Box::new(remove_pods::RemovePods),
        Box::new(update_status::UpdateStatus),
    ]
}

/// Whether any process group of the cluster has `condition`.
pub(crate) fn has_condition(pass: &PassState, condition: ProcessGroupConditionType) -> bool {
    pass.status().process_groups.iter().any(|g| {
        g.process_group_conditions
            .iter()
            .any(|c| c.condition_type == condition)
    })
}

/// A create that found the object already there (a stale list) is not an error: the
/// object exists, which is what the step wanted.
fn create_ignoring_conflict<T>(result: Result<T, kube::Error>) -> Result<(), kube::Error> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 && status.reason == "AlreadyExists" => {
            Ok(())
        }
        Err(error) => Err(error),
    }
}

/// Creates, in order, each of `desired` whose name is not in `existing` (what the pass
/// listed); returns how many it created. `kind` names them in logs and errors.
pub(crate) async fn create_missing<K>(
    api: &kube::Api<K>,
    existing: &std::collections::BTreeSet<String>,
    desired: impl IntoIterator<Item = K>,
    kind: &str,
) -> Result<usize, StepError>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let mut created = 0;
    for object in desired {
        let name = kube::ResourceExt::name_any(&object);
        if existing.contains(&name) {
            continue;
        }
        tracing::info!(%name, "creating {kind}");
        create_ignoring_conflict(api.create(&kube::api::PostParams::default(), &object).await)
            .map_err(StepError::kube(format!("create {kind} {name}")))?;
        created += 1;
    }
    Ok(created)
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
                "UpdatePods",
                "RemoveServices",
                "RemovePods",
                "UpdateStatus",
            ]
        );
    }
}
