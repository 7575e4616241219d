//! A node that goes down: NotReady and tainted after 40 s, its pods marked for deletion
//! after their 300 s toleration, Terminating until the node is back.

use fdb_operator::clock::Clock;
use fdb_shared::address::ProcessAddress;
use fdb_simulation::scenario::{Fault, Heal};
use k8s_openapi::api::core::v1::Node;

use super::support::{
    CLUSTER_FILE, config_map, container_states, http, monitor_conf, pod, ready, setup, storage_pod,
};

fn node(s: &super::support::Setup, name: &str) -> Node {
    s.api.get_typed(None, name).unwrap().unwrap()
}

fn ready_status(node: &Node) -> String {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.clone())
        .unwrap_or_default()
}

fn taints(node: &Node) -> Vec<String> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|t| format!("{}:{}", t.key, t.effect))
        .collect()
}

#[tokio::test]
async fn a_dead_node_is_declared_not_ready_then_its_pods_wait_terminating_for_it() {
    let mut s = setup(Some(3), 211);
    s.api
        .create_as("operator", config_map(&monitor_conf(""), CLUSTER_FILE))
        .unwrap();
    for n in 1..=2 {
        s.api.create_as("operator", storage_pod(n, false)).unwrap();
    }
    s.world.settle().await.unwrap();
    let down = pod(&s.api, "sample-storage-2")
        .unwrap()
        .spec
        .unwrap()
        .node_name
        .unwrap();
    let ip = s.world.pod_ip("default", "sample-storage-2").unwrap();
    let address = ProcessAddress::parse(&format!("{ip}:4501")).unwrap();
    let start = s.clock.now();

    s.world
        .apply_fault(&Fault::NodeDown { node: down.clone() })
        .await
        .unwrap();
    // At once: its containers are gone, but nobody has told the API yet.
    assert_eq!(http(ip, "GET", "/ready").await, None);
    assert!(!s.host.running().contains_key(&address));
    assert!(ready(&pod(&s.api, "sample-storage-2").unwrap()));
    assert_eq!(ready_status(&node(&s, &down)), "True");
    assert!(taints(&node(&s, &down)).is_empty());
    let due = s.world.next_due().unwrap();
    assert_eq!(due.as_second() - start.as_second(), 40);

    // 40 s: NotReady (Unknown), tainted unreachable, its pods unready.
    s.clock.advance_seconds(39);
    s.world.settle().await.unwrap();
    assert_eq!(ready_status(&node(&s, &down)), "True");
    s.clock.advance_seconds(1);
    s.world.settle().await.unwrap();
    let dead = node(&s, &down);
    assert_eq!(ready_status(&dead), "Unknown");
    assert_eq!(
        taints(&dead),
        [
            "node.kubernetes.io/unreachable:NoSchedule",
            "node.kubernetes.io/unreachable:NoExecute"
        ]
    );
    assert!(!ready(&pod(&s.api, "sample-storage-2").unwrap()));
    assert!(ready(&pod(&s.api, "sample-storage-1").unwrap()));

    // 300 s after the taint: marked for deletion by the taint manager; it stays.
    let due = s.world.next_due().unwrap();
    assert_eq!(due.as_second() - start.as_second(), 340);
    s.clock.advance_seconds(299);
    s.world.settle().await.unwrap();
    assert!(
        pod(&s.api, "sample-storage-2")
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_none()
    );
    s.clock.advance_seconds(1);
    s.world.settle().await.unwrap();
    let evicted = pod(&s.api, "sample-storage-2").unwrap();
    assert!(evicted.metadata.deletion_timestamp.is_some());
    assert!(
        evicted
            .status
            .unwrap()
            .conditions
            .unwrap()
            .iter()
            .any(|c| c.type_ == "DisruptionTarget" && c.status == "True")
    );
    s.clock.advance_seconds(3600);
    s.world.settle().await.unwrap();
    assert!(
        pod(&s.api, "sample-storage-2").is_some(),
        "no kubelet confirms the deletion while the node is down"
    );
    assert!(
        pod(&s.api, "sample-storage-1")
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_none()
    );

    // Back up: Ready, untainted, and the pending deletion completes.
    s.world
        .heal(&Heal {
            node: Some(down.clone()),
            ..Heal::default()
        })
        .await
        .unwrap();
    let back = node(&s, &down);
    assert_eq!(ready_status(&back), "True");
    assert!(taints(&back).is_empty(), "{:?}", taints(&back));
    assert!(pod(&s.api, "sample-storage-2").is_none());
    assert_eq!(s.world.next_due(), None);
    s.world.shutdown().await;
}

#[tokio::test]
async fn a_node_healed_before_its_pods_are_evicted_brings_them_back() {
    let mut s = setup(Some(2), 212);
    s.api
        .create_as("operator", config_map(&monitor_conf(""), CLUSTER_FILE))
        .unwrap();
    s.api.create_as("operator", storage_pod(1, false)).unwrap();
    s.world.settle().await.unwrap();
    let node_name = pod(&s.api, "sample-storage-1")
        .unwrap()
        .spec
        .unwrap()
        .node_name
        .unwrap();
    let ip = s.world.pod_ip("default", "sample-storage-1").unwrap();
    s.world
        .apply_fault(&Fault::NodeDown {
            node: node_name.clone(),
        })
        .await
        .unwrap();
    s.clock.advance_seconds(60);
    s.world.settle().await.unwrap();
    assert!(!ready(&pod(&s.api, "sample-storage-1").unwrap()));
    s.world
        .heal(&Heal {
            node: Some(node_name),
            ..Heal::default()
        })
        .await
        .unwrap();
    let back = pod(&s.api, "sample-storage-1").unwrap();
    assert!(back.metadata.deletion_timestamp.is_none());
    assert!(ready(&back), "the kubelet reports the restarted containers");
    assert_eq!(http(ip, "GET", "/ready").await.unwrap().0, 200);
    assert_eq!(
        container_states(&back)
            .iter()
            .map(|c| c.1)
            .collect::<Vec<_>>(),
        [0, 1, 1],
        "its containers restarted with the node"
    );
    s.world.shutdown().await;
}
