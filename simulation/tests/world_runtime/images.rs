//! A container image changed on a running pod: exactly that container restarts, with the
//! version its new image contains.

use std::collections::BTreeMap;

use fdb_shared::address::ProcessAddress;
use fdb_simulation::world::WorldOptions;

use super::support::{
    CLUSTER_FILE, config_map, container_states, http, monitor_conf, pod, set_image, setup,
    setup_with, storage_pod,
};

const SIDECAR: &str = "foundationdb-kubernetes-sidecar";

#[tokio::test]
async fn a_new_sidecar_image_restarts_the_sidecar_alone_and_it_stages_its_binaries() {
    let mut s = setup(None, 213);
    s.api
        .create_as("operator", config_map(&monitor_conf(""), CLUSTER_FILE))
        .unwrap();
    s.api.create_as("operator", storage_pod(1, false)).unwrap();
    s.world.settle().await.unwrap();
    let ip = s.world.pod_ip("default", "sample-storage-1").unwrap();
    let address = ProcessAddress::parse(&format!("{ip}:4501")).unwrap();
    let before = container_states(&pod(&s.api, "sample-storage-1").unwrap());
    assert_eq!(
        before.iter().map(|c| c.1).collect::<Vec<_>>(),
        [0, 0, 0],
        "{before:?}"
    );
    assert!(
        before[1].2.starts_with("foundationdb/foundationdb@sha256:"),
        "{before:?}"
    );

    set_image(
        &s.api,
        "sample-storage-1",
        SIDECAR,
        "foundationdb/foundationdb-kubernetes-sidecar:7.3.43-1",
    );
    let report = s.world.settle().await.unwrap();
    assert!(
        report
            .events
            .iter()
            .any(|e| e.action == "restart-container"),
        "{report:?}"
    );
    let after = container_states(&pod(&s.api, "sample-storage-1").unwrap());
    assert_eq!(
        after.iter().map(|c| c.1).collect::<Vec<_>>(),
        [0, 0, 1],
        "only the sidecar restarted: {after:?}"
    );
    assert_eq!(after[0].2, before[0].2);
    assert_eq!(after[1].2, before[1].2);
    assert_ne!(
        after[2].2, before[2].2,
        "the sidecar's imageID follows its image"
    );
    assert_eq!(s.host.start_count(), 1, "the processes kept running");

    // The new sidecar is 7.3.43: it staged its binaries and points fdbmonitor at them.
    assert_eq!(
        http(ip, "GET", "/is_present/bin/7.3.43/fdbserver")
            .await
            .unwrap()
            .0,
        200
    );
    let (_, subs) = http(ip, "GET", "/substitutions").await.unwrap();
    assert!(
        subs.contains("\"BINARY_DIR\":\"/var/dynamic-conf/bin/7.3.43\""),
        "{subs}"
    );
    // A killed process comes back on the staged 7.3.43 binary.
    s.host.kills.lock().unwrap().push(address.clone());
    s.world.settle().await.unwrap();
    assert_eq!(s.host.running()[&address].version.to_string(), "7.3.43");
    let summary = s.world.pod_summaries().unwrap();
    let sidecar = summary[0]
        .containers
        .iter()
        .find(|c| c.name == SIDECAR)
        .unwrap();
    assert_eq!(sidecar.restart_count, 1);
    assert_eq!(sidecar.image_id, after[2].2);
    s.world.shutdown().await;
}

#[tokio::test]
async fn a_new_main_image_restarts_fdbmonitor_and_its_processes_on_its_version() {
    let mut s = setup_with(WorldOptions {
        ip_block: 214,
        images: BTreeMap::from([(
            "registry.example/fdb:build-1".to_owned(),
            "7.3.43".parse().unwrap(),
        )]),
        ..WorldOptions::default()
    });
    s.api
        .create_as("operator", config_map(&monitor_conf(""), CLUSTER_FILE))
        .unwrap();
    s.api.create_as("operator", storage_pod(1, false)).unwrap();
    s.world.settle().await.unwrap();
    let ip = s.world.pod_ip("default", "sample-storage-1").unwrap();
    let address = ProcessAddress::parse(&format!("{ip}:4501")).unwrap();
    assert_eq!(s.host.running()[&address].version.to_string(), "7.1.57");

    set_image(
        &s.api,
        "sample-storage-1",
        "foundationdb",
        "registry.example/fdb:build-1",
    );
    s.world.settle().await.unwrap();
    assert_eq!(s.host.start_count(), 2, "fdbmonitor restarted its process");
    assert_eq!(
        s.host.running()[&address].version.to_string(),
        "7.3.43",
        "world.images names the image's version"
    );
    let states = container_states(&pod(&s.api, "sample-storage-1").unwrap());
    assert_eq!(
        states.iter().map(|c| c.1).collect::<Vec<_>>(),
        [0, 1, 0],
        "{states:?}"
    );
    assert!(states[1].2.starts_with("registry.example/fdb@sha256:"));
    assert_eq!(
        s.world.sidecar_restarts("default", "sample-storage-1"),
        Some(0)
    );
    assert_eq!(http(ip, "GET", "/ready").await.unwrap().0, 200);
    s.world.shutdown().await;
}
