//! One reconcile pass of a FoundationDBBackup: the ordered steps UpdateBackupStatus,
//! UpdateBackupAgents, StartBackup, StopBackup, ToggleBackupPaused, ModifyBackup and
//! UpdateBackupStatus again, each deciding from a fresh observation ([`super::plan`]),
//! so a pass interrupted anywhere is simply run again. Deletion goes through a finalizer:
//! the `deletionPolicy` is carried out (`stop` discontinues the backup first) and the
//! agents' Deployment removed before the resource may go.

use std::sync::Arc;
use std::time::Duration;

use fdb_shared::api::{FoundationDBBackup, FoundationDBBackupStatus, FoundationDBCluster};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::agent_pods;
use super::deployment::desired_deployment;
use super::errors::BackupError;
use super::plan::{self, Observed};
use crate::controller::{Context, PassOutcome, PassReport};
use crate::fdb::AdminClient;
use crate::fdb::AdminError;

/// The finalizer that lets the operator carry out the deletion policy.
pub const FINALIZER: &str = "foundationdb.org/backup";
/// How often the status of a running, restorable backup is refreshed.
pub const STATUS_REFRESH: Duration = Duration::from_secs(300);
/// How often a backup waiting for its first snapshot is looked at.
pub const SNAPSHOT_WAIT: Duration = Duration::from_secs(120);
/// How often a backup that cannot progress (no agents) is looked at again.
pub const STALL_WAIT: Duration = Duration::from_secs(60);
/// How long to wait for a missing cluster.
const CLUSTER_WAIT: Duration = Duration::from_secs(30);

fn requeue(delay: Duration, step: &'static str, reason: impl Into<String>) -> PassReport {
    PassReport::new(
        PassOutcome::Requeue {
            delay,
            reason: reason.into(),
            step,
        },
        false,
    )
}

fn completed(reconciled: bool) -> PassReport {
    PassReport::new(PassOutcome::Completed, reconciled)
}

/// Runs one pass over the backup `namespace/name`.
pub async fn run_backup_pass(
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<PassReport, BackupError> {
    let backups: Api<FoundationDBBackup> = Api::namespaced(ctx.kube.clone(), namespace);
    let Some(backup) = backups
        .get_opt(name)
        .await
        .map_err(BackupError::kube(format!(
            "read foundationdbbackup {namespace}/{name}"
        )))?
    else {
        return Ok(completed(true));
    };
    let clusters: Api<FoundationDBCluster> = Api::namespaced(ctx.kube.clone(), namespace);
    let cluster_name = backup.spec.cluster_name.clone();
    // kube puts the name into the request path as it is: only a possible object name
    // is looked up (validation below refuses the others, naming the field).
    let cluster = if super::validate::is_object_name(&cluster_name) {
        clusters
            .get_opt(&cluster_name)
            .await
            .map_err(BackupError::kube(format!(
                "read foundationdbcluster {namespace}/{cluster_name}"
            )))?
    } else {
        None
    };
    if backup.metadata.deletion_timestamp.is_some() {
        return finalize(ctx, &backups, &backup, cluster.as_ref()).await;
    }
    if !backup
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == FINALIZER)
    {
        set_finalizer(&backups, &backup, true).await?;
    }
    let report = super::validate::validate_backup(&backup);
    if !report.errors.is_empty() {
        let message = format!("invalid spec: {}", report.errors.join("; "));
        refuse(&backups, &backup, &message).await?;
        return Ok(requeue(STALL_WAIT, "ValidateSpec", message));
    }
    // The agents' template is judged before any Deployment exists for it, as an
    // invalid spec is (`run --restrict-pod-templates`).
    if let Err(refused) = ctx.settings.pod_template_policy.check_backup(&backup) {
        let message = refused.to_string();
        refuse(&backups, &backup, &message).await?;
        return Ok(requeue(STALL_WAIT, "ValidateSpec", message));
    }
    let Some(cluster) = cluster else {
        return Ok(requeue(
            CLUSTER_WAIT,
            "UpdateBackupAgents",
            format!("the FoundationDBCluster {cluster_name:?} does not exist"),
        ));
    };
    let admin = ctx
        .admin
        .admin_for(&cluster)
        .map_err(BackupError::admin("connect to the database"))?;
    let pass = BackupPass {
        backups,
        deployments: Api::namespaced(ctx.kube.clone(), namespace),
        pods: Api::namespaced(ctx.kube.clone(), namespace),
        now: ctx.clock.now_unix(),
        admin,
        backup,
        cluster,
    };
    waiting_for_database(pass.run().await)
}

/// An unavailable database is something to wait for, not a failure of the pass.
pub(crate) fn waiting_for_database(
    result: Result<PassReport, BackupError>,
) -> Result<PassReport, BackupError> {
    match result {
        Err(BackupError::Admin {
            source: source @ crate::fdb::AdminError::Unavailable { .. },
            ..
        }) => Ok(requeue(
            CLUSTER_WAIT,
            "UpdateBackupStatus",
            format!(
                "waiting for the database to be available ({})",
                fdb_shared::error_chain::ErrorChain(&source)
            ),
        )),
        other => other,
    }
}

/// What one pass works with.
struct BackupPass {
    backups: Api<FoundationDBBackup>,
    deployments: Api<Deployment>,
    pods: Api<Pod>,
    /// The pass's time (unix seconds).
    now: i64,
    admin: Arc<dyn AdminClient>,
    backup: FoundationDBBackup,
    cluster: FoundationDBCluster,
}

impl BackupPass {
    fn name(&self) -> String {
        self.backup.metadata.name.clone().unwrap_or_default()
    }

    async fn run(mut self) -> Result<PassReport, BackupError> {
        // UpdateBackupStatus
        let mut observed = self.observe().await?;
        self.write_status(&observed).await?;
        // Each step decides from the latest observation; after a step acts, the next
        // one observes again (what it did may change what the next one must do).
        // UpdateBackupAgents
        if !observed.agents_current() {
            self.apply_deployment(&observed).await?;
            observed = self.observe().await?;
        }
        let terminal_wait = self.delete_terminal_agents(&observed).await?;
        // StartBackup
        if let Some(request) = plan::start(&self.backup, &observed) {
            self.admin
                .start_backup(&request)
                .await
                .map_err(BackupError::admin("StartBackup: start the backup"))?;
            observed = self.observe().await?;
        }
        // StopBackup
        if plan::stop(&self.backup, &observed) {
            self.admin
                .discontinue_backup(self.backup.spec.tag())
                .await
                .map_err(BackupError::admin("StopBackup: discontinue the backup"))?;
            observed = self.observe().await?;
        }
        // ToggleBackupPaused
        if let Some(paused) = plan::toggle_pause(&self.backup, &observed) {
            self.admin
                .set_backups_paused(paused)
                .await
                .map_err(BackupError::admin(if paused {
                    "ToggleBackupPaused: pause the backup agents"
                } else {
                    "ToggleBackupPaused: resume the backup agents"
                }))?;
            observed = self.observe().await?;
        }
        // ModifyBackup
        if let Some(request) = plan::modify(&self.backup, &observed) {
            match self.admin.modify_backup(&request).await {
                Ok(()) => observed = self.observe().await?,
                Err(error) if request.encryption_key_path.is_some() && refuses_key(&error) => {
                    // The tool is older than the database (the image's tools of this
                    // minor predate apple/foundationdb #12554): without the key the new
                    // destination would be unencrypted, so it stays.
                    let message = "spec.blobStoreConfiguration asks for a new destination of a \
                         backup encrypted with spec.encryptionKeyPath, but this operator's \
                         fdbbackup does not take --encryption-key-file on modify (a release \
                         before 7.3.72 or 7.4.6) and would write it unencrypted: the \
                         destination stays; stop the backup (backupState: Stopped) and start \
                         it again";
                    self.write_status(&observed).await?;
                    return Ok(requeue(STALL_WAIT, "ModifyBackup", message));
                }
                Err(error) => {
                    return Err(BackupError::admin("ModifyBackup: modify the backup")(error));
                }
            }
        }
        // UpdateBackupStatus
        let status = self.write_status(&observed).await?;
        Ok(sooner(outcome(&self.backup, &status), terminal_wait))
    }

    /// Deletes the agent pods stuck in a terminal phase that are old enough
    /// ([`super::agent_pods`]); the seconds until a younger one is, if one waits.
    async fn delete_terminal_agents(
        &self,
        observed: &Observed,
    ) -> Result<Option<i64>, BackupError> {
        let Some(live) = &observed.deployment else {
            return Ok(None);
        };
        let Some(selector) = live
            .spec
            .as_ref()
            .and_then(|s| agent_pods::selector_of(&s.selector))
        else {
            return Ok(None);
        };
        let pods = self
            .pods
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(BackupError::kube(format!(
                "UpdateBackupAgents: list the agent pods ({selector})"
            )))?;
        let decision = agent_pods::decide(&pods.items, self.now);
        for pod in &decision.delete {
            tracing::info!(pod = %pod.name, state = %pod.state, "deleting a backup agent pod stuck in a terminal state");
            match self.pods.delete(&pod.name, &DeleteParams::default()).await {
                Ok(_) => {}
                // Gone meanwhile: what the deletion wanted.
                Err(kube::Error::Api(response)) if response.code == 404 => {}
                Err(error) => {
                    return Err(BackupError::kube(format!(
                        "UpdateBackupAgents: delete the terminal agent pod {}",
                        pod.name
                    ))(error));
                }
            }
        }
        Ok(decision.next_in)
    }

    /// Reads the agents' Deployment, `fdbbackup status` and `status json`.
    async fn observe(&self) -> Result<Observed, BackupError> {
        let desired = desired_deployment(&self.backup, &self.cluster);
        let deployment_name = desired.metadata.name.clone().unwrap_or_default();
        let deployment =
            self.deployments
                .get_opt(&deployment_name)
                .await
                .map_err(BackupError::kube(format!(
                    "read deployment {deployment_name}"
                )))?;
        let backup = self
            .admin
            .backup_status(self.backup.spec.tag())
            .await
            .map_err(BackupError::admin(
                "UpdateBackupStatus: read the backup status",
            ))?;
        let agents_reporting = self
            .admin
            .status()
            .await
            .map_err(BackupError::admin(
                "UpdateBackupStatus: read the database status",
            ))?
            .cluster
            .layers
            .backup
            .and_then(|layer| layer.instances_running);
        let running_version = self
            .cluster
            .status
            .as_ref()
            .and_then(|s| s.running_version.as_deref())
            .and_then(|v| v.parse().ok());
        Ok(Observed {
            running_version,
            deployment,
            desired_deployment: desired,
            backup,
            agents_reporting,
        })
    }

    /// Creates the Deployment, or replaces the live one with the desired one.
    async fn apply_deployment(&self, observed: &Observed) -> Result<(), BackupError> {
        let mut desired = observed.desired_deployment.clone();
        let name = desired.metadata.name.clone().unwrap_or_default();
        match &observed.deployment {
            None => {
                self.deployments
                    .create(&PostParams::default(), &desired)
                    .await
                    .map_err(BackupError::kube(format!(
                        "UpdateBackupAgents: create deployment {name}"
                    )))?;
            }
            Some(live) => {
                desired.metadata.resource_version = live.metadata.resource_version.clone();
                self.deployments
                    .replace(&name, &PostParams::default(), &desired)
                    .await
                    .map_err(BackupError::kube(format!(
                        "UpdateBackupAgents: update deployment {name}"
                    )))?;
            }
        }
        Ok(())
    }

    /// Writes the status when it changed; returns it.
    async fn write_status(
        &mut self,
        observed: &Observed,
    ) -> Result<FoundationDBBackupStatus, BackupError> {
        let status = plan::status(&self.backup, observed);
        if self.backup.status.as_ref() != Some(&status) {
            let name = self.name();
            let updated = self
                .backups
                .patch_status(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "status": status_patch(&status)? })),
                )
                .await
                .map_err(BackupError::kube(format!(
                    "UpdateBackupStatus: update the status of foundationdbbackup {name}"
                )))?;
            self.backup = updated;
        }
        Ok(status)
    }
}

/// The status as a merge patch: fields that are unset now are removed (`null`).
fn status_patch(status: &FoundationDBBackupStatus) -> Result<Value, BackupError> {
    let mut value = serde_json::to_value(status).map_err(|source| BackupError::Json {
        what: "the backup status".to_owned(),
        source,
    })?;
    if let Some(object) = value.as_object_mut() {
        for field in ["agentCount", "backupDetails", "message"] {
            object.entry(field).or_insert(Value::Null);
        }
        if let Some(generations) = object.get_mut("generations").and_then(Value::as_object_mut) {
            for field in [
                "reconciled",
                "needsBackupAgentUpdate",
                "needsBackupStart",
                "needsBackupStop",
                "needsBackupPauseToggle",
                "needsBackupModification",
            ] {
                generations.entry(field).or_insert(Value::Null);
            }
        } else {
            object.insert("generations".to_owned(), Value::Null);
        }
    }
    Ok(value)
}

/// `report`, looked at again within `wait` seconds when a terminal agent pod waits to be
/// old enough for deletion.
fn sooner(report: PassReport, wait: Option<i64>) -> PassReport {
    let Some(wait) = wait else {
        return report;
    };
    let delay = Duration::from_secs(u64::try_from(wait.max(1)).unwrap_or(1));
    let later = match &report.outcome {
        PassOutcome::Requeue { delay: current, .. } => *current > delay,
        _ => true,
    };
    if !later {
        return report;
    }
    let mut sooner = requeue(
        delay,
        "UpdateBackupAgents",
        "an agent pod in a terminal state is too young to be deleted",
    );
    sooner.reconciled = report.reconciled;
    sooner
}

/// How a pass ends: waiting while the backup cannot progress or has no snapshot yet, a
/// periodic refresh while it runs, done when it is stopped.
fn outcome(backup: &FoundationDBBackup, status: &FoundationDBBackupStatus) -> PassReport {
    if let Some(message) = &status.message {
        return requeue(STALL_WAIT, "UpdateBackupStatus", message.clone());
    }
    let generation = backup.metadata.generation.unwrap_or(0);
    let reconciled = status.generations.reconciled == Some(generation);
    match &status.backup_details {
        Some(details) if details.running && !details.restorable => requeue(
            SNAPSHOT_WAIT,
            "UpdateBackupStatus",
            "waiting for the backup's first snapshot",
        ),
        Some(details) if details.running => {
            let mut report = requeue(
                STATUS_REFRESH,
                "UpdateBackupStatus",
                "refreshing the status of the running backup",
            );
            report.reconciled = reconciled;
            report
        }
        _ if !reconciled => requeue(
            STALL_WAIT,
            "UpdateBackupStatus",
            "the backup does not match its spec yet",
        ),
        _ => completed(true),
    }
}

/// An invalid spec: the status says why, and nothing else is done.
async fn refuse(
    backups: &Api<FoundationDBBackup>,
    backup: &FoundationDBBackup,
    message: &str,
) -> Result<(), BackupError> {
    if backup.status.as_ref().and_then(|s| s.message.as_deref()) == Some(message) {
        return Ok(());
    }
    let name = backup.metadata.name.clone().unwrap_or_default();
    backups
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"message": message}})),
        )
        .await
        .map_err(BackupError::kube(format!(
            "ValidateSpec: update the status of foundationdbbackup {name}"
        )))?;
    Ok(())
}

async fn set_finalizer(
    backups: &Api<FoundationDBBackup>,
    backup: &FoundationDBBackup,
    present: bool,
) -> Result<(), BackupError> {
    let mut finalizers: Vec<String> = backup
        .metadata
        .finalizers
        .iter()
        .flatten()
        .filter(|f| *f != FINALIZER)
        .cloned()
        .collect();
    if present {
        finalizers.push(FINALIZER.to_owned());
    }
    let name = backup.metadata.name.clone().unwrap_or_default();
    // The resource version makes a concurrent change of the finalizers a conflict.
    let patch = json!({
        "metadata": {
            "finalizers": finalizers,
            "resourceVersion": backup.metadata.resource_version,
        }
    });
    backups
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(BackupError::kube(format!(
            "{} the finalizer of foundationdbbackup {name}",
            if present { "add" } else { "remove" }
        )))?;
    Ok(())
}

/// Deletion: carries out the deletion policy, removes the agents, then the finalizer.
async fn finalize(
    ctx: &Context,
    backups: &Api<FoundationDBBackup>,
    backup: &FoundationDBBackup,
    cluster: Option<&FoundationDBCluster>,
) -> Result<PassReport, BackupError> {
    if !backup
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == FINALIZER)
    {
        return Ok(completed(true));
    }
    let policy = backup.spec.deletion_policy();
    if matches!(policy, "stop" | "cleanup")
        && let Some(cluster) = cluster
    {
        let admin = ctx
            .admin
            .admin_for(cluster)
            .map_err(BackupError::admin("connect to the database"))?;
        let tag = backup.spec.tag();
        let status = admin
            .backup_status(tag)
            .await
            .map_err(BackupError::admin("DeleteBackup: read the backup status"))?;
        if status.status.running == Some(true) {
            admin
                .discontinue_backup(tag)
                .await
                .map_err(BackupError::admin(
                    "DeleteBackup: discontinue the backup before the resource goes",
                ))?;
        }
        if policy == "cleanup" {
            admin
                .delete_backup_data(&plan::backup_url(backup))
                .await
                .map_err(BackupError::admin(
                    "DeleteBackup: delete the backup's files (deletionPolicy cleanup)",
                ))?;
        }
    }
    let namespace = backup.metadata.namespace.clone().unwrap_or_default();
    let deployments: Api<Deployment> = Api::namespaced(ctx.kube.clone(), &namespace);
    let name = super::deployment::deployment_name(backup);
    if deployments
        .get_opt(&name)
        .await
        .map_err(BackupError::kube(format!("read deployment {name}")))?
        .is_some()
    {
        deployments
            .delete(&name, &DeleteParams::default())
            .await
            .map_err(BackupError::kube(format!(
                "DeleteBackup: delete deployment {name}"
            )))?;
    }
    set_finalizer(backups, backup, false).await?;
    Ok(completed(true))
}

/// Whether `fdbbackup modify` refused `--encryption-key-file` as an unknown option (its
/// releases before apple/foundationdb #12554 print ``ERROR: unknown option
/// `--encryption-key-file'``).
fn refuses_key(error: &AdminError) -> bool {
    matches!(error, AdminError::Failed { stderr, .. }
        if stderr.contains("unknown option `--encryption-key-file'"))
}
