//! A fleet of FoundationDBClusters at rest in the in-memory API server, for measuring
//! the production controller at scale (`cargo bench --bench controller_scale`): each
//! cluster has its process groups in its status, its pods running (on a node each, with
//! the configuration confirmed), its PVCs and ConfigMap, and a simulated database of its
//! own in which every pod's process reports. The controller then has only to observe
//! and finish (configure the database, create the services, write the status), which is
//! what a fleet of reconciled clusters looks like to it from then on.
//!
//! The sidecars answer from memory as a kubelet that projects ConfigMaps at once would
//! make them answer; nothing here runs a kubelet or fdbmonitor.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::monitor_conf::parse::MonitorConf;
use fdb_shared::sidecar::protocol::{CLUSTER_FILE, MONITOR_CONF_FILE};
use fdb_shared::sidecar::{SidecarApi, SidecarClientError};
use fdb_shared::validation::ValidatedCluster;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use serde_json::{Value, json};

use crate::fdb::{ProcessLaunch, SimFdbSettings, SimulatedFdb};
use crate::kube::{FakeApiServer, PatchType, ResourceKey, typed_json};
use fdb_operator::clock::Clock;
use fdb_operator::controller::apply_status_mutations;
use fdb_operator::controller::{AddGroupsDecision, decide_new_process_groups};
use fdb_operator::controller::{AdminClientProvider, Context, SidecarProvider};
use fdb_operator::controller::{ClusterSnapshot, DatabaseState, SnapshotParts};
use fdb_operator::controller::{ConfigHashes, desired_config_map, pod_options};
use fdb_operator::controller::{
    LAST_APPLIED_CONFIG_MAP_ANNOTATION, build_pod, build_pvc, expected_substitutions,
    pod_servers_per_pod,
};
use fdb_operator::controller::{expected_monitor_conf, sha256_hex};
use fdb_operator::fdb::{AdminClient, AdminError};

/// The actor the fleet is written as.
pub const FLEET_ACTOR: &str = "fleet";

/// Why a fleet could not be built.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// The cluster manifest is not valid.
    #[error("cluster {name}: {message}")]
    Cluster {
        /// The cluster.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The in-memory API refused an object.
    #[error("{what}")]
    Api {
        /// Which object.
        what: String,
        /// The refusal.
        source: crate::kube::ApiError,
    },
}

/// What every group of one fleet cluster is built with.
struct GroupBuild<'a> {
    cluster: &'a FoundationDBCluster,
    namespace: &'a str,
    ordinal: usize,
    connection: &'a str,
    version: fdb_shared::version::FdbVersion,
    fdb: &'a SimulatedFdb,
}

impl GroupBuild<'_> {
    /// The pod's processes, as fdbmonitor starts them from the rendered conf.
    fn start_processes(&self, group: &ProcessGroupStatus, live: &Pod) -> Result<(), FleetError> {
        let (cluster, namespace, fdb, version) =
            (self.cluster, self.namespace, self.fdb, self.version);
        let invalid = cluster_error(cluster.metadata.name.as_deref().unwrap_or_default());
        let pod_name = live.name_any();
        let substitutions = expected_substitutions(live)
            .ok_or_else(|| invalid(format!("no substitutions for {pod_name}")))?;
        let servers = pod_servers_per_pod(cluster, group.process_class, Some(live));
        let conf = expected_monitor_conf(cluster, group.process_class, servers, &substitutions)
            .map_err(|e| invalid(e.to_string()))?;
        let commands = MonitorConf::parse(&conf)
            .and_then(|conf| conf.processes())
            .map_err(|e| invalid(e.to_string()))?;
        for command in commands {
            let mut addresses = command
                .arguments
                .get("public_address")
                .map(|a| a.split(',').filter_map(|a| ProcessAddress::parse(a).ok()))
                .into_iter()
                .flatten();
            let address = addresses
                .next()
                .ok_or_else(|| invalid(format!("no public address for {pod_name}")))?;
            let other_addresses = addresses.collect();
            let locality = command
                .arguments
                .iter()
                .filter_map(|(k, v)| Some((k.strip_prefix("locality_")?.to_owned(), v.clone())))
                .collect();
            fdb.start_process(ProcessLaunch {
                address,
                other_addresses,
                command_line: command.command_line(),
                class: group.process_class,
                locality,
                version,
                cluster_file_contents: self.connection.to_owned(),
                pod: pod_name.clone(),
                data_identity: format!("pvc:{namespace}/{pod_name}/{}", command.process_number),
                coordination_file: None,
            });
        }
        Ok(())
    }
}

/// Turns an API refusal into the fleet's error, naming the object.
fn api_error(what: String) -> impl FnOnce(crate::kube::ApiError) -> FleetError {
    move |source| FleetError::Api { what, source }
}

fn cluster_error(name: &str) -> impl Fn(String) -> FleetError + '_ {
    move |message| FleetError::Cluster {
        name: name.to_owned(),
        message,
    }
}

/// The clusters' databases, by cluster name.
#[derive(Debug, Clone, Default)]
pub struct FleetDatabases {
    by_cluster: BTreeMap<String, SimulatedFdb>,
}

impl AdminClientProvider for FleetDatabases {
    fn admin_for(&self, cluster: &FoundationDBCluster) -> Result<Arc<dyn AdminClient>, AdminError> {
        let name = cluster.name_any();
        self.by_cluster
            .get(&name)
            .map(|fdb| Arc::new(fdb.clone()) as Arc<dyn AdminClient>)
            .ok_or_else(|| AdminError::Failed {
                command: "status json".to_owned(),
                code: None,
                stderr: format!("no database for cluster {name}"),
            })
    }
}

/// Sidecars answering from memory: the files are what the cluster's status and
/// ConfigMap say (a kubelet projecting at once), the substitutions what the pod spec
/// says.
#[derive(Debug, Clone, Copy, Default)]
pub struct FleetSidecars;

#[derive(Debug)]
struct MemorySidecar {
    substitutions: BTreeMap<String, String>,
    hashes: BTreeMap<&'static str, String>,
}

#[async_trait]
impl SidecarApi for MemorySidecar {
    async fn ready(&self) -> Result<(), SidecarClientError> {
        Ok(())
    }
    async fn substitutions(&self) -> Result<BTreeMap<String, String>, SidecarClientError> {
        Ok(self.substitutions.clone())
    }
    async fn check_hash(&self, rel: &str) -> Result<Option<String>, SidecarClientError> {
        Ok(self.hashes.get(rel).cloned())
    }
    async fn is_present(&self, _rel: &str) -> Result<bool, SidecarClientError> {
        Ok(true)
    }
    async fn copy_files(&self) -> Result<(), SidecarClientError> {
        Ok(())
    }
    async fn copy_binaries(&self) -> Result<(), SidecarClientError> {
        Ok(())
    }
    async fn copy_libraries(&self) -> Result<(), SidecarClientError> {
        Ok(())
    }
    async fn copy_monitor_conf(&self) -> Result<(), SidecarClientError> {
        Ok(())
    }
}

impl SidecarProvider for FleetSidecars {
    fn sidecar_for(
        &self,
        cluster: &FoundationDBCluster,
        pod: &Pod,
    ) -> Result<Arc<dyn SidecarApi>, SidecarClientError> {
        let substitutions = expected_substitutions(pod).unwrap_or_default();
        let mut hashes = BTreeMap::new();
        if let Some(file) = cluster
            .status
            .as_ref()
            .and_then(|s| s.connection_string.as_deref())
        {
            hashes.insert(CLUSTER_FILE, sha256_hex(file.as_bytes()));
        }
        let class = pod
            .labels()
            .get(fdb_shared::api::cluster::settings::PROCESS_CLASS_LABEL)
            .and_then(|c| c.parse().ok());
        if let Some(conf) = class.and_then(|class| {
            let servers = pod_servers_per_pod(cluster, class, Some(pod));
            expected_monitor_conf(cluster, class, servers, &substitutions).ok()
        }) {
            hashes.insert(MONITOR_CONF_FILE, sha256_hex(conf.as_bytes()));
        }
        Ok(Arc::new(MemorySidecar {
            substitutions,
            hashes,
        }))
    }
}

/// A fleet built in an in-memory API server.
#[derive(Debug, Clone)]
pub struct Fleet {
    /// The API server holding the clusters and their objects.
    pub api: FakeApiServer,
    /// Their databases.
    pub databases: FleetDatabases,
    /// The clusters, as `(namespace, name)`.
    pub clusters: Vec<(String, String)>,
}

/// The spec of a cluster of `groups` process groups (at least 14): 4 logs, 8 stateless,
/// a cluster controller and storage for the rest, IPs in the cluster file.
pub fn cluster_spec(groups: usize) -> Value {
    json!({
        "version": "7.1.57",
        "processCounts": {
            "storage": groups.saturating_sub(13).max(1),
            "log": 4,
            "stateless": 8,
            "cluster_controller": 1,
        },
        "routing": {"useDNSInClusterFile": false},
    })
}

/// The pod IP of the `index`th pod of the `cluster`th cluster.
fn pod_ip(cluster: usize, index: usize) -> String {
    format!(
        "10.{}.{}.{}",
        cluster % 250,
        (index / 250) % 250,
        index % 250 + 1
    )
}

impl Fleet {
    /// An empty in-memory API server reading `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            api: FakeApiServer::new(clock, 1),
            databases: FleetDatabases::default(),
            clusters: Vec::new(),
        }
    }

    /// Adds the cluster `namespace/name` of `groups` process groups, at rest.
    pub fn add_cluster(
        &mut self,
        clock: &Arc<dyn Clock>,
        namespace: &str,
        name: &str,
        groups: usize,
    ) -> Result<(), FleetError> {
        let invalid = cluster_error(name);
        let ordinal = self.clusters.len();
        let (cluster, connection) = self.create_cluster(clock, namespace, name, groups, ordinal)?;
        let groups: Vec<ProcessGroupStatus> = cluster
            .status
            .as_ref()
            .map(|status| status.process_groups.clone())
            .unwrap_or_default();
        let fdb = SimulatedFdb::new(
            clock.clone(),
            SimFdbSettings {
                recovery_seconds: 1,
                seed: u64::try_from(ordinal).unwrap_or(0) + 1,
                ..SimFdbSettings::default()
            },
        );
        let version: fdb_shared::version::FdbVersion = "7.1.57"
            .parse()
            .map_err(|_| invalid("version 7.1.57".to_owned()))?;
        let build = GroupBuild {
            cluster: &cluster,
            namespace,
            ordinal,
            connection: &connection,
            version,
            fdb: &fdb,
        };
        let mut hashes = ConfigHashes::default();
        for (index, group) in groups.iter().enumerate() {
            let live = self.add_group_objects(&build, group, index, &mut hashes)?;
            build.start_processes(group, &live)?;
        }
        let config_map = desired_config_map(&cluster).map_err(|e| invalid(e.to_string()))?;
        let value = typed_json(&config_map).map_err(|e| invalid(e.to_string()))?;
        self.api
            .create_as(FLEET_ACTOR, value)
            .map_err(api_error(format!("ConfigMap of {name}")))?;
        self.databases.by_cluster.insert(name.to_owned(), fdb);
        self.clusters.push((namespace.to_owned(), name.to_owned()));
        Ok(())
    }

    /// Creates the cluster object with its process groups (as AddProcessGroups decides
    /// them) and a connection string naming its first three log groups; returns the
    /// cluster and its connection string.
    fn create_cluster(
        &self,
        clock: &Arc<dyn Clock>,
        namespace: &str,
        name: &str,
        groups: usize,
        ordinal: usize,
    ) -> Result<(FoundationDBCluster, String), FleetError> {
        let invalid = cluster_error(name);
        let manifest = json!({
            "apiVersion": "apps.foundationdb.org/v1beta2",
            "kind": "FoundationDBCluster",
            "metadata": {"name": name, "namespace": namespace},
            "spec": cluster_spec(groups),
        });
        let created = self
            .api
            .create_as(FLEET_ACTOR, manifest)
            .map_err(api_error(format!("cluster {name}")))?;
        let mut cluster: FoundationDBCluster =
            serde_json::from_value(created).map_err(|e| invalid(e.to_string()))?;
        let validated =
            ValidatedCluster::new(cluster.clone()).map_err(|e| invalid(e.to_string()))?;
        let snapshot = ClusterSnapshot::new(SnapshotParts {
            cluster: validated,
            now: clock.now(),
            pods: Vec::new(),
            pvcs: Vec::new(),
            services: Vec::new(),
            config_map: None,
            database: DatabaseState::NotCreated,
            nodes: None,
        });
        let AddGroupsDecision::Add(mutations) = decide_new_process_groups(&snapshot) else {
            return Err(invalid("no process groups to add".to_owned()));
        };
        let mut status = cluster.status.clone().unwrap_or_default();
        apply_status_mutations(&mut status, &mutations, clock.now())
            .map_err(|e| invalid(e.to_string()))?;
        // Coordinators: the first three log groups (each pod on its own node).
        let coordinators: Vec<String> = status
            .process_groups
            .iter()
            .enumerate()
            .filter(|(_, g)| g.process_class == fdb_shared::api::ProcessClass::Log)
            .take(3)
            .map(|(i, _)| format!("{}:4501", pod_ip(ordinal, i)))
            .collect();
        let connection = format!("{name}:fleet{ordinal}@{}", coordinators.join(","));
        status.connection_string = Some(connection.clone());
        cluster.status = Some(status.clone());
        let patch =
            json!({"status": serde_json::to_value(&status).map_err(|e| invalid(e.to_string()))?});
        let key = ResourceKey::new(
            "apps.foundationdb.org",
            "v1beta2",
            "foundationdbclusters",
            namespace,
            name,
        );
        self.api
            .patch_as(FLEET_ACTOR, &key, PatchType::Merge, &patch, true)
            .map_err(api_error(format!("status of {name}")))?;
        Ok((cluster, connection))
    }

    /// A group's pod (bound to its own node, Running with its IP) and PVC; returns the
    /// live pod.
    fn add_group_objects(
        &self,
        build: &GroupBuild<'_>,
        group: &ProcessGroupStatus,
        index: usize,
        hashes: &mut ConfigHashes,
    ) -> Result<Pod, FleetError> {
        let (cluster, namespace) = (build.cluster, build.namespace);
        let invalid = cluster_error(cluster.metadata.name.as_deref().unwrap_or_default());
        let name = cluster.metadata.name.as_deref().unwrap_or_default();
        let ip = pod_ip(build.ordinal, index);
        let node = format!("{name}-node-{index}");
        let mut pod = build_pod(cluster, group, &pod_options(cluster, group))
            .map_err(|e| invalid(e.to_string()))?;
        pod.metadata.namespace = Some(namespace.to_owned());
        let servers = pod_servers_per_pod(cluster, group.process_class, Some(&pod));
        if let Some(hash) = hashes
            .of(cluster, group, servers, cluster.image_type())
            .map_err(|e| invalid(e.to_string()))?
        {
            pod.annotations_mut()
                .insert(LAST_APPLIED_CONFIG_MAP_ANNOTATION.to_owned(), hash);
        }
        let pod_name = pod.name_any();
        let value = typed_json(&pod).map_err(|e| invalid(e.to_string()))?;
        self.api
            .create_as(FLEET_ACTOR, value)
            .map_err(api_error(format!("pod {pod_name}")))?;
        self.api
            .bind_pod_as(FLEET_ACTOR, namespace, &pod_name, &node)
            .map_err(api_error(format!("binding of {pod_name}")))?;
        let running = json!({"status": {
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": "True"}],
        }});
        let pod_key = ResourceKey::new("", "v1", "pods", namespace, &pod_name);
        let live = self
            .api
            .patch_as(FLEET_ACTOR, &pod_key, PatchType::Merge, &running, true)
            .map_err(api_error(format!("status of pod {pod_name}")))?;
        if let Some(pvc) = build_pvc(cluster, group).map_err(|e| invalid(e.to_string()))? {
            let mut value = typed_json(&pvc).map_err(|e| invalid(e.to_string()))?;
            if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("namespace".into(), json!(namespace));
            }
            self.api
                .create_as(FLEET_ACTOR, value)
                .map_err(api_error(format!("PVC of {pod_name}")))?;
        }
        serde_json::from_value(live).map_err(|e| invalid(e.to_string()))
    }

    /// The operator's context over the fleet (its API server, databases and in-memory
    /// sidecars), with waits short enough for passes timed in real time.
    pub fn operator_context(&self, clock: &Arc<dyn Clock>) -> Context {
        let mut ctx = Context::new(
            self.api.client("operator"),
            Arc::new(self.databases.clone()),
            Arc::new(FleetSidecars),
            clock.clone(),
        );
        ctx.settings.kube_wait = Duration::from_millis(200);
        ctx.settings.config_map_wait = Duration::from_millis(200);
        ctx.settings.database_wait = Duration::from_millis(200);
        ctx
    }

    /// Whether every cluster's status says its current generation is reconciled.
    pub fn all_reconciled(&self) -> bool {
        self.clusters.iter().all(|(namespace, name)| {
            let key = ResourceKey::new(
                "apps.foundationdb.org",
                "v1beta2",
                "foundationdbclusters",
                namespace,
                name,
            );
            self.api.get(&key).is_some_and(|cluster| {
                let generation = cluster.pointer("/metadata/generation").cloned();
                generation.is_some()
                    && cluster.pointer("/status/generations/reconciled").cloned() == generation
            })
        })
    }
}
