//! Run isolation (each world serves its pods in a loopback block of its own, held while it
//! lives; something else on a pod's address stops the world) and what an administrator
//! does to nodes (cordon, drain, add nodes).

use std::sync::Arc;

use fdb_operator::clock::VirtualClock;
use fdb_shared::address::ProcessAddress;
use fdb_simulation::kube::FakeApiServer;
use fdb_simulation::world::{HostBlock, World, WorldError, WorldOptions};

use super::support::{
    CLUSTER_FILE, FakeHost, config_map, http, monitor_conf, pod, setup, setup_with, storage_pod,
};

fn node_of(s: &super::support::Setup, name: &str) -> Option<String> {
    pod(&s.api, name)?.spec?.node_name
}

#[tokio::test]
async fn sidecars_listen_in_the_worlds_own_block_and_a_foreign_listener_stops_the_world() {
    let mut s = setup_with(WorldOptions {
        host_block: HostBlock::Free,
        ..WorldOptions::default()
    });
    let (block, _) = s.world.host_block();
    assert_ne!(block, 0, "block 0 is the pod network's own");
    let clock = VirtualClock::fixed_epoch();
    let other = World::new(
        WorldOptions {
            host_block: HostBlock::Fixed(block),
            ..WorldOptions::default()
        },
        FakeApiServer::new(Arc::new(clock.clone()), 1),
        Arc::new(FakeHost::default()),
        clock,
    )
    .unwrap_err();
    assert!(
        matches!(other, WorldError::BlockInUse { block: b, .. } if b == block),
        "{other}"
    );

    s.api
        .create_as("operator", config_map(&monitor_conf(""), CLUSTER_FILE))
        .unwrap();
    s.api.create_as("operator", storage_pod(1, false)).unwrap();
    s.world.settle().await.unwrap();
    let ip = s.world.pod_ip("default", "sample-storage-1").unwrap();
    assert_eq!(
        ip.to_string(),
        "127.0.1.1",
        "Kubernetes and FDB see the pod IP"
    );
    let served = s
        .world
        .sidecar_address("default", "sample-storage-1")
        .unwrap();
    assert_eq!(served.to_string(), format!("127.{block}.1.1:8080"));
    let std::net::IpAddr::V4(host) = served.ip() else {
        panic!("IPv4 expected");
    };
    assert_eq!(http(host, "GET", "/ready").await.unwrap().0, 200);
    assert!(
        s.host
            .running()
            .contains_key(&ProcessAddress::parse("127.0.1.1:4501").unwrap())
    );

    // Something else listens where the next pod's sidecar must: the world stops.
    let foreign = std::net::TcpListener::bind((format!("127.{block}.1.2"), 8080)).unwrap();
    s.api.create_as("operator", storage_pod(2, false)).unwrap();
    let error = s.world.settle().await.unwrap_err();
    assert!(
        matches!(error, WorldError::ForeignListener { .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains(&format!("127.{block}.1.2:8080")),
        "{error}"
    );
    drop(foreign);
    s.world.shutdown().await;
}

#[tokio::test]
async fn cordon_drain_and_added_nodes() {
    let mut s = setup(Some(2), 218);
    s.api
        .create_as("operator", config_map(&monitor_conf(""), CLUSTER_FILE))
        .unwrap();
    for n in 1..=2 {
        s.api.create_as("operator", storage_pod(n, false)).unwrap();
    }
    s.world.settle().await.unwrap();
    assert_eq!(node_of(&s, "sample-storage-1").as_deref(), Some("node-1"));

    s.world.cordon("user", "node-1").unwrap();
    s.api.create_as("operator", storage_pod(3, false)).unwrap();
    s.world.settle().await.unwrap();
    assert_eq!(
        node_of(&s, "sample-storage-3").as_deref(),
        Some("node-2"),
        "a cordoned node gets no new pod"
    );
    assert_eq!(
        node_of(&s, "sample-storage-1").as_deref(),
        Some("node-1"),
        "its pods stay"
    );

    let report = s.world.drain("user", "node-2").unwrap();
    assert_eq!(report.evicted, ["sample-storage-2", "sample-storage-3"]);
    assert!(report.refused.is_empty());
    assert!(
        pod(&s.api, "sample-storage-2")
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    s.world.settle().await.unwrap();
    assert!(pod(&s.api, "sample-storage-2").is_none());

    s.api.create_as("operator", storage_pod(4, false)).unwrap();
    s.world.settle().await.unwrap();
    let pending = pod(&s.api, "sample-storage-4").unwrap();
    assert!(pending.spec.unwrap().node_name.is_none());
    let message = pending.status.unwrap().conditions.unwrap()[0]
        .message
        .clone()
        .unwrap_or_default();
    assert!(message.contains("unschedulable"), "{message}");

    assert_eq!(s.world.add_nodes(1).unwrap(), ["node-3"]);
    s.world.settle().await.unwrap();
    assert_eq!(node_of(&s, "sample-storage-4").as_deref(), Some("node-3"));
    assert!(s.world.cordon("user", "node-9").is_err());
    s.world.shutdown().await;
}
