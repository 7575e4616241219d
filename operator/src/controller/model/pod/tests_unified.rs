//! Unified-image pods: the monitor's containers, arguments, volumes and environment.

use fdb_shared::api::ProcessClass;

use super::tests::{cluster, container, env, group, pod, storage_1};
use super::*;

fn args(container: &Container) -> Vec<&str> {
    container
        .args
        .iter()
        .flatten()
        .map(String::as_str)
        .collect()
}

#[test]
fn the_main_container_runs_the_monitor_and_the_sidecar_copies_binaries() {
    let cluster = cluster("imageType: unified");
    let pod = pod(&cluster, &storage_1());
    let spec = pod.spec.as_ref().unwrap();
    let names: Vec<&str> = spec.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, [MAIN_CONTAINER, SIDECAR_CONTAINER]);
    assert!(spec.init_containers.iter().flatten().next().is_none());
    let main = container(&pod, MAIN_CONTAINER);
    assert_eq!(
        main.image.as_deref(),
        Some("foundationdb/fdb-kubernetes-monitor:7.1.57")
    );
    assert_eq!(main.command, None);
    assert_eq!(
        args(main),
        [
            "--input-dir",
            "/var/dynamic-conf",
            "--log-path",
            "/var/log/fdb-trace-logs/monitor.log"
        ]
    );
    for name in [
        "FDB_PUBLIC_IP",
        "FDB_POD_IP",
        "FDB_MACHINE_ID",
        "FDB_ZONE_ID",
        "FDB_INSTANCE_ID",
        "FDB_POD_NAME",
        "FDB_POD_NAMESPACE",
        "FDB_NODE_NAME",
        "FDB_CLUSTER_FILE",
    ] {
        assert!(env(main, name).is_some(), "{name}");
    }
    // The Go operator v2's client trace options, so its unified pods and ours agree.
    let text = |name: &str| env(main, name).and_then(|e| e.value.clone());
    assert_eq!(
        text("FDB_NETWORK_OPTION_TRACE_LOG_GROUP").as_deref(),
        Some("sample")
    );
    assert_eq!(
        text("FDB_NETWORK_OPTION_TRACE_ENABLE").as_deref(),
        Some("/var/log/fdb-trace-logs")
    );
    let sidecar = container(&pod, SIDECAR_CONTAINER);
    assert_eq!(sidecar.image, main.image);
    assert_eq!(
        args(sidecar),
        [
            "--mode",
            "sidecar",
            "--output-dir",
            "/var/fdb/shared-binaries",
            "--main-container-version",
            "7.1.57",
            "--copy-binary",
            "fdbserver",
            "--copy-binary",
            "fdbcli",
            "--log-path",
            "/var/log/fdb-trace-logs/monitor.log"
        ]
    );
    assert_eq!(pod_image_type(&pod), ImageType::Unified);
    assert_eq!(
        kube::ResourceExt::annotations(&pod)
            .get(IMAGE_TYPE_ANNOTATION)
            .map(String::as_str),
        Some("unified")
    );
}

#[test]
fn volumes_mount_the_process_configuration_as_config_json() {
    let cluster = cluster("imageType: unified");
    let pod = pod(&cluster, &storage_1());
    let volumes = pod.spec.as_ref().unwrap().volumes.as_ref().unwrap();
    let names: Vec<&str> = volumes.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        ["data", "shared-binaries", "config-map", "fdb-trace-logs"]
    );
    let items = volumes[2]
        .config_map
        .as_ref()
        .unwrap()
        .items
        .as_ref()
        .unwrap();
    let items: Vec<(&str, &str)> = items
        .iter()
        .map(|i| (i.key.as_str(), i.path.as_str()))
        .collect();
    assert_eq!(
        items,
        [
            ("fdbmonitor-conf-storage-json", "config.json"),
            ("cluster-file", "fdb.cluster")
        ]
    );
    let main = container(&pod, MAIN_CONTAINER);
    let mounts: Vec<(&str, &str)> = main
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| (m.name.as_str(), m.mount_path.as_str()))
        .collect();
    assert_eq!(
        mounts,
        [
            ("data", "/var/fdb/data"),
            ("config-map", "/var/dynamic-conf"),
            ("shared-binaries", "/var/fdb/shared-binaries"),
            ("fdb-trace-logs", "/var/log/fdb-trace-logs")
        ]
    );
}

#[test]
fn several_servers_per_pod_are_the_monitors_process_count() {
    let cluster = cluster("imageType: unified\nstorageServersPerPod: 2");
    let pod = pod(&cluster, &storage_1());
    let main = container(&pod, MAIN_CONTAINER);
    assert!(args(main).ends_with(&["--process-count", "2"]));
    assert_eq!(
        env(main, "FDB_STORAGE_SERVERS_PER_POD").and_then(|e| e.value.as_deref()),
        Some("2")
    );
    assert_eq!(mounted_servers_per_pod(&pod), Some(2));
    let log = super::tests::pod(&cluster, &group(ProcessClass::Log, "log-1"));
    assert_eq!(mounted_servers_per_pod(&log), Some(1));
}

#[test]
fn split_pods_are_unchanged_and_the_image_type_is_in_the_hash() {
    let split = pod(&cluster(""), &storage_1());
    assert_eq!(pod_image_type(&split), ImageType::Split);
    let unified = pod(&cluster("imageType: unified"), &storage_1());
    let hash = |pod: &Pod| {
        kube::ResourceExt::annotations(pod)
            .get(LAST_APPLIED_SPEC_ANNOTATION)
            .cloned()
    };
    assert_ne!(hash(&split), hash(&unified));
}
