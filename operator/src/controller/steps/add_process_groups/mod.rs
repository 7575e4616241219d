//! AddProcessGroups: adds process groups to the status until every class has as many live
//! (not marked for removal) groups as desired. IDs take the numbers above the highest in
//! use (docs/controller-model.md, "Names, labels, annotations": never in use, being removed
//! or excluded; and a number a removal just freed is not reused at once); new groups start
//! with MissingProcesses + MissingPod (+ MissingPVC). The status is written at once, so a
//! restart never allocates twice.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::api::{FoundationDBCluster, ProcessClass};
use fdb_shared::cluster_math::desired_process_counts;
use fdb_shared::status_json::DatabaseStatus;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::model::pod::{parse_any_process_group_id, process_group_id};
use crate::controller::model::process_groups::next_free_numbers;
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict, Wait, WaitOn};
use crate::controller::snapshot::{ClusterSnapshot, DatabaseState};
use crate::controller::status::mutations::StatusMutation;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct AddProcessGroups;

/// Process group IDs whose processes the database reports as excluded (their numbers
/// are not reused until they are included again).
pub(crate) fn excluded_instance_ids(status: &DatabaseStatus) -> BTreeSet<String> {
    let reporting = status
        .cluster
        .processes
        .values()
        .filter(|p| p.excluded)
        .filter_map(|p| p.locality.instance_id.clone());
    // Locality exclusions stay in the configuration after their process is gone; the ID
    // must not be reused while they do, or the new group's process would be excluded.
    let configured = status
        .cluster
        .configuration
        .iter()
        .flat_map(|configuration| &configuration.excluded_servers)
        .filter_map(|server| {
            server
                .locality
                .as_deref()?
                .strip_prefix("locality_instance_id:")
        })
        .map(str::to_owned);
    reporting.chain(configured).collect()
}

/// The IDs (and classes) of the groups to add, in class order.
pub(crate) fn groups_to_add(
    cluster: &FoundationDBCluster,
    groups: &[ProcessGroupStatus],
    excluded: &BTreeSet<String>,
) -> Vec<(ProcessClass, String)> {
    let mut live: BTreeMap<ProcessClass, usize> = BTreeMap::new();
    let mut used: BTreeMap<ProcessClass, BTreeSet<u32>> = BTreeMap::new();
    for group in groups {
        if !group.is_marked_for_removal() {
            *live.entry(group.process_class).or_default() += 1;
        }
        // Numbers stay taken whatever prefix the ID was made with.
        if let Some((_, n)) = parse_any_process_group_id(&group.process_group_id) {
            used.entry(group.process_class).or_default().insert(n);
        }
    }
    for id in excluded {
        if let Some((class, n)) = parse_any_process_group_id(id) {
            used.entry(class).or_default().insert(n);
        }
    }
    let mut added = Vec::new();
    for (class, desired) in desired_process_counts(&cluster.spec).positive() {
        let desired = usize::try_from(desired).unwrap_or(0);
        let missing = desired.saturating_sub(live.get(&class).copied().unwrap_or(0));
        let taken = used.get(&class).cloned().unwrap_or_default();
        for n in next_free_numbers(&taken, missing) {
            added.push((class, process_group_id(cluster, class, n)));
        }
    }
    added
}

/// What AddProcessGroups does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddGroupsDecision {
    /// Every class has its groups.
    Nothing,
    /// Groups are missing, but which IDs are still excluded is unknown: a reused one
    /// would have its new process excluded at once. Wait for the database to answer.
    WaitForDatabase {
        /// How many groups are missing.
        missing: usize,
    },
    /// Add these groups (written at once, so a restart never allocates twice).
    Add(Vec<StatusMutation>),
}

/// Decides from the snapshot: the groups to add, unless the database exists and its
/// status (the excluded IDs) cannot be read.
pub fn decide(snapshot: &ClusterSnapshot) -> AddGroupsDecision {
    let excluded = snapshot
        .database_status()
        .map(excluded_instance_ids)
        .unwrap_or_default();
    let added = groups_to_add(
        snapshot.cluster(),
        &snapshot.status().process_groups,
        &excluded,
    );
    if added.is_empty() {
        return AddGroupsDecision::Nothing;
    }
    if matches!(snapshot.database(), DatabaseState::Unreadable(_)) {
        return AddGroupsDecision::WaitForDatabase {
            missing: added.len(),
        };
    }
    AddGroupsDecision::Add(
        added
            .into_iter()
            .map(|(class, id)| StatusMutation::AddProcessGroup { id, class })
            .collect(),
    )
}

#[async_trait]
impl Subreconciler for AddProcessGroups {
    fn name(&self) -> &'static str {
        "AddProcessGroups"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        Ok(match decide(snapshot) {
            AddGroupsDecision::Nothing => Verdict::Continue,
            AddGroupsDecision::WaitForDatabase { missing } => Verdict::Wait(Wait::new(
                WaitOn::Database,
                format!(
                    "{missing} process groups to add, but the database status (which IDs are still excluded) cannot be read"
                ),
            )),
            // Written at once: AddServices, AddPVCs and AddPods create the groups' objects.
            AddGroupsDecision::Add(mutations) => Verdict::plain([Action::WriteStatus(mutations)]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, reporting};
    use crate::controller::model::process_groups::new_process_group;

    #[test]
    fn decisions_wait_for_a_readable_database_only_when_one_exists() {
        let spec = "{version: 7.1.57, processCounts: {storage: 2, log: -1, stateless: -1}}";
        match decide(&Fixture::new(spec).build()) {
            AddGroupsDecision::Add(mutations) => assert_eq!(
                mutations[1],
                StatusMutation::AddProcessGroup {
                    id: "storage-2".into(),
                    class: ProcessClass::Storage
                }
            ),
            other => panic!("unexpected {other:?}"),
        }
        let unreadable = Fixture::new(spec)
            .connection_string("a:b@10.0.0.1:4501")
            .unreadable()
            .build();
        assert_eq!(
            decide(&unreadable),
            AddGroupsDecision::WaitForDatabase { missing: 2 }
        );
        assert!(matches!(
            AddProcessGroups.decide(&unreadable, &PassFacts::default()),
            Ok(Verdict::Wait(Wait {
                waits_on: WaitOn::Database,
                goes_on: false,
                ..
            }))
        ));
        let mut db = reporting(&["storage-1"]);
        if let Some(p) = db.cluster.processes.get_mut("p0") {
            p.excluded = true;
        }
        let excluded = Fixture::new(spec)
            .connection_string("a:b@10.0.0.1:4501")
            .database(db)
            .build();
        match decide(&excluded) {
            AddGroupsDecision::Add(mutations) => {
                let ids: Vec<_> = mutations
                    .iter()
                    .map(|m| match m {
                        StatusMutation::AddProcessGroup { id, .. } => id.as_str(),
                        _ => "",
                    })
                    .collect();
                assert_eq!(
                    ids,
                    ["storage-2", "storage-3"],
                    "storage-1 is still excluded"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    fn cluster(spec: serde_json::Value) -> FoundationDBCluster {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample", "namespace": "default"}, "spec": spec
        }))
        .unwrap()
    }

    #[test]
    fn a_new_cluster_gets_every_group() {
        let cluster = cluster(serde_json::json!({
            "version": "7.1.57", "processCounts": {"storage": 4, "cluster_controller": 1}
        }));
        let added = groups_to_add(&cluster, &[], &BTreeSet::new());
        assert_eq!(added.len(), 17);
        assert_eq!(added[0], (ProcessClass::Storage, "storage-1".to_owned()));
        assert!(added.contains(&(
            ProcessClass::ClusterController,
            "cluster_controller-1".to_owned()
        )));
        assert!(added.contains(&(ProcessClass::Stateless, "stateless-8".to_owned())));
    }

    #[test]
    fn numbers_skip_groups_being_removed_and_excluded_ids() {
        let cluster = cluster(serde_json::json!({
            "version": "7.1.57", "processGroupIDPrefix": "dc1",
            "processCounts": {"storage": 3, "log": -1, "stateless": -1}
        }));
        let mut removed = new_process_group("dc1-storage-1".into(), ProcessClass::Storage, 0);
        removed.removal_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::UNIX_EPOCH,
        ));
        let groups = [
            removed,
            new_process_group("dc1-storage-3".into(), ProcessClass::Storage, 0),
        ];
        let excluded = BTreeSet::from(["dc1-storage-2".to_owned()]);
        let added = groups_to_add(&cluster, &groups, &excluded);
        assert_eq!(
            added,
            [
                (ProcessClass::Storage, "dc1-storage-4".to_owned()),
                (ProcessClass::Storage, "dc1-storage-5".to_owned())
            ]
        );
    }

    #[test]
    fn numbers_taken_under_an_old_prefix_stay_taken() {
        // The prefix changed from dc1 to dc2: the old groups keep their numbers (and their
        // pods), new groups get fresh ones with the new prefix.
        let cluster = cluster(serde_json::json!({
            "version": "7.1.57", "processGroupIDPrefix": "dc2",
            "processCounts": {"storage": 3, "log": -1, "stateless": -1}
        }));
        let groups = [
            new_process_group("dc1-storage-1".into(), ProcessClass::Storage, 0),
            new_process_group("storage-2".into(), ProcessClass::Storage, 0),
        ];
        let added = groups_to_add(&cluster, &groups, &BTreeSet::new());
        assert_eq!(added, [(ProcessClass::Storage, "dc2-storage-3".to_owned())]);
    }

    #[test]
    fn ids_excluded_in_the_configuration_are_not_reused() {
        let status: DatabaseStatus = serde_json::from_value(serde_json::json!({
            "cluster": {
                "processes": {"a": {"excluded": true, "locality": {"instance_id": "storage-2"}}},
                "configuration": {"excluded_servers": [
                    {"locality": "locality_instance_id:storage-1"},
                    {"address": "10.1.1.1"}
                ]}
            }
        }))
        .unwrap();
        assert_eq!(
            excluded_instance_ids(&status),
            BTreeSet::from(["storage-1".to_owned(), "storage-2".to_owned()])
        );
    }
}
