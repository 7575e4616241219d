//! Containers whose image changed on a running pod: the kubelet kills and restarts exactly
//! that container with the new image (its `restartCount` grows, its `imageID` changes).
//!
//! - The sidecar: a new in-process sidecar with the pod's current container spec; its
//!   image's version is its own version, so with another main container version it
//!   stages `bin/<version>/` and renders `BINARY_DIR` accordingly.
//! - The main container: fdbmonitor restarts, so its processes restart from the current
//!   conf and binaries (`/usr/bin/fdbserver` is the new image's version).
//! - Init containers: the change is accepted but, as on a real kubelet, a completed init
//!   container does not run again while the pod lives; its status keeps the image it ran.

use k8s_openapi::api::core::v1::Pod;

use super::World;
use super::error::WorldError;
use super::pod_runtime::{ContainerExit, MAIN_CONTAINER, PodRuntime, SIDECAR_CONTAINER};
use super::unified_monitor::runs_monitor;

impl World {
    /// Restarts the running pod's containers whose spec image differs from the image they
    /// run.
    pub(super) async fn restart_changed_containers(
        &mut self,
        pod: &Pod,
        runtime: &mut PodRuntime,
    ) -> Result<(), WorldError> {
        let Some(spec) = pod.spec.as_ref() else {
            return Ok(());
        };
        let now = self.now();
        for container in &spec.containers {
            let image = container.image.clone().unwrap_or_default();
            let Some(state) = runtime.containers.get(&container.name) else {
                continue;
            };
            if state.image == image {
                continue;
            }
            let previous = state.image.clone();
            self.write_container_image(runtime, &container.name, &image)?;
            match container.name.as_str() {
                SIDECAR_CONTAINER if runtime.sidecar.is_none() => {
                    // A unified pod's sidecar-mode container: the new image copies its
                    // binaries into the shared volume.
                    self.copy_unified_binaries(spec, runtime)?;
                }
                SIDECAR_CONTAINER => {
                    if let Some(sidecar) = runtime.sidecar.as_mut() {
                        sidecar.stop().await;
                        // A new container: no back-off from the old one's failures, and
                        // its start is this restart (not counted again).
                        sidecar.attempts = 0;
                        sidecar.failures = 0;
                        sidecar.next_attempt = None;
                        sidecar.error = None;
                    }
                }
                MAIN_CONTAINER => {
                    if let Some(monitor) = runtime.monitor.as_mut() {
                        let changes = monitor.stop_all(self.fdb.host());
                        self.record_monitor(runtime, changes);
                    }
                    // The new container's monitor knows its own version and has accepted
                    // nothing yet.
                    if runs_monitor(container)
                        && let Some(ip) = runtime.ip
                    {
                        runtime.monitor = Some(self.new_monitor(pod, runtime, container, ip));
                    }
                }
                _ => {}
            }
            if let Some(state) = runtime.containers.get_mut(&container.name) {
                state.image = image.clone();
                state.restarts += 1;
                state.started_at = Some(now);
                state.last_exit = Some(ContainerExit {
                    exit_code: 0,
                    reason: "Completed".into(),
                    message: format!("container definition changed (image {previous})"),
                    at: now,
                });
            }
            self.record(
                "restart-container",
                runtime.target(),
                format!("{}: image {previous} -> {image}", container.name),
            );
        }
        Ok(())
    }
}
