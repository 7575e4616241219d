//! The operator's admin interface ([`AdminClient`]) on the simulated database, with
//! fdbcli's failure modes: commands that need an available database fail without one,
//! and an injected timeout leaves a mutating command applied or not (a seeded coin).

use std::collections::BTreeSet;
use std::sync::MutexGuard;

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::DatabaseConfiguration;
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::status_json::DatabaseStatus;
use rand::Rng;

use super::availability::assess;
use super::regions;
use super::state::State;
use super::timeline::{catch_up, refresh};
use super::{SimulatedFdb, engines, forwards, recovery, render, status_schema};
use fdb_shared::status_json::BackupStatus;

use fdb_operator::fdb::backup::{parse_restore_status, render_restore_status};
use fdb_operator::fdb::fdbcli::backup_commands::{self, display};
use fdb_operator::fdb::fdbcli::commands;
use fdb_operator::fdb::fdbcli::refused;
use fdb_operator::fdb::pending_upgrades::{UPGRADES_PREFIX, upgrades_range_end};
use fdb_operator::fdb::{
    AdminClient, AdminError, BackupModify, BackupStart, ExclusionTarget, LockValue, PendingUpgrade,
    RestartEntry, RestartList, RestoreProgress, RestoreStart,
};

/// How long fdbcli waits before it reports a timeout.
const TIMEOUT_SECONDS: u64 = 10;

fn timeout(command: &str) -> AdminError {
    AdminError::Timeout {
        command: command.to_owned(),
        seconds: TIMEOUT_SECONDS,
    }
}

/// A call that timed out reports the timeout, whatever it did.
fn finish<T>(
    timed_out: bool,
    command: &str,
    result: Result<T, AdminError>,
) -> Result<T, AdminError> {
    if timed_out {
        Err(timeout(command))
    } else {
        result
    }
}

fn require_available(state: &State, command: &str) -> Result<(), AdminError> {
    let health = assess(state);
    if health.available {
        return Ok(());
    }
    let output = if !health.quorum {
        "unable to reach a quorum of coordinators".to_owned()
    } else {
        format!(
            "the database is unavailable: {}",
            health.cause.unwrap_or_default()
        )
    };
    Err(AdminError::Unavailable {
        command: command.to_owned(),
        output,
    })
}

fn require_quorum(state: &State, command: &str) -> Result<(), AdminError> {
    if state.cluster_version().is_none() {
        return Err(AdminError::Unavailable {
            command: command.to_owned(),
            output: "unable to reach a quorum of coordinators".to_owned(),
        });
    }
    Ok(())
}

fn failed(command: &str, stderr: String) -> AdminError {
    AdminError::Failed {
        command: command.to_owned(),
        code: Some(1),
        stderr,
    }
}

impl SimulatedFdb {
    /// Begins an admin call: the state brought up to now, then maybe an injected
    /// timeout. A read that times out did nothing; a mutating command that times out
    /// goes ahead half of the time (`timed_out` true: report a timeout after applying).
    fn begin(
        &self,
        command: &str,
        mutating: bool,
    ) -> Result<(MutexGuard<'_, State>, i64, bool), AdminError> {
        let now = self.now();
        let mut state = self.lock();
        catch_up(&mut state, now);
        let rate = state.timeout_rate;
        let mut timed_out = false;
        if rate > 0.0 && state.rng.random::<f64>() < rate {
            if !mutating || !state.rng.random::<bool>() {
                return Err(timeout(command));
            }
            timed_out = true;
        }
        Ok((state, now, timed_out))
    }

    /// Runs a mutating command: `apply` changes the state (or fails), then the derived
    /// state follows.
    fn mutate<T>(
        &self,
        command: &str,
        apply: impl FnOnce(&mut State, i64) -> Result<T, AdminError>,
    ) -> Result<T, AdminError> {
        let (mut state, now, timed_out) = self.begin(command, true)?;
        let result = apply(&mut state, now);
        state.dirty = true;
        refresh(&mut state, now);
        finish(timed_out, command, result)
    }

    /// Runs a read that needs an available database.
    fn read<T>(&self, command: &str, get: impl FnOnce(&State) -> T) -> Result<T, AdminError> {
        let (state, _, _) = self.begin(command, false)?;
        require_available(&state, command)?;
        Ok(get(&state))
    }
}

#[async_trait::async_trait]
impl AdminClient for SimulatedFdb {
    async fn status(&self) -> Result<DatabaseStatus, AdminError> {
        let command = "status json";
        let printed = {
            // fdbcli's share, another process in production (see `SIMULATED_FDBCLI`).
            let _fdbcli = tracing::trace_span!(super::SIMULATED_FDBCLI).entered();
            let (state, now, _) = self.begin(command, false)?;
            let value = render::render(&state, now);
            let version = status_schema::rendering_version(&state);
            drop(state);
            self.check_status(&value, version.as_ref());
            serde_json::to_string_pretty(&value).unwrap_or_default()
        };
        // The operator's share: the parse FdbcliAdminClient makes of the tool's output.
        DatabaseStatus::parse_fdbcli_output(&printed).map_err(|source| AdminError::Parse {
            command: command.to_owned(),
            source,
        })
    }

    async fn configure(
        &self,
        configuration: &DatabaseConfiguration,
        new_database: bool,
    ) -> Result<(), AdminError> {
        let command = commands::configure(configuration, new_database)
            .map_err(|e| refused("configure", e))?;
        self.mutate(&command, |state, now| {
            if !new_database {
                require_available(state, &command)?;
            }
            require_quorum(state, &command)?;
            let current = match (state.configuration.take(), new_database) {
                (Some(current), true) => {
                    state.configuration = Some(current);
                    return Err(failed(
                        &command,
                        "ERROR: Database already exists! To change configuration, don't say `new'"
                            .to_owned(),
                    ));
                }
                (None, false) => {
                    return Err(failed(
                        &command,
                        "ERROR: Database not yet configured; use `configure new'".to_owned(),
                    ));
                }
                (current, _) => current.unwrap_or_default(),
            };
            let merged = merge_configuration(current.clone(), configuration);
            // A new database takes any valid configuration; changes follow FoundationDB's
            // rules for regions.
            let refusal = regions::refusal(&current, &merged)
                .or_else(|| engines::migration_refusal(&current, &merged));
            if let Some(error) = refusal.filter(|_| !new_database) {
                state.configuration = Some(current);
                return Err(failed(&command, error.to_owned()));
            }
            if engines::changes_storage_type(&current, &merged)
                && let Some(data) = state.data.as_mut()
            {
                // Every replica is rewritten with the new engine.
                data.engine_generation += 1;
            }
            state.configuration = Some(merged);
            state.dirty = true;
            let reason = if new_database {
                "configure new"
            } else {
                "configure"
            };
            recovery::force(state, now, reason);
            Ok(())
        })
    }

    async fn exclude(&self, targets: &[ExclusionTarget], blocking: bool) -> Result<(), AdminError> {
        let command = commands::exclude(targets, blocking).map_err(|e| refused("exclude", e))?;
        self.mutate(&command, |state, _| {
            require_available(state, &command)?;
            for target in targets {
                if !state.exclusions.contains(target) {
                    state.exclusions.push(target.clone());
                }
            }
            Ok(())
        })?;
        if blocking {
            let report = self.exclusion_status(targets).await?;
            if !report.all_complete() {
                // fdbcli waits for the data to move and gives up at its timeout.
                return Err(timeout(&command));
            }
        }
        Ok(())
    }

    async fn include(&self, targets: &[ExclusionTarget]) -> Result<(), AdminError> {
        let command = commands::include(targets).map_err(|e| refused("include", e))?;
        self.mutate(&command, |state, _| {
            require_available(state, &command)?;
            state.exclusions.retain(|t| !targets.contains(t));
            Ok(())
        })
    }

    async fn change_coordinators(
        &self,
        coordinators: &[ProcessAddress],
    ) -> Result<ConnectionString, AdminError> {
        let command =
            commands::coordinators(coordinators).map_err(|e| refused("coordinators", e))?;
        self.mutate(&command, |state, now| {
            require_available(state, &command)?;
            let version = state.cluster_version();
            if let Some(address) = coordinators.iter().find(|address| {
                !state
                    .processes
                    .values()
                    .any(|p| p.answers_to(address) && state.is_member(p, version.as_ref()))
            }) {
                return Err(failed(
                    &command,
                    format!(
                        "ERROR: coordinator {address} is not a reachable process of the database"
                    ),
                ));
            }
            let unique: BTreeSet<_> = coordinators.iter().collect();
            if coordinators.is_empty() || unique.len() != coordinators.len() {
                return Err(failed(
                    &command,
                    "ERROR: coordinators must be distinct and at least one".to_owned(),
                ));
            }
            let generation_id = state.random_id(32);
            let Some(current) = state.connection_string.clone() else {
                return Err(AdminError::Unavailable {
                    command: command.clone(),
                    output: "no connection string".to_owned(),
                });
            };
            let next = current.with_coordinators(generation_id, coordinators.to_vec());
            super::coordinated_state::write_to_new_coordinators(state, coordinators);
            forwards::store(state, &current);
            state.connection_string = Some(next.clone());
            state.dirty = true;
            recovery::force(state, now, "coordinators change");
            Ok(next)
        })
    }

    async fn kill(&self, addresses: &[ProcessAddress]) -> Result<(), AdminError> {
        let command = commands::kill(addresses).map_err(|e| refused("kill", e))?;
        self.mutate(&command, |state, now| {
            require_quorum(state, &command)?;
            let restart_at =
                now.saturating_add(i64::try_from(state.settings.restart_seconds).unwrap_or(0));
            let killed: Vec<ProcessAddress> = state
                .processes
                .values()
                .filter(|p| p.running && addresses.iter().any(|a| p.answers_to(a)))
                .filter(|p| {
                    p.instance_id()
                        .is_none_or(|id| !state.ignore_kill.contains(id))
                })
                .map(|p| p.launch.address.clone())
                .collect();
            for address in &killed {
                if let Some(process) = state.processes.get_mut(address) {
                    process.running = false;
                }
                state.pending_restarts.insert(address.clone(), restart_at);
            }
            // One recovery for the whole batch, if it hit the transaction system.
            if !killed.is_empty() {
                state.recovery_reason = Some(format!("kill of {} processes", killed.len()));
            }
            Ok(())
        })
    }

    async fn set_maintenance_zone(
        &self,
        zone: &str,
        duration_seconds: u64,
    ) -> Result<(), AdminError> {
        let command = commands::maintenance_on(zone, duration_seconds)
            .map_err(|e| refused("maintenance", e))?;
        self.mutate(&command, |state, now| {
            require_available(state, &command)?;
            let until = now.saturating_add(i64::try_from(duration_seconds).unwrap_or(i64::MAX));
            state.maintenance = Some((zone.to_owned(), until));
            state.maintenance_since = now;
            Ok(())
        })
    }

    async fn reset_maintenance_zone(&self) -> Result<(), AdminError> {
        let command = "maintenance off";
        self.mutate(command, |state, _| {
            require_available(state, command)?;
            state.maintenance = None;
            Ok(())
        })
    }

    async fn read_lock(&self) -> Result<Option<LockValue>, AdminError> {
        let command = commands::get_key(fdb_operator::fdb::locks::GLOBAL_LOCK_KEY);
        self.read(&command, |state| state.lock.clone())
    }

    async fn write_lock(&self, lock: &LockValue) -> Result<(), AdminError> {
        let command = commands::write_keys(
            &[(
                fdb_operator::fdb::locks::GLOBAL_LOCK_KEY.to_vec(),
                lock.encode(),
            )],
            &[],
        );
        self.mutate(&command, |state, _| {
            require_available(state, &command)?;
            state.lock = Some(lock.clone());
            Ok(())
        })
    }

    async fn deny_list(&self) -> Result<Vec<String>, AdminError> {
        self.read("getrange denyList", |state| {
            state.deny_list.iter().cloned().collect()
        })
    }

    async fn update_deny_list(&self, add: &[String], remove: &[String]) -> Result<(), AdminError> {
        let command = "update denyList";
        self.mutate(command, |state, _| {
            require_available(state, command)?;
            for id in remove {
                state.deny_list.remove(id);
            }
            state.deny_list.extend(add.iter().cloned());
            Ok(())
        })
    }
    async fn pending_upgrades(&self) -> Result<Vec<PendingUpgrade>, AdminError> {
        let command = commands::get_range(UPGRADES_PREFIX, &upgrades_range_end());
        self.read(&command, |state| {
            state
                .system_keys
                .range(UPGRADES_PREFIX.to_vec()..upgrades_range_end())
                .filter_map(|(key, _)| PendingUpgrade::from_key(key))
                .collect()
        })
    }

    async fn update_pending_upgrades(
        &self,
        add: &[PendingUpgrade],
        remove: &[PendingUpgrade],
    ) -> Result<(), AdminError> {
        let set: Vec<_> = add.iter().map(|e| (e.key(), e.value())).collect();
        let clear: Vec<_> = remove.iter().map(PendingUpgrade::key).collect();
        let command = commands::write_keys(&set, &clear);
        self.mutate(&command, |state, _| {
            require_available(state, &command)?;
            for key in clear {
                state.system_keys.remove(&key);
            }
            state.system_keys.extend(set);
            Ok(())
        })
    }

    async fn clear_pending_upgrades(&self) -> Result<(), AdminError> {
        let end = upgrades_range_end();
        let command = commands::clear_range(UPGRADES_PREFIX, &end);
        self.mutate(&command, |state, _| {
            require_available(state, &command)?;
            state.system_keys.retain(|key, _| {
                key.as_slice() < UPGRADES_PREFIX || key.as_slice() >= end.as_slice()
            });
            Ok(())
        })
    }

    async fn restart_list(&self, list: RestartList) -> Result<Vec<RestartEntry>, AdminError> {
        let (begin, end) = (list.prefix(), list.range_end());
        let command = commands::get_range(&begin, &end);
        self.read(&command, |state| {
            state
                .system_keys
                .range(begin..end)
                .filter_map(|(key, value)| list.entry(key, value))
                .collect()
        })
    }

    async fn update_restart_list(
        &self,
        list: RestartList,
        add: &[RestartEntry],
        remove: &[RestartEntry],
    ) -> Result<(), AdminError> {
        let set: Vec<_> = add.iter().map(|e| (e.key(list), e.value())).collect();
        let clear: Vec<_> = remove.iter().map(|e| e.key(list)).collect();
        let command = commands::write_keys(&set, &clear);
        self.mutate(&command, |state, _| {
            require_available(state, &command)?;
            for key in clear {
                state.system_keys.remove(&key);
            }
            state.system_keys.extend(set);
            Ok(())
        })
    }

    async fn start_backup(&self, request: &BackupStart) -> Result<(), AdminError> {
        let command = display("fdbbackup", &backup_commands::backup_start(request));
        self.mutate(&command, |state, _| {
            require_available(state, &command)?;
            state
                .backups
                .start(
                    &request.tag,
                    &request.url,
                    request.snapshot_period_seconds,
                    request.encryption_key_path.clone(),
                )
                .map_err(|stderr| failed(&command, stderr))
        })
    }

    async fn modify_backup(&self, request: &BackupModify) -> Result<(), AdminError> {
        let command = display("fdbbackup", &backup_commands::backup_modify(request));
        self.mutate(&command, |state, _| {
            require_available(state, &command)?;
            state
                .backups
                .modify(
                    &request.tag,
                    request.url.as_deref(),
                    request.snapshot_period_seconds,
                    request.encryption_key_path.as_deref(),
                )
                .map_err(|stderr| failed(&command, stderr))
        })
    }

    async fn discontinue_backup(&self, tag: &str) -> Result<(), AdminError> {
        let command = display("fdbbackup", &backup_commands::backup_discontinue(tag));
        self.mutate(&command, |state, _| {
            require_available(state, &command)?;
            state
                .backups
                .discontinue(tag)
                .map_err(|stderr| failed(&command, stderr))
        })
    }

    async fn set_backups_paused(&self, paused: bool) -> Result<(), AdminError> {
        let command = display("fdbbackup", &backup_commands::backup_pause(paused));
        self.mutate(&command, |state, _| {
            require_available(state, &command)?;
            state.backups.paused = paused;
            Ok(())
        })
    }

    async fn delete_backup_data(&self, url: &str) -> Result<(), AdminError> {
        let command = display("fdbbackup", &backup_commands::backup_delete(url));
        self.mutate(&command, |state, _| {
            state
                .backups
                .delete_container(url)
                .map_err(|stderr| failed(&command, stderr))
        })
    }

    async fn backup_status(&self, tag: &str) -> Result<BackupStatus, AdminError> {
        let command = display("fdbbackup", &backup_commands::backup_status(tag));
        let text = self.read(&command, |state| {
            state.backups.status_json(tag, state.origin).to_string()
        })?;
        // Through the same parser as the real tool's output.
        BackupStatus::parse_output(&text).map_err(|source| AdminError::Parse { command, source })
    }

    async fn start_restore(&self, request: &RestoreStart) -> Result<(), AdminError> {
        let command = display("fdbrestore", &backup_commands::restore_start(request));
        self.mutate(&command, |state, _| {
            require_available(state, &command)?;
            let State {
                backups, user_data, ..
            } = state;
            backups
                .start_restore(
                    user_data,
                    &request.url,
                    request.version,
                    &request.key_ranges,
                    request.encryption_key_path.as_deref(),
                )
                .map_err(|stderr| failed(&command, stderr))
        })
    }

    async fn restore_status(&self) -> Result<RestoreProgress, AdminError> {
        let command = display("fdbrestore", &backup_commands::restore_status());
        let text = self.read(&command, |state| {
            let progress = state
                .backups
                .restore
                .as_ref()
                .map(|restore| RestoreProgress {
                    state: Some(restore.state),
                    url: Some(restore.url.clone()),
                    version: Some(restore.version),
                })
                .unwrap_or_default();
            if progress.state.is_none() {
                String::new()
            } else {
                render_restore_status("default", &progress)
            }
        })?;
        parse_restore_status(&text)
            .map_err(|detail| AdminError::InvalidResponse { command, detail })
    }
}

/// `configure` changes only the settings it names.
fn merge_configuration(
    mut current: DatabaseConfiguration,
    change: &DatabaseConfiguration,
) -> DatabaseConfiguration {
    macro_rules! take {
        ($($field:ident),*) => { $( if change.$field.is_some() { current.$field = change.$field.clone(); } )* };
    }
    take!(
        redundancy_mode,
        storage_engine,
        usable_regions,
        logs,
        proxies,
        commit_proxies,
        grv_proxies,
        resolvers,
        log_routers,
        remote_logs,
        perpetual_storage_wiggle,
        perpetual_storage_wiggle_engine,
        perpetual_storage_wiggle_locality,
        storage_migration_type
    );
    if !change.regions.is_empty() {
        current.regions = change.regions.clone();
    }
    current
}
