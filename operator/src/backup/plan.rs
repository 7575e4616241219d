//! What a backup pass decides from what it observed (pure functions): the status to
//! report, and for each step whether it has work.

use fdb_shared::FdbVersion;
use fdb_shared::api::backup::{BackupDetails, BackupGenerationStatus, BackupState};
use fdb_shared::api::{FoundationDBBackup, FoundationDBBackupStatus};
use fdb_shared::status_json::BackupStatus;
use k8s_openapi::api::apps::v1::Deployment;

use super::deployment::is_current;
use crate::fdb::{BackupModify, BackupStart};

/// What a backup pass saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// The live agent Deployment.
    pub deployment: Option<Deployment>,
    /// The Deployment the spec asks for.
    pub desired_deployment: Deployment,
    /// `fdbbackup status --json` of the backup's tag.
    pub backup: BackupStatus,
    /// Backup agents the database sees (`status json` `layers.backup.instances_running`),
    /// when it reports them.
    pub agents_reporting: Option<i64>,
    /// The version the cluster runs (its status's `runningVersion`), when known.
    pub running_version: Option<FdbVersion>,
}

impl Observed {
    /// Whether a backup runs on the tag.
    pub fn running(&self) -> bool {
        self.backup.status.running == Some(true)
    }

    /// Whether the database's backup agents are paused.
    pub fn paused(&self) -> bool {
        self.backup.backup_agents_paused == Some(true)
    }

    /// Ready agent pods of the Deployment.
    pub fn ready_agents(&self) -> i32 {
        self.deployment
            .as_ref()
            .and_then(|d| d.status.as_ref()?.ready_replicas)
            .unwrap_or(0)
    }

    /// Whether the live Deployment is the desired one.
    pub fn agents_current(&self) -> bool {
        self.deployment
            .as_ref()
            .is_some_and(|live| is_current(live, &self.desired_deployment))
    }
}

/// The backup URL of `backup`.
pub fn backup_url(backup: &FoundationDBBackup) -> String {
    backup
        .spec
        .blob_store_configuration
        .url(backup.metadata.name.as_deref().unwrap_or_default())
}

/// StartBackup: a backup that should run (or be paused) and does not.
pub fn start(backup: &FoundationDBBackup, observed: &Observed) -> Option<BackupStart> {
    if backup.spec.backup_state() == BackupState::Stopped || observed.running() {
        return None;
    }
    Some(BackupStart {
        tag: backup.spec.tag().to_owned(),
        url: backup_url(backup),
        snapshot_period_seconds: i64::from(backup.spec.snapshot_period_seconds()),
        encryption_key_path: backup.spec.encryption_key_path.clone(),
    })
}

/// StopBackup: a running backup asked to stop.
pub fn stop(backup: &FoundationDBBackup, observed: &Observed) -> bool {
    backup.spec.backup_state() == BackupState::Stopped && observed.running()
}

/// ToggleBackupPaused: `Some(true)` to pause, `Some(false)` to resume.
pub fn toggle_pause(backup: &FoundationDBBackup, observed: &Observed) -> Option<bool> {
    match backup.spec.backup_state() {
        BackupState::Paused if observed.running() && !observed.paused() => Some(true),
        BackupState::Running if observed.paused() => Some(false),
        _ => None,
    }
}

/// ModifyBackup: a running backup whose snapshot period or URL differs from the spec.
/// A new destination of an encrypted backup carries its key where `fdbbackup modify`
/// takes one; where it does not, the destination is not changed (modify would open the
/// new container unencrypted, field report FoundationDB/fdb-kubernetes-operator#2393):
/// [`encrypted_destination_refusal`] says why.
pub fn modify(backup: &FoundationDBBackup, observed: &Observed) -> Option<BackupModify> {
    if !observed.running() || backup.spec.backup_state() == BackupState::Stopped {
        return None;
    }
    let period = i64::from(backup.spec.snapshot_period_seconds());
    let url = backup_url(backup);
    let new_url = (observed.backup.destination_url.as_deref() != Some(url.as_str())).then_some(url);
    let key = backup.spec.encryption_key_path.clone();
    let url = new_url.filter(|_| key.is_none() || modify_keeps_encryption(observed));
    let request = BackupModify {
        tag: backup.spec.tag().to_owned(),
        encryption_key_path: url.as_ref().and(key),
        url,
        snapshot_period_seconds: (observed.backup.snapshot_interval_seconds != Some(period))
            .then_some(period),
    };
    (!request.is_empty()).then_some(request)
}

fn modify_keeps_encryption(observed: &Observed) -> bool {
    observed
        .running_version
        .as_ref()
        .is_some_and(FdbVersion::supports_backup_modify_encryption)
}

/// Why the destination of a running encrypted backup is not changed as the spec asks,
/// when it is not: the running FoundationDB's `fdbbackup modify` would drop the
/// encryption.
pub fn encrypted_destination_refusal(
    backup: &FoundationDBBackup,
    observed: &Observed,
) -> Option<String> {
    if !observed.running()
        || backup.spec.backup_state() == BackupState::Stopped
        || backup.spec.encryption_key_path.is_none()
        || modify_keeps_encryption(observed)
    {
        return None;
    }
    let url = backup_url(backup);
    (observed.backup.destination_url.as_deref() != Some(url.as_str())).then(|| {
        let version = observed
            .running_version
            .as_ref()
            .map_or_else(|| "unknown".to_owned(), ToString::to_string);
        format!(
            "spec.blobStoreConfiguration asks for a new destination ({url}) of a backup \
             encrypted with spec.encryptionKeyPath, but fdbbackup modify of FoundationDB \
             {version} would write the new destination unencrypted (7.3.72, 7.4.6 and later \
             keep the key): the destination stays; stop the backup (backupState: Stopped) \
             and start it again, or upgrade the cluster"
        )
    })
}

/// The status to report: details from fdbbackup, the agents, the pending work by
/// generation, and why the backup makes no progress when it makes none.
pub fn status(backup: &FoundationDBBackup, observed: &Observed) -> FoundationDBBackupStatus {
    let generation = backup.metadata.generation.unwrap_or(0);
    let pending = |needed: bool| needed.then_some(generation);
    let mut generations = BackupGenerationStatus {
        reconciled: None,
        needs_backup_agent_update: pending(!observed.agents_current()),
        needs_backup_start: pending(start(backup, observed).is_some()),
        needs_backup_stop: pending(stop(backup, observed)),
        needs_backup_pause_toggle: pending(toggle_pause(backup, observed).is_some()),
        needs_backup_modification: pending(
            modify(backup, observed).is_some()
                || encrypted_destination_refusal(backup, observed).is_some(),
        ),
    };
    let nothing_pending = generations == BackupGenerationStatus::default();
    let previous = backup
        .status
        .as_ref()
        .and_then(|s| s.generations.reconciled);
    generations.reconciled = if nothing_pending {
        Some(generation)
    } else {
        previous
    };
    let details = (observed.backup.uid.is_some() || observed.running()).then(|| BackupDetails {
        url: observed.backup.destination_url.clone(),
        running: observed.running(),
        paused: observed.paused(),
        restorable: observed.backup.restorable == Some(true),
        // The snapshot period the running backup uses, in seconds, as the Go operator
        // keeps it under this name (its tooling compares it with the spec's period).
        snapshot_time: observed.backup.snapshot_interval_seconds,
        tag: observed.backup.tag.clone(),
    });
    FoundationDBBackupStatus {
        agent_count: Some(observed.ready_agents()),
        deployment_configured: observed.agents_current(),
        backup_details: details,
        message: stall_message(backup, observed),
        generations,
    }
}

/// Why a backup that should make progress makes none.
fn stall_message(backup: &FoundationDBBackup, observed: &Observed) -> Option<String> {
    if backup.spec.backup_state() == BackupState::Stopped {
        return None;
    }
    let wanted = backup.spec.agent_count();
    if wanted <= 0 {
        return Some(
            "no backup agent is running: spec.agentCount is 0, so the backup makes no progress"
                .to_owned(),
        );
    }
    if observed.ready_agents() == 0 {
        return Some(format!(
            "no backup agent is running (0 of {wanted} agent pods ready): the backup makes no \
             progress until one runs"
        ));
    }
    if observed.agents_reporting == Some(0) {
        return Some(
            "no backup agent reports to the database: the backup makes no progress".to_owned(),
        );
    }
    if observed.paused() {
        return Some("the backup agents are paused".to_owned());
    }
    encrypted_destination_refusal(backup, observed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdb_shared::api::FoundationDBCluster;
    use fdb_shared::status_json::backup::BackupState as ToolState;
    use k8s_openapi::api::apps::v1::DeploymentStatus;

    fn backup(state: &str, period: i32) -> FoundationDBBackup {
        let mut backup: FoundationDBBackup = serde_yaml_ng::from_str(&format!(
            "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBBackup\n\
             metadata: {{name: b, namespace: default, generation: 3}}\n\
             spec: {{clusterName: c, backupState: {state}, snapshotPeriodSeconds: {period},\n\
             blobStoreConfiguration: {{accountName: a@s3:443}}}}\n"
        ))
        .unwrap();
        backup.metadata.uid = Some("u".into());
        backup
    }

    fn observed(backup: &FoundationDBBackup, running: bool, paused: bool, ready: i32) -> Observed {
        let cluster: FoundationDBCluster = serde_yaml_ng::from_str(
            "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\n\
             metadata: {name: c, namespace: default}\nspec: {version: 7.1.57}\n",
        )
        .unwrap();
        let desired = super::super::deployment::desired_deployment(backup, &cluster);
        let mut live = desired.clone();
        live.status = Some(DeploymentStatus {
            ready_replicas: Some(ready),
            ..DeploymentStatus::default()
        });
        Observed {
            deployment: Some(live),
            desired_deployment: desired,
            backup: BackupStatus {
                uid: running.then(|| "x".to_owned()),
                status: ToolState {
                    running: Some(running),
                    ..ToolState::default()
                },
                backup_agents_paused: Some(paused),
                destination_url: Some("blobstore://a@s3:443/b?bucket=fdb-backups".into()),
                snapshot_interval_seconds: Some(3600),
                ..BackupStatus::default()
            },
            agents_reporting: Some(i64::from(ready)),
            running_version: Some("7.1.57".parse().unwrap()),
        }
    }

    #[test]
    fn an_encrypted_backup_keeps_its_destination_where_modify_would_drop_the_key() {
        let mut encrypted = backup("Running", 3600);
        encrypted.spec.encryption_key_path = Some("/keys/k".into());
        encrypted.spec.blob_store_configuration.bucket = Some("other".into());
        let mut seen = observed(&encrypted, true, false, 1);
        // 7.1: modify -d would write the new destination unencrypted: nothing changes,
        // and the status says why, naming the fields.
        assert_eq!(modify(&encrypted, &seen), None);
        let why = encrypted_destination_refusal(&encrypted, &seen).unwrap();
        assert!(why.contains("spec.encryptionKeyPath"), "{why}");
        let status = status(&encrypted, &seen);
        assert_eq!(status.message.as_deref(), Some(why.as_str()));
        assert!(status.generations.needs_backup_modification.is_some());
        // 7.3.72: the key goes with the new destination.
        seen.running_version = Some("7.3.72".parse().unwrap());
        let request = modify(&encrypted, &seen).unwrap();
        assert_eq!(request.encryption_key_path.as_deref(), Some("/keys/k"));
        assert!(request.url.is_some());
        assert_eq!(encrypted_destination_refusal(&encrypted, &seen), None);
        // Unencrypted: the destination changes on any version.
        let plain = backup("Running", 3600);
        let mut moved = plain.clone();
        moved.spec.blob_store_configuration.bucket = Some("other".into());
        let seen = observed(&moved, true, false, 1);
        assert!(modify(&moved, &seen).unwrap().url.is_some());
    }

    #[test]
    fn each_step_has_work_only_when_the_spec_and_the_backup_differ() {
        let running = backup("Running", 3600);
        let idle = observed(&running, false, false, 2);
        let started = start(&running, &idle).unwrap();
        assert_eq!(started.url, "blobstore://a@s3:443/b?bucket=fdb-backups");
        assert_eq!(started.snapshot_period_seconds, 3600);
        let on = observed(&running, true, false, 2);
        assert_eq!(start(&running, &on), None);
        assert_eq!(modify(&running, &on), None);
        assert_eq!(toggle_pause(&running, &on), None);
        let reported = status(&running, &on);
        assert_eq!(reported.generations.reconciled, Some(3));
        assert_eq!(reported.message, None);
        // snapshotTime holds the running backup's snapshot period in seconds, as the Go
        // operator keeps it, not the end of a snapshot.
        let details = reported.backup_details.unwrap();
        assert_eq!(details.snapshot_time, Some(3600));
        let mut finished = on.clone();
        finished.backup.latest_snapshot_end = Some(fdb_shared::status_json::backup::BackupPoint {
            version: Some(1),
            epoch_seconds: Some(1_767_229_200),
            timestamp: None,
        });
        let details = status(&running, &finished).backup_details.unwrap();
        assert_eq!(details.snapshot_time, Some(3600));

        let faster = backup("Running", 60);
        let change = modify(&faster, &on).unwrap();
        assert_eq!(change.snapshot_period_seconds, Some(60));
        assert_eq!(change.url, None);

        let paused = backup("Paused", 3600);
        assert_eq!(toggle_pause(&paused, &on), Some(true));
        assert_eq!(
            toggle_pause(&running, &observed(&running, true, true, 2)),
            Some(false)
        );

        let stopped = backup("Stopped", 3600);
        assert!(stop(&stopped, &on));
        assert!(!stop(&stopped, &idle));
        assert_eq!(start(&stopped, &idle), None);
        assert_eq!(status(&stopped, &on).generations.needs_backup_stop, Some(3));
    }

    #[test]
    fn a_backup_without_agents_says_so() {
        let running = backup("Running", 3600);
        let reported = status(&running, &observed(&running, true, false, 0));
        assert_eq!(reported.agent_count, Some(0));
        assert!(
            reported
                .message
                .as_deref()
                .is_some_and(|m| m.contains("no backup agent is running")),
            "{reported:?}"
        );
    }
}
