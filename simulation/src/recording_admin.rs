//! An [`AdminClient`] wrapper that records every admin command in the events log.
//!
//! It sits between the operator and the simulated database, so the log shows exactly
//! what the operator asked for (and whether it failed), in the order it asked.

use std::sync::Arc;

use async_trait::async_trait;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::DatabaseConfiguration;
use fdb_shared::cluster_math::configure_new_command;
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::status_json::DatabaseStatus;

use fdb_shared::status_json::BackupStatus;

use fdb_operator::fdb::fdbcli::backup_commands::{self, display};
use fdb_operator::fdb::{
    AdminClient, AdminError, BackupModify, BackupStart, ClientInfo, ExclusionReport,
    ExclusionTarget, LockValue, PendingUpgrade, RestartEntry, RestartList, RestoreProgress,
    RestoreStart,
};

use super::event_log::{Actor, EventLog};
use super::invariants::LOCK_NOT_HELD;
use super::invariants::lock_judge::{AdminWriteJudge, JUDGED_ACTIONS};
use super::result::EventSource;

/// Records admin commands, then forwards them.
#[derive(Debug, Clone)]
pub struct RecordingAdmin {
    inner: Arc<dyn AdminClient>,
    log: EventLog,
    /// The operator instance issuing the commands (its cluster's name), if known.
    issuer: Option<String>,
    /// The commands are a user's (a served world's `pods/exec`), not the operator's.
    by_user: bool,
    /// Judges the instance's admin writes as they happen (`lock-not-held`).
    judge: Option<Arc<dyn AdminWriteJudge>>,
}

impl RecordingAdmin {
    /// Wraps `inner`, recording into `log`.
    pub fn new(inner: Arc<dyn AdminClient>, log: EventLog) -> Self {
        Self {
            inner,
            log,
            issuer: None,
            judge: None,
            by_user: false,
        }
    }

    /// Wraps `inner` for a user's commands (a served world's `pods/exec`): recorded as
    /// the user's whatever the operator does meanwhile, and not refused when the
    /// operator has crashed.
    pub fn for_user(inner: Arc<dyn AdminClient>, log: EventLog) -> Self {
        Self {
            by_user: true,
            ..Self::new(inner, log)
        }
    }

    /// The commands are issued by the operator instance of cluster `issuer`; `judge`
    /// judges its admin writes.
    pub fn issued_by(mut self, issuer: &str, judge: Arc<dyn AdminWriteJudge>) -> Self {
        self.issuer = Some(issuer.to_owned());
        self.judge = Some(judge);
        self
    }

    /// Refuses every call once the operator has crashed (`restartOperator: {after}`):
    /// nothing a dead process would have sent may reach the database.
    fn alive(&self, command: &str) -> Result<(), AdminError> {
        if !self.by_user && self.log.operator_crashed() {
            return Err(AdminError::Unavailable {
                command: command.to_owned(),
                output: "the operator crashed (simulated restart pending)".to_owned(),
            });
        }
        Ok(())
    }

    /// Judges an admin write against the lock as it is issued (before it changes the
    /// world: `configure new` creates the database the lock lives in).
    fn judge_write(&self, action: &str, command: &str) {
        if let (Some(issuer), Some(judge)) = (&self.issuer, &self.judge)
            && JUDGED_ACTIONS.contains(&action)
            && let Some(violation) = judge.judge(issuer, command)
        {
            self.log.note_violation(LOCK_NOT_HELD, violation);
        }
    }

    /// Records a write command with its outcome.
    fn write<T>(&self, action: &str, target: &str, detail: String, result: &Result<T, AdminError>) {
        self.log.count_admin_command();
        let detail = match result {
            Ok(_) => detail,
            Err(error) => format!(
                "{detail} -> {}: {}",
                error.category(),
                fdb_shared::error_chain::ErrorChain(error)
            ),
        };
        self.log.record_by(
            self.by_user.then_some(Actor::User),
            EventSource::Fdb,
            action,
            target,
            &detail,
            self.issuer.as_deref(),
        );
    }
}

fn join<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

#[async_trait]
impl AdminClient for RecordingAdmin {
    async fn status(&self) -> Result<DatabaseStatus, AdminError> {
        self.alive("status")?;
        self.log.count_status_json();
        self.inner.status().await
    }

    async fn configure(
        &self,
        configuration: &DatabaseConfiguration,
        new_database: bool,
    ) -> Result<(), AdminError> {
        self.alive("configure")?;
        let command = if new_database {
            configure_new_command(configuration)
        } else {
            format!(
                "configure {}",
                fdb_shared::cluster_math::configuration_string(configuration)
            )
        };
        self.judge_write("configure", &command);
        let result = self.inner.configure(configuration, new_database).await;
        self.write("configure", "database", command, &result);
        result
    }

    async fn exclude(&self, targets: &[ExclusionTarget], blocking: bool) -> Result<(), AdminError> {
        self.alive("exclude")?;
        let mode = if blocking { "" } else { "no_wait " };
        self.judge_write("exclude", &format!("exclude {mode}{}", join(targets)));
        let result = self.inner.exclude(targets, blocking).await;
        if result.is_ok() && !self.by_user {
            let texts: Vec<String> = targets.iter().map(ToString::to_string).collect();
            self.log
                .note_operator_exclusions(self.issuer.as_deref(), &texts);
        }
        self.write(
            "exclude",
            "database",
            format!("exclude {mode}{}", join(targets)),
            &result,
        );
        result
    }

    async fn exclusion_status(
        &self,
        targets: &[ExclusionTarget],
    ) -> Result<ExclusionReport, AdminError> {
        self.alive("exclusion_status")?;
        self.log.count_admin_command();
        self.inner.exclusion_status(targets).await
    }

    async fn include(&self, targets: &[ExclusionTarget]) -> Result<(), AdminError> {
        self.alive("include")?;
        self.judge_write("include", &format!("include {}", join(targets)));
        let result = self.inner.include(targets).await;
        self.write(
            "include",
            "database",
            format!("include {}", join(targets)),
            &result,
        );
        result
    }

    async fn change_coordinators(
        &self,
        coordinators: &[ProcessAddress],
    ) -> Result<ConnectionString, AdminError> {
        self.alive("change_coordinators")?;
        self.judge_write(
            "coordinators",
            &format!("coordinators {}", join(coordinators)),
        );
        let result = self.inner.change_coordinators(coordinators).await;
        let detail = match &result {
            Ok(connection) => format!("coordinators {} -> {connection}", join(coordinators)),
            Err(_) => format!("coordinators {}", join(coordinators)),
        };
        self.write("coordinators", "database", detail, &result);
        result
    }

    async fn kill(&self, addresses: &[ProcessAddress]) -> Result<(), AdminError> {
        self.alive("kill")?;
        self.judge_write("kill", &format!("kill {}", join(addresses)));
        let result = self.inner.kill(addresses).await;
        self.write(
            "kill",
            "database",
            format!("kill {}", join(addresses)),
            &result,
        );
        result
    }

    async fn set_maintenance_zone(
        &self,
        zone: &str,
        duration_seconds: u64,
    ) -> Result<(), AdminError> {
        self.alive("set_maintenance_zone")?;
        self.judge_write(
            "maintenance",
            &format!("maintenance on {zone} {duration_seconds}"),
        );
        let result = self
            .inner
            .set_maintenance_zone(zone, duration_seconds)
            .await;
        self.write(
            "maintenance",
            "database",
            format!("maintenance on {zone} {duration_seconds}"),
            &result,
        );
        result
    }

    async fn reset_maintenance_zone(&self) -> Result<(), AdminError> {
        self.alive("reset_maintenance_zone")?;
        self.judge_write("maintenance", "maintenance off");
        let result = self.inner.reset_maintenance_zone().await;
        self.write(
            "maintenance",
            "database",
            "maintenance off".to_owned(),
            &result,
        );
        result
    }

    async fn read_lock(&self) -> Result<Option<LockValue>, AdminError> {
        self.alive("read_lock")?;
        self.log.count_admin_command();
        self.inner.read_lock().await
    }

    async fn write_lock(&self, lock: &LockValue) -> Result<(), AdminError> {
        self.alive("write_lock")?;
        let result = self.inner.write_lock(lock).await;
        self.write(
            "lock",
            "database",
            format!("lock {} {}..{}", lock.lock_id, lock.start, lock.end),
            &result,
        );
        result
    }

    async fn deny_list(&self) -> Result<Vec<String>, AdminError> {
        self.alive("deny_list")?;
        self.log.count_admin_command();
        self.inner.deny_list().await
    }

    async fn update_deny_list(&self, add: &[String], remove: &[String]) -> Result<(), AdminError> {
        self.alive("update_deny_list")?;
        let result = self.inner.update_deny_list(add, remove).await;
        self.write(
            "lock",
            "database",
            format!("deny list +[{}] -[{}]", add.join(" "), remove.join(" ")),
            &result,
        );
        result
    }

    async fn pending_upgrades(&self) -> Result<Vec<PendingUpgrade>, AdminError> {
        self.alive("pending_upgrades")?;
        self.log.count_admin_command();
        self.inner.pending_upgrades().await
    }

    async fn update_pending_upgrades(
        &self,
        add: &[PendingUpgrade],
        remove: &[PendingUpgrade],
    ) -> Result<(), AdminError> {
        self.alive("update_pending_upgrades")?;
        let result = self.inner.update_pending_upgrades(add, remove).await;
        let list = |entries: &[PendingUpgrade]| {
            entries
                .iter()
                .map(|e| format!("{}/{}", e.version, e.group))
                .collect::<Vec<_>>()
                .join(" ")
        };
        self.write(
            "pending-upgrades",
            "database",
            format!("upgrades +[{}] -[{}]", list(add), list(remove)),
            &result,
        );
        result
    }

    async fn clear_pending_upgrades(&self) -> Result<(), AdminError> {
        self.alive("clear_pending_upgrades")?;
        let result = self.inner.clear_pending_upgrades().await;
        self.write(
            "pending-upgrades",
            "database",
            "clearrange upgrades/".to_owned(),
            &result,
        );
        result
    }

    async fn restart_list(&self, list: RestartList) -> Result<Vec<RestartEntry>, AdminError> {
        self.alive("restart_list")?;
        self.log.count_admin_command();
        self.inner.restart_list(list).await
    }

    async fn update_restart_list(
        &self,
        list: RestartList,
        add: &[RestartEntry],
        remove: &[RestartEntry],
    ) -> Result<(), AdminError> {
        self.alive("update_restart_list")?;
        let result = self.inner.update_restart_list(list, add, remove).await;
        let groups = |entries: &[RestartEntry]| {
            entries
                .iter()
                .map(|e| e.group.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        };
        self.write(
            "restart-list",
            "database",
            format!("{list} +[{}] -[{}]", groups(add), groups(remove)),
            &result,
        );
        result
    }

    async fn connected_clients(&self) -> Result<Vec<ClientInfo>, AdminError> {
        self.alive("connected_clients")?;
        self.log.count_admin_command();
        self.inner.connected_clients().await
    }
    async fn start_backup(&self, request: &BackupStart) -> Result<(), AdminError> {
        self.alive("start_backup")?;
        let result = self.inner.start_backup(request).await;
        let line = display("fdbbackup", &backup_commands::backup_start(request));
        self.write(
            "backup-start",
            &format!("backup/{}", request.tag),
            line,
            &result,
        );
        result
    }

    async fn modify_backup(&self, request: &BackupModify) -> Result<(), AdminError> {
        self.alive("modify_backup")?;
        let result = self.inner.modify_backup(request).await;
        let line = display("fdbbackup", &backup_commands::backup_modify(request));
        self.write(
            "backup-modify",
            &format!("backup/{}", request.tag),
            line,
            &result,
        );
        result
    }

    async fn discontinue_backup(&self, tag: &str) -> Result<(), AdminError> {
        self.alive("discontinue_backup")?;
        let result = self.inner.discontinue_backup(tag).await;
        let line = display("fdbbackup", &backup_commands::backup_discontinue(tag));
        self.write(
            "backup-discontinue",
            &format!("backup/{tag}"),
            line,
            &result,
        );
        result
    }

    async fn set_backups_paused(&self, paused: bool) -> Result<(), AdminError> {
        self.alive("set_backups_paused")?;
        let result = self.inner.set_backups_paused(paused).await;
        let line = display("fdbbackup", &backup_commands::backup_pause(paused));
        let action = if paused {
            "backup-pause"
        } else {
            "backup-resume"
        };
        self.write(action, "database", line, &result);
        result
    }

    async fn delete_backup_data(&self, url: &str) -> Result<(), AdminError> {
        self.alive("delete_backup_data")?;
        let result = self.inner.delete_backup_data(url).await;
        let line = display("fdbbackup", &backup_commands::backup_delete(url));
        self.write("backup-delete", "blobstore", line, &result);
        result
    }

    async fn backup_status(&self, tag: &str) -> Result<BackupStatus, AdminError> {
        self.alive("backup_status")?;
        self.log.count_admin_command();
        self.inner.backup_status(tag).await
    }

    async fn start_restore(&self, request: &RestoreStart) -> Result<(), AdminError> {
        self.alive("start_restore")?;
        let result = self.inner.start_restore(request).await;
        let line = display("fdbrestore", &backup_commands::restore_start(request));
        self.write("restore-start", "database", line, &result);
        result
    }

    async fn restore_status(&self) -> Result<RestoreProgress, AdminError> {
        self.alive("restore_status")?;
        self.log.count_admin_command();
        self.inner.restore_status().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fdb::{SimFdbSettings, SimulatedFdb};
    use fdb_operator::clock::{Clock, VirtualClock};

    #[tokio::test]
    async fn records_writes_with_outcome_and_counts_reads() {
        let clock: Arc<dyn Clock> = Arc::new(VirtualClock::fixed_epoch());
        let fdb = SimulatedFdb::new(clock.clone(), SimFdbSettings::default());
        let log = EventLog::new(clock);
        let admin = RecordingAdmin::new(Arc::new(fdb), log.clone());

        let _ = admin.status().await;
        // An empty database has no coordinators: the command fails, and the log says so.
        assert!(admin.reset_maintenance_zone().await.is_err());
        let events = log.events();
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].action, "maintenance");
        assert_eq!(events[0].source, EventSource::Fdb);
        assert!(
            events[0]
                .detail
                .starts_with("maintenance off -> Unavailable"),
            "{}",
            events[0].detail
        );
        let counters = log.counters();
        assert_eq!(
            (counters.status_json_calls, counters.admin_commands),
            (1, 1)
        );
    }
}
