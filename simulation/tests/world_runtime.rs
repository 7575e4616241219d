//! The simulated world's runtime end to end: scheduling, pod IPs, real sidecars,
//! ConfigMap projection delay, fdbmonitor, kills, deletion, PVC protection, DNS, faults;
//! in the modules: node failure, image changes, the v2 faults, isolation and node admin.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use fdb_operator::clock::{Clock, VirtualClock};
use fdb_operator::fdb::AdminClient;
use fdb_shared::address::ProcessAddress;
use fdb_simulation::fdb::{SimFdbSettings, SimulatedFdb};
use fdb_simulation::kube::{DeleteOptions, FakeApiServer, ResourceKey};
use fdb_simulation::scenario::{Fault, Heal};
use fdb_simulation::world::{World, WorldOptions};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use serde_json::json;

#[path = "world_runtime/support.rs"]
mod support;

#[path = "world_runtime/faults_v2.rs"]
mod faults_v2;
#[path = "world_runtime/images.rs"]
mod images;
#[path = "world_runtime/isolation.rs"]
mod isolation;
#[path = "world_runtime/node_failure.rs"]
mod node_failure;
#[path = "world_runtime/watch_input.rs"]
mod watch_input;

use support::{
    CLUSTER_FILE, config_map, http, monitor_conf, pod, pod_key, pvc, ready, setup, storage_pod,
};

#[tokio::test]
async fn pods_are_scheduled_spread_and_run_sidecars_and_processes() {
    let mut s = setup(Some(4), 201);
    s.api
        .create_as("operator", config_map(&monitor_conf(""), CLUSTER_FILE))
        .unwrap();
    s.api
        .create_as(
            "operator",
            json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "sample", "namespace": "default"}, "spec": {"clusterIP": "None"}}),
        )
        .unwrap();
    s.api
        .create_as("operator", pvc("sample-storage-1-data"))
        .unwrap();
    for n in 1..=3 {
        s.api.create_as("operator", storage_pod(n, n == 1)).unwrap();
    }
    let report = s.world.settle().await.unwrap();
    assert!(
        report.events.iter().any(|e| e.action == "start-sidecar"),
        "{report:?}"
    );

    let mut nodes = Vec::new();
    for n in 1..=3u32 {
        let p = pod(&s.api, &format!("sample-storage-{n}")).unwrap();
        let status = p.status.clone().unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert_eq!(
            status.pod_ip.as_deref(),
            Some(format!("127.201.1.{n}").as_str())
        );
        assert!(ready(&p), "{status:?}");
        nodes.push(p.spec.unwrap().node_name.unwrap());
    }
    // Spread by the preferred anti-affinity, in node order.
    assert_eq!(nodes, ["node-1", "node-2", "node-3"]);

    // The real sidecar serves on the pod IP.
    let ip: std::net::Ipv4Addr = "127.201.1.2".parse().unwrap();
    assert_eq!(http(ip, "GET", "/ready").await, Some((200, "OK\n".into())));
    let (code, subs) = http(ip, "GET", "/substitutions").await.unwrap();
    assert_eq!(code, 200);
    assert!(subs.contains("\"FDB_ZONE_ID\":\"node-2\""), "{subs}");

    // fdbmonitor started one process per pod from the sidecar-rendered conf.
    let running = s.host.running();
    assert_eq!(running.len(), 3);
    let launch = &running[&ProcessAddress::parse("127.201.1.2:4501").unwrap()];
    assert_eq!(launch.class.as_str(), "storage");
    assert_eq!(launch.version.to_string(), "7.1.57");
    assert_eq!(launch.locality["instance_id"], "storage-2");
    assert_eq!(launch.locality["zoneid"], "node-2");
    assert_eq!(launch.cluster_file_contents, CLUSTER_FILE);
    assert_eq!(launch.pod, "sample-storage-2");
    assert!(
        launch.command_line.starts_with(
            "/usr/bin/fdbserver --class=storage --cluster_file=/var/fdb/data/fdb.cluster"
        ),
        "{}",
        launch.command_line
    );
    assert!(
        launch
            .command_line
            .contains("--public_address=127.201.1.2:4501")
    );
    let pvc_launch = &running[&ProcessAddress::parse("127.201.1.1:4501").unwrap()];
    assert!(
        pvc_launch
            .data_identity
            .starts_with("pvc:default/sample-storage-1-data@"),
        "{}",
        pvc_launch.data_identity
    );

    // PVCs are bound and protected.
    let claim: PersistentVolumeClaim = s
        .api
        .get_typed(Some("default"), "sample-storage-1-data")
        .unwrap()
        .unwrap();
    assert_eq!(claim.status.unwrap().phase.as_deref(), Some("Bound"));
    assert_eq!(
        claim.metadata.finalizers.unwrap(),
        ["kubernetes.io/pvc-protection"]
    );

    // DNS and summaries.
    assert_eq!(
        s.world
            .resolve("sample-storage-3.sample.default.svc.cluster.local"),
        Some("127.201.1.3".parse().unwrap())
    );
    let sidecars = s.world.sidecar_summaries();
    assert_eq!(sidecars["sample-storage-1"].files.len(), 2, "{sidecars:?}");
    let pods = s.world.pod_summaries().unwrap();
    assert_eq!(pods[0].ip.as_deref(), Some("127.201.1.1"));
    assert_eq!(pods[0].containers.len(), 3);

    // Settling again changes nothing.
    let again = s.world.settle().await.unwrap();
    assert!(again.events.is_empty(), "{again:?}");
    s.world.shutdown().await;
    assert_eq!(http(ip, "GET", "/ready").await, None);
}

#[tokio::test]
async fn config_map_changes_arrive_after_the_delay_and_kills_restart_from_the_current_conf() {
    let mut s = setup(None, 202);
    s.api
        .create_as("operator", config_map(&monitor_conf(""), CLUSTER_FILE))
        .unwrap();
    s.api.create_as("operator", storage_pod(1, false)).unwrap();
    s.world.settle().await.unwrap();
    assert_eq!(s.world.node_names(), ["node-1"]);
    let input = s
        .world
        .pod_volume_dir("default", "sample-storage-1", "config-map")
        .unwrap();
    let ip = s.world.pod_ip("default", "sample-storage-1").unwrap();

    let new_conf = monitor_conf("knob_disable_posix_kernel_aio = 1\n");
    let patch = json!({"data": {"fdbmonitor-conf-storage": new_conf}});
    let key = ResourceKey::new("", "v1", "configmaps", "default", "sample-config");
    s.api
        .patch_as(
            "operator",
            &key,
            fdb_simulation::kube::PatchType::Merge,
            &patch,
            false,
        )
        .unwrap();
    s.world.settle().await.unwrap();
    let due = s.world.next_due().unwrap();
    assert_eq!(due.as_second() - s.clock.now().as_second(), 60);
    s.clock.advance_seconds(59);
    s.world.settle().await.unwrap();
    assert!(
        !std::fs::read_to_string(input.join("fdbmonitor.conf"))
            .unwrap()
            .contains("knob_")
    );
    s.clock.advance_seconds(1);
    let report = s.world.settle().await.unwrap();
    assert!(
        report.events.iter().any(|e| e.action == "project"),
        "{report:?}"
    );
    assert!(
        std::fs::read_to_string(input.join("fdbmonitor.conf"))
            .unwrap()
            .contains("knob_disable")
    );
    assert_eq!(s.world.next_due(), None);

    // The sidecar renders the new conf; fdbmonitor does not restart the process for it.
    assert_eq!(http(ip, "POST", "/copy_monitor_conf").await.unwrap().0, 200);
    s.world.settle().await.unwrap();
    assert_eq!(s.host.start_count(), 1);
    let address = ProcessAddress::parse(&format!("{ip}:4501")).unwrap();
    assert!(!s.host.running()[&address].command_line.contains("knob_"));

    // A kill restarts it from the current conf.
    s.host.kills.lock().unwrap().push(address.clone());
    s.world.settle().await.unwrap();
    assert_eq!(s.host.start_count(), 2);
    assert!(
        s.host.running()[&address]
            .command_line
            .contains("--knob_disable_posix_kernel_aio=1")
    );

    // POST /restart restarts the sidecar container.
    assert_eq!(http(ip, "POST", "/restart").await.unwrap().0, 200);
    s.world.settle().await.unwrap();
    assert_eq!(
        s.world.sidecar_restarts("default", "sample-storage-1"),
        Some(1)
    );
    assert_eq!(http(ip, "GET", "/ready").await.unwrap().0, 200);
    let p = pod(&s.api, "sample-storage-1").unwrap();
    let restarts: Vec<i32> = p
        .status
        .unwrap()
        .container_statuses
        .unwrap()
        .iter()
        .map(|c| c.restart_count)
        .collect();
    assert_eq!(restarts, [0, 1]);
    s.world.shutdown().await;
}

#[tokio::test]
async fn deletion_pvc_protection_faults_and_heal() {
    let mut s = setup(Some(3), 203);
    s.api
        .create_as("operator", config_map(&monitor_conf(""), CLUSTER_FILE))
        .unwrap();
    s.api
        .create_as("operator", pvc("sample-storage-1-data"))
        .unwrap();
    s.api.create_as("operator", storage_pod(1, true)).unwrap();
    s.api.create_as("operator", storage_pod(2, false)).unwrap();
    s.world.settle().await.unwrap();
    let ip1 = s.world.pod_ip("default", "sample-storage-1").unwrap();
    let ip2 = s.world.pod_ip("default", "sample-storage-2").unwrap();
    let address2 = ProcessAddress::parse(&format!("{ip2}:4501")).unwrap();

    // processMissing: the process stays down until healed.
    s.world
        .apply_fault(&Fault::ProcessMissing {
            process_group: "storage-2".into(),
        })
        .await
        .unwrap();
    assert!(!s.host.running().contains_key(&address2));
    s.world.settle().await.unwrap();
    assert!(!s.host.running().contains_key(&address2));
    s.world
        .heal(&Heal {
            process_group: Some("storage-2".into()),
            ..Heal::default()
        })
        .await
        .unwrap();
    assert!(s.host.running().contains_key(&address2));

    // nodeDown: its sidecar and process vanish at once (the API notices only after 40 s,
    // see node_failure); heal brings them back.
    let node2 = pod(&s.api, "sample-storage-2")
        .unwrap()
        .spec
        .unwrap()
        .node_name
        .unwrap();
    s.world
        .apply_fault(&Fault::NodeDown {
            node: node2.clone(),
        })
        .await
        .unwrap();
    assert!(ready(&pod(&s.api, "sample-storage-2").unwrap()));
    assert_eq!(http(ip2, "GET", "/ready").await, None);
    assert!(!s.host.running().contains_key(&address2));
    s.world
        .heal(&Heal {
            node: Some(node2),
            ..Heal::default()
        })
        .await
        .unwrap();
    assert!(ready(&pod(&s.api, "sample-storage-2").unwrap()));
    assert_eq!(http(ip2, "GET", "/ready").await.unwrap().0, 200);
    assert!(s.host.running().contains_key(&address2));

    // podStuckTerminating: the deletion never finishes until healed; the PVC stays
    // protected while the pod exists.
    s.world
        .apply_fault(&Fault::PodStuckTerminating {
            process_group: "storage-1".into(),
        })
        .await
        .unwrap();
    s.api
        .delete_as(
            "operator",
            &pod_key("sample-storage-1"),
            DeleteOptions::default(),
        )
        .unwrap();
    let pvc_key = ResourceKey::new(
        "",
        "v1",
        "persistentvolumeclaims",
        "default",
        "sample-storage-1-data",
    );
    s.api
        .delete_as("operator", &pvc_key, DeleteOptions::default())
        .unwrap();
    s.world.settle().await.unwrap();
    let stuck = pod(&s.api, "sample-storage-1").unwrap();
    assert!(stuck.metadata.deletion_timestamp.is_some());
    assert!(s.api.get(&pvc_key).is_some());
    assert_eq!(http(ip1, "GET", "/ready").await, None);
    assert!(
        !s.host
            .running()
            .contains_key(&ProcessAddress::parse(&format!("{ip1}:4501")).unwrap())
    );
    s.world
        .heal(&Heal {
            all: Some(true),
            ..Heal::default()
        })
        .await
        .unwrap();
    assert!(pod(&s.api, "sample-storage-1").is_none());
    assert!(
        s.api.get(&pvc_key).is_none(),
        "the protection finalizer is removed once no pod uses the claim"
    );
    assert_eq!(
        s.host.removed.lock().unwrap().len(),
        1,
        "the PVC's process is forgotten with its data"
    );

    // podPending: a recreated pod of the group stays Pending until healed.
    s.world
        .apply_fault(&Fault::PodPending {
            process_group: "storage-1".into(),
        })
        .await
        .unwrap();
    s.api.create_as("operator", storage_pod(1, false)).unwrap();
    s.world.settle().await.unwrap();
    let pending = pod(&s.api, "sample-storage-1").unwrap();
    assert!(pending.spec.unwrap().node_name.is_none());
    assert_eq!(pending.status.unwrap().phase.as_deref(), Some("Pending"));
    s.world
        .heal(&Heal {
            process_group: Some("storage-1".into()),
            ..Heal::default()
        })
        .await
        .unwrap();
    assert!(ready(&pod(&s.api, "sample-storage-1").unwrap()));

    // podFailed: phase Failed, processes and sidecar stop.
    s.world
        .apply_fault(&Fault::PodFailed {
            process_group: "storage-2".into(),
        })
        .await
        .unwrap();
    assert_eq!(
        pod(&s.api, "sample-storage-2")
            .unwrap()
            .status
            .unwrap()
            .phase
            .as_deref(),
        Some("Failed")
    );
    assert!(!s.host.running().contains_key(&address2));
    assert_eq!(http(ip2, "GET", "/ready").await, None);

    // Unknown nodes and runner-side faults are typed errors.
    assert!(
        s.world
            .apply_fault(&Fault::NodeDown {
                node: "node-9".into()
            })
            .await
            .is_err()
    );
    assert!(
        s.world
            .apply_fault(&Fault::ApiConflicts { rate: 0.1 })
            .await
            .is_err()
    );
    s.world.shutdown().await;
}

#[tokio::test]
async fn the_simulated_fdb_sees_fdbmonitor_processes_and_kills_restart_them() {
    let clock = VirtualClock::fixed_epoch();
    let api = FakeApiServer::new(Arc::new(clock.clone()), 1);
    let fdb = SimulatedFdb::new(Arc::new(clock.clone()), SimFdbSettings::default());
    let options = WorldOptions {
        ip_block: 204,
        ..WorldOptions::default()
    };
    let mut world = World::new(options, api.clone(), Arc::new(fdb.clone()), clock.clone()).unwrap();
    // The first pod gets 127.204.1.1: make it the coordinator.
    let cluster_file = "sample:abc@127.204.1.1:4501";
    api.create_as("operator", config_map(&monitor_conf(""), cluster_file))
        .unwrap();
    api.create_as("operator", storage_pod(1, false)).unwrap();
    world.settle().await.unwrap();

    let snapshot = fdb.snapshot();
    assert_eq!(snapshot.connection_string.as_deref(), Some(cluster_file));
    assert_eq!(snapshot.processes.len(), 1);
    let process = &snapshot.processes[0];
    assert_eq!(process.address, "127.204.1.1:4501");
    assert_eq!(process.class.as_str(), "storage");
    assert_eq!(process.version.to_string(), "7.1.57");
    assert_eq!(process.locality["instance_id"], "storage-1");
    assert!(
        process.command_line.contains("--locality_zoneid=node-1"),
        "{}",
        process.command_line
    );

    clock.advance_seconds(100);
    world.settle().await.unwrap();
    assert_eq!(fdb.snapshot().processes[0].uptime_seconds, 100);
    fdb.kill(&[ProcessAddress::parse("127.204.1.1:4501").unwrap()])
        .await
        .unwrap();
    // fdbmonitor brings it back after the restart delay, which the world steps to.
    let due = world.next_due().unwrap();
    assert_eq!(due.as_second(), clock.now_unix() + 5);
    clock.advance_seconds(5);
    let report = world.settle().await.unwrap();
    assert!(
        report.events.iter().any(|e| e.action == "kill"),
        "{report:?}"
    );
    let after = fdb.snapshot();
    assert_eq!(after.processes.len(), 1);
    assert_eq!(after.processes[0].uptime_seconds, 0);
    // The data dir's cluster file follows the database's connection string.
    let data = world
        .pod_volume_dir("default", "sample-storage-1", "data")
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(data.join("fdb.cluster"))
            .unwrap()
            .trim(),
        cluster_file
    );
    world.shutdown().await;
}
