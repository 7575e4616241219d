//! `fdb-operator run`: the controller over FoundationDBCluster in a real Kubernetes
//! cluster. Each reconcile is one [`run_pass`]; the pass's requeue becomes the next
//! reconcile time; errors back off by category; `/metrics` serves Prometheus metrics.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use fdb_shared::api::FoundationDBCluster;
use futures::future::{self, BoxFuture};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};
use kube::runtime::controller::{Action, Controller, Error as ControllerError};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};

use super::context::Context;
use super::driver::run_pass;
use super::errors::ReconcileError;
use super::outcome::{PassOutcome, PassReport};

/// How often a reconciled cluster is looked at again without any change.
pub const RESYNC_INTERVAL: Duration = Duration::from_secs(600);
/// How soon a cluster whose pass completed but is not reconciled is looked at again
/// (the same as the simulation's resync of such a pass).
pub const UNRECONCILED_INTERVAL: Duration = Duration::from_secs(30);

/// How long the controller waits before looking at a cluster again, after a pass and
/// after a failure. The defaults are what `fdb-operator run` uses; tests shorten them
/// because kube-runtime's requeue timers run on real time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequeuePolicy {
    /// The shortest requeue after a pass that asked to wait (guards against a hot loop
    /// on a zero delay).
    pub min_delay: Duration,
    /// The requeue of a reconciled cluster, and of an invalid or missing one (they wait
    /// for a change of the spec, which triggers a reconcile anyway).
    pub resync: Duration,
    /// The requeue after a pass that completed without reaching Reconciled and named
    /// nothing to wait for (e.g. the database still recovering): soon, not at the resync.
    pub unreconciled: Duration,
    /// The back-off after a transient failure (conflicts, timeouts, unreachable peers).
    pub transient_backoff: Duration,
    /// The back-off after any other failure.
    pub error_backoff: Duration,
}

impl Default for RequeuePolicy {
    fn default() -> Self {
        Self {
            min_delay: Duration::from_secs(1),
            resync: RESYNC_INTERVAL,
            unreconciled: UNRECONCILED_INTERVAL,
            transient_backoff: Duration::from_secs(15),
            error_backoff: Duration::from_secs(120),
        }
    }
}

impl RequeuePolicy {
    /// The requeue after a successful pass.
    pub fn action_for(&self, outcome: &PassOutcome) -> Action {
        match outcome {
            PassOutcome::Completed => Action::requeue(self.resync),
            PassOutcome::Requeue { delay, .. } => Action::requeue((*delay).max(self.min_delay)),
        }
    }

    /// The requeue after a pass, knowing whether it reached Reconciled: a completed pass
    /// that did not is looked at again soon (nothing will wake it: the database
    /// recovering or data moving do not change any watched object).
    pub fn after_pass(&self, report: &PassReport) -> Action {
        match &report.outcome {
            PassOutcome::Completed if !report.reconciled => Action::requeue(self.unreconciled),
            outcome => self.action_for(outcome),
        }
    }

    /// The back-off after a failed pass: an invalid spec waits for the next change (or
    /// a long resync); transient failures retry soon; others later.
    pub fn backoff_for(&self, error: &ReconcileError) -> Action {
        match error {
            ReconcileError::InvalidSpec(_) | ReconcileError::ClusterNotFound { .. } => {
                Action::requeue(self.resync)
            }
            error if error.is_transient() => Action::requeue(self.transient_backoff),
            _ => Action::requeue(self.error_backoff),
        }
    }
}

/// What `run` needs besides the context.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Watch only this namespace (all namespaces when `None`).
    pub namespace: Option<String>,
    /// Where `/metrics` is served (not served when `None`).
    pub metrics_address: Option<SocketAddr>,
    /// Requeue delays and back-offs.
    pub requeue: RequeuePolicy,
}

/// Why the operator stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The metrics endpoint could not be bound.
    #[error("cannot serve metrics on {address}: {source}")]
    Metrics {
        /// The address.
        address: SocketAddr,
        /// The IO error.
        source: std::io::Error,
    },
}

/// The requeue after a successful pass, with the default [`RequeuePolicy`].
pub fn action_for(outcome: &PassOutcome) -> Action {
    RequeuePolicy::default().action_for(outcome)
}

/// The back-off after a failed pass, with the default [`RequeuePolicy`].
pub fn backoff_for(error: &ReconcileError) -> Action {
    RequeuePolicy::default().backoff_for(error)
}

/// What every reconcile gets: the operator's context and the requeue policy.
struct ControllerState {
    ctx: Context,
    requeue: RequeuePolicy,
}

async fn reconcile(
    cluster: Arc<FoundationDBCluster>,
    shared: Arc<ControllerState>,
) -> Result<Action, ReconcileError> {
    let namespace = cluster.namespace().unwrap_or_default();
    let report = run_pass(&shared.ctx, &namespace, &cluster.name_any()).await?;
    Ok(shared.requeue.after_pass(&report))
}

fn error_policy(
    cluster: Arc<FoundationDBCluster>,
    error: &ReconcileError,
    shared: Arc<ControllerState>,
) -> Action {
    tracing::warn!(cluster = %cluster.name_any(), category = error.category(), %error, "reconcile failed");
    shared.requeue.backoff_for(error)
}

async fn serve_metrics(
    ctx: Arc<ControllerState>,
    address: SocketAddr,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|source| RunError::Metrics { address, source })?;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let ctx = ctx.clone();
            async move { ctx.ctx.metrics.encode() }
        }),
    );
    tracing::info!(%address, "serving metrics");
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|source| RunError::Metrics { address, source })
}

/// Whether a controller error needs no log line of its own: failed reconciles are
/// logged by the error policy, and an object gone from the cache is expected after a
/// deletion. Watch failures (RBAC, a missing CRD, the API server unreachable) are only
/// seen here and must be visible at the default log level.
fn reported_elsewhere(error: &ControllerError<ReconcileError, watcher::Error>) -> bool {
    matches!(
        error,
        ControllerError::ReconcilerFailed(..) | ControllerError::ObjectNotFound(_)
    )
}

/// When the controller stops.
enum Shutdown {
    /// On SIGINT/SIGTERM (a second one forces it), as kube-runtime handles them.
    Signals,
    /// When the future completes.
    On(future::Shared<BoxFuture<'static, ()>>),
}

/// Runs the controller until SIGINT/SIGTERM.
pub async fn run(ctx: Context, options: RunOptions) -> Result<(), RunError> {
    run_with(ctx, options, Shutdown::Signals).await
}

/// Runs the controller until `shutdown` completes, then lets the running reconciles
/// finish and stops (the metrics endpoint too). This is [`run`] with the signals
/// replaced by a future, for embedding and tests.
pub async fn run_until(
    ctx: Context,
    options: RunOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    run_with(ctx, options, Shutdown::On(shutdown.boxed().shared())).await
}

async fn run_with(ctx: Context, options: RunOptions, shutdown: Shutdown) -> Result<(), RunError> {
    let shared = Arc::new(ControllerState {
        ctx,
        requeue: options.requeue,
    });
    let client = shared.ctx.kube.clone();
    fn api<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        match namespace {
            Some(namespace) => Api::namespaced(client.clone(), namespace),
            None => Api::all(client.clone()),
        }
    }
    let namespace = options.namespace.as_deref();
    let config = watcher::Config::default();
    let controller = Controller::new(
        api::<FoundationDBCluster>(&client, namespace),
        config.clone(),
    )
    .owns(api::<Pod>(&client, namespace), config.clone())
    .owns(
        api::<PersistentVolumeClaim>(&client, namespace),
        config.clone(),
    )
    .owns(api::<Service>(&client, namespace), config.clone())
    .owns(api::<ConfigMap>(&client, namespace), config);
    // The backup and restore controllers run beside the cluster's, stopped the same way.
    let backups = crate::backup::production::run_controllers(
        shared.ctx.clone(),
        options.namespace.clone(),
        shared.requeue.clone(),
        match &shutdown {
            Shutdown::Signals => None,
            Shutdown::On(shutdown) => Some(shutdown.clone()),
        },
    );
    let (controller, metrics_shutdown) = match shutdown {
        Shutdown::Signals => (
            controller.shutdown_on_signal(),
            async {
                let _ = tokio::signal::ctrl_c().await;
            }
            .boxed(),
        ),
        Shutdown::On(shutdown) => (
            controller.graceful_shutdown_on(shutdown.clone()),
            shutdown.boxed(),
        ),
    };
    let controller = controller
        .run(reconcile, error_policy, shared.clone())
        .for_each(|result| async move {
            match result {
                Ok((object, action)) => tracing::debug!(%object, ?action, "reconciled"),
                Err(error) if reported_elsewhere(&error) => {
                    tracing::debug!(%error, "controller event");
                }
                Err(error) => tracing::warn!(%error, "watching failed; retrying with back-off"),
            }
        });
    let controller = future::join(controller, backups).map(drop);
    match options.metrics_address {
        Some(address) => {
            let metrics = serve_metrics(shared, address, metrics_shutdown);
            tokio::pin!(controller, metrics);
            tokio::select! {
                () = &mut controller => Ok(()),
                result = &mut metrics => {
                    // The endpoint stops on the same signal as the controller, and
                    // sooner: the controller still has to finish its running reconciles.
                    result?;
                    controller.await;
                    Ok(())
                }
            }
        }
        None => {
            controller.await;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requeue_and_backoff() {
        assert_eq!(
            action_for(&PassOutcome::Completed),
            Action::requeue(RESYNC_INTERVAL)
        );
        let requeue = PassOutcome::Requeue {
            delay: Duration::from_secs(7),
            reason: "x".into(),
            step: "AddPods",
        };
        assert_eq!(
            action_for(&requeue),
            Action::requeue(Duration::from_secs(7))
        );
        let missing = ReconcileError::ClusterNotFound {
            namespace: "a".into(),
            name: "b".into(),
        };
        assert_eq!(backoff_for(&missing), Action::requeue(RESYNC_INTERVAL));
        let step = ReconcileError::Step {
            step: "AddPods",
            source: super::super::errors::StepError::InvalidState("x".into()),
        };
        assert_eq!(
            backoff_for(&step),
            Action::requeue(Duration::from_secs(120))
        );
    }

    #[test]
    fn a_completed_pass_that_is_not_reconciled_is_looked_at_again_soon() {
        let policy = RequeuePolicy::default();
        let done = PassReport {
            outcome: PassOutcome::Completed,
            reconciled: true,
        };
        assert_eq!(policy.after_pass(&done), Action::requeue(RESYNC_INTERVAL));
        let not_yet = PassReport {
            outcome: PassOutcome::Completed,
            reconciled: false,
        };
        assert_eq!(
            policy.after_pass(&not_yet),
            Action::requeue(UNRECONCILED_INTERVAL)
        );
    }

    #[test]
    fn short_policy_keeps_its_floor() {
        let policy = RequeuePolicy {
            min_delay: Duration::from_millis(20),
            ..RequeuePolicy::default()
        };
        let zero = PassOutcome::Requeue {
            delay: Duration::ZERO,
            reason: "x".into(),
            step: "AddPods",
        };
        assert_eq!(
            policy.action_for(&zero),
            Action::requeue(Duration::from_millis(20))
        );
        assert_eq!(
            policy.action_for(&PassOutcome::Completed),
            Action::requeue(RESYNC_INTERVAL)
        );
    }

    #[test]
    fn watch_failures_are_not_left_to_debug_logs() {
        let watch: ControllerError<ReconcileError, watcher::Error> =
            ControllerError::QueueError(watcher::Error::NoResourceVersion);
        assert!(!reported_elsewhere(&watch));
        let object = kube::runtime::reflector::ObjectRef::<FoundationDBCluster>::new("sample")
            .within("default")
            .erase();
        let failed: ControllerError<ReconcileError, watcher::Error> =
            ControllerError::ReconcilerFailed(
                ReconcileError::ClusterNotFound {
                    namespace: "default".into(),
                    name: "sample".into(),
                },
                Box::new(object.clone()),
            );
        assert!(reported_elsewhere(&failed));
        assert!(reported_elsewhere(&ControllerError::ObjectNotFound(
            Box::new(object)
        )));
    }
}
