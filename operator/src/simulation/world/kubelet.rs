//! The kubelet: starts scheduled pods (IP, directories, ConfigMap projection, fake
//! images, init container), runs the real sidecar and the main container's fdbmonitor,
//! projects ConfigMap changes after their delay and restarts the sidecar after
//! `POST /restart`.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use fdb_shared::address::ProcessAddress;
use fdb_sidecar::metrics::RequestLabels;
use fdb_sidecar::{RunningSidecar, Sidecar, SidecarConfig};
use futures::FutureExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, KeyToPath, PersistentVolumeClaim, Pod};

use super::World;
use super::containers::{self, ContainerFs, PodFacts, conf_file_arg, image_root, stamp};
use super::error::WorldError;
use super::fdbmonitor::{Monitor, MonitorChanges, MonitorContext};
use super::host::ProcessHost;
use super::projection::{volume_files, write_volume};

/// The init container that runs the sidecar in `--init-mode`.
pub const INIT_CONTAINER: &str = "foundationdb-kubernetes-init";
/// The sidecar container.
pub const SIDECAR_CONTAINER: &str = "foundationdb-kubernetes-sidecar";
/// The main container (runs fdbmonitor).
pub const MAIN_CONTAINER: &str = "foundationdb";
/// The port the sidecar listens on.
pub const SIDECAR_PORT: u16 = 8080;

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
}

/// The sidecar container's runtime.
#[derive(Debug, Default)]
pub struct SidecarState {
    /// The serving sidecar.
    pub running: Option<RunningSidecar>,
    /// Why the last start failed.
    pub error: Option<String>,
    /// When the current instance started.
    pub started_at: Option<Timestamp>,
    /// Start attempts so far.
    pub attempts: u32,
    /// Settle in which the last failed attempt happened (one retry per settle).
    pub failed_in_settle: Option<u64>,
    /// The host output dir.
    pub output_dir: Option<PathBuf>,
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
    /// The sidecar, when the pod has one.
    pub sidecar: Option<SidecarState>,
    /// Sidecar container restarts.
    pub sidecar_restarts: u32,
    /// fdbmonitor, when the pod has a main container.
    pub monitor: Option<Monitor>,
    /// Every process address started here, with its data identity.
    pub launched: BTreeMap<ProcessAddress, String>,
    /// Last status written.
    pub last_status: Option<serde_json::Value>,
    /// When each condition took its current value.
    pub condition_since: BTreeMap<String, (bool, Timestamp)>,
}

impl PodRuntime {
    /// Stops the sidecar and the processes.
    pub async fn stop_containers(&mut self, host: &dyn ProcessHost) -> MonitorChanges {
        if let Some(sidecar) = &mut self.sidecar
            && let Some(running) = sidecar.running.take()
        {
            running.stop().await;
            sidecar.started_at = None;
        }
        match &mut self.monitor {
            Some(monitor) => monitor.stop_all(host),
            None => MonitorChanges::default(),
        }
    }

    fn target(&self) -> String {
        format!("pod/{}/{}", self.namespace, self.name)
    }
}

fn pod_key(pod: &Pod) -> (String, String, String) {
    (
        pod.metadata.namespace.clone().unwrap_or_default(),
        pod.metadata.name.clone().unwrap_or_default(),
        pod.metadata.uid.clone().unwrap_or_default(),
    )
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
            None => PodRuntime {
                dir: self
                    .root
                    .path()
                    .join("pods")
                    .join(format!("{namespace}_{name}_{uid}")),
                group: pod
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(super::PROCESS_GROUP_LABEL).cloned()),
                uid: uid.clone(),
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
                sidecar: None,
                sidecar_restarts: 0,
                monitor: None,
                launched: BTreeMap::new(),
                last_status: None,
                condition_since: BTreeMap::new(),
            },
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
        let node_up = !self.nodes.is_down(&runtime.node);
        self.sync_sidecar(pod, runtime, node_up).await;
        let processes_allowed = node_up && !self.faults.process_missing.contains(&group);
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
            runtime.monitor = Some(monitor);
            self.record_monitor(runtime, changes);
        }
        Ok(())
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

    /// Mounts volumes, allocates the IP, writes images and runs init containers.
    fn start_pod(&mut self, pod: &Pod, runtime: &mut PodRuntime) -> Result<(), WorldError> {
        let spec = pod.spec.clone().unwrap_or_default();
        let namespace = runtime.namespace.clone();
        let mut waiting = None;
        let mut volume_dirs = BTreeMap::new();
        let mut identities = BTreeMap::new();
        let mut pvc_uids = BTreeMap::new();
        let mut config_volumes = Vec::new();
        for volume in spec.volumes.iter().flatten() {
            let pod_dir = runtime.dir.join("volumes").join(&volume.name);
            if let Some(cm) = &volume.config_map {
                if self.history.latest(&namespace, &cm.name).is_none() && cm.optional != Some(true)
                {
                    waiting = Some(format!("configmap {:?} not found", cm.name));
                }
                config_volumes.push(ConfigVolume {
                    volume: volume.name.clone(),
                    namespace: namespace.clone(),
                    config_map: cm.name.clone(),
                    items: cm.items.clone(),
                    dir: pod_dir.clone(),
                    projected: None,
                });
                identities.insert(
                    volume.name.clone(),
                    format!("configMap:{}/{}", runtime.uid, volume.name),
                );
                volume_dirs.insert(volume.name.clone(), pod_dir);
            } else if let Some(claim) = &volume.persistent_volume_claim {
                let pvc: Option<PersistentVolumeClaim> =
                    self.api.get_typed(Some(&namespace), &claim.claim_name)?;
                match pvc {
                    Some(pvc) if pvc.metadata.deletion_timestamp.is_none() => {
                        let uid = pvc.metadata.uid.clone().unwrap_or_default();
                        let dir = self.pvc_dir(&namespace, &claim.claim_name, &uid);
                        identities.insert(
                            volume.name.clone(),
                            format!("pvc:{namespace}/{}@{uid}", claim.claim_name),
                        );
                        pvc_uids.insert(volume.name.clone(), uid);
                        volume_dirs.insert(volume.name.clone(), dir);
                    }
                    _ => {
                        waiting = Some(format!(
                            "persistentvolumeclaim {:?} not found",
                            claim.claim_name
                        ))
                    }
                }
            } else {
                identities.insert(
                    volume.name.clone(),
                    format!("emptyDir:{}/{}", runtime.uid, volume.name),
                );
                volume_dirs.insert(volume.name.clone(), pod_dir);
            }
        }
        if let Some(message) = waiting {
            let phase = PodPhase::Waiting {
                reason: "ContainerCreating".into(),
                message,
            };
            if runtime.phase != phase {
                runtime.phase = phase;
                self.record("wait-pod", runtime.target(), format!("{:?}", runtime.phase));
            }
            return Ok(());
        }
        for dir in volume_dirs.values() {
            std::fs::create_dir_all(dir).map_err(WorldError::io("create directory", dir))?;
        }
        runtime.volume_dirs = volume_dirs;
        runtime.volume_identities = identities;
        runtime.pvc_uids = pvc_uids;
        runtime.config_volumes = config_volumes;
        for index in 0..runtime.config_volumes.len() {
            let volume = runtime.config_volumes[index].clone();
            if let Some(version) = self.history.latest(&namespace, &volume.config_map).cloned() {
                let files = volume_files(&version.data, volume.items.as_deref());
                write_volume(
                    &volume.dir,
                    &files,
                    &stamp(version.seen_at, version.sequence),
                )?;
                runtime.config_volumes[index].projected = Some(version.sequence);
            }
        }
        let ip = match runtime.ip {
            Some(ip) => ip,
            None => {
                let ip = self.allocate_ip();
                runtime.ip = Some(ip);
                ip
            }
        };
        let all_containers: Vec<&Container> = spec
            .init_containers
            .iter()
            .flatten()
            .chain(spec.containers.iter())
            .collect();
        for container in &all_containers {
            let version = container
                .image
                .as_deref()
                .and_then(containers::image_version);
            containers::write_image(&image_root(&runtime.dir, &container.name), version.as_ref())?;
        }
        for init in spec.init_containers.iter().flatten() {
            if init.name != INIT_CONTAINER {
                continue;
            }
            let fs = container_fs(runtime, init);
            let (args, env) = sidecar_invocation(pod, runtime, init, &fs, ip);
            let outcome = SidecarConfig::from_args(args, &env)
                .map_err(|e| e.to_string())
                .and_then(|config| {
                    fdb_sidecar::copy::run_startup_copies(&config).map_err(|e| e.to_string())
                });
            if let Err(message) = outcome {
                let phase = PodPhase::Waiting {
                    reason: "Init:Error".into(),
                    message,
                };
                if runtime.phase != phase {
                    runtime.phase = phase;
                    self.record(
                        "init-failed",
                        runtime.target(),
                        format!("{:?}", runtime.phase),
                    );
                }
                return Ok(());
            }
        }
        runtime.sidecar = spec
            .containers
            .iter()
            .any(|c| c.name == SIDECAR_CONTAINER)
            .then(SidecarState::default);
        runtime.monitor = spec
            .containers
            .iter()
            .find(|c| c.name == MAIN_CONTAINER)
            .map(|main| {
                let fs = container_fs(runtime, main);
                let conf = conf_file_arg(main);
                MonitorContext {
                    pod: runtime.name.clone(),
                    conf_path: fs.host_path(&conf).unwrap_or_else(|| PathBuf::from(&conf)),
                    volume_identities: main
                        .volume_mounts
                        .iter()
                        .flatten()
                        .filter_map(|m| {
                            let identity = runtime.volume_identities.get(&m.name)?;
                            Some((PathBuf::from(&m.mount_path), identity.clone()))
                        })
                        .collect(),
                    fs,
                }
            })
            .map(Monitor::new);
        runtime.phase = PodPhase::Running;
        runtime.started_at = Some(self.now());
        self.record(
            "start-pod",
            runtime.target(),
            format!("ip {ip} on {}", runtime.node),
        );
        Ok(())
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
        }
        Ok(())
    }

    /// Starts, stops or restarts the sidecar as the node, faults and `/restart` ask.
    async fn sync_sidecar(&mut self, pod: &Pod, runtime: &mut PodRuntime, node_up: bool) {
        let Some(mut sidecar) = runtime.sidecar.take() else {
            return;
        };
        let group = runtime.group.clone().unwrap_or_default();
        let wanted = node_up && !self.faults.sidecar_unreachable.contains(&group);
        if let Some(running) = sidecar.running.as_mut() {
            let restart_requested = running
                .metrics()
                .requests
                .get(&RequestLabels {
                    endpoint: fdb_shared::sidecar::protocol::RESTART.to_owned(),
                    status: 200,
                })
                .is_some_and(|c| c.get() > 0);
            let exited = running.wait().now_or_never().is_some();
            if restart_requested || exited || !wanted {
                if let Some(running) = sidecar.running.take() {
                    running.stop().await;
                }
                sidecar.started_at = None;
                let why = if wanted {
                    "restart requested"
                } else {
                    "node down or sidecar fault"
                };
                self.record("stop-sidecar", runtime.target(), why.to_owned());
            }
        }
        let may_try = sidecar.failed_in_settle != Some(self.settle_count);
        if wanted && sidecar.running.is_none() && may_try {
            if sidecar.attempts > 0 {
                runtime.sidecar_restarts += 1;
            }
            sidecar.attempts += 1;
            match self.start_sidecar(pod, runtime, &mut sidecar).await {
                Ok(running) => {
                    let address = running.local_addr();
                    sidecar.running = Some(running);
                    sidecar.error = None;
                    sidecar.failed_in_settle = None;
                    sidecar.started_at = Some(self.now());
                    self.record(
                        "start-sidecar",
                        runtime.target(),
                        format!("serving on {address}"),
                    );
                }
                Err(message) => {
                    sidecar.failed_in_settle = Some(self.settle_count);
                    self.record("sidecar-failed", runtime.target(), message.clone());
                    sidecar.error = Some(message);
                }
            }
        }
        runtime.sidecar = Some(sidecar);
    }

    async fn start_sidecar(
        &self,
        pod: &Pod,
        runtime: &PodRuntime,
        sidecar: &mut SidecarState,
    ) -> Result<RunningSidecar, String> {
        let container = pod
            .spec
            .as_ref()
            .and_then(|s| s.containers.iter().find(|c| c.name == SIDECAR_CONTAINER))
            .ok_or("the pod has no sidecar container")?;
        let ip = runtime.ip.ok_or("the pod has no IP")?;
        let fs = container_fs(runtime, container);
        let (args, env) = sidecar_invocation(pod, runtime, container, &fs, ip);
        let config = SidecarConfig::from_args(args, &env).map_err(|e| e.to_string())?;
        sidecar.output_dir = Some(config.args.output_dir.clone());
        let bind = SocketAddr::new(ip.into(), SIDECAR_PORT);
        Sidecar::start(config, bind)
            .await
            .map_err(|e| e.to_string())
    }

    fn allocate_ip(&mut self) -> Ipv4Addr {
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

/// A container's filesystem: its image, and its volume mounts (with `subPath`).
fn container_fs(runtime: &PodRuntime, container: &Container) -> ContainerFs {
    let mounts = container
        .volume_mounts
        .iter()
        .flatten()
        .filter_map(|m| {
            let dir = runtime.volume_dirs.get(&m.name)?;
            let host = match m.sub_path.as_deref().filter(|s| !s.is_empty()) {
                Some(sub) => dir.join(sub),
                None => dir.clone(),
            };
            Some((PathBuf::from(&m.mount_path), host))
        })
        .collect();
    ContainerFs::new(image_root(&runtime.dir, &container.name), mounts)
}

/// The sidecar's arguments (paths mapped, bind address added) and environment.
fn sidecar_invocation(
    pod: &Pod,
    runtime: &PodRuntime,
    container: &Container,
    fs: &ContainerFs,
    ip: Ipv4Addr,
) -> (Vec<String>, BTreeMap<String, String>) {
    let mut given = container.command.clone().unwrap_or_default();
    // The image's entrypoint is the sidecar itself; a command naming it is not a flag.
    given.retain(|a| a.starts_with("--"));
    given.extend(container.args.clone().unwrap_or_default());
    let bind = format!("{ip}:{SIDECAR_PORT}");
    let args = containers::sidecar_args(&given, fs, &bind);
    let facts = PodFacts {
        pod,
        pod_ip: ip.to_string(),
        node: runtime.node.clone(),
    };
    (args, containers::container_env(container, &facts))
}
