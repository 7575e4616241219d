//! The admin client over `fdbcli --exec`.

pub mod backup_commands;
pub mod commands;
#[cfg(test)]
mod property_tests;
pub mod refusals;
mod version_fallback;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::DatabaseConfiguration;
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::status_json::DatabaseStatus;

use fdb_shared::status_json::BackupStatus;

use self::commands::FailureKind;
use super::admin::{AdminClient, ExclusionTarget};
use super::backup::{
    BackupModify, BackupStart, RestoreProgress, RestoreStart, parse_restore_status,
};
use super::error::AdminError;
use super::locks::{
    DENY_LIST_PREFIX, GLOBAL_LOCK_KEY, LockValue, deny_list_id, deny_list_key, deny_list_range_end,
};
use super::pending_upgrades::{PendingUpgrade, UPGRADES_PREFIX, upgrades_range_end};
use super::restart_lists::{RestartEntry, RestartList};
use super::tool_runner::{ProcessRunner, ToolRun, ToolRunError, ToolRunner};

/// TLS files passed to fdbcli.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// `--tls_certificate_file`.
    pub certificate_file: PathBuf,
    /// `--tls_key_file`.
    pub key_file: PathBuf,
    /// `--tls_ca_file`.
    pub ca_file: PathBuf,
    /// `--tls_verify_peers`, when set.
    pub verify_peers: Option<String>,
}

impl TlsFiles {
    /// The files of the `--tls-*` options of `run` and `snapshot`: all three of
    /// certificate, key and CA, or none (`None`); any other mix is refused.
    pub fn from_options(
        certificate_file: Option<&PathBuf>,
        key_file: Option<&PathBuf>,
        ca_file: Option<&PathBuf>,
        verify_peers: Option<&String>,
    ) -> Result<Option<Self>, String> {
        match (certificate_file, key_file, ca_file) {
            (None, None, None) => Ok(None),
            (Some(cert), Some(key), Some(ca)) => Ok(Some(Self {
                certificate_file: cert.clone(),
                key_file: key.clone(),
                ca_file: ca.clone(),
                verify_peers: verify_peers.cloned(),
            })),
            _ => Err(
                "--tls-certificate-file, --tls-key-file and --tls-ca-file (FDB_TLS_CERTIFICATE_FILE, FDB_TLS_KEY_FILE, FDB_TLS_CA_FILE) go together"
                    .to_owned(),
            ),
        }
    }
}

/// How to run fdbcli.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdbcliConfig {
    /// The fdbcli binary.
    pub fdbcli_path: PathBuf,
    /// The cluster file (`-C`).
    pub cluster_file: PathBuf,
    /// fdbcli's own `--timeout`.
    pub timeout: Duration,
    /// Extra time given to the process beyond `timeout` before it is killed.
    pub process_grace: Duration,
    /// TLS files, when the cluster uses TLS.
    pub tls: Option<TlsFiles>,
    /// Further arguments placed before `--exec`.
    pub extra_args: Vec<String>,
    /// The FoundationDB version of the tools, when they were chosen for one (a tool
    /// that is not there is then reported as that version's missing tool).
    pub version: Option<FdbVersion>,
    /// `FDB_NETWORK_OPTION_TRACE_LOG_GROUP` given to every tool run, when set: the log
    /// group the operator's connections are listed under in `status json`.
    pub trace_log_group: Option<String>,
}

impl FdbcliConfig {
    /// A configuration with a 10 s timeout, 5 s grace, no TLS and no extra arguments.
    pub fn new(fdbcli_path: impl Into<PathBuf>, cluster_file: impl Into<PathBuf>) -> Self {
        Self {
            fdbcli_path: fdbcli_path.into(),
            cluster_file: cluster_file.into(),
            timeout: Duration::from_secs(10),
            process_grace: Duration::from_secs(5),
            tls: None,
            extra_args: Vec::new(),
            version: None,
            trace_log_group: None,
        }
    }

    /// The arguments of one invocation running `command`.
    pub fn arguments(&self, command: &str) -> Vec<String> {
        let mut args = vec![
            "-C".to_owned(),
            self.cluster_file.display().to_string(),
            "--timeout".to_owned(),
            self.timeout.as_secs().max(1).to_string(),
        ];
        self.push_tls_arguments(&mut args);
        args.extend(self.extra_args.iter().cloned());
        args.extend(["--exec".to_owned(), command.to_owned()]);
        args
    }

    /// The TLS options every tool of the fdbcli family takes, when TLS is configured.
    fn push_tls_arguments(&self, args: &mut Vec<String>) {
        if let Some(tls) = &self.tls {
            args.extend([
                "--tls_certificate_file".to_owned(),
                tls.certificate_file.display().to_string(),
                "--tls_key_file".to_owned(),
                tls.key_file.display().to_string(),
                "--tls_ca_file".to_owned(),
                tls.ca_file.display().to_string(),
            ]);
            if let Some(peers) = &tls.verify_peers {
                args.extend(["--tls_verify_peers".to_owned(), peers.clone()]);
            }
        }
    }

    /// The path of another tool of the fdbcli family (`fdbbackup`, `fdbrestore`): the
    /// same directory as fdbcli, as the FoundationDB packages and images install them.
    pub fn tool_path(&self, tool: &str) -> PathBuf {
        match self.fdbcli_path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.join(tool),
            _ => PathBuf::from(tool),
        }
    }

    /// The arguments of one `fdbbackup` or `fdbrestore` invocation: the subcommand and
    /// its options, the cluster file (`-C` for fdbbackup, `--dest-cluster-file` for
    /// fdbrestore) and the TLS files.
    pub fn tool_arguments(&self, tool: &str, subcommand: &[String]) -> Vec<String> {
        let mut args: Vec<String> = subcommand.to_vec();
        let cluster_file_flag = if tool == "fdbrestore" {
            "--dest-cluster-file"
        } else {
            "-C"
        };
        args.extend([
            cluster_file_flag.to_owned(),
            self.cluster_file.display().to_string(),
        ]);
        self.push_tls_arguments(&mut args);
        args
    }
}

/// The admin client that runs fdbcli. Lock keys go through fdbcli's `get`/`set` on the
/// system key space.
///
/// During an incompatible upgrade it also holds the tools of the target version
/// ([`FdbcliAdminClient::with_fallback`]): once the processes restarted on the target,
/// the running version's fdbcli no longer reaches them, and the client moves to the
/// target's tools for the rest of its life (one reconcile pass).
///
/// The tools run through a [`ToolRunner`]: child processes in production, an
/// interpreter of the same argv in the simulation.
#[derive(Debug, Clone)]
pub struct FdbcliAdminClient {
    config: FdbcliConfig,
    fallback: Option<FdbcliConfig>,
    on_fallback: Arc<std::sync::atomic::AtomicBool>,
    runner: Arc<dyn ToolRunner>,
}

impl FdbcliAdminClient {
    /// A client running fdbcli as configured, as child processes.
    pub fn new(config: FdbcliConfig) -> Self {
        Self {
            config,
            fallback: None,
            on_fallback: Arc::default(),
            runner: Arc::new(ProcessRunner),
        }
    }

    /// The same client, running its tools with `runner`.
    pub fn with_runner(mut self, runner: Arc<dyn ToolRunner>) -> Self {
        self.runner = runner;
        self
    }

    /// The configuration of the tools it starts with.
    pub fn config(&self) -> &FdbcliConfig {
        &self.config
    }

    /// The configuration of the tools it runs now (the fallback's once it moved).
    pub fn active_config(&self) -> &FdbcliConfig {
        match &self.fallback {
            Some(fallback) if self.on_fallback() => fallback,
            _ => &self.config,
        }
    }

    /// Runs one `--exec` command; returns standard output on success.
    pub async fn run(&self, command: &str) -> Result<String, AdminError> {
        self.run_with(self.active_config(), command).await
    }

    /// Runs one `--exec` command with the tools of `config`.
    async fn run_with(&self, config: &FdbcliConfig, command: &str) -> Result<String, AdminError> {
        let args = config.arguments(command);
        self.run_program(config, &config.fdbcli_path, &args, command)
            .await
    }

    /// Runs `fdbbackup` or `fdbrestore` with a subcommand; returns standard output.
    pub async fn run_tool(&self, tool: &str, subcommand: &[String]) -> Result<String, AdminError> {
        let config = self.active_config();
        let command = backup_commands::display(tool, subcommand);
        let args = config.tool_arguments(tool, subcommand);
        self.run_program(config, &config.tool_path(tool), &args, &command)
            .await
    }

    /// Runs `program` of `config` with `args` within the timeout; `command` names it in
    /// errors.
    async fn run_program(
        &self,
        config: &FdbcliConfig,
        program: &std::path::Path,
        args: &[String],
        command: &str,
    ) -> Result<String, AdminError> {
        let deadline = config.timeout + config.process_grace;
        let run = ToolRun {
            program: program.to_owned(),
            args: args.to_vec(),
            env: config
                .trace_log_group
                .iter()
                .map(|group| (super::tools::TRACE_LOG_GROUP_ENV.to_owned(), group.clone()))
                .collect(),
            deadline,
        };
        tracing::debug!(command, program = %program.display(), "running a FoundationDB tool");
        let output = match self.runner.run(&run).await {
            Err(ToolRunError::DeadlinePassed) => {
                return Err(AdminError::Timeout {
                    command: command.to_owned(),
                    seconds: deadline.as_secs(),
                });
            }
            Err(ToolRunError::Spawn(source)) => {
                return Err(version_fallback::spawn_error(
                    config, program, command, source,
                ));
            }
            Ok(output) => output,
        };
        let (stdout, stderr) = (&output.stdout, &output.stderr);
        if output.success() && !commands::reports_error(stdout) {
            return Ok(output.stdout);
        }
        let message = if stderr.trim().is_empty() {
            stdout.trim().to_owned()
        } else {
            stderr.trim().to_owned()
        };
        Err(
            match commands::classify_failure(&format!("{stdout}\n{stderr}")) {
                FailureKind::Timeout => AdminError::Timeout {
                    command: command.to_owned(),
                    seconds: config.timeout.as_secs(),
                },
                FailureKind::Unavailable => AdminError::Unavailable {
                    command: command.to_owned(),
                    output: message,
                },
                FailureKind::Failed => AdminError::Failed {
                    command: command.to_owned(),
                    code: output.exit_code,
                    stderr: message,
                },
            },
        )
    }

    async fn read_keys(&self, command: &str) -> Result<Vec<commands::KeyValue>, AdminError> {
        let output = self.run(command).await?;
        commands::parse_key_values(&output).map_err(|detail| AdminError::InvalidResponse {
            command: command.to_owned(),
            detail,
        })
    }
}

/// A command the builders refused to build: nothing was sent to fdbcli.
pub fn refused(command: &str, error: commands::CommandError) -> AdminError {
    AdminError::Rejected {
        command: command.to_owned(),
        reason: error.to_string(),
    }
}

#[async_trait::async_trait]
impl AdminClient for FdbcliAdminClient {
    async fn status(&self) -> Result<DatabaseStatus, AdminError> {
        self.status_with_fallback().await
    }

    async fn configure(
        &self,
        configuration: &DatabaseConfiguration,
        new_database: bool,
    ) -> Result<(), AdminError> {
        let command = commands::configure(configuration, new_database)
            .map_err(|error| refused("configure", error))?;
        self.run(&command).await.map(drop)
    }

    async fn exclude(&self, targets: &[ExclusionTarget], blocking: bool) -> Result<(), AdminError> {
        if targets.is_empty() {
            return Ok(());
        }
        let command =
            commands::exclude(targets, blocking).map_err(|error| refused("exclude", error))?;
        self.run(&command).await.map(drop)
    }

    async fn include(&self, targets: &[ExclusionTarget]) -> Result<(), AdminError> {
        if targets.is_empty() {
            return Ok(());
        }
        let command = commands::include(targets).map_err(|error| refused("include", error))?;
        self.run(&command).await.map(drop)
    }

    async fn change_coordinators(
        &self,
        coordinators: &[ProcessAddress],
    ) -> Result<ConnectionString, AdminError> {
        let command =
            commands::coordinators(coordinators).map_err(|error| refused("coordinators", error))?;
        self.run(&command).await?;
        // fdbcli rewrote the cluster file; the new connection string is in the status.
        let status = self.status().await?;
        status
            .cluster
            .connection_string
            .ok_or_else(|| AdminError::InvalidResponse {
                command,
                detail: "the status after the change has no connection string".to_owned(),
            })
    }

    async fn kill(&self, addresses: &[ProcessAddress]) -> Result<(), AdminError> {
        if addresses.is_empty() {
            return Ok(());
        }
        let command = commands::kill(addresses).map_err(|error| refused("kill", error))?;
        self.run(&command).await.map(drop)
    }

    async fn set_maintenance_zone(
        &self,
        zone: &str,
        duration_seconds: u64,
    ) -> Result<(), AdminError> {
        let command = commands::maintenance_on(zone, duration_seconds)
            .map_err(|error| refused("maintenance", error))?;
        self.run(&command).await.map(drop)
    }

    async fn reset_maintenance_zone(&self) -> Result<(), AdminError> {
        self.run("maintenance off").await.map(drop)
    }

    async fn read_lock(&self) -> Result<Option<LockValue>, AdminError> {
        let command = commands::get_key(GLOBAL_LOCK_KEY);
        let pairs = self.read_keys(&command).await?;
        let Some((_, value)) = pairs.into_iter().find(|(key, _)| key == GLOBAL_LOCK_KEY) else {
            return Ok(None);
        };
        LockValue::decode(&value)
            .map(Some)
            .map_err(|error| AdminError::InvalidResponse {
                command,
                detail: error.to_string(),
            })
    }

    async fn write_lock(&self, lock: &LockValue) -> Result<(), AdminError> {
        let command = commands::write_keys(&[(GLOBAL_LOCK_KEY.to_vec(), lock.encode())], &[]);
        self.run(&command).await.map(drop)
    }

    async fn deny_list(&self) -> Result<Vec<String>, AdminError> {
        let command = commands::get_range(DENY_LIST_PREFIX, &deny_list_range_end());
        let pairs = self.read_keys(&command).await?;
        Ok(pairs
            .iter()
            .filter_map(|(key, _)| deny_list_id(key))
            .collect())
    }

    async fn update_deny_list(&self, add: &[String], remove: &[String]) -> Result<(), AdminError> {
        if add.is_empty() && remove.is_empty() {
            return Ok(());
        }
        let set: Vec<_> = add
            .iter()
            .map(|id| (deny_list_key(id), id.as_bytes().to_vec()))
            .collect();
        let clear: Vec<_> = remove.iter().map(|id| deny_list_key(id)).collect();
        self.run(&commands::write_keys(&set, &clear))
            .await
            .map(drop)
    }

    async fn pending_upgrades(&self) -> Result<Vec<PendingUpgrade>, AdminError> {
        let command = commands::get_range(UPGRADES_PREFIX, &upgrades_range_end());
        let pairs = self.read_keys(&command).await?;
        Ok(pairs
            .iter()
            .filter_map(|(key, _)| PendingUpgrade::from_key(key))
            .collect())
    }

    async fn update_pending_upgrades(
        &self,
        add: &[PendingUpgrade],
        remove: &[PendingUpgrade],
    ) -> Result<(), AdminError> {
        if add.is_empty() && remove.is_empty() {
            return Ok(());
        }
        let set: Vec<_> = add.iter().map(|e| (e.key(), e.value())).collect();
        let clear: Vec<_> = remove.iter().map(PendingUpgrade::key).collect();
        self.run(&commands::write_keys(&set, &clear))
            .await
            .map(drop)
    }

    async fn restart_list(&self, list: RestartList) -> Result<Vec<RestartEntry>, AdminError> {
        let command = commands::get_range(&list.prefix(), &list.range_end());
        let pairs = self.read_keys(&command).await?;
        Ok(pairs
            .iter()
            .filter_map(|(key, value)| list.entry(key, value))
            .collect())
    }

    async fn update_restart_list(
        &self,
        list: RestartList,
        add: &[RestartEntry],
        remove: &[RestartEntry],
    ) -> Result<(), AdminError> {
        if add.is_empty() && remove.is_empty() {
            return Ok(());
        }
        let set: Vec<_> = add.iter().map(|e| (e.key(list), e.value())).collect();
        let clear: Vec<_> = remove.iter().map(|e| e.key(list)).collect();
        self.run(&commands::write_keys(&set, &clear))
            .await
            .map(drop)
    }

    async fn clear_pending_upgrades(&self) -> Result<(), AdminError> {
        self.run(&commands::clear_range(
            UPGRADES_PREFIX,
            &upgrades_range_end(),
        ))
        .await
        .map(drop)
    }

    async fn start_backup(&self, request: &BackupStart) -> Result<(), AdminError> {
        self.run_tool("fdbbackup", &backup_commands::backup_start(request))
            .await
            .map(drop)
    }

    async fn modify_backup(&self, request: &BackupModify) -> Result<(), AdminError> {
        self.run_tool("fdbbackup", &backup_commands::backup_modify(request))
            .await
            .map(drop)
    }

    async fn discontinue_backup(&self, tag: &str) -> Result<(), AdminError> {
        self.run_tool("fdbbackup", &backup_commands::backup_discontinue(tag))
            .await
            .map(drop)
    }

    async fn set_backups_paused(&self, paused: bool) -> Result<(), AdminError> {
        self.run_tool("fdbbackup", &backup_commands::backup_pause(paused))
            .await
            .map(drop)
    }

    async fn delete_backup_data(&self, url: &str) -> Result<(), AdminError> {
        self.run_tool("fdbbackup", &backup_commands::backup_delete(url))
            .await
            .map(drop)
    }

    async fn backup_status(&self, tag: &str) -> Result<BackupStatus, AdminError> {
        let args = backup_commands::backup_status(tag);
        let output = self.run_tool("fdbbackup", &args).await?;
        BackupStatus::parse_output(&output).map_err(|source| AdminError::Parse {
            command: backup_commands::display("fdbbackup", &args),
            source,
        })
    }

    async fn start_restore(&self, request: &RestoreStart) -> Result<(), AdminError> {
        self.run_tool("fdbrestore", &backup_commands::restore_start(request))
            .await
            .map(drop)
    }

    async fn restore_status(&self) -> Result<RestoreProgress, AdminError> {
        let args = backup_commands::restore_status();
        let output = self.run_tool("fdbrestore", &args).await?;
        parse_restore_status(&output).map_err(|detail| AdminError::InvalidResponse {
            command: backup_commands::display("fdbrestore", &args),
            detail,
        })
    }
}
