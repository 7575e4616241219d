//! What the world keeps about each pod it runs: its phase, containers, volumes and
//! sidecar, with the container names and the sidecar's invocation. A leaf the kubelet,
//! the pod start, the restarts and the sidecar all build on.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use super::ip_families::IpFamilies;
use std::path::{Path, PathBuf};

use fdb_shared::address::ProcessAddress;
use fdb_sidecar::{RunningSidecar, SidecarConfig};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, KeyToPath, Pod};

use super::confine;
use super::containers::{self, ContainerFs, PodFacts, image_root};
use super::fdbmonitor::{Monitor, MonitorChanges};
use super::host::ProcessHost;

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
    /// The world's root (every host path of the pod is inside it).
    pub root: PathBuf,
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
    /// The runtime of `pod` on `node`, its directory `root/pods/<namespace>_<name>_<uid>`
    /// (`world/confine.rs`).
    pub(super) fn new(pod: &Pod, root: &Path, node: String) -> Self {
        let (namespace, name, uid) = pod_key(pod);
        Self {
            dir: confine::object_dir(root, "pods", &[&namespace, &name, &uid]),
            root: root.to_path_buf(),
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
            .filter_map(|m| {
                let dir = containers::mount_link(&self.dir, &container.name, &m.name);
                let host = containers::sub_path_host(&dir, m.sub_path.as_deref())?;
                Some((PathBuf::from(&m.mount_path), host))
            })
            .collect();
        ContainerFs::new(
            self.root.clone(),
            image_root(&self.dir, &container.name),
            mounts,
        )
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
                let host = containers::sub_path_host(dir, m.sub_path.as_deref())?;
                Some((PathBuf::from(&m.mount_path), host))
            })
            .collect();
        ContainerFs::new(
            self.root.clone(),
            image_root(&self.dir, &container.name),
            mounts,
        )
        .host_path(container_path)
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

/// The sidecar container's runtime.
#[derive(Debug, Default)]
pub struct SidecarState {
    /// The serving sidecar.
    pub running: Option<RunningSidecar>,
    /// Why the last start failed.
    pub error: Option<String>,
    /// Start attempts so far.
    pub attempts: u32,
    /// Consecutive failed starts.
    pub failures: u32,
    /// When the next start may be tried (CrashLoopBackOff), if it must wait.
    pub next_attempt: Option<Timestamp>,
    /// The host directory of the output volume (for the result's summaries).
    pub output_dir: Option<PathBuf>,
    /// The configuration of the serving sidecar when it was started with
    /// `--watch-input` (the world runs its input copies, see the module documentation).
    pub watch_input: Option<SidecarConfig>,
}

impl SidecarState {
    /// A sidecar not started yet, writing to `output_dir` on the host.
    pub fn new(output_dir: Option<PathBuf>) -> Self {
        Self {
            output_dir,
            ..Self::default()
        }
    }

    /// Stops the serving sidecar, if any.
    pub async fn stop(&mut self) {
        self.watch_input = None;
        if let Some(running) = self.running.take() {
            running.stop().await;
        }
    }

    /// When the next start falls due, if the sidecar waits in CrashLoopBackOff.
    pub fn due(&self) -> Option<Timestamp> {
        self.running
            .is_none()
            .then_some(self.next_attempt)
            .flatten()
    }
}

/// The sidecar's arguments (paths mapped, bind address added) and environment. The
/// environment sees the pod IPs of the pod in slot `ip` (in `families`); the sidecar listens on `bind` (its host address).
pub fn sidecar_invocation(
    pod: &Pod,
    runtime: &PodRuntime,
    container: &Container,
    fs: &ContainerFs,
    ip: Ipv4Addr,
    families: IpFamilies,
    bind: std::net::SocketAddr,
) -> (Vec<String>, BTreeMap<String, String>) {
    let mut given = container.command.clone().unwrap_or_default();
    // The image's entrypoint is the sidecar itself; a command naming it is not a flag.
    given.retain(|a| a.starts_with("--"));
    given.extend(container.args.clone().unwrap_or_default());
    let args = containers::sidecar_args(&given, fs, &bind.to_string());
    let facts = PodFacts {
        pod,
        pod_ip: families.primary(ip).to_string(),
        pod_ips: families.env_list(ip),
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
