//! The sidecar container: a real in-process `fdb-sidecar` per pod, listening on the pod's
//! host address. It is (re)started with the pod's *current* container spec: after
//! `POST /restart`, when it exits, when its image changes, when a fault that stopped it
//! is healed. A start that fails (a start-up copy, a bad flag) is a crashing container:
//! it is retried with the kubelet's CrashLoopBackOff (10 s, doubling, at most 300 s).
//!
//! A sidecar address that cannot be bound, or where something else already answers, is
//! not a pod problem but a broken run: [`WorldError::Listen`] /
//! [`WorldError::ForeignListener`] stop the world rather than let the operator talk to
//! another process.
//!
//! Nothing a sidecar does may depend on real time, or a loaded machine would change the
//! run's result:
//! - its copy limit (`--copy-timeout-seconds`, 8 s of real time by default: a slow fsync
//!   would answer 503 and finish the copy in the background) is set to the longest
//!   allowed, [`SIMULATED_COPY_TIMEOUT_SECONDS`];
//! - `--watch-input` is not left to a file watcher, which copies 150 ms (real) after
//!   the kubelet's swap, at no definite point of the run: the world runs the same copies
//!   itself, right after it projects a ConfigMap into the sidecar's input directory
//!   ([`World::sidecar_input_changed`]), before it reports settled.

use std::net::SocketAddr;
use std::path::Path;

use fdb_sidecar::metrics::RequestLabels;
use fdb_sidecar::{RunningSidecar, Sidecar, SidecarConfig, StartError};
use futures::FutureExt;
use jiff::SignedDuration;
use k8s_openapi::api::core::v1::Pod;

use super::World;
use super::containers::container_crash_loops;
use super::error::WorldError;
use super::network::something_answers;
use super::pod_runtime::{
    ContainerExit, PodRuntime, SIDECAR_CONTAINER, SIDECAR_PORT, SidecarState, sidecar_invocation,
    spec_container,
};

/// First CrashLoopBackOff delay of a container that failed.
pub const BACKOFF_INITIAL_SECONDS: i64 = 10;
/// Longest CrashLoopBackOff delay.
pub const BACKOFF_MAX_SECONDS: i64 = 300;

/// The copy limit of the simulated sidecars (the longest `--copy-timeout-seconds` takes):
/// a copy is never cut short by real time.
pub const SIMULATED_COPY_TIMEOUT_SECONDS: u64 = 3600;

/// The CrashLoopBackOff delay after `failures` consecutive failures (10 s, 20 s, ...,
/// at most 300 s).
pub fn backoff(failures: u32) -> SignedDuration {
    let exponent = failures.saturating_sub(1).min(16);
    let seconds = BACKOFF_INITIAL_SECONDS.saturating_mul(1 << exponent);
    SignedDuration::from_secs(seconds.min(BACKOFF_MAX_SECONDS))
}

/// Why a sidecar start failed.
enum StartFailure {
    /// The container crashed (retried with back-off).
    Crashed(String),
    /// The run cannot go on.
    Fatal(WorldError),
}

impl World {
    /// Starts, stops or restarts the sidecar as faults, `/restart` and crashes ask.
    pub(super) async fn sync_sidecar(
        &mut self,
        pod: &Pod,
        runtime: &mut PodRuntime,
    ) -> Result<(), WorldError> {
        let Some(mut sidecar) = runtime.sidecar.take() else {
            return Ok(());
        };
        let result = self.sync_sidecar_state(pod, runtime, &mut sidecar).await;
        runtime.sidecar = Some(sidecar);
        result
    }

    async fn sync_sidecar_state(
        &mut self,
        pod: &Pod,
        runtime: &mut PodRuntime,
        sidecar: &mut SidecarState,
    ) -> Result<(), WorldError> {
        let group = runtime.group.clone().unwrap_or_default();
        // A sidecar whose command is buggify's crash-loop never comes up.
        let wanted = !self.faults.sidecar_unreachable.contains(&group)
            && !container_crash_loops(pod, SIDECAR_CONTAINER);
        let now = self.now();
        self.stop_sidecar_if_needed(runtime, sidecar, wanted).await;
        let due = sidecar.next_attempt.is_none_or(|at| at <= now);
        if !(wanted && sidecar.running.is_none() && due) {
            return Ok(());
        }
        if sidecar.attempts > 0
            && let Some(state) = runtime.containers.get_mut(SIDECAR_CONTAINER)
        {
            state.restarts += 1;
        }
        sidecar.attempts += 1;
        match self.start_sidecar(pod, runtime).await {
            Ok((running, watch_input)) => {
                let address = running.local_addr();
                sidecar.running = Some(running);
                sidecar.watch_input = watch_input;
                sidecar.error = None;
                sidecar.failures = 0;
                sidecar.next_attempt = None;
                if let Some(state) = runtime.containers.get_mut(SIDECAR_CONTAINER) {
                    state.started_at = Some(now);
                }
                self.record(
                    "start-sidecar",
                    runtime.target(),
                    format!("serving on {address}"),
                );
                Ok(())
            }
            Err(StartFailure::Crashed(message)) => {
                sidecar.failures += 1;
                sidecar.next_attempt = Some(now + backoff(sidecar.failures));
                if let Some(state) = runtime.containers.get_mut(SIDECAR_CONTAINER) {
                    state.started_at = None;
                    state.last_exit = Some(ContainerExit {
                        exit_code: 1,
                        reason: "Error".into(),
                        message: message.clone(),
                        at: now,
                    });
                }
                self.record("sidecar-failed", runtime.target(), message.clone());
                sidecar.error = Some(message);
                Ok(())
            }
            Err(StartFailure::Fatal(error)) => Err(error),
        }
    }

    /// Stops the running sidecar when it asked for a restart, exited, or a fault says it
    /// must not run; a requested restart is an exit with an error, as `POST /restart`
    /// makes it.
    async fn stop_sidecar_if_needed(
        &mut self,
        runtime: &mut PodRuntime,
        sidecar: &mut SidecarState,
        wanted: bool,
    ) {
        let now = self.now();
        let Some(running) = sidecar.running.as_mut() else {
            return;
        };
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
            sidecar.stop().await;
            let why = if wanted {
                "restart requested"
            } else {
                "sidecar fault"
            };
            if wanted && let Some(state) = runtime.containers.get_mut(SIDECAR_CONTAINER) {
                // `POST /restart` makes the sidecar exit non-zero.
                state.last_exit = Some(ContainerExit {
                    exit_code: 1,
                    reason: "Error".into(),
                    message: why.into(),
                    at: now,
                });
            }
            sidecar.next_attempt = None;
            self.record("stop-sidecar", runtime.target(), why.to_owned());
        }
    }

    /// Starts the pod's sidecar; returns it with its configuration if it asked for
    /// `--watch-input`.
    async fn start_sidecar(
        &self,
        pod: &Pod,
        runtime: &PodRuntime,
    ) -> Result<(RunningSidecar, Option<SidecarConfig>), StartFailure> {
        let crashed = |message: String| StartFailure::Crashed(message);
        let container = spec_container(pod, SIDECAR_CONTAINER)
            .ok_or_else(|| crashed("the pod has no sidecar container".into()))?;
        let ip = runtime
            .ip
            .ok_or_else(|| crashed("the pod has no IP".into()))?;
        let bind = SocketAddr::new(self.network.map().host_ip(ip.into()), SIDECAR_PORT);
        if something_answers(bind).await {
            return Err(StartFailure::Fatal(WorldError::ForeignListener {
                pod: runtime.qualified_name(),
                address: bind,
            }));
        }
        let fs = runtime.container_fs(container);
        let (args, env) = sidecar_invocation(
            pod,
            runtime,
            container,
            &fs,
            ip,
            self.network.map().families(),
            bind,
        );
        let mut config = SidecarConfig::from_args(args, &env)
            .map_err(|e| crashed(fdb_shared::error_chain::chain_text(&e)))?;
        config.args.copy_timeout_seconds = SIMULATED_COPY_TIMEOUT_SECONDS;
        let watch_input = std::mem::take(&mut config.args.watch_input).then(|| config.clone());
        let running = Sidecar::start(config, bind)
            .await
            .map_err(|error| match error {
                StartError::Bind { addr, source } => StartFailure::Fatal(WorldError::Listen {
                    pod: runtime.qualified_name(),
                    address: addr,
                    error: source,
                }),
                other => crashed(fdb_shared::error_chain::chain_text(&other)),
            })?;
        Ok((running, watch_input))
    }

    /// The kubelet has just swapped the ConfigMap volume at `dir`: a running sidecar
    /// started with `--watch-input` whose input directory that is copies its files and
    /// then its monitor conf, as its watcher would (failures are its log lines; the next
    /// change retries).
    pub(super) fn sidecar_input_changed(&mut self, runtime: &PodRuntime, dir: &Path) {
        let Some(config) = runtime
            .sidecar
            .as_ref()
            .filter(|sidecar| sidecar.running.is_some())
            .and_then(|sidecar| sidecar.watch_input.as_ref())
        else {
            return;
        };
        if !same_dir(&config.args.input_dir, dir) {
            return;
        }
        let outcome = fdb_sidecar::copy::copy_files(config)
            .and_then(|()| fdb_sidecar::copy::copy_monitor_conf(config));
        let detail = match outcome {
            Ok(()) => "input changed: copied files and monitor conf".to_owned(),
            Err(error) => format!("input changed: copy failed: {error}"),
        };
        self.record("sidecar-watch-input", runtime.target(), detail);
    }
}

/// Whether two paths name the same directory (through links).
fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_off_doubles_up_to_five_minutes() {
        let seconds: Vec<i64> = (1..=7).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(seconds, [10, 20, 40, 80, 160, 300, 300]);
        assert_eq!(backoff(1000).as_secs(), 300);
    }
}
