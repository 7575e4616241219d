use super::*;
use crate::controller::fixtures::{Fixture, database, desired_hash, group, pod, reporting};
use crate::controller::model::pod::{
    LAST_APPLIED_CONFIG_MAP_ANNOTATION, MAIN_CONTAINER, SIDECAR_CONTAINER,
};
use k8s_openapi::api::core::v1::Pod;

const MAIN_71: &str = "foundationdb/foundationdb:7.1.57";
const SIDECAR_71: &str = "foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1";
const SIDECAR_73: &str = "foundationdb/foundationdb-kubernetes-sidecar:7.3.43-1";

fn v(text: &str) -> FdbVersion {
    text.parse().unwrap()
}

fn upgrading(spec: &str) -> Fixture {
    Fixture::new(spec)
        .status(|s| s.running_version = Some("7.1.57".into()))
        .connection_string("sample:abc@10.0.0.1:4501")
}

fn staged_pod(name: &str, id: &str, ip: &str, sidecar: &str, hash: Option<&str>) -> Pod {
    let mut pod = pod(name, id, "n1", ip);
    if let Some(spec) = pod.spec.as_mut() {
        spec.containers = serde_json::from_value(serde_json::json!([
            {"name": MAIN_CONTAINER, "image": MAIN_71},
            {"name": SIDECAR_CONTAINER, "image": sidecar}
        ]))
        .unwrap();
    }
    if let Some(hash) = hash {
        pod.annotations_mut().insert(
            LAST_APPLIED_CONFIG_MAP_ANNOTATION.to_owned(),
            hash.to_owned(),
        );
    }
    pod
}

#[test]
fn version_changes_are_classified_by_protocol_and_direction() {
    let change = |running: &str, wanted: &str| {
        let running = running.to_owned();
        let snapshot = Fixture::new(&format!("version: {wanted}"))
            .status(|s| s.running_version = Some(running))
            .build();
        version_change(snapshot.cluster())
    };
    assert_eq!(change("7.1.57", "7.1.57"), VersionChange::None);
    assert!(matches!(
        change("7.1.57", "7.1.63"),
        VersionChange::Compatible { .. }
    ));
    assert!(matches!(
        change("7.1.63", "7.1.57"),
        VersionChange::Compatible { .. }
    ));
    assert_eq!(
        change("7.1.57", "7.3.43"),
        VersionChange::Incompatible {
            from: v("7.1.57"),
            to: v("7.3.43")
        }
    );
    assert!(matches!(
        change("7.3.43", "7.1.57"),
        VersionChange::Refused { .. }
    ));
    assert!(change("7.3.43", "7.1.57").refusal_message().is_some());
}

#[test]
fn the_staging_hash_changes_only_while_an_upgrade_is_pending() {
    let pending = upgrading("version: 7.3.43").groups([group("log-1")]);
    let settled = Fixture::new("version: 7.1.57")
        .status(|s| s.running_version = Some("7.1.57".into()))
        .connection_string("sample:abc@10.0.0.1:4501")
        .groups([group("log-1")]);
    assert_ne!(
        desired_hash(&pending, "log-1"),
        desired_hash(&settled, "log-1")
    );
    let settled_snapshot = settled.build();
    assert_eq!(wanted_sidecar_image(settled_snapshot.cluster()), SIDECAR_71);
    assert_eq!(wanted_sidecar_image(pending.build().cluster()), SIDECAR_73);
}

#[test]
fn the_kill_waits_for_every_pod_and_names_those_not_ready() {
    let base = upgrading("version: 7.3.43").groups([group("log-1"), group("log-2")]);
    let hash = desired_hash(&base, "log-1");
    let snapshot = base
        .pods([
            staged_pod("sample-log-1", "log-1", "10.0.0.1", SIDECAR_73, Some(&hash)),
            staged_pod("sample-log-2", "log-2", "10.0.0.2", SIDECAR_71, Some(&hash)),
        ])
        .database(reporting(&["log-1", "log-2"]))
        .build();
    let UpgradeBounce::Wait(wait) = decide_bounce(&snapshot).unwrap() else {
        panic!("must wait");
    };
    let text = wait.to_string();
    assert!(
        text.contains("log-2 (sample-log-2: sidecar image"),
        "{text}"
    );
    assert!(!text.contains("log-1"), "{text}");
}

#[test]
fn an_unconfirmed_staging_blocks_the_kill() {
    let base = upgrading("version: 7.3.43").groups([group("log-1")]);
    let snapshot = base
        .pods([staged_pod(
            "sample-log-1",
            "log-1",
            "10.0.0.1",
            SIDECAR_73,
            Some("old"),
        )])
        .database(reporting(&["log-1"]))
        .build();
    let UpgradeBounce::Wait(wait) = decide_bounce(&snapshot).unwrap() else {
        panic!("must wait");
    };
    assert!(wait.to_string().contains("bin/7.3.43/fdbserver"), "{wait}");
}

#[test]
fn every_process_is_killed_at_once_when_all_pods_are_ready() {
    let base = upgrading("version: 7.3.43").groups([group("log-1"), group("log-2")]);
    let hash = desired_hash(&base, "log-1");
    let ready = base.pods([
        staged_pod("sample-log-1", "log-1", "10.0.0.1", SIDECAR_73, Some(&hash)),
        staged_pod("sample-log-2", "log-2", "10.0.0.2", SIDECAR_73, Some(&hash)),
    ]);
    let snapshot = ready
        .clone()
        .database(reporting(&["log-1", "log-2"]))
        .build();
    let UpgradeBounce::KillAll {
        target,
        addresses,
        agreement,
        ..
    } = decide_bounce(&snapshot).unwrap()
    else {
        panic!("must kill");
    };
    assert_eq!(target, v("7.3.43"));
    let listed: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    assert_eq!(listed, ["10.0.0.1:4501", "10.0.0.2:4501"]);
    assert_eq!(agreement, None, "no locks, no pending-upgrade list");

    // A process up for less than minimumUptimeSecondsForBounce holds the kill back.
    let young = ready
        .clone()
        .cluster(|c| c.spec.minimum_uptime_seconds_for_bounce = Some(5000));
    let snapshot = young.database(reporting(&["log-1", "log-2"])).build();
    assert!(matches!(
        decide_bounce(&snapshot).unwrap(),
        UpgradeBounce::Wait(UpgradeWait::Unsafe(Refusal::UptimeTooShort { .. }))
    ));
    // A zone in maintenance holds the kill back until it is off.
    let mut in_maintenance = reporting(&["log-1", "log-2"]);
    in_maintenance.cluster.maintenance_zone = Some("z-log-1".to_owned());
    let snapshot = ready.clone().database(in_maintenance).build();
    assert_eq!(
        decide_bounce(&snapshot).unwrap(),
        UpgradeBounce::Wait(UpgradeWait::Maintenance {
            zone: "z-log-1".to_owned()
        })
    );
    // A missing process would be missed by the kill.
    let snapshot = ready.database(reporting(&["log-1"])).build();
    assert!(matches!(
        decide_bounce(&snapshot).unwrap(),
        UpgradeBounce::Wait(UpgradeWait::ProcessesMissing { .. })
    ));
}

#[test]
fn with_locks_the_kill_first_brings_every_own_group_to_the_pending_list() {
    let base =
        upgrading("{version: 7.3.43, processGroupIDPrefix: kc1, faultDomain: {zoneCount: 3}}")
            .groups([group("kc1-log-2"), group("kc1-log-1")]);
    let hash = desired_hash(&base, "kc1-log-1");
    let snapshot = base
        .pods([
            staged_pod(
                "sample-kc1-log-1",
                "kc1-log-1",
                "10.0.0.1",
                SIDECAR_73,
                Some(&hash),
            ),
            staged_pod(
                "sample-kc1-log-2",
                "kc1-log-2",
                "10.0.0.2",
                SIDECAR_73,
                Some(&hash),
            ),
        ])
        .database(reporting(&["kc1-log-1", "kc1-log-2"]))
        .build();
    let UpgradeBounce::KillAll { agreement, .. } = decide_bounce(&snapshot).unwrap() else {
        panic!("must be ready to kill");
    };
    assert_eq!(
        agreement,
        Some(Agreement {
            lock_id: "kc1".into(),
            groups: vec!["kc1-log-1".into(), "kc1-log-2".into()],
        })
    );
}

#[test]
fn the_pending_list_plan_adds_only_missing_groups_and_drops_other_targets() {
    use crate::controller::versions::pending_upgrades::plan_pending_list;
    use crate::fdb::PendingUpgrade;
    let target = v("7.3.43");
    let listed = vec![
        PendingUpgrade::new(&target, "kc1-log-1"),
        PendingUpgrade::new(&target, "kc2-log-1"),
        PendingUpgrade::new(&v("7.1.57"), "kc1-log-9"),
    ];
    let plan = plan_pending_list(&listed, &target, &["kc1-log-1".into(), "kc1-log-2".into()]);
    assert_eq!(plan.add, [PendingUpgrade::new(&target, "kc1-log-2")]);
    assert_eq!(plan.stale, [PendingUpgrade::new(&v("7.1.57"), "kc1-log-9")]);
    let agreed: Vec<&str> = plan.agreed.iter().map(String::as_str).collect();
    assert_eq!(agreed, ["kc1-log-1", "kc1-log-2", "kc2-log-1"]);
    // Everything already listed: nothing to write.
    let again = plan_pending_list(&[listed[0].clone()], &target, &["kc1-log-1".into()]);
    assert!(again.add.is_empty() && again.stale.is_empty());
}

#[test]
fn the_kill_waits_until_every_group_of_the_database_on_the_old_version_agreed() {
    // The 7.1 status fixture: eight processes, all on 7.1.0-rc1.
    let status =
        DatabaseStatus::parse_fdbcli_output(crate::controller::fixtures::STATUS_7_1).unwrap();
    let target = v("7.3.43");
    let mut agreed: BTreeSet<String> = ["log-1", "log-2", "log-3", "log-4", "cluster_controller-1"]
        .iter()
        .map(|g| (*g).to_owned())
        .collect();
    let Err(wait) = check_agreement(&status, &target, &agreed) else {
        panic!("the storage groups have not agreed");
    };
    assert_eq!(
        wait,
        UpgradeWait::NotAgreed {
            target,
            groups: vec!["storage-1".into(), "storage-2".into(), "storage-3".into()],
            total: 8,
        }
    );
    assert!(
        wait.to_string()
            .starts_with("3 of 8 process groups on the old version"),
        "{wait}"
    );
    assert!(
        wait.to_string().contains("storage-1, storage-2, storage-3"),
        "{wait}"
    );
    agreed.extend(["storage-1", "storage-2", "storage-3"].map(str::to_owned));
    assert_eq!(check_agreement(&status, &target, &agreed), Ok(()));
    // Processes already on the target (restarted by the kill) need no agreement.
    let mut moved = status.clone();
    for process in moved.cluster.processes.values_mut() {
        process.version = Some(target);
    }
    assert_eq!(check_agreement(&moved, &target, &BTreeSet::new()), Ok(()));
    // A process with only `process_id` (several servers per pod) counts by it.
    let mut by_process_id = status;
    for process in by_process_id.cluster.processes.values_mut() {
        process.locality.process_id = process
            .locality
            .instance_id
            .take()
            .map(|id| format!("{id}-1"));
    }
    let Err(UpgradeWait::NotAgreed { groups, .. }) =
        check_agreement(&by_process_id, &target, &agreed)
    else {
        panic!("process IDs are not on the list");
    };
    assert!(groups.contains(&"storage-1-1".to_owned()), "{groups:?}");
}

#[test]
fn after_the_kill_nothing_is_killed_again() {
    // The processes report the target: the running version is the spec's.
    let snapshot = Fixture::new("version: 7.3.43")
        .status(|s| s.running_version = Some("7.3.43".into()))
        .groups([group("log-1")])
        .database(reporting(&["log-1"]))
        .build();
    assert_eq!(
        decide_bounce(&snapshot).unwrap(),
        UpgradeBounce::NotUpgrading
    );
}

#[test]
fn processes_that_missed_the_kill_get_their_pods_deleted_except_coordinators() {
    let status = database(serde_json::json!({
        "client": {
            "database_status": {"available": true, "healthy": true},
            "coordinators": {"coordinators": [{"address": "10.0.0.1:4501", "reachable": true}]}
        },
        "cluster": {
            "processes": {"p1": {"address": "10.0.0.1:4501", "version": "7.3.43",
                                 "locality": {"instance_id": "log-1"}}},
            "incompatible_connections": ["10.0.0.2:4501", "10.0.0.3:4501"]
        }
    }));
    let snapshot = Fixture::new("version: 7.3.43")
        .status(|s| s.running_version = Some("7.3.43".into()))
        .groups([group("log-1"), group("stateless-1"), group("stateless-2")])
        .pods([
            pod("sample-log-1", "log-1", "n1", "10.0.0.1"),
            pod("sample-stateless-1", "stateless-1", "n2", "10.0.0.2"),
            pod("sample-stateless-2", "stateless-2", "n3", "10.0.0.9"),
        ])
        .database(status)
        .build();
    let decision = decide_incompatible(&snapshot);
    let deleted: Vec<&str> = decision.delete.iter().map(|d| d.pod.as_str()).collect();
    assert_eq!(deleted, ["sample-stateless-1"]);
    assert!(
        decision.delete[0]
            .reason
            .contains("incompatible_connections")
    );

    // A pod whose main image is newer than the running version did not miss a kill.
    let newer = Fixture::new("version: 7.1.57")
        .status(|s| s.running_version = Some("7.1.57".into()))
        .groups([group("stateless-1")])
        .pods([{
            let mut p = staged_pod(
                "sample-stateless-1",
                "stateless-1",
                "10.0.0.2",
                SIDECAR_71,
                None,
            );
            if let Some(spec) = p.spec.as_mut() {
                spec.containers[0].image = Some("foundationdb/foundationdb:7.3.43".into());
            }
            p
        }])
        .database(database(serde_json::json!({
            "client": {"database_status": {"available": true, "healthy": true}},
            "cluster": {"incompatible_connections": ["10.0.0.2:4501"]}
        })))
        .build();
    assert!(decide_incompatible(&newer).delete.is_empty());

    // While the upgrade is still pending nothing is deleted.
    let pending = Fixture::new("version: 7.3.43")
        .status(|s| s.running_version = Some("7.1.57".into()))
        .groups([group("stateless-1")])
        .pods([pod("sample-stateless-1", "stateless-1", "n2", "10.0.0.2")])
        .database(database(serde_json::json!({
            "client": {"database_status": {"available": true, "healthy": true}},
            "cluster": {"incompatible_connections": ["10.0.0.2:4501"]}
        })))
        .build();
    assert!(decide_incompatible(&pending).delete.is_empty());
}

/// Issue 25: a group whose pod cannot run (pending) holds the kill only for
/// `ignoreMissingProcessesSeconds`; then the others are killed without it.
#[test]
fn a_pending_pod_holds_the_kill_only_for_ignore_missing_processes_seconds() {
    use fdb_shared::api::cluster::{ProcessGroupCondition, ProcessGroupConditionType};
    let mut pending = group("log-2");
    pending.process_group_conditions = vec![ProcessGroupCondition {
        condition_type: ProcessGroupConditionType::PodPending,
        timestamp: 10_000,
    }];
    let base = upgrading("version: 7.3.43").groups([group("log-1"), pending]);
    let hash = desired_hash(&base, "log-1");
    let fixture = base
        .pods([staged_pod(
            "sample-log-1",
            "log-1",
            "10.0.0.1",
            SIDECAR_73,
            Some(&hash),
        )])
        .database(reporting(&["log-1"]));
    let recent = fixture.clone().at(10_020).build();
    assert!(matches!(
        decide_bounce(&recent).unwrap(),
        UpgradeBounce::Wait(UpgradeWait::PodsNotReady { .. })
    ));
    let long = fixture.at(10_031).build();
    let UpgradeBounce::KillAll { addresses, .. } = decide_bounce(&long).unwrap() else {
        panic!("must kill without the pending group");
    };
    let listed: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    assert_eq!(listed, ["10.0.0.1:4501"]);
}

/// Issue 26: a group being removed whose pod still runs is staged and killed with the
/// others; one whose pod is terminating is left out instead of holding the kill.
#[test]
fn a_group_being_removed_is_staged_while_its_pod_runs_and_left_out_once_it_goes() {
    let mut removed = group("log-2");
    removed.removal_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::from_second(9_000).unwrap(),
    ));
    let base = upgrading("version: 7.3.43").groups([group("log-1"), removed]);
    let hash = desired_hash(&base, "log-1");
    let unstaged = base
        .clone()
        .pods([
            staged_pod("sample-log-1", "log-1", "10.0.0.1", SIDECAR_73, Some(&hash)),
            staged_pod("sample-log-2", "log-2", "10.0.0.2", SIDECAR_71, None),
        ])
        .database(reporting(&["log-1", "log-2"]))
        .build();
    let UpgradeBounce::Wait(wait) = decide_bounce(&unstaged).unwrap() else {
        panic!("a running group being removed must be staged first");
    };
    assert!(wait.to_string().contains("log-2"), "{wait}");
    let mut going = staged_pod("sample-log-2", "log-2", "10.0.0.2", SIDECAR_71, None);
    going.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::from_second(9_500).unwrap(),
    ));
    let terminating = base
        .pods([
            staged_pod("sample-log-1", "log-1", "10.0.0.1", SIDECAR_73, Some(&hash)),
            going,
        ])
        .database(reporting(&["log-1", "log-2"]))
        .build();
    let UpgradeBounce::KillAll { addresses, .. } = decide_bounce(&terminating).unwrap() else {
        panic!("a terminating group being removed does not hold the kill");
    };
    let listed: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    assert_eq!(listed, ["10.0.0.1:4501"]);
}

#[test]
fn the_upgrade_kill_joins_the_list_under_the_lock_then_kills_or_gives_the_lock_up() {
    use crate::controller::pass::plan::{Action, PassFacts, Verdict};
    use crate::controller::safety::LockedAction;
    use crate::controller::steps::bounce_processes::upgrade_bounce;

    let base =
        upgrading("{version: 7.3.43, processGroupIDPrefix: kc1, faultDomain: {zoneCount: 3}}")
            .groups([group("kc1-log-1"), group("kc1-log-2")]);
    let hash = desired_hash(&base, "kc1-log-1");
    let snapshot = base
        .pods([
            staged_pod(
                "sample-kc1-log-1",
                "kc1-log-1",
                "10.0.0.1",
                SIDECAR_73,
                Some(&hash),
            ),
            staged_pod(
                "sample-kc1-log-2",
                "kc1-log-2",
                "10.0.0.2",
                SIDECAR_73,
                Some(&hash),
            ),
        ])
        .database(reporting(&["kc1-log-1", "kc1-log-2"]))
        .build();
    let facts = PassFacts::default();
    let mut answers = crate::controller::pass::facts::Answers::default();
    let join = upgrade_bounce::decide(&snapshot, &facts).unwrap().unwrap();
    let Verdict::Act(plan) = &join else {
        panic!("{join:?}")
    };
    assert_eq!(plan.actions.len(), 1, "{plan:?}");
    assert_eq!(plan.actions[0].lock, Some(LockedAction::Bounce));
    assert!(matches!(&plan.actions[0].action,
        Action::JoinPendingUpgrades { target, groups } if *target == v("7.3.43") && groups.len() == 2));
    assert_eq!(
        upgrade_bounce::conclude(&snapshot, &facts, &mut answers).unwrap(),
        Verdict::Continue,
        "nothing joined, nothing to conclude"
    );

    answers.pending_upgrade_agreed = Some(["kc1-log-1".to_owned(), "kc1-log-2".to_owned()].into());
    let kill = upgrade_bounce::conclude(&snapshot, &facts, &mut answers).unwrap();
    assert!(
        answers.pending_upgrade_agreed.is_none(),
        "the answer is taken"
    );
    let Verdict::Act(plan) = &kill else {
        panic!("{kill:?}")
    };
    assert!(matches!(&plan.actions[0].action, Action::Kill(a) if a.len() == 2));
    assert!(plan.actions[0].disrupts && plan.actions[0].recovery.is_some());
    assert!(matches!(
        plan.actions[2].action,
        Action::RememberUpgradeCleanup
    ));

    answers.pending_upgrade_agreed = Some(["kc1-log-1".to_owned()].into());
    let waiting = upgrade_bounce::conclude(&snapshot, &facts, &mut answers).unwrap();
    let Verdict::Act(plan) = &waiting else {
        panic!("{waiting:?}")
    };
    assert_eq!(waiting.actions(), [&Action::ReleaseLock]);
    assert!(plan.then.is_some(), "it waits for the other instances");
}

#[test]
fn the_list_left_by_a_kill_is_cleared_only_once_the_database_is_available() {
    use crate::controller::pass::plan::{Action, PassFacts};
    use crate::controller::steps::bounce_processes::upgrade_bounce::clear_after_kill;

    let snapshot = upgrading("version: 7.3.43")
        .groups([group("log-1")])
        .database(reporting(&["log-1"]))
        .build();
    let mut facts = PassFacts::default();
    assert_eq!(clear_after_kill(&snapshot, &facts), None);
    facts.remembered.upgrade_cleanup_pending = true;
    assert_eq!(
        clear_after_kill(&snapshot, &facts),
        Some(Action::ClearPendingUpgrades)
    );
    let down = upgrading("version: 7.3.43")
        .groups([group("log-1")])
        .build();
    assert_eq!(
        clear_after_kill(&down, &facts),
        None,
        "no status: not available"
    );
}

#[test]
fn a_straggler_hosting_a_coordinator_by_dns_name_keeps_its_pod() {
    // The connection string names the coordinators by DNS name (DNS in the cluster
    // file): log-1 hosts one although no IP matches.
    let dns = "sample-log-1.sample.default.svc.cluster.local:4501";
    let status = database(serde_json::json!({
        "client": {
            "database_status": {"available": true, "healthy": true},
            "coordinators": {"coordinators": [{"address": dns, "reachable": true}]}
        },
        "cluster": {"incompatible_connections": ["10.0.0.1:4501", "10.0.0.2:4501"]}
    }));
    let snapshot = Fixture::new("version: 7.3.43")
        .status(|s| s.running_version = Some("7.3.43".into()))
        .connection_string(&format!("sample:abc@{dns}"))
        .groups([group("log-1"), group("stateless-1")])
        .pods([
            pod("sample-log-1", "log-1", "n1", "10.0.0.1"),
            pod("sample-stateless-1", "stateless-1", "n2", "10.0.0.2"),
        ])
        .database(status)
        .build();
    let decision = decide_incompatible(&snapshot);
    let deleted: Vec<&str> = decision.delete.iter().map(|d| d.pod.as_str()).collect();
    assert_eq!(deleted, ["sample-stateless-1"]);
    assert_eq!(decision.hosting_coordinators, ["log-1"]);
}

#[path = "upgrade_quorum_tests.rs"]
mod quorum;
#[path = "upgrade_unavailable_tests.rs"]
mod unavailable;
