use fdb_shared::status_json::DatabaseStatus;

use super::*;
use crate::controller::fixtures::{Fixture, STATUS_7_1, group, pod, reporting};
use crate::controller::model::process_groups::{Presence, ProcessFacts};

/// The cluster of the real capture: `test-cluster`, double, log-1..4, storage-1..3,
/// cluster_controller-1.
fn capture() -> Fixture {
    let ids = [
        "log-1",
        "log-2",
        "log-3",
        "log-4",
        "storage-1",
        "storage-2",
        "storage-3",
        "cluster_controller-1",
    ];
    Fixture::new("{version: 7.1.57, processCounts: {storage: 3, log: 4, cluster_controller: 1}}")
        .groups(ids.map(group))
        .connection_string("test_cluster:aHeD9ocNXOUxi0dyzU3k7Bhg53SpyrBV@10.1.18.253:4501")
        .database(DatabaseStatus::parse_fdbcli_output(STATUS_7_1).unwrap())
}

#[test]
fn groups_of_the_capture_report_their_processes_and_zones() {
    let snapshot = capture().build();
    let observations = observe_groups(&snapshot).unwrap();
    assert_eq!(observations.len(), 8);
    let log = &observations["log-3"];
    assert_eq!(
        log.facts.processes,
        ProcessFacts::Reported {
            reporting: 1,
            excluded: false
        }
    );
    assert_eq!(log.fault_domain.as_deref(), Some("test-cluster-log-3"));
    assert_eq!(log.facts.pod, None, "no pods in this fixture");
    assert_eq!(log.facts.pvc, Presence::Missing);
    assert_eq!(
        observations["cluster_controller-1"].facts.pvc,
        Presence::NotNeeded
    );
    assert!(log.address.is_none());
}

#[test]
fn an_unreadable_status_leaves_processes_unknown() {
    let snapshot = capture().unreadable().build();
    let observations = observe_groups(&snapshot).unwrap();
    assert_eq!(observations["log-1"].facts.processes, ProcessFacts::Unknown);
}

#[test]
fn pods_give_addresses_and_their_facts() {
    let mut terminating = pod("sample-log-2", "log-2", "n2", "10.0.0.2");
    terminating.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
    );
    let snapshot = Fixture::new("version: 7.1.57")
        .groups([group("log-1"), group("log-2")])
        .pods([pod("sample-log-1", "log-1", "n1", "10.0.0.1"), terminating])
        .connection_string("sample:abc@10.0.0.1:4501")
        .database(reporting(&["log-1", "log-1"]))
        .build();
    let observations = observe_groups(&snapshot).unwrap();
    let first = &observations["log-1"];
    assert_eq!(first.address.as_deref(), Some("10.0.0.1"));
    let facts = first.facts.pod.clone().unwrap();
    assert!(!facts.terminating && !facts.pending && !facts.failing);
    assert!(!facts.spec_matches, "the fixture pod has no spec hash");
    assert!(!facts.config_confirmed);
    assert_eq!(
        first.facts.processes,
        ProcessFacts::Reported {
            reporting: 2,
            excluded: false
        }
    );
    assert!(observations["log-2"].facts.pod.clone().unwrap().terminating);
    assert_eq!(
        observations["log-2"].facts.processes,
        ProcessFacts::Reported {
            reporting: 0,
            excluded: false
        }
    );
}

#[test]
fn the_config_map_is_in_sync_only_with_the_desired_data() {
    let fixture = Fixture::new("version: 7.1.57").groups([group("log-1")]);
    assert!(!config_map_in_sync(&fixture.clone().build()).unwrap());
    let desired =
        crate::controller::model::desired::desired_config_map(fixture.clone().build().cluster())
            .unwrap();
    let synced = fixture.clone().config_map(desired.clone()).build();
    assert!(config_map_in_sync(&synced).unwrap());
    let stale = fixture
        .connection_string("sample:abc@10.0.0.1:4501")
        .config_map(desired)
        .build();
    assert!(!config_map_in_sync(&stale).unwrap());
}

#[test]
fn io_errors_and_node_taints_become_conditions_through_the_status() {
    use crate::controller::steps::update_status::decide;
    use fdb_shared::api::cluster::{ProcessGroupCondition, ProcessGroupConditionType as C};
    let spec = "{version: 7.1.57, automationOptions: {replacements: {taintReplacementOptions: [{key: '*', durationInSeconds: 300}, {key: keep, durationInSeconds: 9223372036854775807}]}}}";
    let mut db = serde_json::to_value(reporting(&["storage-1", "storage-2", "storage-3"])).unwrap();
    db["cluster"]["processes"]["p2"]["messages"] =
        serde_json::json!([{"name": "io_error", "description": "disk failure"}]);
    // Go counts `io_timeout` as an I/O error too (`checkProcessMessagesForIOError`).
    db["cluster"]["processes"]["p0"]["messages"] =
        serde_json::json!([{"name": "io_timeout", "description": "slow disk"}]);
    let mut long_tainted = group("storage-2");
    long_tainted.process_group_conditions = vec![ProcessGroupCondition {
        condition_type: C::NodeTaintDetected,
        timestamp: 9_000,
    }];
    let snapshot = Fixture::new(spec)
        .groups([
            group("storage-1"),
            long_tainted,
            group("storage-3"),
            group("storage-4"),
        ])
        .pods([
            pod("sample-storage-1", "storage-1", "node-a", "10.0.0.1"),
            pod("sample-storage-2", "storage-2", "node-a", "10.0.0.2"),
            pod("sample-storage-3", "storage-3", "node-b", "10.0.0.3"),
            pod("sample-storage-4", "storage-4", "node-c", "10.0.0.4"),
        ])
        .nodes([
            (
                "node-a",
                serde_json::json!([{"key": "drain", "effect": "NoSchedule"}]),
            ),
            (
                "node-b",
                serde_json::json!([{"key": "keep", "effect": "NoSchedule"}]),
            ),
        ])
        .connection_string("sample:abc@10.0.0.1:4501")
        .database(serde_json::from_value(db).unwrap())
        .at(10_000)
        .build();
    let status = decide(&snapshot).unwrap().status;
    let conditions = |id: &str| -> Vec<(C, i64)> {
        status
            .process_groups
            .iter()
            .find(|g| g.process_group_id == id)
            .unwrap()
            .process_group_conditions
            .iter()
            .filter(|c| {
                !matches!(
                    c.condition_type,
                    C::IncorrectPodSpec
                        | C::IncorrectConfigMap
                        | C::IncorrectSidecarImage
                        | C::IncorrectPodMetadata
                        | C::MissingPvc
                )
            })
            .map(|c| (c.condition_type.clone(), c.timestamp))
            .collect()
    };
    assert_eq!(
        conditions("storage-1"),
        [
            (C::NodeTaintDetected, 10_000),
            (C::ProcessHasIoError, 10_000)
        ],
        "new taint; the io_timeout message counts"
    );
    assert_eq!(
        conditions("storage-2"),
        [
            (C::NodeTaintDetected, 9_000),
            (C::NodeTaintReplacing, 10_000)
        ],
        "tainted longer than 300 s"
    );
    assert_eq!(
        conditions("storage-3"),
        [(C::ProcessHasIoError, 10_000)],
        "the opt-out key is ignored; the io_error message counts"
    );
    assert_eq!(
        conditions("storage-4"),
        [(C::MissingProcesses, 10_000)],
        "node-c could not be read: nothing known of its taints"
    );
}
