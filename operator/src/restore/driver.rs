//! One reconcile pass of a FoundationDBRestore.
//!
//! The restore is started once: a pass that finds `status.state` unset first asks
//! `fdbrestore status` whether a restore of the same URL already exists (the operator may
//! have started it and crashed before writing the status), and starts one only if not.

use std::time::Duration;

use fdb_shared::api::{FoundationDBCluster, FoundationDBRestore, FoundationDBRestoreStatus};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::backup::BackupError;
use crate::controller::{Context, PassOutcome, PassReport};
use crate::fdb::{
    AdminClient, KeyRange, KeyRangeError, RestoreProgress, RestoreStart, RestoreState,
};

/// How often a running restore's state is read.
pub const RESTORE_POLL: Duration = Duration::from_secs(30);

fn requeue(step: &'static str, reason: impl Into<String>) -> PassReport {
    PassReport::new(
        PassOutcome::Requeue {
            delay: RESTORE_POLL,
            reason: reason.into(),
            step,
        },
        false,
    )
}

/// The `fdbrestore start` request of a restore; an error when a key range does not
/// parse (validation refuses such a spec first): never a request that restores more
/// than the spec's ranges.
pub fn restore_request(restore: &FoundationDBRestore) -> Result<RestoreStart, KeyRangeError> {
    let name = restore.metadata.name.clone().unwrap_or_default();
    Ok(RestoreStart {
        url: restore.spec.blob_store_configuration.url(&name),
        key_ranges: restore
            .spec
            .key_ranges
            .iter()
            .map(|range| KeyRange::parse(&range.start, &range.end))
            .collect::<Result<_, _>>()?,
        version: restore.spec.backup_version,
        encryption_key_path: restore.spec.encryption_key_path.clone(),
        custom_parameters: restore
            .spec
            .custom_parameters
            .iter()
            .map(|p| format!("--{p}"))
            .collect(),
    })
}

/// The status for what `fdbrestore status` reports about the restore of `url`.
fn status_of(progress: &RestoreProgress, url: &str) -> Option<FoundationDBRestoreStatus> {
    let state = progress.state?;
    if progress.url.as_deref().is_some_and(|u| u != url) {
        return None;
    }
    Some(FoundationDBRestoreStatus {
        running: state.is_running(),
        state: Some(state.as_str().to_owned()),
    })
}

/// Runs one pass over the restore `namespace/name`.
pub async fn run_restore_pass(
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<PassReport, BackupError> {
    crate::backup::driver::waiting_for_database(restore_pass(ctx, namespace, name).await)
}

async fn restore_pass(
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<PassReport, BackupError> {
    let restores: Api<FoundationDBRestore> = Api::namespaced(ctx.kube.clone(), namespace);
    let Some(restore) = restores
        .get_opt(name)
        .await
        .map_err(BackupError::kube(format!(
            "read foundationdbrestore {namespace}/{name}"
        )))?
    else {
        return Ok(PassReport::new(PassOutcome::Completed, true));
    };
    let done = |state: &str| RestoreState::parse(state).is_some_and(|s| !s.is_running());
    if restore
        .status
        .as_ref()
        .and_then(|s| s.state.as_deref())
        .is_some_and(done)
    {
        return Ok(PassReport::new(PassOutcome::Completed, true));
    }
    let report = crate::backup::validate::validate_restore(&restore);
    if !report.errors.is_empty() {
        // Nothing is started from an unusable spec; a spec change wakes the controller.
        return Ok(requeue(
            "ValidateSpec",
            format!("invalid spec: {}", report.errors.join("; ")),
        ));
    }
    let clusters: Api<FoundationDBCluster> = Api::namespaced(ctx.kube.clone(), namespace);
    let cluster_name = restore.spec.destination_cluster_name.clone();
    let Some(cluster) = clusters
        .get_opt(&cluster_name)
        .await
        .map_err(BackupError::kube(format!(
            "read foundationdbcluster {namespace}/{cluster_name}"
        )))?
    else {
        return Ok(requeue(
            "StartRestore",
            format!("the FoundationDBCluster {cluster_name:?} does not exist"),
        ));
    };
    let admin = ctx
        .admin
        .admin_for(&cluster)
        .map_err(BackupError::admin("connect to the database"))?;
    let request = match restore_request(&restore) {
        Ok(request) => request,
        Err(error) => {
            return Ok(requeue(
                "ValidateSpec",
                format!("invalid spec: spec.keyRanges: {error}"),
            ));
        }
    };
    let status = start_and_observe(admin.as_ref(), &restore, &request).await?;
    if restore.status.as_ref() != Some(&status) {
        write_status(&restores, name, &status).await?;
    }
    Ok(match status.state.as_deref() {
        Some(state) if done(state) => PassReport::new(PassOutcome::Completed, true),
        Some(state) => requeue("UpdateRestoreStatus", format!("the restore is {state}")),
        None => requeue(
            "UpdateRestoreStatus",
            "the database reports no restore of this backup yet",
        ),
    })
}

/// StartRestore unless the restore has started (by our status, or by the database's),
/// then the restore's state as the database reports it.
async fn start_and_observe(
    admin: &dyn AdminClient,
    restore: &FoundationDBRestore,
    request: &RestoreStart,
) -> Result<FoundationDBRestoreStatus, BackupError> {
    let mut progress = admin.restore_status().await.map_err(BackupError::admin(
        "UpdateRestoreStatus: read the restore status",
    ))?;
    let started = restore.status.as_ref().is_some_and(|s| s.state.is_some());
    if !started && status_of(&progress, &request.url).is_none() {
        admin
            .start_restore(request)
            .await
            .map_err(BackupError::admin("StartRestore: start the restore"))?;
        progress = admin.restore_status().await.map_err(BackupError::admin(
            "UpdateRestoreStatus: read the restore status",
        ))?;
    }
    Ok(
        status_of(&progress, &request.url).unwrap_or(FoundationDBRestoreStatus {
            running: false,
            state: None,
        }),
    )
}

/// UpdateRestoreStatus: the status subresource follows the database.
async fn write_status(
    restores: &Api<FoundationDBRestore>,
    name: &str,
    status: &FoundationDBRestoreStatus,
) -> Result<(), BackupError> {
    restores
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"running": status.running, "state": status.state}})),
        )
        .await
        .map_err(BackupError::kube(format!(
            "UpdateRestoreStatus: update the status of foundationdbrestore {name}"
        )))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_follows_the_spec() {
        let restore: FoundationDBRestore = serde_yaml_ng::from_str(
            "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBRestore\n\
             metadata: {name: r, namespace: default}\n\
             spec: {destinationClusterName: c, backupVersion: 7,\n\
             blobStoreConfiguration: {accountName: a@s3:443, backupName: b, urlParameters: [x=1]},\n\
             keyRanges: [{start: a, end: z}], customParameters: [knob_x=1]}\n",
        )
        .unwrap();
        let request = restore_request(&restore).unwrap();
        assert_eq!(request.url, "blobstore://a@s3:443/b?bucket=fdb-backups&x=1");
        assert_eq!(request.version, Some(7));
        assert_eq!(request.key_ranges.len(), 1);
        assert_eq!(request.custom_parameters, vec!["--knob_x=1".to_owned()]);
        let progress = RestoreProgress {
            state: Some(RestoreState::Running),
            url: Some(request.url.clone()),
            version: None,
        };
        assert_eq!(
            status_of(&progress, &request.url),
            Some(FoundationDBRestoreStatus {
                running: true,
                state: Some("running".into())
            })
        );
        assert_eq!(status_of(&progress, "blobstore://other"), None);
    }
}
