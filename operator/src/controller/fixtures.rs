//! Test fixtures: snapshots built from a few lines of cluster spec, process groups, pods
//! and `status json` (synthetic, or the real captures in `shared/tests/fixtures/`), so
//! step decisions and safety gates are tested without any API.

use std::sync::Arc;

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::status_json::DatabaseStatus;
use fdb_shared::validation::ValidatedCluster;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};

use super::cache::decoded_pods::DecodedPods;
use super::cache::pod::CompactPod;
use super::model::pod::parse_any_process_group_id;
use super::model::process_groups::new_process_group;
use super::snapshot::{ClusterSnapshot, DatabaseState, PodSource, SnapshotParts, StatusReadError};
use crate::fdb::AdminError;

/// The real `status json` of a 7.1.0-rc1 double cluster `test_cluster`: processes log-1..4,
/// storage-1..3 and cluster_controller-1, all up 85 s, recovered 77 s ago.
pub const STATUS_7_1: &str = include_str!("../../../shared/tests/fixtures/status-7.1.0-rc1.json");

/// A cluster named `sample` in namespace `ns` (generation 1) with this spec (YAML).
pub fn cluster(spec_yaml: &str) -> FoundationDBCluster {
    let spec: serde_json::Value = serde_yaml_ng::from_str(spec_yaml).unwrap();
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
        "metadata": {"name": "sample", "namespace": "ns", "generation": 1, "uid": "uid-1"},
        "spec": spec
    }))
    .unwrap()
}

/// A process group as the operator creates it, class from the ID, no conditions.
pub fn group(id: &str) -> ProcessGroupStatus {
    let (class, _) = parse_any_process_group_id(id).unwrap();
    let mut group = new_process_group(id.to_owned(), class, 0);
    group.process_group_conditions.clear();
    group
}

/// A running pod of `group` on `node` with `ip` (no annotations).
pub fn pod(name: &str, group: &str, node: &str, ip: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"foundationdb.org/fdb-process-group-id": group}},
        "spec": {"containers": [], "nodeName": node},
        "status": {"phase": "Running", "podIP": ip}
    }))
    .unwrap()
}

/// A `status json` document from JSON.
pub fn database(json: serde_json::Value) -> DatabaseStatus {
    serde_json::from_value(json).unwrap()
}

/// A status document whose processes have these instance IDs (zone `z-<id>`, up 1000 s,
/// address `10.0.0.<n>:4501`), available and healthy.
pub fn reporting(ids: &[&str]) -> DatabaseStatus {
    let processes: serde_json::Map<String, serde_json::Value> = ids
        .iter()
        .enumerate()
        .map(|(n, id)| {
            (
                format!("p{n}"),
                serde_json::json!({
                    "address": format!("10.0.0.{}:4501", n + 1),
                    "uptime_seconds": 1000.0,
                    "locality": {"instance_id": id, "zoneid": format!("z-{id}")}
                }),
            )
        })
        .collect();
    database(serde_json::json!({
        "client": {"database_status": {"available": true, "healthy": true}},
        "cluster": {"processes": processes}
    }))
}

/// A snapshot under construction.
#[derive(Debug, Clone)]
pub struct Fixture {
    cluster: FoundationDBCluster,
    pods: Vec<Pod>,
    pvcs: Vec<PersistentVolumeClaim>,
    services: Vec<Service>,
    config_map: Option<ConfigMap>,
    database: DatabaseState,
    nodes: Option<std::collections::BTreeMap<String, k8s_openapi::api::core::v1::Node>>,
    now: i64,
}

impl Fixture {
    /// A cluster with this spec (YAML), an empty status, nothing else, at t = 10000.
    pub fn new(spec_yaml: &str) -> Self {
        let mut cluster = cluster(spec_yaml);
        cluster.status = Some(Default::default());
        Self {
            cluster,
            pods: Vec::new(),
            pvcs: Vec::new(),
            services: Vec::new(),
            config_map: None,
            database: DatabaseState::NotCreated,
            nodes: None,
            now: 10_000,
        }
    }

    /// Changes the status.
    pub fn status(
        mut self,
        change: impl FnOnce(&mut fdb_shared::api::FoundationDBClusterStatus),
    ) -> Self {
        if let Some(status) = self.cluster.status.as_mut() {
            change(status);
        }
        self
    }

    /// Changes the cluster.
    pub fn cluster(mut self, change: impl FnOnce(&mut FoundationDBCluster)) -> Self {
        change(&mut self.cluster);
        self
    }

    /// Adds process groups.
    pub fn groups(self, groups: impl IntoIterator<Item = ProcessGroupStatus>) -> Self {
        self.status(|status| status.process_groups.extend(groups))
    }

    /// Sets `status.connectionString`.
    pub fn connection_string(self, connection_string: &str) -> Self {
        self.status(|status| status.connection_string = Some(connection_string.to_owned()))
    }

    /// Adds pods.
    pub fn pods(mut self, pods: impl IntoIterator<Item = Pod>) -> Self {
        self.pods.extend(pods);
        self
    }

    /// Adds PVCs.
    pub fn pvcs(mut self, pvcs: impl IntoIterator<Item = PersistentVolumeClaim>) -> Self {
        self.pvcs.extend(pvcs);
        self
    }

    /// Adds services.
    pub fn services(mut self, services: impl IntoIterator<Item = Service>) -> Self {
        self.services.extend(services);
        self
    }

    /// Sets the ConfigMap.
    pub fn config_map(mut self, config_map: ConfigMap) -> Self {
        self.config_map = Some(config_map);
        self
    }

    /// The database answers with this status.
    pub fn database(mut self, status: DatabaseStatus) -> Self {
        self.database = DatabaseState::Read(Arc::new(status));
        self
    }

    /// The database's status cannot be read (a timeout).
    pub fn unreadable(mut self) -> Self {
        self.database = DatabaseState::Unreadable(Arc::new(StatusReadError::Read(Arc::new(
            AdminError::Timeout {
                command: "status json".into(),
                seconds: 10,
            },
        ))));
        self
    }

    /// The Nodes were read (each `(name, taints as JSON)`).
    pub fn nodes<'a>(
        mut self,
        nodes: impl IntoIterator<Item = (&'a str, serde_json::Value)>,
    ) -> Self {
        let read = self.nodes.get_or_insert_with(Default::default);
        for (name, taints) in nodes {
            let node = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name}, "spec": {"taints": taints}
            }))
            .unwrap();
            read.insert(name.to_owned(), node);
        }
        self
    }

    /// The pass runs at `unix` seconds.
    pub fn at(mut self, unix: i64) -> Self {
        self.now = unix;
        self
    }

    /// The snapshot.
    pub fn build(self) -> ClusterSnapshot {
        self.build_with(PodSource::from)
    }

    /// The snapshot, its pods read as a pass reads them from the pods' cache (compact,
    /// decoded through `decoder` when a step asks for a spec).
    pub fn build_cached(self, decoder: &Arc<DecodedPods>) -> ClusterSnapshot {
        self.build_with(|pod| PodSource::Cached {
            pod: Arc::new(CompactPod::new(pod)),
            decoder: decoder.clone(),
        })
    }

    /// The snapshot, each pod read as `source` makes it.
    pub fn build_with(self, source: impl FnMut(Pod) -> PodSource) -> ClusterSnapshot {
        ClusterSnapshot::new(SnapshotParts {
            cluster: ValidatedCluster::new(self.cluster).unwrap(),
            now: Timestamp::from_second(self.now).unwrap(),
            pods: self.pods.into_iter().map(source).collect(),
            pvcs: self.pvcs.into_iter().map(Arc::new).collect(),
            services: self.services.into_iter().map(Arc::new).collect(),
            config_map: self.config_map,
            database: self.database,
            nodes: self.nodes,
        })
    }
}

/// The conf hash UpdatePodConfig wants on the split-image pod of group `id` of
/// `fixture`'s cluster.
pub(crate) fn desired_hash(fixture: &Fixture, id: &str) -> String {
    let snapshot = fixture.clone().build();
    let group = snapshot.group(id).unwrap();
    super::model::desired::ConfigHashes::default()
        .of(
            snapshot.cluster(),
            group.status,
            group.servers_per_pod(),
            fdb_shared::api::cluster::ImageType::Split,
        )
        .unwrap()
        .unwrap()
}
