//! The kubelet: what the world keeps about each pod it runs, and the per-round sync of one
//! pod: start it ([`super::pod_start`]), project ConfigMap changes after their delay,
//! restart containers whose image changed ([`super::restarts`]), keep the sidecar
//! ([`super::sidecar`]) and the main container's fdbmonitor running. A kubelet whose node
//! is down does nothing at all: it neither starts nor stops nor reports anything.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;

use fdb_shared::address::ProcessAddress;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, KeyToPath, Pod};

use super::World;
use super::containers::{self, ContainerFs, PodFacts, container_crash_loops, image_root, stamp};
use super::error::WorldError;
use super::fdbmonitor::{Monitor, MonitorChanges};
use super::host::ProcessHost;
use super::projection::{missing_keys, volume_files, write_volume};
use super::sidecar::SidecarState;
use crate::kube::{PatchType, ResourceKey};

/// The init container that runs the sidecar in `--init-mode`.
pub const INIT_CONTAINER: &str = "foundationdb-kubernetes-init";
/// The sidecar container.
pub const SIDECAR_CONTAINER: &str = "foundationdb-kubernetes-sidecar";
/// The main container (runs fdbmonitor).
pub const MAIN_CONTAINER: &str = "foundationdb";
/// The port the sidecar listens on.
pub const SIDECAR_PORT: u16 = 8080;

/// The actor a unified pod's fdb-kubernetes-monitor writes as (its service account).
pub const MONITOR_ACTOR: &str = "fdb-kubernetes-monitor";

/// Whether the container runs the sidecar image (the init container or the sidecar).
pub fn runs_sidecar_image(container: &str) -> bool {
    container == INIT_CONTAINER || container == SIDECAR_CONTAINER
}

/// Where a pod is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodPhase {
    /// Scheduled, not started yet (volumes missing, init container failing).
    Waiting {
        /// Short reason (`ContainerCreating`, `Init:Error`).
        reason: String,
        /// Details.
        message: String,
    },
    /// Containers started.
    Running,
    /// The pod failed (fault); its containers are stopped for good.
    Failed,
    /// Being deleted; containers stopped.
    Terminating,
}

/// A ConfigMap volume of a pod.
#[derive(Debug, Clone)]
pub struct ConfigVolume {
    /// Volume name.
    pub volume: String,
    /// Namespace of the ConfigMap.
    pub namespace: String,
    /// ConfigMap name.
    pub config_map: String,
    /// `items`, if given.
    pub items: Option<Vec<KeyToPath>>,
    /// Host directory.
    pub dir: PathBuf,
    /// Sequence number of the version projected.
    pub projected: Option<u64>,
    /// Whether the volume is `optional` (missing keys are then skipped).
    pub optional: bool,
    /// The newest version whose projection was refused (recorded once).
    pub refused: Option<u64>,
}

/// How a container instance ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerExit {
    /// Exit code.
    pub exit_code: i32,
    /// `Completed` or `Error`.
    pub reason: String,
    /// Why (the sidecar's start-up error, "image changed", ...).
    pub message: String,
    /// When.
    pub at: Timestamp,
}

/// One container of a pod as the kubelet runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerRuntime {
    /// The image the current (or last) instance runs.
    pub image: String,
    /// Instances started after the first.
    pub restarts: u32,
    /// When the current instance started.
    pub started_at: Option<Timestamp>,
    /// How the previous instance ended.
    pub last_exit: Option<ContainerExit>,
}

/// What the world keeps about a started (or starting) pod.
#[derive(Debug)]
pub struct PodRuntime {
    /// Pod uid.
    pub uid: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Node.
    pub node: String,
    /// Process group label.
    pub group: Option<String>,
    /// Pod directory.
    pub dir: PathBuf,
    /// Pod IP once started.
    pub ip: Option<Ipv4Addr>,
    /// Phase.
    pub phase: PodPhase,
    /// When the pod started.
    pub started_at: Option<Timestamp>,
    /// Host directory of each volume.
    pub volume_dirs: BTreeMap<String, PathBuf>,
    /// Identity of each volume (for data identities).
    pub volume_identities: BTreeMap<String, String>,
    /// PVC uids used.
    pub pvc_uids: BTreeMap<String, String>,
    /// ConfigMap volumes.
    pub config_volumes: Vec<ConfigVolume>,
    /// Containers (init containers included), by name, once the pod started.
    pub containers: BTreeMap<String, ContainerRuntime>,
    /// The sidecar, when the pod has one.
    pub sidecar: Option<SidecarState>,
    /// fdbmonitor, when the pod has a main container.
    pub monitor: Option<Monitor>,
    /// Every process address started here, with its data identity.
    pub launched: BTreeMap<ProcessAddress, String>,
    /// Last status written.
    pub last_status: Option<serde_json::Value>,
    /// When each condition took its current value.
    pub condition_since: BTreeMap<String, (bool, Timestamp)>,
    /// Its containers died with its node (they restart when the node is back).
    pub lost_with_node: bool,
}

impl PodRuntime {
    fn new(pod: &Pod, dir: PathBuf, node: String) -> Self {
        let (namespace, name, uid) = pod_key(pod);
        Self {
            dir,
            group: pod
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(super::PROCESS_GROUP_LABEL).cloned()),
            uid,
            namespace,
            name,
            node,
            ip: None,
            phase: PodPhase::Waiting {
                reason: "ContainerCreating".into(),
                message: String::new(),
            },
            started_at: None,
            volume_dirs: BTreeMap::new(),
            volume_identities: BTreeMap::new(),
            pvc_uids: BTreeMap::new(),
            config_volumes: Vec::new(),
            containers: BTreeMap::new(),
            sidecar: None,
            monitor: None,
            launched: BTreeMap::new(),
            last_status: None,
            condition_since: BTreeMap::new(),
            lost_with_node: false,
        }
    }

    /// Stops the sidecar and the processes.
    pub async fn stop_containers(&mut self, host: &dyn ProcessHost) -> MonitorChanges {
        if let Some(sidecar) = &mut self.sidecar {
            sidecar.stop().await;
        }
        match &mut self.monitor {
            Some(monitor) => monitor.stop_all(host),
            None => MonitorChanges::default(),
        }
    }

    /// The sidecar container's restart count.
    pub fn restarts_of(&self, container: &str) -> u32 {
        self.containers.get(container).map_or(0, |c| c.restarts)
    }

    /// `pod/<namespace>/<name>`.
    pub fn target(&self) -> String {
        format!("pod/{}/{}", self.namespace, self.name)
    }

    /// `<namespace>/<name>`.
    pub fn qualified_name(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// A container's filesystem: its image, and its volume mounts (with `subPath`) seen
    /// through the container's own mount links.
    pub fn container_fs(&self, container: &Container) -> ContainerFs {
        let mounts = container
            .volume_mounts
            .iter()
            .flatten()
            .filter(|m| self.volume_dirs.contains_key(&m.name))
            .map(|m| {
                let dir = containers::mount_link(&self.dir, &container.name, &m.name);
                let host = match m.sub_path.as_deref().filter(|s| !s.is_empty()) {
                    Some(sub) => dir.join(sub),
                    None => dir,
                };
                (PathBuf::from(&m.mount_path), host)
            })
            .collect();
        ContainerFs::new(image_root(&self.dir, &container.name), mounts)
    }

    /// The host directory of a volume mounted by `container` at a container path, going
    /// to the volume itself rather than through the container's mount link.
    pub fn volume_path(&self, container: &Container, container_path: &str) -> Option<PathBuf> {
        let mounts = container
            .volume_mounts
            .iter()
            .flatten()
            .filter_map(|m| {
                let dir = self.volume_dirs.get(&m.name)?;
                let host = match m.sub_path.as_deref().filter(|s| !s.is_empty()) {
                    Some(sub) => dir.join(sub),
                    None => dir.clone(),
                };
                Some((PathBuf::from(&m.mount_path), host))
            })
            .collect();
        ContainerFs::new(image_root(&self.dir, &container.name), mounts).host_path(container_path)
    }
}

/// Namespace, name and uid of a pod.
pub fn pod_key(pod: &Pod) -> (String, String, String) {
    (
        pod.metadata.namespace.clone().unwrap_or_default(),
        pod.metadata.name.clone().unwrap_or_default(),
        pod.metadata.uid.clone().unwrap_or_default(),
    )
}

/// The container of the pod's spec with that name (init containers included).
pub fn spec_container<'a>(pod: &'a Pod, name: &str) -> Option<&'a Container> {
    let spec = pod.spec.as_ref()?;
    spec.init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
        .find(|c| c.name == name)
}

impl World {
    /// Brings one scheduled, live pod's runtime in line with the world.
    pub(super) async fn sync_pod(&mut self, pod: &Pod) -> Result<(), WorldError> {
        let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
            return Ok(());
        };
        if pod.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let (namespace, name, uid) = pod_key(pod);
        let mut runtime = match self.pods.remove(&uid) {
            Some(runtime) => runtime,
            None => {
                let dir = self
                    .root
                    .path()
                    .join("pods")
                    .join(format!("{namespace}_{name}_{uid}"));
                PodRuntime::new(pod, dir, node)
            }
        };
        let result = self.sync_runtime(pod, &mut runtime).await;
        self.pods.insert(uid, runtime);
        result
    }

    async fn sync_runtime(
        &mut self,
        pod: &Pod,
        runtime: &mut PodRuntime,
    ) -> Result<(), WorldError> {
        let group = runtime.group.clone().unwrap_or_default();
        if self.nodes.is_down(&runtime.node) {
            // The node's kubelet is gone: whatever ran there stopped with the node, and
            // nothing starts until it is back.
            if runtime.phase == PodPhase::Running && !runtime.lost_with_node {
                let changes = runtime.stop_containers(self.host.as_ref()).await;
                runtime.lost_with_node = true;
                self.record_monitor(runtime, changes);
            }
            return Ok(());
        }
        if runtime.lost_with_node {
            self.restart_lost_containers(pod, runtime);
        }
        if self.faults.pod_failed.contains(&group) && runtime.phase != PodPhase::Failed {
            let changes = runtime.stop_containers(self.host.as_ref()).await;
            runtime.phase = PodPhase::Failed;
            self.record(
                "fail-pod",
                runtime.target(),
                format!("processes stopped: {:?}", changes.stopped),
            );
            return Ok(());
        }
        if matches!(runtime.phase, PodPhase::Waiting { .. }) {
            self.start_pod(pod, runtime)?;
        }
        if runtime.phase != PodPhase::Running {
            return Ok(());
        }
        self.project_due(runtime)?;
        self.restart_changed_containers(pod, runtime).await?;
        self.sync_sidecar(pod, runtime).await?;
        // A main container whose command is buggify's crash-loop never runs fdbmonitor.
        let processes_allowed = !self.faults.process_missing.contains(&group)
            && self.crash_loop_allows(&group)
            && !container_crash_loops(pod, MAIN_CONTAINER);
        if let Some(mut monitor) = runtime.monitor.take() {
            let changes = if processes_allowed {
                monitor.reconcile(self.host.as_ref())
            } else {
                monitor.stop_all(self.host.as_ref())
            };
            for process in monitor.running().values() {
                runtime.launched.insert(
                    process.launch.address.clone(),
                    process.launch.data_identity.clone(),
                );
            }
            // Cut off from the API, the monitor cannot annotate its pod; it tries again
            // once it can (nothing is marked published meanwhile).
            let publication = if self.faults.kube_api_unreachable.contains(&group) {
                None
            } else {
                monitor.publication(pod)
            };
            if publication.is_some() {
                monitor.mark_published(self.now().as_second());
            }
            runtime.monitor = Some(monitor);
            self.record_monitor(runtime, changes);
            if let Some(annotations) = publication {
                self.publish_monitor_annotations(runtime, &annotations)?;
            }
        }
        Ok(())
    }

    /// A unified pod's monitor writes what it runs into its pod's annotations (through
    /// the Kubernetes API, as the pod's service account).
    fn publish_monitor_annotations(
        &mut self,
        runtime: &PodRuntime,
        annotations: &BTreeMap<String, String>,
    ) -> Result<(), WorldError> {
        let key = ResourceKey::new("", "v1", "pods", &runtime.namespace, &runtime.name);
        match self.api.patch_as(
            MONITOR_ACTOR,
            &key,
            PatchType::Merge,
            &serde_json::json!({"metadata": {"annotations": annotations}}),
            false,
        ) {
            Ok(_) => {
                self.record(
                    "monitor-annotations",
                    runtime.target(),
                    "launcher-current-configuration and launcher-environment updated".to_owned(),
                );
                Ok(())
            }
            Err(e) if e.code == 404 => Ok(()),
            Err(source) => Err(WorldError::Api {
                actor: MONITOR_ACTOR,
                action: "annotate",
                target: runtime.target(),
                source,
            }),
        }
    }

    /// The node is back: the kubelet starts the pod's containers again (the sidecar counts
    /// its own restart when it starts).
    fn restart_lost_containers(&mut self, pod: &Pod, runtime: &mut PodRuntime) {
        runtime.lost_with_node = false;
        let now = self.now();
        for container in pod.spec.iter().flat_map(|s| s.containers.iter()) {
            if container.name == SIDECAR_CONTAINER {
                continue;
            }
            if let Some(state) = runtime.containers.get_mut(&container.name) {
                state.restarts += 1;
                state.started_at = Some(now);
                state.last_exit = Some(ContainerExit {
                    exit_code: 137,
                    reason: "Error".into(),
                    message: "the node went down".into(),
                    at: now,
                });
            }
        }
    }

    pub(super) fn record_monitor(&mut self, runtime: &PodRuntime, changes: MonitorChanges) {
        for address in changes.stopped {
            self.record(
                "stop-process",
                format!("process/{address}"),
                runtime.target(),
            );
        }
        for address in changes.started {
            self.record(
                "start-process",
                format!("process/{address}"),
                runtime.target(),
            );
        }
        for problem in changes.failed {
            self.record("process-failed", runtime.target(), problem);
        }
    }

    /// Projects ConfigMap versions whose delay has passed.
    fn project_due(&mut self, runtime: &mut PodRuntime) -> Result<(), WorldError> {
        let now = self.now();
        let delay = self.delay();
        for index in 0..runtime.config_volumes.len() {
            let volume = runtime.config_volumes[index].clone();
            let Some(version) = self
                .history
                .due(&volume.namespace, &volume.config_map, now, delay)
            else {
                continue;
            };
            if volume.projected.is_some_and(|p| p >= version.sequence) {
                continue;
            }
            let version = version.clone();
            let missing = missing_keys(&version.data, volume.items.as_deref());
            if !volume.optional && !missing.is_empty() {
                if volume.refused != Some(version.sequence) {
                    runtime.config_volumes[index].refused = Some(version.sequence);
                    self.record(
                        "project-failed",
                        runtime.target(),
                        format!(
                            "configmap {} version {} references non-existent config key: {}; volume {} keeps what it had",
                            volume.config_map,
                            version.resource_version,
                            missing.join(", "),
                            volume.volume
                        ),
                    );
                }
                continue;
            }
            let files = volume_files(&version.data, volume.items.as_deref());
            write_volume(
                &volume.dir,
                &files,
                &stamp(version.seen_at, version.sequence),
            )?;
            runtime.config_volumes[index].projected = Some(version.sequence);
            self.record(
                "project",
                runtime.target(),
                format!(
                    "configmap {} version {} into volume {}",
                    volume.config_map, version.resource_version, volume.volume
                ),
            );
            self.sidecar_input_changed(runtime, &volume.dir);
        }
        Ok(())
    }

    /// The next pod IP (`127.<pod block>.y.z`, `y >= 1`).
    pub(super) fn allocate_ip(&mut self) -> Ipv4Addr {
        let n = self.next_ip;
        self.next_ip += 1;
        let y = 1 + (n / 254) % 254;
        let z = 1 + n % 254;
        Ipv4Addr::new(127, self.options.ip_block, y as u8, z as u8)
    }

    pub(super) fn pvc_dir(&self, namespace: &str, claim: &str, uid: &str) -> PathBuf {
        self.root
            .path()
            .join("pvcs")
            .join(format!("{namespace}_{claim}_{uid}"))
    }
}

/// The sidecar's arguments (paths mapped, bind address added) and environment. The
/// environment sees the pod IP; the sidecar listens on `bind` (its host address).
pub fn sidecar_invocation(
    pod: &Pod,
    runtime: &PodRuntime,
    container: &Container,
    fs: &ContainerFs,
    ip: Ipv4Addr,
    bind: std::net::SocketAddr,
) -> (Vec<String>, BTreeMap<String, String>) {
    let mut given = container.command.clone().unwrap_or_default();
    // The image's entrypoint is the sidecar itself; a command naming it is not a flag.
    given.retain(|a| a.starts_with("--"));
    given.extend(container.args.clone().unwrap_or_default());
    let args = containers::sidecar_args(&given, fs, &bind.to_string());
    let facts = PodFacts {
        pod,
        pod_ip: ip.to_string(),
        node: runtime.node.clone(),
    };
    let mut env = containers::container_env(container, &facts);
    // The TLS files named by the environment are container paths, like the flags.
    for name in containers::SIDECAR_PATH_ENV {
        if let Some(value) = env.get_mut(name)
            && let Some(host) = fs.host_path(value)
        {
            *value = host.display().to_string();
        }
    }
    (args, env)
}
