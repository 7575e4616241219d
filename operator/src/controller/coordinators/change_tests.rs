//! Tests of ChangeCoordinators' decision.

use super::*;
use crate::controller::fixtures::{Fixture, group, pod};

/// Groups log-1..3 and storage-1 with running pods (log-1 and log-2 share node-1),
/// configured, with `connection` as the connection string.
fn setup(connection: &str) -> Fixture {
    let ids = ["log-1", "log-2", "log-3", "storage-1"];
    let nodes = ["node-1", "node-1", "node-3", "node-4"];
    let pods: Vec<_> = ids
        .iter()
        .zip(nodes)
        .enumerate()
        .map(|(i, (id, node))| pod(&format!("s-{id}"), id, node, &format!("10.0.0.{}", i + 1)))
        .collect();
    Fixture::new("{version: 7.1.57, routing: {useDNSInClusterFile: false}}")
        .groups(ids.map(group))
        .pods(pods)
        .connection_string(connection)
        .status(|s| s.configured = true)
}

fn decide_with(fixture: Fixture, db: DatabaseStatus) -> CoordinatorAction {
    decide(&fixture.database(db).build(), &PassFacts::default())
}

fn db() -> DatabaseStatus {
    let processes: serde_json::Map<String, serde_json::Value> =
        ["log-1", "log-2", "log-3", "storage-1"]
            .iter()
            .map(|id| {
                (
                    (*id).to_owned(),
                    serde_json::json!({"locality": {"instance_id": id}}),
                )
            })
            .collect();
    serde_json::from_value(serde_json::json!({
        "client": {"database_status": {"available": true, "healthy": true}},
        "cluster": {"processes": processes}
    }))
    .unwrap()
}

#[test]
fn good_coordinators_stay() {
    let fixture = setup("s:abc@10.0.0.1:4501,10.0.0.3:4501,10.0.0.4:4501");
    assert_eq!(decide_with(fixture.clone(), db()), CoordinatorAction::None);
    // Not configured yet, or no status json: nothing to judge.
    let unconfigured = fixture.clone().status(|s| s.configured = false);
    assert_eq!(decide_with(unconfigured, db()), CoordinatorAction::None);
    assert_eq!(
        decide(&fixture.unreadable().build(), &PassFacts::default()),
        CoordinatorAction::Wait(
            "cannot read the database status: `status json` timed out after 10s".into()
        )
    );
}

#[test]
fn two_in_one_zone_are_replaced() {
    let fixture = setup("s:abc@10.0.0.1:4501,10.0.0.2:4501,10.0.0.4:4501");
    let mut unavailable = db();
    unavailable.client.database_status.available = Some(false);
    assert_eq!(
        decide_with(fixture.clone(), unavailable),
        CoordinatorAction::Wait(
            "two coordinators share zone node-1, but the database is unavailable".into()
        )
    );
    match decide_with(fixture, db()) {
        CoordinatorAction::Change {
            coordinators,
            reason,
        } => {
            assert_eq!(reason, "two coordinators share zone node-1");
            let text: Vec<_> = coordinators.iter().map(ToString::to_string).collect();
            assert_eq!(text, ["10.0.0.1:4501", "10.0.0.3:4501", "10.0.0.4:4501"]);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_coordinator_of_another_resource_of_the_database_is_kept_when_it_reports() {
    // 10.0.1.7 belongs to another FoundationDBCluster (another data center) of the
    // same database: not one of our groups, but a reporting process in its own zone.
    let fixture = setup("s:abc@10.0.0.1:4501,10.0.0.3:4501,10.0.1.7:4501");
    let mut db = db();
    let remote = serde_json::json!({
        "address": "10.0.1.7:4501", "locality": {"instance_id": "dc2-log-1", "zoneid": "dc2-node-1"}
    });
    db.cluster
        .processes
        .insert("remote".into(), serde_json::from_value(remote).unwrap());
    assert_eq!(
        decide_with(fixture.clone(), db.clone()),
        CoordinatorAction::None
    );
    // Excluded, it no longer counts.
    if let Some(p) = db.cluster.processes.get_mut("remote") {
        p.excluded = true;
    }
    assert!(matches!(
        decide_with(fixture, db),
        CoordinatorAction::Change { .. }
    ));
}

#[test]
fn unknown_or_excluded_coordinators_are_replaced() {
    let fixture = setup("s:abc@10.0.0.1:4501,10.0.0.3:4501,10.9.9.9:4501");
    assert!(matches!(
        decide_with(fixture, db()),
        CoordinatorAction::Change { .. }
    ));
    let fixture = setup("s:abc@10.0.0.1:4501,10.0.0.3:4501,10.0.0.4:4501");
    let mut db = db();
    if let Some(p) = db.cluster.processes.get_mut("log-3") {
        p.excluded = true;
    }
    // Without log-3 only two zones are left: wait instead of doubling up.
    match decide_with(fixture, db) {
        CoordinatorAction::Wait(reason) => assert!(reason.contains("span only 2"), "{reason}"),
        other => panic!("unexpected {other:?}"),
    }
}

/// log-1..3 and storage-1 report, storage-2 is new (reporting or not);
/// coordinators on log-1, log-3 and storage-1. `changed` is marked for removal
/// (`marked`) or waits for a pod update.
fn rollout(
    changed: &str,
    marked: bool,
    new_reports: bool,
    missing_since: Option<i64>,
) -> CoordinatorAction {
    use crate::controller::fixtures::reporting;
    use fdb_shared::api::cluster::ProcessGroupCondition;
    let ids = ["log-1", "log-2", "log-3", "storage-1", "storage-2"];
    let pods = ids.iter().enumerate().map(|(i, id)| {
        pod(
            &format!("s-{id}"),
            id,
            &format!("node-{}", i + 1),
            &format!("10.0.0.{}", i + 1),
        )
    });
    let groups = ids.map(|id| {
        let mut g = group(id);
        if id == changed && marked {
            g.removal_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                jiff::Timestamp::from_second(1).unwrap(),
            ));
        } else if id == changed {
            g.process_group_conditions.push(ProcessGroupCondition {
                condition_type: ProcessGroupConditionType::IncorrectPodSpec,
                timestamp: 1,
            });
        }
        if let (true, Some(since)) = (id == "storage-2", missing_since) {
            g.process_group_conditions.push(ProcessGroupCondition {
                condition_type: ProcessGroupConditionType::MissingProcesses,
                timestamp: since,
            });
        }
        g
    });
    let reporting_ids = if new_reports { &ids[..] } else { &ids[..4] };
    let mut db = reporting(reporting_ids);
    db.cluster
        .fault_tolerance
        .max_zone_failures_without_losing_availability = Some(1);
    db.cluster
        .fault_tolerance
        .max_zone_failures_without_losing_data = Some(1);
    let fixture = Fixture::new("{version: 7.1.57, routing: {useDNSInClusterFile: false}}")
        .groups(groups)
        .pods(pods)
        .connection_string("s:abc@10.0.0.1:4501,10.0.0.3:4501,10.0.0.4:4501")
        .status(|s| s.configured = true);
    decide_with(fixture, db)
}

fn changed_to(action: CoordinatorAction) -> Vec<String> {
    match action {
        CoordinatorAction::Change { coordinators, .. } => {
            coordinators.iter().map(ToString::to_string).collect()
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_planned_move_waits_for_new_groups_to_report_and_then_moves_once() {
    // log-3 is marked for removal; the new storage-2 has not reported yet.
    match rollout("log-3", true, false, None) {
        CoordinatorAction::Wait(reason) => {
            assert!(reason.contains("which is marked for removal"), "{reason}");
            assert!(reason.contains("new process groups storage-2"), "{reason}");
        }
        other => panic!("unexpected {other:?}"),
    }
    // Once it reports, or once it has been missing too long, the coordinators move.
    for action in [
        rollout("log-3", true, true, None),
        rollout("log-3", true, false, Some(1)),
    ] {
        let chosen = changed_to(action);
        assert!(!chosen.contains(&"10.0.0.3:4501".to_owned()), "{chosen:?}");
    }
}

#[test]
fn a_coordinator_on_a_pod_about_to_be_updated_moves_to_groups_on_the_new_spec() {
    // storage-1's pod is next in the rolling update and hosts a coordinator.
    let chosen = changed_to(rollout("storage-1", false, true, None));
    assert_eq!(chosen.len(), 3);
    assert!(!chosen.contains(&"10.0.0.4:4501".to_owned()), "{chosen:?}");
    // The current coordinators elsewhere are kept.
    assert!(chosen.contains(&"10.0.0.1:4501".to_owned()), "{chosen:?}");
}

/// Turning TLS on: the plain coordinators must move to TLS addresses, but only once every
/// process listens on one (before, the new coordinators could not reach each other).
#[test]
fn coordinators_move_to_tls_once_every_process_listens_on_it() {
    let ids = ["log-1", "log-2", "log-3"];
    let pods: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let n = i + 1;
            pod(
                &format!("s-{id}"),
                id,
                &format!("node-{n}"),
                &format!("10.0.0.{n}"),
            )
        })
        .collect();
    let fixture = Fixture::new(
        "{version: 7.1.57, routing: {useDNSInClusterFile: false}, mainContainer: {enableTls: true}}",
    )
    .groups(ids.map(group))
    .pods(pods)
    .connection_string("s:abc@10.0.0.1:4501,10.0.0.2:4501,10.0.0.3:4501")
    .status(|s| s.configured = true);
    let with_listeners = |lists: [&str; 3]| -> DatabaseStatus {
        let processes: serde_json::Map<String, serde_json::Value> = ids
            .iter()
            .zip(lists)
            .enumerate()
            .map(|(i, (id, list))| {
                let n = i + 1;
                (
                    (*id).to_owned(),
                    serde_json::json!({
                        "address": format!("10.0.0.{n}:4501"),
                        "command_line": format!("/usr/bin/fdbserver --public_address={list}"),
                        "locality": {"instance_id": id},
                    }),
                )
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "client": {"database_status": {"available": true, "healthy": true}},
            "cluster": {"processes": processes}
        }))
        .unwrap()
    };
    let behind = with_listeners([
        "10.0.0.1:4500:tls,10.0.0.1:4501",
        "10.0.0.2:4501",
        "[10.0.0.3]:4500:tls,[10.0.0.3]:4501",
    ]);
    match decide_with(fixture.clone(), behind) {
        CoordinatorAction::Wait(reason) => assert!(
            reason.contains("does not use TLS") && reason.contains("1 do not yet, 10.0.0.2:4501"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    let all = with_listeners([
        "10.0.0.1:4500:tls,10.0.0.1:4501",
        "10.0.0.2:4500:tls,10.0.0.2:4501",
        "10.0.0.3:4500:tls,10.0.0.3:4501",
    ]);
    match decide_with(fixture, all) {
        CoordinatorAction::Change { coordinators, .. } => {
            let text: Vec<_> = coordinators.iter().map(ToString::to_string).collect();
            assert_eq!(
                text,
                [
                    "10.0.0.1:4500:tls",
                    "10.0.0.2:4500:tls",
                    "10.0.0.3:4500:tls"
                ]
            );
        }
        other => panic!("{other:?}"),
    }
}

/// dc1 (this instance: three zones) of a database with two usable regions over dc1, dc2
/// and dc3; dc2 reports two log processes, dc3 six. Nine coordinators are wanted.
fn two_regions() -> (Fixture, DatabaseStatus) {
    let fixture = setup("s:abc@10.0.0.1:4501,10.0.0.3:4501,10.0.0.4:4501").cluster(|c| {
        let spec = "{version: 7.1.57, dataCenter: dc1, routing: {useDNSInClusterFile: false}, databaseConfiguration: {redundancy_mode: double, usable_regions: 2, regions: [{datacenters: [{id: dc1, priority: 1}, {id: dc3, satellite: 1}]}, {datacenters: [{id: dc2}, {id: dc3, satellite: 1}]}]}}";
        c.spec = serde_yaml_ng::from_str(spec).unwrap();
    });
    let mut db = db();
    let others = [("dc2", 2), ("dc3", 6)];
    for (dc, count) in others {
        for n in 1..=count {
            let id = format!("{dc}-log-{n}");
            let process = serde_json::json!({
                "address": format!("10.1.{}.{n}:4501", &dc[2..]),
                "class_type": "log",
                "locality": {"instance_id": id, "zoneid": format!("{dc}-z{n}"), "dcid": dc}
            });
            db.cluster
                .processes
                .insert(id, serde_json::from_value(process).unwrap());
        }
    }
    (fixture, db)
}

/// Mutation test of the per-datacenter limit: with two usable regions the choice never
/// puts more than three of nine coordinators in one datacenter, and waits when the
/// datacenters cannot hold their share; an operator without the limit (its fallback to
/// distinct zones alone) is caught putting a majority in dc3.
#[test]
fn two_usable_regions_wait_rather_than_crowd_one_datacenter() {
    let (fixture, db) = two_regions();
    let snapshot = fixture.database(db).build();
    match decide(&snapshot, &PassFacts::default()) {
        CoordinatorAction::Wait(reason) => {
            assert!(reason.contains("at most 3 per datacenter"), "{reason}");
        }
        other => panic!("unexpected {other:?}"),
    }
    let mut broken = PassFacts::default();
    broken.rules.coordinator_spread = false;
    match decide(&snapshot, &broken) {
        CoordinatorAction::Change { coordinators, .. } => {
            let in_dc3 = coordinators
                .iter()
                .filter(|c| c.host.starts_with("10.1.3."))
                .count();
            assert!(in_dc3 > 3, "{coordinators:?}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// A current coordinator on a group another instance listed for exclusion is a planned
/// move; one on a group not listed, or a listed group hosting none, is not.
#[test]
fn a_coordinator_on_a_group_another_instance_listed_moves() {
    let candidate = |group: &str, address: &str, current: bool| CoordinatorCandidate {
        process_group_id: group.to_owned(),
        class: fdb_shared::api::ProcessClass::Log,
        number: 1,
        zone: group.to_owned(),
        dc: Some("dc2".to_owned()),
        address: ProcessAddress::parse(address).unwrap(),
        current,
        hall: None,
    };
    let others = [
        candidate("dc2-log-1", "10.0.1.1:4501", true),
        candidate("dc2-log-2", "10.0.1.2:4501", false),
        candidate("dc2-log-3", "10.0.1.3:4501", true),
    ];
    let current = ["10.0.1.1:4501".to_owned(), "10.0.1.3:4501".to_owned()];
    let listed: BTreeSet<String> = ["dc2-log-1".to_owned(), "dc2-log-2".to_owned()].into();
    let reason = listed_coordinator(&current, &others, &listed).unwrap();
    assert!(reason.contains("dc2-log-1"), "{reason}");
    let only_spare: BTreeSet<String> = ["dc2-log-2".to_owned()].into();
    assert_eq!(listed_coordinator(&current, &others, &only_spare), None);
}
