//! The v2 faults: processes that crash at every start, a sidecar image without the
//! binaries to stage, a sidecar that cannot write its output volume.

use fdb_operator::clock::Clock;
use fdb_shared::address::ProcessAddress;
use fdb_simulation::scenario::{Fault, Heal};

use super::support::{
    CLUSTER_FILE, config_map, http, monitor_conf, pod, set_image, setup, storage_pod,
};

fn heal_group(group: &str) -> Heal {
    Heal {
        process_group: Some(group.into()),
        ..Heal::default()
    }
}

#[tokio::test]
async fn crash_looping_processes_never_stay_up_and_return_at_fdbmonitors_next_try() {
    let mut s = setup(None, 215);
    s.api
        .create_as("operator", config_map(&monitor_conf(""), CLUSTER_FILE))
        .unwrap();
    s.api.create_as("operator", storage_pod(1, false)).unwrap();
    s.world.settle().await.unwrap();
    let ip = s.world.pod_ip("default", "sample-storage-1").unwrap();
    let address = ProcessAddress::parse(&format!("{ip}:4501")).unwrap();
    let start = s.clock.now().as_second();
    s.world
        .apply_fault(&Fault::ProcessCrashLoop {
            process_group: "storage-1".into(),
        })
        .await
        .unwrap();
    assert!(!s.host.running().contains_key(&address));
    // Kills and time do not bring it back.
    s.host.kills.lock().unwrap().push(address.clone());
    s.clock.advance_seconds(100);
    s.world.settle().await.unwrap();
    assert!(!s.host.running().contains_key(&address));
    assert_eq!(s.world.next_due(), None);
    // Healed at +100 s: fdbmonitor's next attempt is at +123 s (1, 2, 4, ... 60 s apart).
    s.world.heal(&heal_group("storage-1")).await.unwrap();
    assert!(!s.host.running().contains_key(&address));
    assert_eq!(s.world.next_due().unwrap().as_second() - start, 123);
    s.clock.advance_seconds(23);
    s.world.settle().await.unwrap();
    assert!(s.host.running().contains_key(&address));
    // The sidecar and the pod were never affected.
    assert_eq!(http(ip, "GET", "/ready").await.unwrap().0, 200);
    s.world.shutdown().await;
}

#[tokio::test]
async fn a_sidecar_image_without_the_binaries_crash_loops_until_healed() {
    let mut s = setup(None, 216);
    s.api
        .create_as("operator", config_map(&monitor_conf(""), CLUSTER_FILE))
        .unwrap();
    s.api.create_as("operator", storage_pod(1, false)).unwrap();
    s.world.settle().await.unwrap();
    let ip = s.world.pod_ip("default", "sample-storage-1").unwrap();
    s.world
        .apply_fault(&Fault::BinaryMissing {
            process_group: "storage-1".into(),
            version: "7.3.43".into(),
        })
        .await
        .unwrap();
    // The running 7.1.57 sidecar stages nothing and is unaffected.
    assert_eq!(http(ip, "GET", "/ready").await.unwrap().0, 200);
    set_image(
        &s.api,
        "sample-storage-1",
        "foundationdb-kubernetes-sidecar",
        "foundationdb/foundationdb-kubernetes-sidecar:7.3.43-1",
    );
    let report = s.world.settle().await.unwrap();
    let failure = report
        .events
        .iter()
        .find(|e| e.action == "sidecar-failed")
        .unwrap_or_else(|| panic!("{report:?}"));
    assert!(failure.detail.contains("not found"), "{}", failure.detail);
    assert_eq!(
        http(ip, "GET", "/is_present/bin/7.3.43/fdbserver").await,
        None
    );
    let status = pod(&s.api, "sample-storage-1").unwrap().status.unwrap();
    let sidecar = status
        .container_statuses
        .unwrap()
        .into_iter()
        .find(|c| c.name == "foundationdb-kubernetes-sidecar")
        .unwrap();
    let waiting = sidecar.state.unwrap().waiting.unwrap();
    assert_eq!(waiting.reason.as_deref(), Some("CrashLoopBackOff"));
    // CrashLoopBackOff: the next try is 10 s later, then 20 s.
    let now = s.clock.now().as_second();
    assert_eq!(s.world.next_due().unwrap().as_second() - now, 10);
    s.clock.advance_seconds(10);
    s.world.settle().await.unwrap();
    assert_eq!(s.world.next_due().unwrap().as_second() - now, 30);
    assert_eq!(http(ip, "GET", "/ready").await, None);

    s.world.heal(&heal_group("storage-1")).await.unwrap();
    assert_eq!(http(ip, "GET", "/ready").await, None, "still backing off");
    s.clock.advance_seconds(20);
    s.world.settle().await.unwrap();
    assert_eq!(
        http(ip, "GET", "/is_present/bin/7.3.43/fdbserver")
            .await
            .unwrap()
            .0,
        200
    );
    s.world.shutdown().await;
}

#[tokio::test]
async fn a_sidecar_that_cannot_write_its_output_fails_its_copies_until_healed() {
    let mut s = setup(None, 217);
    s.api
        .create_as("operator", config_map(&monitor_conf(""), CLUSTER_FILE))
        .unwrap();
    s.api.create_as("operator", storage_pod(1, false)).unwrap();
    s.world.settle().await.unwrap();
    let ip = s.world.pod_ip("default", "sample-storage-1").unwrap();
    let output = s
        .world
        .pod_volume_dir("default", "sample-storage-1", "dynamic-conf")
        .unwrap();
    let conf_before = std::fs::read_to_string(output.join("fdbmonitor.conf")).unwrap();
    s.world
        .apply_fault(&Fault::OutputNotWritable {
            process_group: "storage-1".into(),
        })
        .await
        .unwrap();
    assert_eq!(http(ip, "GET", "/ready").await.unwrap().0, 200);
    let (code, body) = http(ip, "POST", "/copy_files").await.unwrap();
    assert_eq!(code, 500, "{body}");
    assert_eq!(http(ip, "POST", "/copy_monitor_conf").await.unwrap().0, 500);
    assert_eq!(
        http(ip, "GET", "/check_hash/fdb.cluster").await.unwrap().0,
        404
    );
    // The main container still reads its conf: the volume itself is intact.
    assert_eq!(
        std::fs::read_to_string(output.join("fdbmonitor.conf")).unwrap(),
        conf_before
    );
    assert_eq!(s.host.running().len(), 1);

    s.world.heal(&heal_group("storage-1")).await.unwrap();
    assert_eq!(http(ip, "POST", "/copy_files").await.unwrap().0, 200);
    assert_eq!(
        http(ip, "GET", "/check_hash/fdb.cluster").await.unwrap().0,
        200
    );
    s.world.shutdown().await;
}
