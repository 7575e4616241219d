use fdb_shared::api::cluster::{
    ProcessGroupCondition, ProcessGroupConditionType as C, ProcessGroupStatus,
};

use fdb_shared::status_json::DatabaseStatus;

use super::*;
use crate::controller::fixtures::{Fixture, group, pod, reporting};
use crate::controller::pod_updates::decision::decide;

/// Groups with IncorrectPodSpec, in zones: storage-1/log-1 in z1, storage-2/stateless-1 in
/// z2, storage-3 in z3.
const LAYOUT: [(&str, &str); 5] = [
    ("storage-1", "z1"),
    ("log-1", "z1"),
    ("storage-2", "z2"),
    ("stateless-1", "z2"),
    ("storage-3", "z3"),
];

fn outdated(id: &str, zone: &str) -> ProcessGroupStatus {
    let mut g = group(id);
    g.fault_domain = Some(zone.to_owned());
    g.process_group_conditions = vec![ProcessGroupCondition {
        condition_type: C::IncorrectPodSpec,
        timestamp: 1,
    }];
    g
}

fn fixture(spec: &str) -> Fixture {
    fixture_with(spec, |_| {})
}

/// [`fixture`], its status document changed by `edit` (processes `p0`.. in LAYOUT order).
fn fixture_with(spec: &str, edit: impl FnOnce(&mut DatabaseStatus)) -> Fixture {
    let ids: Vec<&str> = LAYOUT.iter().map(|(id, _)| *id).collect();
    let mut db = reporting(&ids);
    edit(&mut db);
    db.cluster
        .fault_tolerance
        .max_zone_failures_without_losing_availability = Some(1);
    db.cluster
        .fault_tolerance
        .max_zone_failures_without_losing_data = Some(1);
    Fixture::new(spec)
        .groups(LAYOUT.iter().map(|(id, zone)| outdated(id, zone)))
        .pods(LAYOUT.iter().enumerate().map(|(n, (id, zone))| {
            pod(
                &format!("sample-{id}"),
                id,
                zone,
                &format!("10.0.0.{}", n + 1),
            )
        }))
        .database(db)
}

fn deleted(decision: &PodUpdateDecision) -> Vec<&str> {
    match &decision.deletion {
        Deletion::Delete { pods, .. } => pods.iter().map(|p| p.pod.as_str()).collect(),
        other => panic!("expected a deletion, got {other:?}"),
    }
}

#[test]
fn transaction_groups_are_replaced_and_storage_pods_deleted_one_zone_at_a_time() {
    let decision = decide(&fixture("version: 7.1.57").build());
    assert_eq!(decision.replace, ["log-1", "stateless-1"]);
    assert_eq!(deleted(&decision), ["sample-storage-1"]);
    if let Deletion::Delete {
        zones,
        maintenance_zone,
        ..
    } = &decision.deletion
    {
        assert_eq!(zones, &["z1"]);
        assert_eq!(
            maintenance_zone, &None,
            "maintenance mode is off by default"
        );
    }
}

/// An edit of the status document: storage-1's process (`p0`) plays `role` only.
fn storage_1_plays(role: &str) -> impl Fn(&mut DatabaseStatus) + Copy + '_ {
    move |db: &mut DatabaseStatus| {
        let storage_1 = db.cluster.processes.get_mut("p0").unwrap();
        storage_1.roles = vec![serde_json::from_value(serde_json::json!({"role": role})).unwrap()];
    }
}

/// With two usable regions FoundationDB runs the remote log routers on storage
/// processes: a storage group playing such a role is replaced with the transaction
/// system (one exclusion for all), not deleted (a recovery of its own); the others keep
/// their pods. Under `Delete` it is deleted as every group.
#[test]
fn a_storage_group_running_a_log_router_is_replaced_with_the_transaction_system() {
    let router = storage_1_plays("router");
    let decision = decide(&fixture_with("version: 7.1.57", router).build());
    assert_eq!(decision.replace, ["storage-1", "log-1", "stateless-1"]);
    assert_eq!(deleted(&decision), ["sample-storage-2"]);

    let delete = decide(
        &fixture_with(
            "{version: 7.1.57, automationOptions: {podUpdateStrategy: Delete}}",
            router,
        )
        .build(),
    );
    assert!(delete.replace.is_empty(), "{delete:?}");
}

/// A storage process holding another transaction role (here the master, in a cluster
/// short of stateless processes) is deleted as before: only a remote log router makes a
/// storage group part of the replaced transaction system.
#[test]
fn a_storage_group_running_the_master_is_still_deleted() {
    let decision = decide(&fixture_with("version: 7.1.57", storage_1_plays("master")).build());
    assert_eq!(decision.replace, ["log-1", "stateless-1"]);
    assert_eq!(deleted(&decision), ["sample-storage-1"]);
}

#[test]
fn strategies_replace_everything_or_delete_everything() {
    let replace = decide(
        &fixture("{version: 7.1.57, automationOptions: {podUpdateStrategy: Replace}}").build(),
    );
    assert_eq!(replace.replace.len(), 5);
    assert_eq!(replace.deletion, Deletion::Nothing);
    let delete = decide(
        &fixture("{version: 7.1.57, automationOptions: {podUpdateStrategy: Delete}}").build(),
    );
    assert!(delete.replace.is_empty());
    assert_eq!(deleted(&delete), ["sample-storage-1", "sample-log-1"]);
    let capped = decide(
        &fixture("{version: 7.1.57, automationOptions: {podUpdateStrategy: Replace, maxConcurrentReplacements: 2}}")
            .build(),
    );
    assert_eq!(capped.replace, ["storage-1", "log-1"]);
    assert_eq!(capped.replacements_waiting, 3);
}

#[test]
fn deletion_modes() {
    let one = decide(&fixture("{version: 7.1.57, automationOptions: {deletionMode: ProcessGroup, podUpdateStrategy: Delete}}").build());
    assert_eq!(deleted(&one), ["sample-storage-1"]);
    let none =
        decide(&fixture("{version: 7.1.57, automationOptions: {deletionMode: None}}").build());
    assert_eq!(
        none.deletion,
        Deletion::Disabled(vec![
            "storage-1".into(),
            "storage-2".into(),
            "storage-3".into()
        ])
    );
    // All: as many zones as the budget allows (double redundancy: one).
    let all = decide(&fixture("{version: 7.1.57, automationOptions: {deletionMode: All}}").build());
    assert_eq!(deleted(&all), ["sample-storage-1"]);
    let all_triple = decide(
        &fixture("{version: 7.1.57, databaseConfiguration: {redundancy_mode: triple}, automationOptions: {deletionMode: All}}")
            .database({
                let mut db = reporting(&["storage-1", "log-1", "storage-2", "stateless-1", "storage-3"]);
                db.cluster.fault_tolerance.max_zone_failures_without_losing_availability = Some(2);
                db.cluster.fault_tolerance.max_zone_failures_without_losing_data = Some(2);
                db
            })
            .build(),
    );
    assert_eq!(
        deleted(&all_triple),
        ["sample-storage-1", "sample-storage-2"]
    );
}

#[test]
fn a_terminating_pod_or_a_zone_already_down_blocks_deletions() {
    let terminating_since = |unix: i64| {
        let mut terminating = pod("sample-storage-9", "storage-9", "z9", "10.0.0.9");
        terminating.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                jiff::Timestamp::from_second(unix).unwrap(),
            ));
        terminating
    };
    // Terminating for 100 s (the fixture's clock is at 10 000).
    let fresh = fixture("version: 7.1.57").pods([terminating_since(9_900)]);
    match decide(&fresh.build()).deletion {
        Deletion::Wait(reason) => assert!(reason.contains("sample-storage-9"), "{reason}"),
        other => panic!("unexpected {other:?}"),
    }
    // Stuck terminating past ignoreTerminatingPodsSeconds (600 s): it holds nothing back.
    let stuck = fixture("version: 7.1.57").pods([terminating_since(1)]);
    assert!(
        matches!(decide(&stuck.build()).deletion, Deletion::Delete { .. }),
        "a pod stuck terminating holds every pod update"
    );
    // storage-2's processes are gone: zone z2 is down, so z1 may not go down too.
    let mut db = reporting(&["storage-1", "log-1", "stateless-1", "storage-3"]);
    db.cluster
        .fault_tolerance
        .max_zone_failures_without_losing_availability = Some(0);
    match decide(&fixture("version: 7.1.57").database(db).build()).deletion {
        Deletion::Wait(reason) => {
            assert!(reason.contains("z2 (storage-2)"), "{reason}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn maintenance_mode_sets_the_zone_and_waits_for_another_zone_in_maintenance() {
    let spec = "{version: 7.1.57, automationOptions: {maintenanceModeOptions: {UseMaintenanceModeChecker: true}}}";
    match decide(&fixture(spec).build()).deletion {
        Deletion::Delete {
            maintenance_zone, ..
        } => assert_eq!(maintenance_zone.as_deref(), Some("z1")),
        other => panic!("unexpected {other:?}"),
    }
    // z2 is in maintenance (an interrupted rollout): it goes first, without setting it again.
    let mut db = reporting(&[
        "storage-1",
        "log-1",
        "storage-2",
        "stateless-1",
        "storage-3",
    ]);
    db.cluster.maintenance_zone = Some("z2".into());
    db.cluster.maintenance_seconds_remaining = Some(300.0);
    let decision = decide(&fixture(spec).database(db.clone()).build());
    assert_eq!(deleted(&decision), ["sample-storage-2"]);
    assert!(matches!(
        decision.deletion,
        Deletion::Delete {
            maintenance_zone: None,
            ..
        }
    ));
    // Maintenance of a zone with nothing to update blocks the others.
    db.cluster.maintenance_zone = Some("z7".into());
    match decide(&fixture(spec).database(db).build()).deletion {
        Deletion::Wait(reason) => {
            assert!(reason.contains("zone z7 is under maintenance"), "{reason}")
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn zones_hosting_coordinators_go_last_and_wait_for_the_coordinators_to_move() {
    // storage-1 (z1, 10.0.0.1) hosts a coordinator: z2 goes first.
    let with_coordinator = |coordinators: &str| {
        fixture("{version: 7.1.57, routing: {useDNSInClusterFile: false}}")
            .connection_string(&format!("s:abc@{coordinators}"))
    };
    let decision = decide(&with_coordinator("10.0.0.1:4501").build());
    assert_eq!(deleted(&decision), ["sample-storage-2"]);
    // Every zone with an outdated storage pod hosts one: the batch waits, naming them.
    let decision = decide(&with_coordinator("10.0.0.1:4501,10.0.0.3:4501,10.0.0.5:4501").build());
    match decision.deletion {
        Deletion::MoveCoordinators { groups, reason } => {
            assert_eq!(groups.into_iter().collect::<Vec<_>>(), ["storage-1"]);
            assert!(
                reason.contains("sample-storage-1 hosts coordinator 10.0.0.1:4501"),
                "{reason}"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn groups_with_a_replace_only_change_are_left_to_replace_misconfigured_pods() {
    use crate::controller::fixtures::cluster;
    use crate::controller::model::desired::pod_options;
    use crate::controller::model::pod::build_pod;
    // storage-1's pod was made without the node selector the spec now has: its spec
    // differs (IncorrectPodSpec), but only a new group can move it to other nodes.
    let old = cluster("version: 7.1.57");
    let storage = outdated("storage-1", "z1");
    let live = build_pod(&old, &storage, &pod_options(&old, &storage)).unwrap();
    let spec = "{version: 7.1.57, automationOptions: {podUpdateStrategy: Delete}, processes: {storage: {podTemplate: {spec: {nodeSelector: {disk: nvme}}}}}}";
    let mut db = reporting(&["storage-1"]);
    db.cluster
        .fault_tolerance
        .max_zone_failures_without_losing_availability = Some(1);
    let snapshot = Fixture::new(spec)
        .groups([storage])
        .pods([live])
        .database(db)
        .build();
    let decision = decide(&snapshot);
    assert!(decision.replace.is_empty());
    assert_eq!(decision.deletion, Deletion::Nothing, "{decision:?}");
}

#[test]
fn the_plan_marks_replacements_then_deletes_one_zone_under_the_lock() {
    let snapshot = fixture("version: 7.1.57").build();
    let verdict = UpdatePods.decide(&snapshot, &PassFacts::default()).unwrap();
    let Verdict::Act(plan) = &verdict else {
        panic!("{verdict:?}")
    };
    assert!(matches!(&plan.actions[0].action,
        Action::WriteStatus(m) if m.len() == 2));
    assert!(matches!(&plan.actions[1].action,
        Action::Event { reason: EventReason::ProcessGroupsReplaced, note, .. }
            if note.contains("log-1, stateless-1")));
    let deletion = plan
        .actions
        .iter()
        .find(|p| matches!(p.action, Action::DeletePod(_)))
        .unwrap();
    assert!(deletion.disrupts);
    assert_eq!(deletion.lock, Some(LockedAction::DeletePods));
    assert!(plan.refused.starts_with("pods of zone z1"));
    assert_eq!(plan.then.as_ref().unwrap().waits_on, WaitOn::Kubernetes);
}

#[test]
fn deletion_mode_none_says_so_with_the_go_operator_event_and_deletes_nothing() {
    let snapshot = fixture("{version: 7.1.57, automationOptions: {deletionMode: None}}").build();
    let verdict = UpdatePods.decide(&snapshot, &PassFacts::default()).unwrap();
    let actions = verdict.actions();
    assert!(actions.iter().all(|a| !matches!(a, Action::DeletePod(_))));
    assert!(actions.iter().any(|a| matches!(a,
        Action::Event { reason: EventReason::NeedsPodsDeletion, note, .. }
            if note.contains("storage-1, storage-2, storage-3"))));
}

#[test]
fn pod_updates_wait_while_tls_is_turned_on_or_off() {
    let migrating = fixture("{version: 7.1.57, mainContainer: {enableTls: true}}").status(|s| {
        s.required_addresses.tls = true;
        s.required_addresses.non_tls = true;
    });
    let decision = decide(&migrating.build());
    assert!(decision.replace.is_empty(), "{decision:?}");
    match &decision.deletion {
        Deletion::Wait(reason) => assert!(reason.contains("TLS migration"), "{reason}"),
        other => panic!("expected a wait, got {other:?}"),
    }
    // Once the coordinators moved, only the new kind is required: the updates go on.
    let migrated = fixture("{version: 7.1.57, mainContainer: {enableTls: true}}").status(|s| {
        s.required_addresses.tls = true;
    });
    let decision = decide(&migrated.build());
    assert_eq!(decision.replace, ["log-1", "stateless-1"]);
}

/// Issue 26, seed 19: in single redundancy a storage pod's deletion leaves its data
/// without a replica until the pod is back, so it is paced like a recovery (never
/// seconds after one ended); with a replica elsewhere it is not.
#[test]
fn a_storage_pod_deletion_is_paced_in_single_redundancy_only() {
    let recovery_of_storage_deletion = |spec: &str| {
        let snapshot = fixture(spec).build();
        let verdict = UpdatePods.decide(&snapshot, &PassFacts::default()).unwrap();
        let Verdict::Act(plan) = verdict else {
            panic!("{verdict:?}")
        };
        plan.actions
            .into_iter()
            .find(|p| matches!(&p.action, Action::DeletePod(name) if name == "sample-storage-1"))
            .unwrap()
            .recovery
    };
    let single = recovery_of_storage_deletion(
        "{version: 7.1.57, databaseConfiguration: {redundancy_mode: single}}",
    );
    assert!(
        single
            .as_deref()
            .is_some_and(|what| what.contains("storage-1")),
        "{single:?}"
    );
    assert_eq!(recovery_of_storage_deletion("version: 7.1.57"), None);
}

#[test]
fn a_coordinator_that_cannot_move_anywhere_has_its_group_replaced_instead_of_waiting() {
    // Every zone hosts a coordinator (double redundancy: three), and log-1, the only other
    // stateful group of z1, is excluded: without storage-1 the coordinators would span
    // two zones. Waiting for them to move off storage-1 would never end (short seed 26
    // of the sweep): storage-1 is replaced, its replacement gives them a zone.
    let mut db = reporting(&[
        "storage-1",
        "log-1",
        "storage-2",
        "stateless-1",
        "storage-3",
    ]);
    db.cluster
        .fault_tolerance
        .max_zone_failures_without_losing_availability = Some(1);
    db.cluster
        .fault_tolerance
        .max_zone_failures_without_losing_data = Some(1);
    let spec = "{version: 7.1.57, routing: {useDNSInClusterFile: false}}";
    let coordinators = "s:abc@10.0.0.1:4501,10.0.0.3:4501,10.0.0.5:4501";
    let movable = fixture(spec)
        .connection_string(coordinators)
        .database(db.clone())
        .build();
    assert!(matches!(
        decide(&movable).deletion,
        Deletion::MoveCoordinators { .. }
    ));
    for process in db.cluster.processes.values_mut() {
        if process.locality.instance_id.as_deref() == Some("log-1") {
            process.excluded = true;
        }
    }
    let stuck = fixture(spec)
        .connection_string(coordinators)
        .database(db)
        .build();
    let decision = decide(&stuck);
    match &decision.deletion {
        Deletion::ReplaceCoordinatorHosts { groups, reason } => {
            assert_eq!(groups, &["storage-1"]);
            assert!(reason.contains("cannot move"), "{reason}");
        }
        other => panic!("unexpected {other:?}"),
    }
    let verdict = verdict_of(&stuck, decision);
    assert!(verdict.actions().iter().any(|a| matches!(a,
        Action::WriteStatus(m) if m.contains(&StatusMutation::MarkForRemoval { group: "storage-1".into() }))));
    assert!(
        !verdict
            .actions()
            .iter()
            .any(|a| matches!(a, Action::DeletePod(_)))
    );
    // ChangeCoordinators is told of no pod about to go: the coordinators stay until the
    // replacement reports.
    assert_eq!(
        crate::controller::pass::forecast::upcoming_pod_deletions(
            &stuck,
            crate::controller::model::replace_only::ReplacePolicy::default()
        ),
        None
    );
}

/// Randomized rollout seeds 6, 8 and 10 (issue 38): in single redundancy, the next
/// storage zone waits until the storage pods deleted before have been back for the
/// recovery pacing; a storage pod that came back long ago, or any pod in double
/// redundancy, holds nothing.
#[test]
fn single_redundancy_spaces_storage_zones_by_the_recovery_pacing() {
    let with_storage_2_created = |spec: &str, created: i64| {
        let ids: Vec<&str> = LAYOUT.iter().map(|(id, _)| *id).collect();
        let mut db = reporting(&ids);
        db.cluster
            .fault_tolerance
            .max_zone_failures_without_losing_availability = Some(1);
        db.cluster
            .fault_tolerance
            .max_zone_failures_without_losing_data = Some(1);
        let mut groups: Vec<ProcessGroupStatus> =
            LAYOUT.iter().map(|(id, zone)| outdated(id, zone)).collect();
        // storage-2 was updated already: its pod is new.
        groups[2].process_group_conditions.clear();
        Fixture::new(spec)
            .groups(groups)
            .pods(LAYOUT.iter().enumerate().map(|(n, (id, zone))| {
                let mut pod = pod(
                    &format!("sample-{id}"),
                    id,
                    zone,
                    &format!("10.0.0.{}", n + 1),
                );
                if *id == "storage-2" {
                    pod.metadata.creation_timestamp =
                        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                            jiff::Timestamp::from_second(created).unwrap(),
                        ));
                }
                pod
            }))
            .database(db)
            .build()
    };
    let single = "{version: 7.1.57, databaseConfiguration: {redundancy_mode: single}}";
    // The fixture's clock is at 10 000: storage-2's pod came back 50 s ago.
    match decide(&with_storage_2_created(single, 9_950)).deletion {
        Deletion::Wait(reason) => {
            assert!(
                reason.contains("storage pod sample-storage-2 came back 50s ago"),
                "{reason}"
            );
        }
        other => panic!("the next storage zone went at once: {other:?}"),
    }
    assert!(matches!(
        decide(&with_storage_2_created(single, 9_800)).deletion,
        Deletion::Delete { .. }
    ));
    assert!(matches!(
        decide(&with_storage_2_created("version: 7.1.57", 9_950)).deletion,
        Deletion::Delete { .. }
    ));
}
