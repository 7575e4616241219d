//! Shared helpers of the world runtime tests: a recording process host, the pod and
//! ConfigMap an operator would create, a world over them, and a raw HTTP client.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use fdb_operator::clock::VirtualClock;
use fdb_shared::address::ProcessAddress;
use fdb_simulation::kube::{FakeApiServer, ResourceKey};
use fdb_simulation::world::{ProcessHost, ProcessLaunch, World, WorldOptions};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A process table that records what fdbmonitor does.
#[derive(Default)]
pub struct FakeHost {
    pub running: Mutex<BTreeMap<ProcessAddress, ProcessLaunch>>,
    pub starts: Mutex<Vec<ProcessLaunch>>,
    pub removed: Mutex<Vec<ProcessAddress>>,
    pub kills: Mutex<Vec<ProcessAddress>>,
}

impl ProcessHost for FakeHost {
    fn start_process(&self, launch: ProcessLaunch) {
        self.starts.lock().unwrap().push(launch.clone());
        self.running
            .lock()
            .unwrap()
            .insert(launch.address.clone(), launch);
    }
    fn stop_process(&self, address: &ProcessAddress) {
        self.running.lock().unwrap().remove(address);
    }
    fn remove_process(&self, address: &ProcessAddress) {
        self.running.lock().unwrap().remove(address);
        self.removed.lock().unwrap().push(address.clone());
    }
    fn take_kill_requests(&self) -> Vec<ProcessAddress> {
        std::mem::take(&mut *self.kills.lock().unwrap())
    }
    fn tick(&self) {}
    fn connection_string(&self) -> Option<String> {
        None
    }
}

impl FakeHost {
    pub fn running(&self) -> BTreeMap<ProcessAddress, ProcessLaunch> {
        self.running.lock().unwrap().clone()
    }
    pub fn start_count(&self) -> usize {
        self.starts.lock().unwrap().len()
    }
}

pub const CLUSTER_FILE: &str = "sample:abc@127.9.9.9:4501";

pub fn monitor_conf(extra: &str) -> String {
    format!(
        "[general]\nkill_on_configuration_change = false\nrestart_delay = 60\n[fdbserver.1]\n\
         command = $BINARY_DIR/fdbserver\ncluster_file = /var/fdb/data/fdb.cluster\n\
         seed_cluster_file = /var/dynamic-conf/fdb.cluster\npublic_address = $FDB_PUBLIC_IP:4501\n\
         class = storage\nlogdir = /var/log/fdb-trace-logs\nloggroup = sample\ndatadir = /var/fdb/data\n\
         locality_instance_id = $FDB_INSTANCE_ID\nlocality_machineid = $FDB_MACHINE_ID\n\
         locality_zoneid = $FDB_ZONE_ID\nlisten_address = $FDB_POD_IP:4501\n{extra}"
    )
}

pub fn config_map(conf: &str, cluster_file: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "sample-config", "namespace": "default"},
           "data": {"fdbmonitor-conf-storage": conf, "cluster-file": cluster_file, "running-version": "7.1.57"}})
}

pub fn pvc(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "16G"}}}})
}

/// A split-image storage pod as the operator builds it (docs/controller-model.md, "The pod").
pub fn storage_pod(n: u32, with_pvc: bool) -> Value {
    let name = format!("sample-storage-{n}");
    let group = format!("storage-{n}");
    let labels = json!({"foundationdb.org/fdb-cluster-name": "sample",
        "foundationdb.org/fdb-process-class": "storage", "foundationdb.org/fdb-process-group-id": group});
    let sidecar_args = [
        "--copy-file",
        "fdb.cluster",
        "--input-monitor-conf",
        "fdbmonitor.conf",
        "--copy-binary",
        "fdbserver",
        "--copy-binary",
        "fdbcli",
        "--main-container-version",
        "7.1.57",
    ];
    let mut init_args: Vec<&str> = sidecar_args.to_vec();
    init_args.push("--init-mode");
    let field = |path: &str| json!({"fieldRef": {"fieldPath": path}});
    let env = json!([
        {"name": "FDB_PUBLIC_IP", "valueFrom": field("status.podIP")},
        {"name": "FDB_POD_IP", "valueFrom": field("status.podIP")},
        {"name": "FDB_MACHINE_ID", "valueFrom": field("spec.nodeName")},
        {"name": "FDB_ZONE_ID", "valueFrom": field("spec.nodeName")},
        {"name": "FDB_INSTANCE_ID", "value": group},
    ]);
    let sidecar_mounts = json!([{"name": "config-map", "mountPath": "/var/input-files"},
                                {"name": "dynamic-conf", "mountPath": "/var/output-files"}]);
    let data = if with_pvc {
        json!({"name": "data", "persistentVolumeClaim": {"claimName": format!("{name}-data")}})
    } else {
        json!({"name": "data", "emptyDir": {}})
    };
    json!({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": name, "namespace": "default", "labels": labels},
      "spec": {
        "hostname": name, "subdomain": "sample",
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1,
            "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {
                "foundationdb.org/fdb-cluster-name": "sample", "foundationdb.org/fdb-process-class": "storage"}}}}]}},
        "initContainers": [{"name": "foundationdb-kubernetes-init",
            "image": "foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1",
            "args": init_args, "env": env, "volumeMounts": sidecar_mounts}],
        "containers": [
          {"name": "foundationdb", "image": "foundationdb/foundationdb:7.1.57",
           "command": ["fdbmonitor"],
           "args": ["--conffile", "/var/dynamic-conf/fdbmonitor.conf", "--lockfile", "/var/dynamic-conf/fdbmonitor.lockfile"],
           "env": [{"name": "FDB_CLUSTER_FILE", "value": "/var/dynamic-conf/fdb.cluster"}],
           "volumeMounts": [{"name": "data", "mountPath": "/var/fdb/data"},
                            {"name": "dynamic-conf", "mountPath": "/var/dynamic-conf"},
                            {"name": "fdb-trace-logs", "mountPath": "/var/log/fdb-trace-logs"}]},
          {"name": "foundationdb-kubernetes-sidecar",
           "image": "foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1",
           "args": sidecar_args, "env": env, "volumeMounts": sidecar_mounts}],
        "volumes": [data, {"name": "dynamic-conf", "emptyDir": {}},
          {"name": "config-map", "configMap": {"name": "sample-config", "items": [
              {"key": "fdbmonitor-conf-storage", "path": "fdbmonitor.conf"},
              {"key": "cluster-file", "path": "fdb.cluster"}]}},
          {"name": "fdb-trace-logs", "emptyDir": {}}]}})
}

pub struct Setup {
    pub api: FakeApiServer,
    pub clock: VirtualClock,
    pub host: Arc<FakeHost>,
    pub world: World,
}

pub fn setup(nodes: Option<u32>, ip_block: u8) -> Setup {
    setup_with(WorldOptions {
        nodes,
        zones: Some(3),
        ip_block,
        ..WorldOptions::default()
    })
}

pub fn setup_with(options: WorldOptions) -> Setup {
    let clock = VirtualClock::fixed_epoch();
    let api = FakeApiServer::new(Arc::new(clock.clone()), 1);
    let host = Arc::new(FakeHost::default());
    let world = World::new(options, api.clone(), host.clone(), clock.clone()).unwrap();
    Setup {
        api,
        clock,
        host,
        world,
    }
}

pub fn pod(api: &FakeApiServer, name: &str) -> Option<Pod> {
    api.get_typed(Some("default"), name).unwrap()
}

pub fn pod_key(name: &str) -> ResourceKey {
    ResourceKey::new("", "v1", "pods", "default", name)
}

/// A one-shot HTTP/1.1 request; `None` when nothing listens.
pub async fn http(ip: std::net::Ipv4Addr, method: &str, path: &str) -> Option<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect((ip, 8080)).await.ok()?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {ip}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    let code = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Some((code, body))
}

/// `(name, restartCount, imageID)` of the pod's containers, init containers first.
pub fn container_states(pod: &Pod) -> Vec<(String, i32, String)> {
    let status = pod.status.clone().unwrap_or_default();
    status
        .init_container_statuses
        .into_iter()
        .flatten()
        .chain(status.container_statuses.into_iter().flatten())
        .map(|c| (c.name, c.restart_count, c.image_id))
        .collect()
}

/// A strategic merge patch of one container's image, as `kubectl set image` sends.
pub fn set_image(api: &FakeApiServer, pod: &str, container: &str, image: &str) {
    api.patch_as(
        "user",
        &pod_key(pod),
        fdb_simulation::kube::PatchType::Strategic,
        &json!({"spec": {"containers": [{"name": container, "image": image}]}}),
        false,
    )
    .unwrap();
}

pub fn ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}
