//! The simulated world's runtime: the pieces that stand in for the scheduler, the kubelet,
//! fdbmonitor, the PVC, node lifecycle and taint-eviction controllers and cluster DNS,
//! driven between operator passes.
//!
//! [`World::settle`] processes everything due at the current virtual time until nothing
//! changes: it binds Pending pods to nodes through the `binding` subresource
//! ([`scheduler`]: node selectors, taints, cordons, pod anti-affinity), starts pods (a pod
//! IP `127.<ip block>.y.z`, directories, per-container mount links, fake images, the
//! ConfigMap projection, the init container, and a real in-process `fdb-sidecar`),
//! projects ConfigMap changes once their delay has passed ([`projection`]), restarts
//! exactly the containers whose image changed (`restartCount` + 1, a new `imageID`; the
//! sidecar with the new image's version, the main container's fdbmonitor on the new
//! binaries; init containers do not run again), runs each pod's fdbmonitor
//! ([`fdbmonitor`]) against a [`ProcessHost`] (the simulated FoundationDB), restarts
//! processes the operator killed, finishes graceful pod deletions, manages PVC binding
//! and protection, and walks down nodes through their lifecycle. Everything is processed
//! in name order, so a run is deterministic. [`World::next_due`] tells the runner when
//! the next timed event falls due (a ConfigMap projection, a sidecar's CrashLoopBackOff
//! retry, fdbmonitor's restart after a crash loop, a node declared NotReady, a taint
//! eviction).
//!
//! Isolation ([`network`]): the sidecars listen in a loopback block of the world's own
//! (`127.<host block>.y.z:8080`, the pod IP's `y.z`), held through a lock file for the
//! world's life; a bind failure or anything else answering there stops the world
//! ([`WorldError::Listen`], [`WorldError::ForeignListener`]). Clients of the sidecars
//! connect through [`World::network`].
//!
//! A sidecar that fails to start (a start-up copy, a flag) crash-loops: retried after
//! 10 s, 20 s, ... at most 300 s. Image -> FoundationDB version: `world.images`
//! ([`WorldOptions::images`]) when listed, else the tag.
//!
//! Faults ([`World::apply_fault`]): `processMissing` stops a group's processes until
//! healed; `podPending` keeps the group's *new* pods from being scheduled (a pod already
//! running keeps running until it is recreated); `podFailed` turns the group's pod to
//! phase Failed (processes and sidecar stop; a failed pod never recovers, healing only
//! lets its replacement run); `podStuckTerminating` stops the group's pods from finishing
//! their deletion (containers do stop); `sidecarUnreachable` stops the sidecar's
//! listener (healing starts it again, restartCount + 1); `nodeDown`: at once the node's
//! kubelet is gone (its pods' processes and sidecars stop, nothing there starts, reports
//! or confirms deletions), after 40 s the node is `Ready: Unknown` and tainted
//! `node.kubernetes.io/unreachable` (`NoSchedule`, `NoExecute`) and its pods unready,
//! after their 300 s toleration its pods are marked for deletion and stay Terminating
//! until the node heals ([`node_lifecycle`]); `nodeTaint` adds a `NoSchedule` taint;
//! `processCrashLoop`: the group's fdbserver processes exit at every start (fdbmonitor
//! retries after 1 s, 2 s, ... every 60 s; once healed they return at its next attempt);
//! `binaryMissing`: the group's sidecar image lacks that version's `fdbserver` and
//! `fdbcli`, so a sidecar of that version fails its start-up staging and crash-loops;
//! `outputNotWritable`: the group's sidecar's mount of its output volume breaks (every
//! path through it fails with "not a directory", even for root): copies answer 500,
//! `check_hash` and `is_present` 404, a restarted sidecar cannot start; the main
//! container's own mount is intact. Healing undoes each. `apiConflicts`,
//! `fdbcliTimeouts`, `clientConnected`, `clientDisconnected`, `ioError`, `slowRecovery`
//! and `ignoreKill` are applied by the runner ([`WorldError::NotAWorldFault`]).
//!
//! Administration for `act` steps ([`World::cordon`], [`World::drain`],
//! [`World::add_nodes`]) writes to the API and returns; the caller settles.

pub mod confine;
pub mod container_files;
pub mod containers;
pub mod dns;
pub mod error;
pub mod fdbmonitor;
pub mod host;
pub mod ip_families;
pub mod live_roots;
pub mod network;
pub mod node_lifecycle;
pub mod nodes;
pub mod projection;
pub mod scheduler;
mod storage;

mod admin;
mod claim_users;
mod database_side;
mod deployments;
mod faults;
mod images;
mod kubelet;
mod lifecycle;
mod pod_families;
mod pod_network;
mod pod_runtime;
mod pod_start;
mod restarts;
mod sidecar;
mod status;
mod summaries;
pub mod unified_monitor;
mod world_files;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};

pub use admin::DrainReport;
pub use dns::{ClusterDns, Resolver};
pub use error::WorldError;
pub use host::{ProcessHost, ProcessLaunch};
pub use ip_families::{IpFamilies, IpFamily};
pub use network::{HostBlock, NetworkMap};

use crate::kube::FakeApiServer;
use crate::scenario;
use fdb_operator::clock::{Clock, VirtualClock};

use fdb_shared::FdbVersion;
use nodes::Nodes;
use pod_runtime::PodRuntime;
use projection::ConfigMapHistory;

/// The label naming a pod's process group.
pub const PROCESS_GROUP_LABEL: &str = "foundationdb.org/fdb-process-group-id";
/// Most rounds one settle runs before giving up on reaching a fixed point.
const MAX_ROUNDS: u32 = 32;

/// The shape of the world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorldOptions {
    /// Nodes `node-1..node-N`; `None`: one node per pod, created as pods need them.
    pub nodes: Option<u32>,
    /// When set, node-i gets `topology.kubernetes.io/zone=zone-(i mod zones)`.
    pub zones: Option<u32>,
    /// Delay before a ConfigMap change reaches the pods' volumes.
    pub config_map_delay_seconds: u64,
    /// The run's seed (kept for reproducibility; the world's choices are deterministic).
    pub seed: u64,
    /// Second octet of the pod IPs (`127.<ip_block>.y.z`) as Kubernetes and FoundationDB
    /// see them.
    pub ip_block: u8,
    /// Where the sidecars really listen ([`network`]): on the pod IPs (default), or in a
    /// given or free block of their own. The block is held exclusively for the world's
    /// life.
    pub host_block: HostBlock,
    /// Image -> the FoundationDB version it contains, for images whose tag does not say
    /// (`world.images`).
    pub images: BTreeMap<String, FdbVersion>,
    /// The storage classes (`world.storageClasses`).
    pub storage_classes: Vec<scenario::storage_classes::StorageClassSettings>,
    /// The address families the pod network offers (`world.ipFamilies`).
    pub ip_families: IpFamilies,
}

impl Default for WorldOptions {
    fn default() -> Self {
        Self {
            nodes: None,
            zones: None,
            config_map_delay_seconds: scenario::DEFAULT_CONFIG_MAP_DELAY_SECONDS,
            seed: scenario::DEFAULT_SEED,
            ip_block: 0,
            host_block: HostBlock::PodIps,
            images: BTreeMap::new(),
            storage_classes: scenario::storage_classes::default_storage_classes(),
            ip_families: IpFamilies::V4,
        }
    }
}

impl WorldOptions {
    /// The options a scenario's `world` section and seed ask for: pod IPs in block 0,
    /// sidecars listening in a free block of their own (the runner's choice may fix it).
    pub fn from_scenario(settings: &scenario::WorldSettings, seed: u64) -> Self {
        Self {
            nodes: settings.nodes,
            zones: settings.zones,
            config_map_delay_seconds: settings
                .config_map_delay_seconds
                .unwrap_or(scenario::DEFAULT_CONFIG_MAP_DELAY_SECONDS),
            seed,
            ip_block: 0,
            host_block: HostBlock::Free,
            // The scenario validates the versions; an unparsable one would have been
            // refused there.
            images: settings
                .images
                .iter()
                .filter_map(|(image, version)| Some((image.clone(), version.parse().ok()?)))
                .collect(),
            storage_classes: settings
                .storage_classes
                .clone()
                .unwrap_or_else(scenario::storage_classes::default_storage_classes),
            // Validated with the scenario; a refused list never gets here.
            ip_families: settings
                .ip_families
                .as_deref()
                .and_then(|numbers| IpFamilies::from_numbers(numbers).ok())
                .unwrap_or_default(),
        }
    }
}

/// Something the world did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorldEvent {
    /// Virtual time (unix seconds).
    pub time: i64,
    /// What happened (`schedule`, `start-pod`, `project`, `start-process`, ...).
    pub action: String,
    /// The object (`pod/default/sample-storage-1`, `node/node-2`, `process/127.0.1.1:4501`).
    pub target: String,
    /// Details.
    pub detail: String,
}

/// What one [`World::settle`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettleReport {
    /// Rounds run until nothing changed.
    pub rounds: u32,
    /// What happened, in order.
    pub events: Vec<WorldEvent>,
}

/// The simulated world.
pub struct World {
    options: WorldOptions,
    api: FakeApiServer,
    /// The process host and what the world told it.
    fdb: database_side::DatabaseSide,
    clock: VirtualClock,
    /// The world's files: its root, the images, the container filesystems.
    files: world_files::WorldFiles,
    /// Pod IPs, where the sidecars listen, the cluster DNS.
    network: pod_network::PodNetwork,
    nodes: Nodes,
    pods: BTreeMap<String, PodRuntime>,
    history: ConfigMapHistory,
    events: Vec<WorldEvent>,
    /// Last unschedulable message written, by pod uid.
    unschedulable: BTreeMap<String, String>,
    faults: faults::FaultState,
    /// The pods as last listed, with the API server's resourceVersion before that list:
    /// a round lists the pods four times, mostly with no write in between, and
    /// deserializing every pod was the largest share of a run's CPU.
    pods_listed: std::sync::Mutex<lifecycle::DecodedList<k8s_openapi::api::core::v1::Pod>>,
    /// The PVCs as last listed, likewise (two lists a round).
    pvcs_listed:
        std::sync::Mutex<lifecycle::DecodedList<k8s_openapi::api::core::v1::PersistentVolumeClaim>>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("options", &self.options)
            .field("root", &self.files.root())
            .field("nodes", &self.nodes.names())
            .field("pods", &self.pods.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl World {
    /// A world over `api` driving `host`, reading time from `clock`. Creates the
    /// configured nodes.
    pub fn new(
        options: WorldOptions,
        api: FakeApiServer,
        host: Arc<dyn ProcessHost>,
        clock: VirtualClock,
    ) -> Result<Self, WorldError> {
        let network = pod_network::PodNetwork::new(
            options.host_block,
            options.ip_block,
            options.ip_families,
        )?;
        let files = world_files::WorldFiles::new()?;
        let mut world = Self {
            files,
            network,
            nodes: Nodes::new(options.zones),
            options,
            api,
            fdb: database_side::DatabaseSide::new(host),
            clock,
            pods: BTreeMap::new(),
            history: ConfigMapHistory::default(),
            pods_listed: std::sync::Mutex::default(),
            pvcs_listed: std::sync::Mutex::default(),
            events: Vec::new(),
            unschedulable: BTreeMap::new(),
            faults: faults::FaultState::default(),
        };
        for _ in 0..world.options.nodes.unwrap_or(0) {
            world.nodes.add(&world.api)?;
        }
        let default_class = world.options.storage_classes.iter().find(|c| c.default);
        world
            .api
            .set_default_storage_class(default_class.map(|c| c.name.clone()));
        Ok(world)
    }

    /// Takes a captured Node (already in the API) as one of the world's nodes.
    pub fn adopt_node(&mut self, name: &str) {
        self.nodes.adopt(name);
    }

    /// Hands the pod `namespace/name` its IP before it starts (a snapshot's pods get
    /// theirs in name order, so every captured address maps to it before the boot).
    pub fn reserve_ip(&mut self, namespace: &str, name: &str) -> Ipv4Addr {
        self.network.reserve_ip(namespace, name)
    }

    /// Processes everything due at the current virtual time, repeating until nothing
    /// changes; then lets the process host progress ([`ProcessHost::tick`]) and reacts to
    /// what that changed.
    pub async fn settle(&mut self) -> Result<SettleReport, WorldError> {
        let mut rounds = 0;
        for phase in 0..2 {
            loop {
                rounds += 1;
                let before = self.events.len();
                self.round().await?;
                if self.events.len() == before || rounds >= MAX_ROUNDS * (phase + 1) {
                    break;
                }
            }
            if phase == 0 {
                self.fdb.host().tick();
            }
        }
        Ok(SettleReport {
            rounds,
            events: std::mem::take(&mut self.events),
        })
    }

    async fn round(&mut self) -> Result<(), WorldError> {
        let config_maps = self.api.list_typed(None)?;
        self.history.observe(&config_maps, self.now());
        self.expire_crash_restarts();
        self.sync_pvcs()?;
        let pods = self.list_pods()?;
        self.sync_node_lifecycle(&pods)?;
        let pods = self.list_pods()?;
        self.forget_vanished_pods(&pods).await;
        self.terminate_pods(&pods).await?;
        self.sync_deployments(&pods)?;
        let pods = self.list_pods()?;
        self.schedule(&pods)?;
        let pods = self.list_pods()?;
        for pod in &pods {
            self.sync_pod(pod).await?;
        }
        self.report_backup_agents(&pods);
        self.restart_killed();
        // Each process follows its own database's string (matched by description).
        let databases =
            fdbmonitor::CurrentConnectionStrings::new(self.fdb.host().connection_strings());
        for runtime in self.pods.values() {
            if let Some(monitor) = &runtime.monitor {
                monitor.follow_connection_strings(&databases);
            }
        }
        for runtime in self.pods.values() {
            if let Some(monitor) = &runtime.monitor {
                monitor.keep_coordination_files(self.fdb.host());
            }
        }
        self.write_statuses(&pods)?;
        self.rebuild_dns(&pods)?;
        self.publish_container_files(&pods);
        Ok(())
    }

    /// When the next timed event falls due, if any: a ConfigMap projection, a sidecar
    /// restart after its back-off, a process restart after a crash loop ends, a node
    /// declared NotReady, a pod evicted from a tainted node, or a transition of the
    /// process host ([`ProcessHost::next_due`]: kill restarts, recoveries, data movement).
    pub fn next_due(&self) -> Option<Timestamp> {
        let now = self.now();
        let host = self
            .fdb
            .host()
            .next_due()
            .and_then(|second| Timestamp::from_second(second).ok());
        let projections = self
            .pods
            .values()
            .flat_map(|runtime| runtime.config_volumes.iter())
            .filter_map(|volume| {
                self.history.next_due(
                    &volume.namespace,
                    &volume.config_map,
                    volume.projected.unwrap_or(0),
                    self.delay(),
                )
            });
        let sidecars = self
            .pods
            .values()
            .filter(|runtime| !self.nodes.is_down(&runtime.node))
            .filter_map(|runtime| runtime.sidecar.as_ref()?.due());
        projections
            .chain(sidecars)
            .chain(self.faults.crash_restarts.values().copied())
            .chain(self.node_lifecycle_due())
            .chain(host)
            .filter(|at| *at > now)
            .min()
    }

    /// The cluster DNS.
    pub fn dns(&self) -> &ClusterDns {
        self.network.dns()
    }

    /// Resolves a cluster DNS name (or an IP literal).
    pub fn resolve(&self, host: &str) -> Option<IpAddr> {
        self.network.dns().resolve(host)
    }

    /// The world's temporary root directory.
    pub fn root(&self) -> &Path {
        self.files.root()
    }

    /// The node names, in order.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.names().to_vec()
    }

    /// The IP of a running pod.
    pub fn pod_ip(&self, namespace: &str, name: &str) -> Option<Ipv4Addr> {
        self.runtime(namespace, name)?.ip
    }

    /// The host directory of a pod's volume (`dynamic-conf`, `config-map`, `data`, ...).
    pub fn pod_volume_dir(&self, namespace: &str, name: &str, volume: &str) -> Option<PathBuf> {
        self.runtime(namespace, name)?
            .volume_dirs
            .get(volume)
            .cloned()
    }

    /// The sidecar container's restart count of a pod.
    pub fn sidecar_restarts(&self, namespace: &str, name: &str) -> Option<u32> {
        Some(
            self.runtime(namespace, name)?
                .restarts_of(pod_runtime::SIDECAR_CONTAINER),
        )
    }

    /// How pod IPs map to the host addresses the sidecars listen on (what a client of
    /// the sidecars, such as the operator, must connect to).
    pub fn network(&self) -> NetworkMap {
        self.network.map()
    }

    /// The loopback block the world holds for its sidecars, and its lock file.
    pub fn host_block(&self) -> (u8, &Path) {
        self.network.host_block()
    }

    /// Where a running pod's sidecar listens (its host address, port 8080).
    pub fn sidecar_address(&self, namespace: &str, name: &str) -> Option<std::net::SocketAddr> {
        let ip = self.pod_ip(namespace, name)?;
        Some(std::net::SocketAddr::new(
            self.network.map().host_ip(ip.into()),
            pod_runtime::SIDECAR_PORT,
        ))
    }

    /// Stops every sidecar and process.
    pub async fn shutdown(mut self) {
        let runtimes = std::mem::take(&mut self.pods);
        for (_, mut runtime) in runtimes {
            runtime.stop_containers(self.fdb.host()).await;
        }
    }

    fn runtime(&self, namespace: &str, name: &str) -> Option<&PodRuntime> {
        self.pods
            .values()
            .find(|r| r.namespace == namespace && r.name == name)
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn delay(&self) -> SignedDuration {
        SignedDuration::from_secs(
            i64::try_from(self.options.config_map_delay_seconds).unwrap_or(i64::MAX),
        )
    }

    fn record(&mut self, action: &str, target: String, detail: String) {
        tracing::debug!(action, %target, %detail, "world");
        self.events.push(WorldEvent {
            time: self.now().as_second(),
            action: action.to_owned(),
            target,
            detail,
        });
    }
}
