//! `fdb-operator run`: the controller over FoundationDBCluster in a real Kubernetes
//! cluster. Each reconcile is one [`run_pass`]; the pass's requeue becomes the next
//! reconcile time; errors back off by category; `/metrics` serves Prometheus metrics.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use fdb_shared::api::FoundationDBCluster;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};

use super::context::Context;
use super::driver::run_pass;
use super::errors::ReconcileError;
use super::outcome::PassOutcome;

/// How often a reconciled cluster is looked at again without any change.
pub const RESYNC_INTERVAL: Duration = Duration::from_secs(600);

/// What `run` needs besides the context.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Watch only this namespace (all namespaces when `None`).
    pub namespace: Option<String>,
    /// Where `/metrics` is served (not served when `None`).
    pub metrics_address: Option<SocketAddr>,
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

/// The requeue after a successful pass.
pub fn action_for(outcome: &PassOutcome) -> Action {
    match outcome {
        PassOutcome::Completed => Action::requeue(RESYNC_INTERVAL),
        PassOutcome::Requeue { delay, .. } => Action::requeue((*delay).max(Duration::from_secs(1))),
    }
}

/// The back-off after a failed pass: an invalid spec waits for the next change (or a
/// long resync); transient failures retry soon; others later.
pub fn backoff_for(error: &ReconcileError) -> Action {
    match error {
        ReconcileError::InvalidSpec(_) | ReconcileError::ClusterNotFound { .. } => {
            Action::requeue(RESYNC_INTERVAL)
        }
        error if error.is_transient() => Action::requeue(Duration::from_secs(15)),
        _ => Action::requeue(Duration::from_secs(120)),
    }
}

async fn reconcile(
    cluster: Arc<FoundationDBCluster>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let namespace = cluster.namespace().unwrap_or_default();
    let report = run_pass(&ctx, &namespace, &cluster.name_any()).await?;
    Ok(action_for(&report.outcome))
}

fn error_policy(
    cluster: Arc<FoundationDBCluster>,
    error: &ReconcileError,
    _ctx: Arc<Context>,
) -> Action {
    tracing::warn!(cluster = %cluster.name_any(), category = error.category(), %error, "reconcile failed");
    backoff_for(error)
}

async fn serve_metrics(ctx: Arc<Context>, address: SocketAddr) -> Result<(), RunError> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|source| RunError::Metrics { address, source })?;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let ctx = ctx.clone();
            async move { ctx.metrics.encode() }
        }),
    );
    tracing::info!(%address, "serving metrics");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|source| RunError::Metrics { address, source })
}

/// Runs the controller until SIGINT/SIGTERM.
pub async fn run(ctx: Context, options: RunOptions) -> Result<(), RunError> {
    let ctx = Arc::new(ctx);
    let client = ctx.kube.clone();
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
    .owns(api::<ConfigMap>(&client, namespace), config)
    .shutdown_on_signal()
    .run(reconcile, error_policy, ctx.clone())
    .for_each(|result| async move {
        match result {
            Ok((object, action)) => tracing::debug!(%object, ?action, "reconciled"),
            Err(error) => tracing::debug!(%error, "controller event"),
        }
    });
    match options.metrics_address {
        Some(address) => {
            let metrics = serve_metrics(ctx, address);
            tokio::select! {
                () = controller => Ok(()),
                result = metrics => result,
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
}
