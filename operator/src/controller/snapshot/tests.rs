use fdb_shared::status_json::DatabaseStatus;

use super::*;
use crate::controller::fixtures::{Fixture, STATUS_7_1, group, pod};

fn terminating(mut pod: Pod) -> Pod {
    pod.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        Timestamp::UNIX_EPOCH,
    ));
    pod
}

#[test]
fn groups_find_their_objects_and_processes_by_id() {
    let db = DatabaseStatus::parse_fdbcli_output(STATUS_7_1).unwrap();
    let snapshot = Fixture::new("version: 7.1.57")
        .groups(["storage-2", "log-1", "storage-1", "stateless-1"].map(group))
        .pods([
            // Not a group of the status: listed, never matched.
            pod("sample-storage-9", "storage-9", "n9", "10.0.0.9"),
            terminating(pod("sample-log-1-old", "log-1", "n1", "10.0.0.8")),
            pod("sample-log-1", "log-1", "n1", "10.0.0.1"),
            terminating(pod("sample-storage-1", "storage-1", "n2", "10.0.0.2")),
        ])
        .database(db)
        .build();
    let order: Vec<&str> = snapshot.groups().map(|g| g.id()).collect();
    assert_eq!(order, ["storage-2", "log-1", "storage-1", "stateless-1"]);

    let log = snapshot.group("log-1").unwrap();
    assert_eq!(
        log.pod_head().and_then(|p| p.metadata.name.as_deref()),
        Some("sample-log-1"),
        "a live pod wins over a terminating one"
    );
    let addresses: Vec<String> = log
        .processes()
        .filter_map(|p| p.address.as_ref().map(ToString::to_string))
        .collect();
    assert_eq!(addresses, ["10.1.19.1:4501"]);

    let storage = snapshot.group("storage-1").unwrap();
    assert!(
        storage.has_pod(),
        "a terminating pod is still the group's pod"
    );
    assert!(storage.is_reporting());
    let stateless = snapshot.group("stateless-1").unwrap();
    assert!(!stateless.has_pod() && !stateless.is_reporting());
    assert!(snapshot.group("storage-9").is_none());

    assert!(snapshot.has_pod("sample-storage-9"));
    assert!(snapshot.has_pod("sample-log-1-old"));
    assert!(!snapshot.has_pod("sample-log-2"));
    assert_eq!(snapshot.pod_heads().len(), 4);
    assert_eq!(snapshot.live_groups().count(), 4);
}

#[test]
fn without_a_readable_status_groups_have_no_processes() {
    let snapshot = Fixture::new("version: 7.1.57")
        .groups([group("log-1")])
        .connection_string("a:b@10.0.0.1:4501")
        .unreadable()
        .build();
    let log = snapshot.group("log-1").unwrap();
    assert!(!log.is_reporting());
    assert_eq!(log.processes().count(), 0);
    assert!(snapshot.database_status().is_none());
    match snapshot.database() {
        DatabaseState::Unreadable(error) => {
            assert_eq!(error.to_string(), "`status json` timed out after 10s");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_duplicated_id_shares_the_first_entrys_objects() {
    let mut second = group("log-1");
    second.fault_domain = Some("second".into());
    let snapshot = Fixture::new("version: 7.1.57")
        .groups([group("log-1"), second])
        .pods([pod("sample-log-1", "log-1", "n1", "10.0.0.1")])
        .build();
    let views: Vec<_> = snapshot.groups().collect();
    assert_eq!(views.len(), 2);
    assert!(views.iter().all(|v| v.pod.is_some()));
    assert_eq!(views[1].status.fault_domain.as_deref(), Some("second"));
    assert!(
        snapshot
            .group("log-1")
            .unwrap()
            .status
            .fault_domain
            .is_none()
    );
}

#[test]
fn a_cluster_without_status_reads_as_empty() {
    let snapshot = Fixture::new("version: 7.1.57")
        .cluster(|c| c.status = None)
        .build();
    assert!(snapshot.status().process_groups.is_empty());
    assert_eq!(snapshot.groups().count(), 0);
    assert_eq!((snapshot.name(), snapshot.namespace()), ("sample", "ns"));
    assert_eq!(snapshot.now_unix(), 10_000);
}
