use std::collections::BTreeMap;

use fdb_shared::api::cluster::{ProcessGroupCondition, ProcessGroupConditionType as C};
use fdb_shared::cluster_math::desired_database_configuration;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::*;
use crate::controller::model::process_groups::{
    GroupFacts, PodFacts, Presence, ProcessFacts, new_process_group,
};

fn cluster() -> FoundationDBCluster {
    let mut cluster: FoundationDBCluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
        "metadata": {"name": "s", "namespace": "ns", "generation": 3},
        "spec": {"version": "7.1.57", "databaseConfiguration": {"redundancy_mode": "single"},
                 "processCounts": {"storage": 1, "log": 1, "stateless": 1}}
    }))
    .unwrap();
    cluster.status = Some(FoundationDBClusterStatus {
        connection_string: Some("s:abc@10.0.0.1:4501".to_owned()),
        process_groups: vec![
            new_process_group("storage-1".into(), ProcessClass::Storage, 100),
            new_process_group("log-1".into(), ProcessClass::Log, 100),
            new_process_group("stateless-1".into(), ProcessClass::Stateless, 100),
        ],
        ..Default::default()
    });
    cluster
}

fn healthy(ip: &str) -> GroupObservation {
    GroupObservation {
        facts: GroupFacts {
            marked_for_removal: false,
            pod: Some(PodFacts {
                terminating: false,
                pending: false,
                failing: false,
                spec_matches: true,
                labels_match: true,
                config_confirmed: true,
                sidecar_image_matches: true,
            }),
            pvc: Presence::Present,
            service: Presence::NotNeeded,
            processes: ProcessFacts::Reported {
                reporting: 1,
                excluded: false,
            },
            expected_processes: 1,
            command_lines_match: None,
            io_error: false,
            taints: crate::controller::model::process_groups::TaintFacts::Clear,
        },
        address: Some(ip.to_owned()),
        fault_domain: Some(format!("node-{ip}")),
        pod_shape: None,
    }
}

fn database(configured: bool) -> DatabaseStatus {
    let config = serde_json::to_value(desired_database_configuration(&cluster().spec)).unwrap();
    let mut cluster_section = serde_json::json!({
        "processes": {"a": {"version": "7.1.57", "locality": {"instance_id": "storage-1"}}},
        "connection_string": "s:abc@10.0.0.1:4501",
        "full_replication": true
    });
    if configured {
        cluster_section["configuration"] = config;
    }
    serde_json::from_value(serde_json::json!({
        "client": {"database_status": {"available": configured, "healthy": configured},
                   "coordinators": {"quorum_reachable": true,
                                    "coordinators": [{"address": "10.0.0.1:4501", "reachable": true}]}},
        "cluster": cluster_section
    }))
    .unwrap()
}

fn observations() -> BTreeMap<String, GroupObservation> {
    ["storage-1", "log-1", "stateless-1"]
        .iter()
        .enumerate()
        .map(|(i, id)| ((*id).to_owned(), healthy(&format!("10.0.0.{}", i + 1))))
        .collect()
}

#[test]
fn a_healthy_configured_cluster_is_reconciled_and_stable() {
    let cluster = cluster();
    let previous = cluster.status.clone().unwrap();
    let observations = observations();
    let db = database(true);
    let inputs = StatusInputs {
        cluster: &cluster,
        previous: &previous,
        observations: &observations,
        database: DatabaseView::Status(&db),
        config_map_in_sync: true,
        now_unix: 200,
    };
    let status = build_status(&inputs);
    assert!(
        status
            .process_groups
            .iter()
            .all(|g| g.process_group_conditions.is_empty())
    );
    assert_eq!(status.generations.reconciled, Some(3));
    assert!(status.configured);
    assert!(status.health.available && status.health.full_replication);
    assert_eq!(status.running_version.as_deref(), Some("7.1.57"));
    assert_eq!(status.desired_process_groups, Some(3));
    assert_eq!(status.reconciled_process_groups, Some(3));
    assert_eq!(status.process_groups[0].addresses, ["10.0.0.1"]);
    assert_eq!(
        status.process_groups[0].fault_domain.as_deref(),
        Some("node-10.0.0.1")
    );
    // Building again from the result, later, gives the same status: no write.
    let again = build_status(&StatusInputs {
        previous: &status,
        now_unix: 900,
        ..inputs
    });
    assert_eq!(again, status);
}

#[test]
fn not_reconciled_while_anything_is_left() {
    let cluster = cluster();
    let previous = cluster.status.clone().unwrap();
    let observations = observations();
    let unconfigured = database(false);
    let base = StatusInputs {
        cluster: &cluster,
        previous: &previous,
        observations: &observations,
        database: DatabaseView::Status(&unconfigured),
        config_map_in_sync: true,
        now_unix: 200,
    };
    let status = build_status(&base);
    assert_eq!(status.generations.reconciled, None);
    assert!(!status.configured);

    let db = database(true);
    let stale_config_map = build_status(&StatusInputs {
        database: DatabaseView::Status(&db),
        config_map_in_sync: false,
        ..base.clone()
    });
    assert_eq!(stale_config_map.generations.reconciled, None);
    assert!(stale_config_map.has_incorrect_config_map);

    let mut unknown = observations.clone();
    for observation in unknown.values_mut() {
        observation.facts.processes = ProcessFacts::Unknown;
    }
    let unreachable = build_status(&StatusInputs {
        database: DatabaseView::Unreachable,
        observations: &unknown,
        ..base.clone()
    });
    assert_eq!(unreachable.generations.missing_database_status, Some(3));
    assert_eq!(unreachable.generations.reconciled, None);
    // Unknown process state keeps MissingProcesses with its first-seen time.
    let missing = unreachable.process_groups[0]
        .process_group_conditions
        .iter()
        .find(|c| c.condition_type == C::MissingProcesses);
    assert_eq!(
        missing,
        Some(&ProcessGroupCondition {
            condition_type: C::MissingProcesses,
            timestamp: 100
        })
    );

    let mut grown = cluster.clone();
    grown.spec.process_counts.set(ProcessClass::Storage, 2);
    let status = build_status(&StatusInputs {
        cluster: &grown,
        database: DatabaseView::Status(&db),
        ..base
    });
    assert_eq!(status.generations.needs_grow, Some(3));
    assert_eq!(status.generations.reconciled, None);
}

#[test]
fn removal_keeps_every_address() {
    let cluster = cluster();
    let mut previous = cluster.status.clone().unwrap();
    previous.process_groups[0].addresses = vec!["10.0.0.9".to_owned()];
    previous.process_groups[0].removal_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
    );
    let observations = observations();
    let db = database(true);
    let status = build_status(&StatusInputs {
        cluster: &cluster,
        previous: &previous,
        observations: &observations,
        database: DatabaseView::Status(&db),
        config_map_in_sync: true,
        now_unix: 200,
    });
    assert_eq!(status.process_groups[0].addresses, ["10.0.0.9", "10.0.0.1"]);
    assert_eq!(status.generations.has_pending_removal, Some(3));
    assert_eq!(status.generations.reconciled, None);
}

#[test]
fn image_types_and_servers_per_disk_are_what_the_pods_run_and_kept_without_pods() {
    let mut cluster = cluster();
    if let Some(status) = cluster.status.as_mut() {
        status.process_groups.push(new_process_group(
            "storage-2".into(),
            ProcessClass::Storage,
            100,
        ));
    }
    let previous = cluster.status.clone().unwrap();
    let mut observations = observations();
    let shape = |image: &str, servers| PodShape {
        image_type: image.to_owned(),
        servers_per_pod: Some(servers),
    };
    // A storageServersPerPod change half rolled out: both densities are in use.
    for (id, servers) in [("storage-1", 1), ("storage-2", 2), ("log-1", 1)] {
        let mut observation = healthy("10.0.0.9");
        observation.pod_shape = Some(shape("split", servers));
        observations.insert(id.to_owned(), observation);
    }
    let db = database(true);
    let inputs = StatusInputs {
        cluster: &cluster,
        previous: &previous,
        observations: &observations,
        database: DatabaseView::Status(&db),
        config_map_in_sync: true,
        now_unix: 200,
    };
    let status = build_status(&inputs);
    assert_eq!(status.image_types, ["split"]);
    assert_eq!(status.storage_servers_per_disk, [1, 2]);
    assert_eq!(status.log_servers_per_disk, [1]);

    // No pod seen (e.g. all being recreated): what was known stays.
    let no_pods: BTreeMap<String, GroupObservation> = observations
        .iter()
        .map(|(id, o)| {
            let mut o = o.clone();
            o.pod_shape = None;
            (id.clone(), o)
        })
        .collect();
    let again = build_status(&StatusInputs {
        previous: &status,
        observations: &no_pods,
        ..inputs
    });
    assert_eq!(again.storage_servers_per_disk, [1, 2]);
    assert_eq!(again.image_types, ["split"]);
}

/// A group recorded as fully excluded whose processes all report again, none excluded
/// (a user ran `include all`), loses its exclusion timestamp so it is excluded again;
/// while excluded, missing, or skipped it keeps it.
#[test]
fn an_excluded_group_included_again_loses_its_exclusion_timestamp() {
    let mut group = new_process_group("stateless-1".into(), ProcessClass::Stateless, 100);
    group.removal_timestamp = Some(Time(jiff::Timestamp::from_second(150).unwrap()));
    group.exclusion_timestamp = Some(Time(jiff::Timestamp::from_second(160).unwrap()));
    let mut observation = healthy("10.0.0.3");
    observation.facts.marked_for_removal = true;
    let with = |processes: ProcessFacts, skipped: bool| {
        let mut group = group.clone();
        group.exclusion_skipped = skipped;
        let mut observation = observation.clone();
        observation.facts.processes = processes;
        update_group(&group, Some(&observation), 200, DatabaseView::NotCreated).exclusion_timestamp
    };
    let included = ProcessFacts::Reported {
        reporting: 1,
        excluded: false,
    };
    assert_eq!(with(included, false), None);
    assert!(with(included, true).is_some(), "removed without exclusion");
    let still_excluded = ProcessFacts::Reported {
        reporting: 1,
        excluded: true,
    };
    assert!(with(still_excluded, false).is_some());
    let missing = ProcessFacts::Reported {
        reporting: 0,
        excluded: false,
    };
    assert!(with(missing, false).is_some(), "gone processes say nothing");
    assert!(with(ProcessFacts::Unknown, false).is_some());
}

/// A group recorded as fully excluded, with its pod or PVC still there, loses its
/// exclusion timestamp once the database's exclusion list no longer holds its targets,
/// also while its processes are missing from `status json` (PR #2504 of the Go operator);
/// not while the list still holds them, nor once its pod and PVC are gone.
#[test]
fn an_exclusion_the_database_no_longer_lists_is_reset_whatever_the_processes_say() {
    let mut group = new_process_group("storage-2".into(), ProcessClass::Storage, 100);
    group.removal_timestamp = Some(Time(jiff::Timestamp::from_second(150).unwrap()));
    group.exclusion_timestamp = Some(Time(jiff::Timestamp::from_second(160).unwrap()));
    group.excluded_targets = vec!["locality_instance_id:storage-2".into()];
    let mut observation = healthy("10.0.0.3");
    observation.facts.marked_for_removal = true;
    observation.facts.processes = ProcessFacts::Reported {
        reporting: 0,
        excluded: false,
    };
    let db = |excluded: &[&str]| {
        let excluded: Vec<_> = excluded
            .iter()
            .map(|l| serde_json::json!({"locality": l}))
            .collect();
        crate::controller::fixtures::database(serde_json::json!({
            "client": {"database_status": {"available": true, "healthy": true}},
            "cluster": {"processes": {}, "configuration": {"excluded_servers": excluded}}
        }))
    };
    let listed = db(&["locality_instance_id:storage-2"]);
    let unlisted = db(&[]);
    let with = |status: &fdb_shared::status_json::DatabaseStatus,
                observation: &GroupObservation| {
        update_group(&group, Some(observation), 200, DatabaseView::Status(status))
            .exclusion_timestamp
    };
    assert!(with(&listed, &observation).is_some());
    assert_eq!(with(&unlisted, &observation), None, "included again");
    let mut gone = observation.clone();
    gone.facts.pod = None;
    gone.facts.pvc = Presence::Missing;
    assert!(with(&unlisted, &gone).is_some(), "its final include");
    let unreachable = update_group(&group, Some(&observation), 200, DatabaseView::Unreachable);
    assert!(unreachable.exclusion_timestamp.is_some(), "nothing known");
}
