//! The kubelet: the per-round sync of one pod (what the world keeps about it is in
//! [`super::pod_runtime`]): start it ([`super::pod_start`]), project ConfigMap changes after their delay,
//! restart containers whose image changed ([`super::restarts`]), keep the sidecar
//! ([`super::sidecar`]) and the main container's fdbmonitor running. A kubelet whose node
//! is down does nothing at all: it neither starts nor stops nor reports anything.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::Pod;

use super::World;
use super::confine;
use super::containers::{container_crash_loops, stamp};
use super::error::WorldError;
use super::fdbmonitor::MonitorChanges;
use super::pod_runtime::{
    ContainerExit, MAIN_CONTAINER, MONITOR_ACTOR, PodPhase, PodRuntime, SIDECAR_CONTAINER, pod_key,
};
use super::projection::{missing_keys, volume_files, write_volume};
use crate::kube::{PatchType, ResourceKey};

impl World {
    /// Brings one scheduled, live pod's runtime in line with the world.
    pub(super) async fn sync_pod(&mut self, pod: &Pod) -> Result<(), WorldError> {
        let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
            return Ok(());
        };
        if pod.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let (_, _, uid) = pod_key(pod);
        let mut runtime = match self.pods.remove(&uid) {
            Some(runtime) => runtime,
            None => PodRuntime::new(pod, self.files.root(), node),
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
                let changes = runtime.stop_containers(self.fdb.host()).await;
                runtime.lost_with_node = true;
                self.record_monitor(runtime, changes);
            }
            return Ok(());
        }
        if runtime.lost_with_node {
            self.restart_lost_containers(pod, runtime);
        }
        let failed = self.faults.pod_failed.contains(&group)
            || self.faults.evicted_pods.contains(&runtime.uid);
        if failed && runtime.phase != PodPhase::Failed {
            let changes = runtime.stop_containers(self.fdb.host()).await;
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
                monitor.reconcile(self.fdb.host())
            } else {
                monitor.stop_all(self.fdb.host())
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
                &runtime.root,
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

    pub(super) fn pvc_dir(&self, namespace: &str, claim: &str, uid: &str) -> PathBuf {
        confine::object_dir(self.files.root(), "pvcs", &[namespace, claim, uid])
    }
}
