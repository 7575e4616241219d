//! `fdb-operator run`: the controller over FoundationDBCluster in a real Kubernetes
//! cluster. Each reconcile is one [`run_pass`]; the pass's requeue becomes the next
//! reconcile time; errors back off by category; several clusters are reconciled at once
//! (one reconcile per cluster at a time); with leader election only the replica holding
//! the Lease reconciles; `/metrics`, `/healthz` and `/readyz` are served.

pub(crate) mod endpoints;
pub(crate) mod leader;
pub(crate) mod lifecycle;
pub(crate) mod metered;
pub(crate) mod metrics;
pub(crate) mod providers;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use fdb_bounded_http::limited::Slots;
use fdb_shared::api::FoundationDBCluster;
use futures::future;
use futures::{FutureExt, StreamExt};
use kube::ResourceExt;
use kube::runtime::controller::{
    Action, Config as ControllerConfig, Controller, Error as ControllerError,
};
use kube::runtime::watcher;

use self::endpoints::{ENDPOINT_BACKLOG, ENDPOINT_LIMITS, Health, Phase, router};
use self::leader::{LeaderElectionConfig, LeaderError, LeaseLock};
use self::lifecycle::{DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT, Ended, StopFuture, StopSignals};
use self::metered::{MeteredAdminProvider, MeteredSidecarProvider};
use super::cache::{CLUSTER_NAME_LABEL, CacheSelector, ObjectCache};
use super::context::Context;
use super::errors::ReconcileError;
use super::pass::driver::run_pass;
#[cfg(test)]
use super::pass::outcome::PassOutcome;
use super::pass::requeue::RequeuePolicy;
use crate::scoped_api::api;

/// Default `--max-concurrent-reconciles`: clusters reconciled at once (one reconcile
/// per cluster at a time, whatever the setting).
pub(crate) const DEFAULT_MAX_CONCURRENT_RECONCILES: u16 = 4;

/// What `run` needs besides the context.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Watch only this namespace (all namespaces when `None`).
    pub namespace: Option<String>,
    /// Where `/metrics`, `/healthz` and `/readyz` are served (not served when `None`).
    pub metrics_address: Option<SocketAddr>,
    /// Requeue delays and back-offs.
    pub requeue: RequeuePolicy,
    /// How many clusters are reconciled at once (at least 1).
    pub max_concurrent_reconciles: u16,
    /// Reconcile only while holding this Lease (`None`: always reconcile).
    pub leader_election: Option<LeaderElectionConfig>,
    /// The phase `/readyz` reports; shared so that embedders can watch it too.
    pub health: Arc<Health>,
    /// The objects the watch caches hold (see [`ObjectCache`]).
    pub cache_selector: CacheSelector,
    /// How long a stop waits for the running reconciles before it cancels them.
    pub graceful_shutdown_timeout: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            namespace: None,
            metrics_address: None,
            requeue: RequeuePolicy::default(),
            max_concurrent_reconciles: DEFAULT_MAX_CONCURRENT_RECONCILES,
            leader_election: None,
            health: Arc::new(Health::default()),
            cache_selector: CacheSelector::parse(CLUSTER_NAME_LABEL),
            graceful_shutdown_timeout: DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT,
        }
    }
}

/// Why the operator stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The metrics endpoint could not be bound.
    #[error("cannot serve metrics on {address}")]
    Metrics {
        /// The address.
        address: SocketAddr,
        /// The IO error.
        source: std::io::Error,
    },
    /// Leader election cannot start.
    #[error("leader election")]
    LeaderElection(#[from] LeaderError),
}

/// The requeue after a successful pass, with the default [`RequeuePolicy`].
#[cfg(test)]
pub(crate) fn action_for(outcome: &PassOutcome) -> Action {
    RequeuePolicy::default().action_for(outcome)
}

/// The back-off after a failed pass, with the default [`RequeuePolicy`].
#[cfg(test)]
pub(crate) fn backoff_for(error: &ReconcileError) -> Action {
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
    tracing::warn!(cluster = %cluster.name_any(), category = error.category(), error = %fdb_shared::error_chain::ErrorChain(error), "reconcile failed");
    shared.requeue.backoff_for(error)
}

/// Binds the endpoints' address: before anything else runs, so that a taken address
/// stops the operator before it watches or takes the Lease.
fn bind_endpoints(address: SocketAddr) -> Result<tokio::net::TcpListener, RunError> {
    fdb_bounded_http::limited::listen(address, ENDPOINT_BACKLOG)
        .map_err(|source| RunError::Metrics { address, source })
}

async fn serve_endpoints(
    app: axum::Router,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    if let Ok(bound) = listener.local_addr() {
        tracing::info!(address = %bound, "serving /metrics, /healthz and /readyz");
    }
    endpoints::serve(listener, app, Slots::new(ENDPOINT_LIMITS), shutdown).await;
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

/// Runs the controller until SIGINT/SIGTERM.
pub(crate) async fn run(ctx: Context, options: RunOptions) -> Result<(), RunError> {
    run_with(ctx, options, StopSignals::from_signals()).await
}

/// Runs the controller until `shutdown` completes, then lets the running reconciles
/// finish and stops (the metrics endpoint too). This is [`run`] with the signals
/// replaced by a future, for embedding and tests.
pub async fn run_until(
    ctx: Context,
    options: RunOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    run_with(ctx, options, StopSignals::on(shutdown.boxed().shared())).await
}

/// The kube-runtime controller over the FoundationDBClusters and what they own, run
/// until it stops on `shutdown`; `/readyz` turns ready once its caches synced. The
/// watches of the owned objects fill the passes' caches ([`ObjectCache`]) and trigger
/// reconciles of their owners.
async fn run_controller(
    shared: Arc<ControllerState>,
    namespace: Option<String>,
    concurrency: u16,
    graceful: StopFuture,
    health: Arc<Health>,
    cache_selector: CacheSelector,
) {
    let client = shared.ctx.kube.clone();
    let (cache, streams) = ObjectCache::new(&client, namespace.as_deref(), cache_selector);
    let cache = Arc::new(cache);
    let shared = {
        let mut ctx = shared.ctx.clone();
        ctx.cache = Some(cache.clone());
        Arc::new(ControllerState {
            ctx,
            requeue: shared.requeue.clone(),
        })
    };
    let namespace = namespace.as_deref();
    let config = watcher::Config::default();
    let controller = Controller::new(
        api::<FoundationDBCluster>(&client, namespace),
        config.clone(),
    )
    .with_config(ControllerConfig::default().concurrency(concurrency.max(1)))
    .owns_stream(streams.pods)
    .owns_stream(streams.pvcs)
    .owns_stream(streams.services)
    .owns_stream(streams.config_maps);
    // The backup and restore controllers run beside the cluster's (while this replica
    // leads), stopped the same way.
    let backups = crate::backup::production::run_controllers(
        shared.ctx.clone(),
        namespace.map(ToOwned::to_owned),
        shared.requeue.clone(),
        graceful.clone(),
    );
    let store = controller.store();
    let stopped_before_sync = graceful.clone();
    let controller = controller.graceful_shutdown_on(graceful);
    health.set(Phase::Syncing);
    let run = controller
        .run(reconcile, error_policy, shared.clone())
        .for_each(|result| async move {
            match result {
                Ok((object, action)) => tracing::debug!(%object, ?action, "reconciled"),
                Err(error) if reported_elsewhere(&error) => {
                    tracing::debug!(error = %fdb_shared::error_chain::ErrorChain(&error), "controller event");
                }
                Err(error) => {
                    tracing::warn!(error = %fdb_shared::error_chain::ErrorChain(&error), "watching failed; retrying with back-off")
                }
            }
        });
    let run = future::join(run, backups).map(drop);
    tokio::pin!(run);
    let synced = async {
        // Passes LIST until the object caches have their first lists: ready means the
        // controller works as it will in steady state.
        store.wait_until_ready().await.is_ok() && cache.wait_ready(Duration::MAX).await
    };
    tokio::select! {
        () = &mut run => return,
        // kube-runtime holds its reconcilers until the first list, and a graceful stop
        // ends the watches that would bring it: waiting would never end. No cluster
        // reconcile has started yet, so there is nothing to let finish.
        () = stopped_before_sync => {
            tracing::info!("stopped before the caches synced");
            return;
        }
        synced = synced => {
            if synced {
                tracing::info!("the caches synced; ready");
                health.set(Phase::Ready);
            }
        }
    }
    run.await;
}

/// Reconciles while this replica holds the leader lease (always, without leader
/// election) until a stop is asked for. A leader that cannot renew the Lease within its
/// renew deadline stops acting at once (its running reconciles are dropped: another
/// replica may take over soon) and stands by for the Lease again, with fresh caches once
/// it leads again; an API server unreachable for a while is survived this way. A stop
/// asked for always ends in `Ok` ([`lifecycle`]).
async fn lead_and_run(
    shared: Arc<ControllerState>,
    options: &RunOptions,
    stop: StopSignals,
) -> Result<(), RunError> {
    let health = options.health.clone();
    let metrics = shared.ctx.metrics.clone();
    let controller = |shared: Arc<ControllerState>| {
        run_controller(
            shared,
            options.namespace.clone(),
            options.max_concurrent_reconciles,
            stop.graceful.clone(),
            health.clone(),
            options.cache_selector.clone(),
        )
    };
    let grace = options.graceful_shutdown_timeout;
    let Some(election) = options.leader_election.clone() else {
        metrics.leader.set(1);
        let hold = future::pending::<()>();
        lifecycle::reconcile_until_stopped(controller(shared), hold, &stop, grace).await;
        health.set(Phase::Stopping);
        metrics.leader.set(0);
        return Ok(());
    };
    let mut lock = LeaseLock::new(shared.ctx.kube.clone(), election, shared.ctx.clock.clone())?;
    loop {
        health.set(Phase::Standby);
        tracing::info!(
            identity = %lock.config().identity,
            lease = %lock.config().lease_name,
            "waiting for the leader lease"
        );
        tokio::select! {
            () = lock.acquire() => {}
            () = stop.graceful.clone() => {
                health.set(Phase::Stopping);
                return Ok(());
            }
        }
        metrics.leader.set(1);
        let ended = lifecycle::reconcile_until_stopped(
            controller(shared.clone()),
            lock.hold(),
            &stop,
            grace,
        )
        .await;
        metrics.leader.set(0);
        if ended == Ended::LeaseLost {
            tracing::error!(
                identity = %lock.config().identity,
                lease = %lock.config().lease_name,
                "lost the leader lease: stopped reconciling; standing by for it again"
            );
            continue;
        }
        health.set(Phase::Stopping);
        // The Lease is given up even when the last renewals failed (another replica may
        // then take it at once): retried for a renew deadline at most, which keeps the
        // default grace and this within a pod's 30 s termination grace period.
        let patience = lock.config().renew_deadline;
        lock.release_within(patience).await;
        return Ok(());
    }
}

async fn run_with(
    mut ctx: Context,
    options: RunOptions,
    stop: StopSignals,
) -> Result<(), RunError> {
    // Admin latencies and sidecar errors are measured around whatever providers run.
    ctx.admin = Arc::new(MeteredAdminProvider::new(
        ctx.admin.clone(),
        ctx.metrics.clone(),
    ));
    ctx.sidecars = Arc::new(MeteredSidecarProvider::new(
        ctx.sidecars.clone(),
        ctx.metrics.clone(),
    ));
    let listener = options.metrics_address.map(bind_endpoints).transpose()?;
    let shared = Arc::new(ControllerState {
        ctx,
        requeue: options.requeue.clone(),
    });
    let app = router(shared.ctx.metrics.clone(), options.health.clone());
    let graceful = stop.graceful.clone();
    let work = lead_and_run(shared, &options, stop);
    match listener {
        Some(listener) => {
            let server = serve_endpoints(app, listener, graceful);
            tokio::pin!(work, server);
            tokio::select! {
                result = &mut work => result,
                () = &mut server => {
                    // The endpoints stop on the same signal as the controller, and
                    // sooner: the controller still has to finish its running reconciles.
                    work.await
                }
            }
        }
        None => work.await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::pass::outcome::PassReport;
    use crate::controller::pass::requeue::{RESYNC_INTERVAL, UNRECONCILED_INTERVAL};

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
        let done = PassReport::new(PassOutcome::Completed, true);
        assert_eq!(policy.after_pass(&done), Action::requeue(RESYNC_INTERVAL));
        let not_yet = PassReport::new(PassOutcome::Completed, false);
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
