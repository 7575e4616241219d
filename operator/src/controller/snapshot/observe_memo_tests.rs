use std::sync::Arc;

use fdb_shared::api::cluster::ProcessGroupStatus;
use k8s_openapi::api::core::v1::Pod;

use super::super::ClusterSnapshot;
use super::super::observe::observe_groups;
use crate::controller::fixtures::{Fixture, group, pod, reporting};
use crate::controller::model::desired_memo::{DesiredMemo, cluster_key};

/// A pod as the API server returns it: with a UID and a resourceVersion.
fn versioned(name: &str, id: &str, ip: &str, version: &str) -> Pod {
    let mut pod = pod(name, id, "node-a", ip);
    pod.metadata.uid = Some(format!("uid-{name}"));
    pod.metadata.resource_version = Some(version.to_owned());
    pod
}

/// The cluster with these groups, no pods.
fn base(groups: [ProcessGroupStatus; 2]) -> Fixture {
    Fixture::new("version: 7.1.57")
        .groups(groups)
        .connection_string("sample:abc@10.1.0.1:4501")
        .database(reporting(&["log-1", "log-2"]))
}

fn versioned_pods(log_1_ip: &str, log_1_version: &str) -> [Pod; 2] {
    [
        versioned("sample-log-1", "log-1", log_1_ip, log_1_version),
        versioned("sample-log-2", "log-2", "10.1.0.2", "7"),
    ]
}

/// Two log groups, each with its pod, both reporting.
fn fixture(log_1_ip: &str, log_1_version: &str) -> Fixture {
    base([group("log-1"), group("log-2")]).pods(versioned_pods(log_1_ip, log_1_version))
}

/// Observes `snapshot` with `memo`, then tells which groups' remembered observations
/// still hold for `next` (the memo is left as it was).
fn reusable(
    memo: &Arc<DesiredMemo>,
    snapshot: ClusterSnapshot,
    next: &ClusterSnapshot,
) -> Vec<String> {
    let snapshot = snapshot.with_desired_memo(memo.clone());
    observe_groups(&snapshot).unwrap();
    let key = cluster_key(next.cluster());
    let mut remembered = memo.observations().take(&key);
    let database_read = next.database_status().is_some();
    let held = next
        .groups()
        .filter(|group| {
            remembered
                .reuse(next.fingerprint(), group, database_read)
                .is_some()
        })
        .map(|group| group.id().to_owned())
        .collect();
    memo.observations().put_back(key, remembered);
    held
}

#[test]
fn an_unchanged_group_is_reused_and_a_changed_pod_is_observed_again() {
    let memo = Arc::new(DesiredMemo::default());
    let next = fixture("10.1.0.9", "2").build();
    assert_eq!(
        reusable(&memo, fixture("10.1.0.1", "1").build(), &next),
        ["log-2"]
    );
    // And the observation made again shows the pod's new address.
    let next = next.with_desired_memo(memo.clone());
    let observations = observe_groups(&next).unwrap();
    assert_eq!(observations["log-1"].address.as_deref(), Some("10.1.0.9"));
    assert_eq!(observations["log-2"].address.as_deref(), Some("10.1.0.2"));
}

#[test]
fn a_change_of_the_status_entry_the_processes_or_the_spec_is_observed_again() {
    let memo = Arc::new(DesiredMemo::default());
    let mut fault_domain = group("log-1");
    fault_domain.fault_domain = Some("z-elsewhere".to_owned());
    let changed_entry = base([fault_domain, group("log-2")])
        .pods(versioned_pods("10.1.0.1", "1"))
        .build();
    assert_eq!(
        reusable(&memo, fixture("10.1.0.1", "1").build(), &changed_entry),
        ["log-2"]
    );

    let mut excluded = reporting(&["log-1", "log-2"]);
    if let Some(process) = excluded.cluster.processes.get_mut("p1") {
        process.excluded = true;
    }
    let changed_processes = fixture("10.1.0.1", "1").database(excluded).build();
    assert_eq!(
        reusable(&memo, fixture("10.1.0.1", "1").build(), &changed_processes),
        ["log-1"]
    );

    let unread = fixture("10.1.0.1", "1").unreadable().build();
    assert!(reusable(&memo, fixture("10.1.0.1", "1").build(), &unread).is_empty());

    let new_spec = fixture("10.1.0.1", "1")
        .cluster(|cluster| cluster.spec.version = "7.1.63".to_owned())
        .build();
    assert!(reusable(&memo, fixture("10.1.0.1", "1").build(), &new_spec).is_empty());
}

#[test]
fn objects_without_versions_and_clusters_with_nodes_read_are_not_remembered() {
    let memo = Arc::new(DesiredMemo::default());
    let unversioned = || {
        base([group("log-1"), group("log-2")]).pods([
            pod("sample-log-1", "log-1", "node-a", "10.1.0.1"),
            pod("sample-log-2", "log-2", "node-a", "10.1.0.2"),
        ])
    };
    assert!(reusable(&memo, unversioned().build(), &unversioned().build()).is_empty());

    let with_nodes = || fixture("10.1.0.1", "1").nodes([("node-a", serde_json::json!([]))]);
    assert!(reusable(&memo, with_nodes().build(), &with_nodes().build()).is_empty());
}
