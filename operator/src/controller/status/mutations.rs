//! Typed edits of the cluster status: the only ways steps change `status.processGroups`
//! and the few cluster-level fields they own (docs/controller-model.md, "Process group
//! status"). Each edit keeps the rules of its field (first-seen condition timestamps, the
//! canonical condition order, removal and exclusion timestamps set once, every address kept
//! while a group is being removed) and says whether it changed anything.
//!
//! Steps put [`StatusMutation`]s in their decisions (pure, testable); [`apply`] runs a
//! batch over a copy of the status in one linear pass.

use std::collections::BTreeMap;

use fdb_shared::api::cluster::{
    ProcessGroupCondition, ProcessGroupConditionType, ProcessGroupStatus,
};
use fdb_shared::api::{FoundationDBClusterStatus, ProcessClass};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::super::model::process_groups::{condition_rank, new_process_group};

/// Marks the group for removal at `now`; a group already marked keeps its timestamp.
pub(crate) fn mark_for_removal(group: &mut ProcessGroupStatus, now: Timestamp) -> bool {
    if group.removal_timestamp.is_some() {
        return false;
    }
    group.removal_timestamp = Some(Time(now));
    true
}

/// Records that the group is fully excluded at `now`; an earlier record stays.
pub(crate) fn record_exclusion(group: &mut ProcessGroupStatus, now: Timestamp) -> bool {
    if group.exclusion_timestamp.is_some() {
        return false;
    }
    group.exclusion_timestamp = Some(Time(now));
    true
}

/// Adds `targets` to the group's excluded targets (kept sorted, each once): what was
/// excluded is kept until the group is included and dropped.
pub(crate) fn record_excluded_targets(group: &mut ProcessGroupStatus, targets: &[String]) -> bool {
    let before = group.excluded_targets.len();
    group.excluded_targets.extend(targets.iter().cloned());
    group.excluded_targets.sort();
    group.excluded_targets.dedup();
    group.excluded_targets.len() != before
}

/// Gives the group `condition`, first seen `now_unix` unless it already has it (then its
/// first-seen time stays). Conditions stay in the canonical order.
pub(crate) fn set_condition(
    group: &mut ProcessGroupStatus,
    condition: ProcessGroupConditionType,
    now_unix: i64,
) -> bool {
    let conditions = &mut group.process_group_conditions;
    if conditions.iter().any(|c| c.condition_type == condition) {
        return false;
    }
    let rank = condition_rank(&condition);
    let at = conditions
        .iter()
        .position(|c| condition_rank(&c.condition_type) > rank)
        .unwrap_or(conditions.len());
    conditions.insert(
        at,
        ProcessGroupCondition {
            condition_type: condition,
            timestamp: now_unix,
        },
    );
    true
}

/// Takes `condition` off the group.
pub(crate) fn clear_condition(
    group: &mut ProcessGroupStatus,
    condition: &ProcessGroupConditionType,
) -> bool {
    let before = group.process_group_conditions.len();
    group
        .process_group_conditions
        .retain(|c| &c.condition_type != condition);
    group.process_group_conditions.len() != before
}

/// Records the addresses the group is seen with now. While the group is marked for
/// removal every address it ever had is kept (each must be excluded), and so while the
/// database is unavailable (`database_unavailable`): a connection string may still name
/// an old address, and `kubectl fdb fix-coordinator-ips` maps each coordinator to its
/// group by it (the Go operator's `AddAddresses(..., IsMarkedForRemoval() ||
/// !Health.Available)` in its update_status.go). Otherwise the current ones replace the
/// old.
pub(crate) fn record_addresses(
    group: &mut ProcessGroupStatus,
    current: &[String],
    database_unavailable: bool,
) -> bool {
    let before = group.addresses.clone();
    if group.is_marked_for_removal() || database_unavailable {
        for address in current {
            if !group.addresses.contains(address) {
                group.addresses.push(address.clone());
            }
        }
    } else {
        group.addresses = current.to_vec();
    }
    group.addresses != before
}

/// One edit of the cluster status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusMutation {
    /// A new process group with its initial conditions (docs/controller-model.md, "Process
    /// group status").
    AddProcessGroup {
        /// Its ID.
        id: String,
        /// Its class.
        class: ProcessClass,
    },
    /// See [`mark_for_removal`].
    MarkForRemoval {
        /// The process group ID.
        group: String,
    },
    /// See [`set_condition`].
    SetCondition {
        /// The process group ID.
        group: String,
        /// The condition.
        condition: ProcessGroupConditionType,
    },
    /// See [`clear_condition`].
    ClearCondition {
        /// The process group ID.
        group: String,
        /// The condition.
        condition: ProcessGroupConditionType,
    },
    /// See [`record_exclusion`].
    RecordExclusion {
        /// The process group ID.
        group: String,
    },
    /// See [`record_excluded_targets`].
    RecordExcludedTargets {
        /// The process group ID.
        group: String,
        /// The targets about to be excluded.
        targets: Vec<String>,
    },
    /// See [`record_addresses`].
    RecordAddresses {
        /// The process group ID.
        group: String,
        /// The addresses seen now.
        addresses: Vec<String>,
    },
    /// `status.connectionString`.
    SetConnectionString(String),
    /// `status.configured`: the database has a configuration.
    MarkConfigured,
    /// `status.locks.lockDenyList`: the database's lock deny list, as read (sorted).
    SetLockDenyList(Vec<String>),
    /// Drops the process group from the status (its removal is finished).
    RemoveProcessGroup {
        /// The process group ID.
        group: String,
    },
    /// Records that the group is removed without exclusion
    /// (`processGroupsToRemoveWithoutExclusion`).
    SkipExclusion {
        /// The process group ID.
        group: String,
    },
}

impl StatusMutation {
    /// The edit's name, for errors.
    fn name(&self) -> &'static str {
        match self {
            Self::AddProcessGroup { .. } => "add process group",
            Self::MarkForRemoval { .. } => "mark for removal",
            Self::SetCondition { .. } => "set condition",
            Self::ClearCondition { .. } => "clear condition",
            Self::RecordExclusion { .. } => "record exclusion",
            Self::RecordExcludedTargets { .. } => "record excluded targets",
            Self::RecordAddresses { .. } => "record addresses",
            Self::SetConnectionString(_) => "set connection string",
            Self::MarkConfigured => "mark configured",
            Self::SetLockDenyList(_) => "set lock deny list",
            Self::RemoveProcessGroup { .. } => "remove process group",
            Self::SkipExclusion { .. } => "skip exclusion",
        }
    }
}

/// A status edit that does not fit the status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatusMutationError {
    /// The edit names a group the status does not have.
    #[error("cannot {mutation}: process group {group} is not in the status")]
    UnknownGroup {
        /// The group.
        group: String,
        /// The edit.
        mutation: &'static str,
    },
    /// A group with that ID is already in the status.
    #[error("cannot add process group {group}: it is already in the status")]
    DuplicateGroup {
        /// The group.
        group: String,
    },
}

/// The group `id` of `status` through the index, or an error naming the edit.
fn group_mut<'a>(
    status: &'a mut FoundationDBClusterStatus,
    index: &BTreeMap<String, usize>,
    id: &str,
    mutation: &StatusMutation,
) -> Result<&'a mut ProcessGroupStatus, StatusMutationError> {
    index
        .get(id)
        .and_then(|position| status.process_groups.get_mut(*position))
        .ok_or_else(|| StatusMutationError::UnknownGroup {
            group: id.to_owned(),
            mutation: mutation.name(),
        })
}

/// Applies `mutations` in order to `status` at `now`; returns whether anything changed.
/// Linear in groups plus mutations (one index of the groups, not a scan per edit).
pub fn apply(
    status: &mut FoundationDBClusterStatus,
    mutations: &[StatusMutation],
    now: Timestamp,
) -> Result<bool, StatusMutationError> {
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for (position, group) in status.process_groups.iter().enumerate() {
        index
            .entry(group.process_group_id.clone())
            .or_insert(position);
    }
    let now_unix = now.as_second();
    let mut changed = false;
    for mutation in mutations {
        changed |= match mutation {
            StatusMutation::AddProcessGroup { id, class } => {
                if index.contains_key(id) {
                    return Err(StatusMutationError::DuplicateGroup { group: id.clone() });
                }
                index.insert(id.clone(), status.process_groups.len());
                status
                    .process_groups
                    .push(new_process_group(id.clone(), *class, now_unix));
                true
            }
            StatusMutation::SetConnectionString(connection_string) => {
                let changed = status.connection_string.as_ref() != Some(connection_string);
                status.connection_string = Some(connection_string.clone());
                changed
            }
            StatusMutation::MarkConfigured => !std::mem::replace(&mut status.configured, true),
            StatusMutation::SetLockDenyList(list) => {
                let mut list = list.clone();
                list.sort();
                list.dedup();
                list != std::mem::replace(&mut status.locks.lock_deny_list, list.clone())
            }
            StatusMutation::MarkForRemoval { group } => {
                mark_for_removal(group_mut(status, &index, group, mutation)?, now)
            }
            StatusMutation::SetCondition { group, condition } => set_condition(
                group_mut(status, &index, group, mutation)?,
                condition.clone(),
                now_unix,
            ),
            StatusMutation::ClearCondition { group, condition } => {
                clear_condition(group_mut(status, &index, group, mutation)?, condition)
            }
            StatusMutation::RecordExclusion { group } => {
                record_exclusion(group_mut(status, &index, group, mutation)?, now)
            }
            StatusMutation::RecordExcludedTargets { group, targets } => {
                record_excluded_targets(group_mut(status, &index, group, mutation)?, targets)
            }
            StatusMutation::RecordAddresses { group, addresses } => record_addresses(
                group_mut(status, &index, group, mutation)?,
                addresses,
                false,
            ),
            StatusMutation::SkipExclusion { group } => {
                let group = group_mut(status, &index, group, mutation)?;
                !std::mem::replace(&mut group.exclusion_skipped, true)
            }
            StatusMutation::RemoveProcessGroup { group } => {
                // Removing an absent group is done already (idempotent after a crash).
                let before = status.process_groups.len();
                status
                    .process_groups
                    .retain(|g| &g.process_group_id != group);
                let removed = status.process_groups.len() != before;
                if removed {
                    index.clear();
                    for (position, g) in status.process_groups.iter().enumerate() {
                        index.entry(g.process_group_id.clone()).or_insert(position);
                    }
                }
                removed
            }
        };
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdb_shared::api::cluster::ProcessGroupConditionType as C;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    fn status() -> FoundationDBClusterStatus {
        FoundationDBClusterStatus {
            process_groups: vec![
                new_process_group("storage-1".into(), ProcessClass::Storage, 10),
                new_process_group("log-1".into(), ProcessClass::Log, 10),
            ],
            ..Default::default()
        }
    }

    fn conditions(group: &ProcessGroupStatus) -> Vec<(&str, i64)> {
        group
            .process_group_conditions
            .iter()
            .map(|c| (c.condition_type.as_str(), c.timestamp))
            .collect()
    }

    #[test]
    fn conditions_keep_first_seen_and_canonical_order() {
        let mut group = new_process_group("log-1".into(), ProcessClass::Log, 10);
        assert!(set_condition(&mut group, C::SidecarUnreachable, 20));
        assert!(set_condition(&mut group, C::IncorrectConfigMap, 30));
        assert!(
            !set_condition(&mut group, C::MissingPod, 40),
            "already there"
        );
        assert_eq!(
            conditions(&group),
            [
                ("MissingProcesses", 10),
                ("MissingPod", 10),
                ("MissingPVC", 10),
                ("IncorrectConfigMap", 30),
                ("SidecarUnreachable", 20)
            ]
        );
        assert!(clear_condition(&mut group, &C::MissingPod));
        assert!(!clear_condition(&mut group, &C::MissingPod));
        assert_eq!(group.process_group_conditions.len(), 4);
    }

    #[test]
    fn removal_and_exclusion_are_recorded_once() {
        let mut group = new_process_group("log-1".into(), ProcessClass::Log, 10);
        assert!(mark_for_removal(&mut group, at(100)));
        assert!(!mark_for_removal(&mut group, at(200)));
        assert_eq!(group.removal_timestamp, Some(Time(at(100))));
        assert!(record_exclusion(&mut group, at(300)));
        assert!(!record_exclusion(&mut group, at(400)));
        assert_eq!(group.exclusion_timestamp, Some(Time(at(300))));
    }

    #[test]
    fn addresses_accumulate_only_while_removing() {
        let mut group = new_process_group("log-1".into(), ProcessClass::Log, 10);
        assert!(record_addresses(&mut group, &["10.0.0.1".into()], false));
        assert!(!record_addresses(&mut group, &["10.0.0.1".into()], false));
        assert!(record_addresses(&mut group, &["10.0.0.2".into()], false));
        assert_eq!(group.addresses, ["10.0.0.2"]);
        mark_for_removal(&mut group, at(1));
        assert!(record_addresses(&mut group, &["10.0.0.3".into()], false));
        assert_eq!(group.addresses, ["10.0.0.2", "10.0.0.3"]);
    }

    #[test]
    fn addresses_accumulate_while_the_database_is_unavailable() {
        let mut group = new_process_group("log-1".into(), ProcessClass::Log, 10);
        assert!(record_addresses(&mut group, &["10.0.0.1".into()], false));
        // Every pod came back at a new IP while the database is down: the connection
        // string still names 10.0.0.1, so the group keeps it.
        assert!(record_addresses(&mut group, &["10.0.0.2".into()], true));
        assert_eq!(group.addresses, ["10.0.0.1", "10.0.0.2"]);
        // Available again: the current address alone.
        assert!(record_addresses(&mut group, &["10.0.0.2".into()], false));
        assert_eq!(group.addresses, ["10.0.0.2"]);
    }

    #[test]
    fn batches_apply_in_order_and_name_unknown_groups() {
        let mut status = status();
        let changed = apply(
            &mut status,
            &[
                StatusMutation::AddProcessGroup {
                    id: "stateless-1".into(),
                    class: ProcessClass::Stateless,
                },
                StatusMutation::ClearCondition {
                    group: "stateless-1".into(),
                    condition: C::MissingPod,
                },
                StatusMutation::MarkForRemoval {
                    group: "log-1".into(),
                },
                StatusMutation::SetConnectionString("a:b@10.0.0.1:4501".into()),
                StatusMutation::MarkConfigured,
            ],
            at(50),
        )
        .unwrap();
        assert!(changed);
        assert!(status.configured);
        assert_eq!(status.process_groups.len(), 3);
        assert_eq!(
            conditions(&status.process_groups[2]),
            [("MissingProcesses", 50)]
        );
        assert!(status.process_groups[1].is_marked_for_removal());
        let again = apply(
            &mut status,
            &[
                StatusMutation::MarkConfigured,
                StatusMutation::SetConnectionString("a:b@10.0.0.1:4501".into()),
            ],
            at(60),
        );
        assert_eq!(again, Ok(false), "nothing changed");
        let error = apply(
            &mut status,
            &[StatusMutation::RecordExclusion {
                group: "log-9".into(),
            }],
            at(60),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot record exclusion: process group log-9 is not in the status"
        );
        let error = apply(
            &mut status,
            &[StatusMutation::AddProcessGroup {
                id: "log-1".into(),
                class: ProcessClass::Log,
            }],
            at(60),
        )
        .unwrap_err();
        assert!(matches!(error, StatusMutationError::DuplicateGroup { .. }));
    }
}
