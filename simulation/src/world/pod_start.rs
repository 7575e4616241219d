//! Starting a scheduled pod: volumes (ConfigMap projection, PVCs, emptyDirs), each
//! container's mount links and fake image, the pod IP, the init container (the real
//! sidecar in `--init-mode`), then the sidecar and fdbmonitor runtimes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fdb_shared::FdbVersion;
use k8s_openapi::api::core::v1::{Container, PersistentVolumeClaim, Pod, PodSpec, Secret, Volume};

use super::World;
use super::confine;
use super::containers::{
    self, ImageContents, conf_file_arg, image_root, mount_link, set_mount_link, stamp,
};
use super::error::WorldError;
use super::fdbmonitor::{Monitor, MonitorContext};
use super::pod_runtime::SidecarState;
use super::pod_runtime::{
    ConfigVolume, ContainerExit, ContainerRuntime, INIT_CONTAINER, MAIN_CONTAINER, PodPhase,
    PodRuntime, SIDECAR_CONTAINER, runs_sidecar_image, sidecar_invocation,
};
use super::projection::{missing_keys, volume_files, write_volume};
use super::unified_monitor::{UnifiedMonitor, copy_shared_binaries, runs_monitor};

/// The variable that makes fdb-kubernetes-monitor read its node's labels.
const NODE_WATCH_VARIABLE: &str = "ENABLE_NODE_WATCH";

/// What the kubelet found of a pod's volumes before mounting them.
#[derive(Default)]
struct FoundVolumes {
    /// Why the pod waits (the last missing required source), if it does.
    waiting: Option<String>,
    /// Host directory of each volume.
    dirs: BTreeMap<String, PathBuf>,
    /// Identity of each volume (for data identities).
    identities: BTreeMap<String, String>,
    /// UID of each PVC volume's claim.
    pvc_uids: BTreeMap<String, String>,
    /// ConfigMap volumes.
    config_volumes: Vec<ConfigVolume>,
    /// Files of each secret volume, by its directory.
    secret_files: Vec<(PathBuf, BTreeMap<String, Vec<u8>>)>,
}

impl World {
    /// The FoundationDB version an image contains: `world.images` when it lists the
    /// image, else the version in its tag.
    pub(super) fn image_version(&self, image: &str) -> Option<FdbVersion> {
        self.options
            .images
            .get(image)
            .copied()
            .or_else(|| containers::image_version(image))
    }

    /// Writes a container's fake image for the pod's group (the `binaryMissing` fault
    /// takes that version's binaries out of the sidecar image).
    pub(super) fn write_container_image(
        &self,
        runtime: &PodRuntime,
        container: &str,
        image: &str,
    ) -> Result<(), WorldError> {
        let version = self.image_version(image);
        let missing = runs_sidecar_image(container)
            && version.is_some_and(|v| {
                runtime.group.as_ref().is_some_and(|group| {
                    self.faults
                        .binary_missing
                        .get(group)
                        .is_some_and(|versions| versions.contains(&v))
                })
            });
        self.files.images().install(
            &image_root(&runtime.dir, container),
            ImageContents {
                version: version.as_ref(),
                binaries: !missing,
            },
        )
    }

    /// Points each of the container's mount links at its volume; the output dir of a
    /// sidecar-image container of a group with `outputNotWritable` is broken instead.
    pub(super) fn link_mounts(
        &self,
        runtime: &PodRuntime,
        container: &Container,
    ) -> Result<(), WorldError> {
        let broken = runs_sidecar_image(&container.name)
            && runtime
                .group
                .as_ref()
                .is_some_and(|g| self.faults.output_not_writable.contains(g));
        let output = broken
            .then(|| containers::output_dir_volume(container))
            .flatten();
        for mount in container.volume_mounts.iter().flatten() {
            let Some(dir) = runtime.volume_dirs.get(&mount.name) else {
                continue;
            };
            let link = mount_link(&runtime.dir, &container.name, &mount.name);
            if output.as_deref() == Some(mount.name.as_str()) {
                containers::break_mount_link(&runtime.root, &link)?;
            } else {
                set_mount_link(&runtime.root, &link, dir)?;
            }
        }
        Ok(())
    }

    /// Mounts volumes, allocates the IP, writes images and runs init containers.
    pub(super) fn start_pod(
        &mut self,
        pod: &Pod,
        runtime: &mut PodRuntime,
    ) -> Result<(), WorldError> {
        let spec = pod.spec.clone().unwrap_or_default();
        if let Some(message) = self.mount_volumes(pod, runtime)? {
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
        if self.sandbox_lacks_family(pod, runtime) {
            return Ok(());
        }
        let ip = match runtime.ip {
            Some(ip) => ip,
            None => {
                let ip = self.network.ip_for_start(&runtime.namespace, &runtime.name);
                runtime.ip = Some(ip);
                ip
            }
        };
        self.write_images(&spec, runtime)?;
        if let Some(init) = spec
            .init_containers
            .iter()
            .flatten()
            .find(|init| init.name == INIT_CONTAINER)
            && let Err(message) = self.run_init_copies(pod, runtime, init, ip)
        {
            self.init_failed(runtime, &init.name, message);
            return Ok(());
        }
        let unified = spec
            .containers
            .iter()
            .any(|c| c.name == MAIN_CONTAINER && runs_monitor(c));
        if unified {
            self.copy_unified_binaries(&spec, runtime)?;
        }
        let now = self.now();
        for name in spec.containers.iter().map(|c| &c.name) {
            if let Some(state) = runtime.containers.get_mut(name) {
                state.started_at = Some(now);
            }
        }
        runtime.sidecar = spec
            .containers
            .iter()
            .find(|c| c.name == SIDECAR_CONTAINER && !unified)
            .map(|c| SidecarState::new(runtime.volume_path(c, &containers::output_dir_path(c))));
        runtime.monitor = spec
            .containers
            .iter()
            .find(|c| c.name == MAIN_CONTAINER)
            .map(|main| self.new_monitor(pod, runtime, main, ip));
        runtime.phase = PodPhase::Running;
        runtime.started_at = Some(now);
        self.record(
            "start-pod",
            runtime.target(),
            format!("ip {ip} on {}", runtime.node),
        );
        Ok(())
    }

    /// Every container's image written and its mounts linked.
    fn write_images(&mut self, spec: &PodSpec, runtime: &mut PodRuntime) -> Result<(), WorldError> {
        let all_containers: Vec<&Container> = spec
            .init_containers
            .iter()
            .flatten()
            .chain(spec.containers.iter())
            .collect();
        for container in &all_containers {
            let image = container.image.clone().unwrap_or_default();
            self.write_container_image(runtime, &container.name, &image)?;
            self.link_mounts(runtime, container)?;
            runtime
                .containers
                .entry(container.name.clone())
                .or_insert_with(|| ContainerRuntime {
                    image: String::new(),
                    restarts: 0,
                    started_at: None,
                    last_exit: None,
                })
                .image = image;
        }
        Ok(())
    }

    /// The init container's copies (the sidecar binary in `--init-mode`).
    fn run_init_copies(
        &self,
        pod: &Pod,
        runtime: &PodRuntime,
        init: &Container,
        ip: std::net::Ipv4Addr,
    ) -> Result<(), String> {
        let fs = runtime.container_fs(init);
        let bind = std::net::SocketAddr::new(
            self.network.map().host_ip(ip.into()),
            super::pod_runtime::SIDECAR_PORT,
        );
        let (args, env) = sidecar_invocation(
            pod,
            runtime,
            init,
            &fs,
            ip,
            self.network.map().families(),
            bind,
        );
        fdb_sidecar::SidecarConfig::from_args(args, &env)
            .map_err(|e| e.to_string())
            .and_then(|config| {
                fdb_sidecar::copy::run_startup_copies(&config).map_err(|e| e.to_string())
            })
    }

    /// The init container failed: its exit recorded, the pod waiting on `Init:Error`.
    fn init_failed(&mut self, runtime: &mut PodRuntime, init: &str, message: String) {
        if let Some(state) = runtime.containers.get_mut(init) {
            state.last_exit = Some(ContainerExit {
                exit_code: 1,
                reason: "Error".into(),
                message: message.clone(),
                at: self.now(),
            });
        }
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
    }

    /// The main container's monitor: fdb-kubernetes-monitor for a unified pod (with the
    /// environment the kubelet resolves for it), else fdbmonitor.
    pub(super) fn new_monitor(
        &self,
        pod: &Pod,
        runtime: &PodRuntime,
        main: &Container,
        ip: std::net::Ipv4Addr,
    ) -> Monitor {
        let context = monitor_context(runtime, main);
        if !runs_monitor(main) {
            return Monitor::new(context);
        }
        let families = self.network.map().families();
        let facts = containers::PodFacts {
            pod,
            pod_ip: families.primary(ip).to_string(),
            pod_ips: families.env_list(ip),
            node: runtime.node.clone(),
        };
        let mut env = containers::container_env(main, &facts);
        // fdb-kubernetes-monitor with ENABLE_NODE_WATCH reads its node's labels (it
        // watches the Node object) and offers them as `NODE_LABEL_*` variables.
        if env.get(NODE_WATCH_VARIABLE).is_some_and(|v| v == "true") {
            let labels = super::nodes::current_labels(&self.api, &runtime.node);
            for (name, value) in super::nodes::node_label_environment(&labels) {
                env.entry(name).or_insert(value);
            }
        }
        let version = self.image_version(main.image.as_deref().unwrap_or_default());
        Monitor::new_unified(context, UnifiedMonitor::new(main, env, version))
    }

    /// The sidecar-mode container of a unified pod copies its image's binaries into the
    /// shared volume (at start, and again when its image changes).
    pub(super) fn copy_unified_binaries(
        &self,
        spec: &k8s_openapi::api::core::v1::PodSpec,
        runtime: &PodRuntime,
    ) -> Result<(), WorldError> {
        let Some(sidecar) = spec.containers.iter().find(|c| c.name == SIDECAR_CONTAINER) else {
            return Ok(());
        };
        let Some(version) = self.image_version(sidecar.image.as_deref().unwrap_or_default()) else {
            return Ok(());
        };
        copy_shared_binaries(sidecar, &runtime.container_fs(sidecar), &version)
    }

    /// Finds and prepares the pod's volumes; returns why the pod must wait, if it must.
    fn mount_volumes(
        &mut self,
        pod: &Pod,
        runtime: &mut PodRuntime,
    ) -> Result<Option<String>, WorldError> {
        let namespace = runtime.namespace.clone();
        let mut found = FoundVolumes::default();
        for volume in pod
            .spec
            .iter()
            .flat_map(|spec| spec.volumes.iter().flatten())
        {
            self.find_volume(volume, runtime, &namespace, &mut found)?;
        }
        if found.waiting.is_some() {
            return Ok(found.waiting);
        }
        prepare_volume_dirs(&runtime.root, &found.dirs, found.secret_files)?;
        runtime.volume_dirs = found.dirs;
        runtime.volume_identities = found.identities;
        runtime.pvc_uids = found.pvc_uids;
        runtime.config_volumes = found.config_volumes;
        self.project_config_volumes(runtime)?;
        Ok(None)
    }

    /// Finds one volume's source, as the kubelet does before it mounts it; a missing
    /// required source sets why the pod waits.
    fn find_volume(
        &mut self,
        volume: &Volume,
        runtime: &PodRuntime,
        namespace: &str,
        found: &mut FoundVolumes,
    ) -> Result<(), WorldError> {
        let pod_dir = runtime.dir.join("volumes").join(&volume.name);
        let (kind, dir) = if let Some(cm) = &volume.config_map {
            let optional = cm.optional == Some(true);
            if !optional && let Some(why) = self.config_map_missing(namespace, cm) {
                found.waiting = Some(why);
            }
            found.config_volumes.push(ConfigVolume {
                volume: volume.name.clone(),
                namespace: namespace.to_string(),
                config_map: cm.name.clone(),
                items: cm.items.clone(),
                dir: pod_dir.clone(),
                projected: None,
                optional,
                refused: None,
            });
            ("configMap", pod_dir)
        } else if let Some(source) = &volume.secret {
            // Secrets are written once, when the pod starts (the TLS material of
            // `world.tls`); a missing one keeps the pod waiting, as the kubelet does.
            let name = source.secret_name.clone().unwrap_or_default();
            let secret: Option<Secret> = self.api.get_typed(Some(namespace), &name)?;
            match secret {
                Some(secret) => found
                    .secret_files
                    .push((pod_dir.clone(), secret_volume_files(&secret, source))),
                None if source.optional == Some(true) => {
                    found.secret_files.push((pod_dir.clone(), BTreeMap::new()));
                }
                None => found.waiting = Some(format!("secret {name:?} not found")),
            }
            ("secret", pod_dir)
        } else if let Some(claim) = &volume.persistent_volume_claim {
            let pvc: Option<PersistentVolumeClaim> =
                self.api.get_typed(Some(namespace), &claim.claim_name)?;
            match pvc {
                Some(pvc) if pvc.metadata.deletion_timestamp.is_none() => {
                    let uid = pvc.metadata.uid.clone().unwrap_or_default();
                    let dir = self.pvc_dir(namespace, &claim.claim_name, &uid);
                    found.identities.insert(
                        volume.name.clone(),
                        format!("pvc:{namespace}/{}@{uid}", claim.claim_name),
                    );
                    found.pvc_uids.insert(volume.name.clone(), uid);
                    found.dirs.insert(volume.name.clone(), dir);
                }
                _ => {
                    found.waiting = Some(format!(
                        "persistentvolumeclaim {:?} not found",
                        claim.claim_name
                    ))
                }
            }
            return Ok(());
        } else {
            ("emptyDir", pod_dir)
        };
        found.identities.insert(
            volume.name.clone(),
            format!("{kind}:{}/{}", runtime.uid, volume.name),
        );
        found.dirs.insert(volume.name.clone(), dir);
        Ok(())
    }

    /// Why a (required) ConfigMap volume cannot be mounted: the map or a key it
    /// projects is missing.
    fn config_map_missing(
        &self,
        namespace: &str,
        cm: &k8s_openapi::api::core::v1::ConfigMapVolumeSource,
    ) -> Option<String> {
        let Some(latest) = self.history.latest(namespace, &cm.name) else {
            return Some(format!("configmap {:?} not found", cm.name));
        };
        let missing = missing_keys(&latest.data, cm.items.as_deref());
        (!missing.is_empty()).then(|| {
            format!(
                "configmap {:?} references non-existent config key: {}",
                cm.name,
                missing.join(", ")
            )
        })
    }

    /// Projects the ConfigMaps' current versions into the pod's config volumes.
    fn project_config_volumes(&self, runtime: &mut PodRuntime) -> Result<(), WorldError> {
        let namespace = runtime.namespace.clone();
        for index in 0..runtime.config_volumes.len() {
            let volume = runtime.config_volumes[index].clone();
            if let Some(version) = self.history.latest(&namespace, &volume.config_map).cloned() {
                let files = volume_files(&version.data, volume.items.as_deref());
                write_volume(
                    &runtime.root,
                    &volume.dir,
                    &files,
                    &stamp(version.seen_at, version.sequence),
                )?;
                runtime.config_volumes[index].projected = Some(version.sequence);
            }
        }
        Ok(())
    }
}

/// Creates the volumes' directories and writes the secrets' files.
fn prepare_volume_dirs(
    root: &Path,
    volume_dirs: &BTreeMap<String, PathBuf>,
    secret_files: Vec<(PathBuf, BTreeMap<String, Vec<u8>>)>,
) -> Result<(), WorldError> {
    for dir in volume_dirs.values() {
        confine::create_dir_all(root, dir)?;
    }
    for (dir, files) in secret_files {
        for (path, content) in files {
            confine::write(root, &dir.join(&path), content)?;
        }
    }
    Ok(())
}

/// What the main container's fdbmonitor reads and where its volumes come from.
pub fn monitor_context(runtime: &PodRuntime, main: &Container) -> MonitorContext {
    let fs = runtime.container_fs(main);
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
}

/// The files of a Secret volume: every key (or the `items` chosen), decoded, at its key
/// (or the item's path); paths that climb out of the volume are skipped.
fn secret_volume_files(
    secret: &Secret,
    source: &k8s_openapi::api::core::v1::SecretVolumeSource,
) -> BTreeMap<String, Vec<u8>> {
    let mut data: BTreeMap<String, Vec<u8>> = secret
        .data
        .iter()
        .flatten()
        .map(|(key, value)| (key.clone(), value.0.clone()))
        .collect();
    for (key, value) in secret.string_data.iter().flatten() {
        data.insert(key.clone(), value.clone().into_bytes());
    }
    let chosen: Vec<(String, String)> = match &source.items {
        Some(items) => items
            .iter()
            .map(|item| (item.key.clone(), item.path.clone()))
            .collect(),
        None => data.keys().map(|key| (key.clone(), key.clone())).collect(),
    };
    chosen
        .into_iter()
        .filter(|(_, path)| {
            let path = std::path::Path::new(path);
            path.is_relative()
                && path
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)))
        })
        .filter_map(|(key, path)| Some((path, data.get(&key)?.clone())))
        .collect()
}
