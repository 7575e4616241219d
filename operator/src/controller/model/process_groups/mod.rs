//! Process group bookkeeping: ID allocation (docs/controller-model.md, "Names, labels,
//! annotations"), conditions with their first-seen timestamps (docs/controller-model.md, "Process group
//! status"), and the fault domain of
//! a pod.

pub(crate) mod conditions;
pub(crate) mod ids;
pub(crate) mod taints;
pub(crate) mod zones;

pub(crate) use conditions::{
    GroupFacts, PodFacts, Presence, ProcessFacts, condition_rank, merge_conditions,
    observed_conditions,
};
pub(crate) use ids::next_free_numbers;
pub(crate) use taints::{TaintFacts, taint_facts};
pub(crate) use zones::zone_of;

use fdb_shared::api::ProcessClass;
use fdb_shared::api::cluster::{
    ProcessGroupCondition, ProcessGroupConditionType, ProcessGroupStatus,
};

/// A new process group: no addresses yet, and the initial conditions (MissingProcesses,
/// MissingPod, and MissingPVC for stateful classes) first seen `now`.
pub(crate) fn new_process_group(
    id: String,
    class: ProcessClass,
    now_unix: i64,
) -> ProcessGroupStatus {
    ProcessGroupStatus {
        process_group_id: id,
        process_class: class,
        addresses: Vec::new(),
        removal_timestamp: None,
        exclusion_timestamp: None,
        exclusion_skipped: false,
        excluded_targets: Vec::new(),
        fault_domain: None,
        process_group_conditions: ProcessGroupConditionType::initial_conditions(
            class.is_stateful(),
        )
        .into_iter()
        .map(|condition_type| ProcessGroupCondition {
            condition_type,
            timestamp: now_unix,
        })
        .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_groups_start_missing() {
        let group = new_process_group("storage-1".into(), ProcessClass::Storage, 42);
        let types: Vec<_> = group
            .process_group_conditions
            .iter()
            .map(|c| (c.condition_type.as_str(), c.timestamp))
            .collect();
        assert_eq!(
            types,
            [
                ("MissingProcesses", 42),
                ("MissingPod", 42),
                ("MissingPVC", 42)
            ]
        );
        let group = new_process_group("stateless-1".into(), ProcessClass::Stateless, 1);
        assert_eq!(group.process_group_conditions.len(), 2);
    }
}
