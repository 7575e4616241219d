//! The backup and restore controllers of `fdb-operator run`: one kube-runtime Controller
//! over FoundationDBBackup (also woken by its agents' Deployments) and one over
//! FoundationDBRestore, each reconcile one pass, requeued as the pass asks.

use std::sync::Arc;

use fdb_shared::api::{FoundationDBBackup, FoundationDBRestore};
use futures::StreamExt;
use futures::future::{self, BoxFuture, Shared};
use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::runtime::controller::{Action, Controller, Error as ControllerError};
use kube::runtime::watcher;

use super::driver::run_backup_pass;
use super::errors::BackupError;
use crate::controller::Context;
use crate::controller::pass::requeue::RequeuePolicy;
use crate::restore::run_restore_pass;
use crate::scoped_api::api;

/// What each reconcile gets.
struct State {
    ctx: Context,
    requeue: RequeuePolicy,
}

async fn reconcile_backup(
    backup: Arc<FoundationDBBackup>,
    state: Arc<State>,
) -> Result<Action, BackupError> {
    let namespace = backup.namespace().unwrap_or_default();
    let report = run_backup_pass(&state.ctx, &namespace, &backup.name_any()).await?;
    Ok(state.requeue.after_pass(&report))
}

async fn reconcile_restore(
    restore: Arc<FoundationDBRestore>,
    state: Arc<State>,
) -> Result<Action, BackupError> {
    let namespace = restore.namespace().unwrap_or_default();
    let report = run_restore_pass(&state.ctx, &namespace, &restore.name_any()).await?;
    Ok(state.requeue.after_pass(&report))
}

fn error_policy<K: ResourceExt>(object: Arc<K>, error: &BackupError, state: Arc<State>) -> Action {
    tracing::warn!(object = %object.name_any(), error = %fdb_shared::error_chain::ErrorChain(error), "backup/restore reconcile failed");
    Action::requeue(state.requeue.transient_backoff)
}

/// Runs both controllers until `shutdown` completes (the operator's one stop request,
/// `controller/production/lifecycle.rs`), letting their running reconciles finish.
pub async fn run_controllers(
    ctx: Context,
    namespace: Option<String>,
    requeue: RequeuePolicy,
    shutdown: Shared<BoxFuture<'static, ()>>,
) {
    let state = Arc::new(State { ctx, requeue });
    let client = state.ctx.kube.clone();
    let namespace = namespace.as_deref();
    let config = watcher::Config::default();
    let backups = Controller::new(
        api::<FoundationDBBackup>(&client, namespace),
        config.clone(),
    )
    .owns(api::<Deployment>(&client, namespace), config.clone());
    let restores = Controller::new(api::<FoundationDBRestore>(&client, namespace), config);
    let stores = (backups.store(), restores.store());
    let (backups, restores) = (
        backups.graceful_shutdown_on(shutdown.clone()),
        restores.graceful_shutdown_on(shutdown.clone()),
    );
    let backups = backups
        .run(reconcile_backup, error_policy, state.clone())
        .for_each(|result| async move {
            match result {
                Err(
                    error @ (ControllerError::ReconcilerFailed(..)
                    | ControllerError::ObjectNotFound(_)),
                ) => tracing::debug!(error = %fdb_shared::error_chain::ErrorChain(&error), "backup controller event"),
                // Watch failures (RBAC, a missing CRD) show only here.
                Err(error) => {
                    tracing::warn!(error = %fdb_shared::error_chain::ErrorChain(&error), "backup watch failed; retrying with back-off")
                },
                Ok(_) => {}
            }
        });
    let restores = restores
        .run(reconcile_restore, error_policy, state)
        .for_each(|result| async move {
            match result {
                Err(
                    error @ (ControllerError::ReconcilerFailed(..)
                    | ControllerError::ObjectNotFound(_)),
                ) => tracing::debug!(error = %fdb_shared::error_chain::ErrorChain(&error), "restore controller event"),
                // Watch failures (RBAC, a missing CRD) show only here.
                Err(error) => {
                    tracing::warn!(error = %fdb_shared::error_chain::ErrorChain(&error), "restore watch failed; retrying with back-off")
                }
                Ok(_) => {}
            }
        });
    let both = future::join(backups, restores);
    tokio::pin!(both);
    let ready = async {
        stores.0.wait_until_ready().await.is_ok() && stores.1.wait_until_ready().await.is_ok()
    };
    // kube-runtime holds a controller's reconcilers until its first list, and a graceful
    // stop ends the watches that would bring it: a stop before both lists would wait
    // forever. Before them no backup reconcile has started, so there is nothing to wait
    // for (controller/production/mod.rs does the same for the clusters).
    tokio::select! {
        biased;
        _ = &mut both => return,
        _ = ready => {}
        () = shutdown => {
            tracing::info!("backup controllers stopped before their first lists");
            return;
        }
    }
    both.await;
}
