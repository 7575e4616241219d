//! The move to the target version's tools during an incompatible upgrade.
//!
//! fdbcli speaks one protocol: after the upgrade's kill restarted the processes on the
//! target version, the running version's fdbcli times out or reports the database
//! unavailable without a single process. As the Go operator's `getStatus`
//! (`fdbclient/admin_client.go`: on a timeout during a version-incompatible upgrade it
//! reads the status again with the `spec.version` binary and keeps that version), the
//! client then reads the status with the target's fdbcli and, when that answers, runs
//! every later command of the pass with the target's tools. The next pass starts from
//! the target anyway: UpdateStatus records the new `status.runningVersion` from the
//! processes.

use std::path::Path;
use std::sync::atomic::Ordering;

use fdb_shared::status_json::DatabaseStatus;

use super::{FdbcliAdminClient, FdbcliConfig};
use crate::fdb::error::AdminError;
use crate::fdb::tools::{FdbTool, MissingTool};

impl FdbcliAdminClient {
    /// The same client, able to move to the tools of `target` (the upgrade's target
    /// version) when the status cannot be read with its own.
    pub fn with_fallback(mut self, target: FdbcliConfig) -> Self {
        self.fallback = Some(target);
        self
    }

    /// Whether the client moved to the target's tools.
    pub fn on_fallback(&self) -> bool {
        self.on_fallback.load(Ordering::Relaxed)
    }

    /// `status json` with the active tools; during an upgrade whose processes the
    /// running version's fdbcli no longer reaches, with the target's tools (kept for
    /// the commands that follow when they answer; the first failure is reported when
    /// they do not).
    pub(super) async fn status_with_fallback(&self) -> Result<DatabaseStatus, AdminError> {
        let first = self.status_with(self.active_config()).await;
        let Some(target) = self.fallback.as_ref().filter(|_| !self.on_fallback()) else {
            return first;
        };
        if !reached_nothing(&first) {
            return first;
        }
        match self.status_with(target).await {
            Ok(status) if !lists_no_process(&status) => {
                tracing::info!(
                    tools = ?target.version.map(|v| v.to_string()),
                    "the running version's fdbcli reaches no process: using the upgrade target's tools"
                );
                self.on_fallback.store(true, Ordering::Relaxed);
                Ok(status)
            }
            _ => first,
        }
    }

    async fn status_with(&self, config: &FdbcliConfig) -> Result<DatabaseStatus, AdminError> {
        let command = "status json";
        let output = self.run_with(config, command).await?;
        DatabaseStatus::parse_fdbcli_output(&output).map_err(|source| AdminError::Parse {
            command: command.to_owned(),
            source,
        })
    }
}

/// Whether a status read reached no process, as a tool of another protocol does: it
/// timed out, reported the database unavailable, or printed a status that is not
/// available and lists no process (the Go operator treats an unavailable status as a
/// timeout, `parseMachineReadableStatus` in `fdbclient/common.go`).
fn reached_nothing(result: &Result<DatabaseStatus, AdminError>) -> bool {
    match result {
        Err(AdminError::Timeout { .. } | AdminError::Unavailable { .. }) => true,
        Err(_) => false,
        Ok(status) => lists_no_process(status),
    }
}

/// A status that is not available and lists no process.
fn lists_no_process(status: &DatabaseStatus) -> bool {
    status.client.database_status.available != Some(true) && status.cluster.processes.is_empty()
}

/// The error of a tool that could not be started: the version's missing tool when the
/// file is not there and the tools were chosen for a version, else the spawn error.
pub(super) fn spawn_error(
    config: &FdbcliConfig,
    program: &Path,
    command: &str,
    source: std::io::Error,
) -> AdminError {
    let tool = [FdbTool::Fdbcli, FdbTool::Fdbbackup, FdbTool::Fdbrestore]
        .into_iter()
        .find(|tool| program.file_name() == Some(tool.file_name().as_ref()));
    match (config.version, tool) {
        (Some(version), Some(tool)) if source.kind() == std::io::ErrorKind::NotFound => {
            AdminError::MissingTool {
                command: command.to_owned(),
                missing: MissingTool {
                    tool,
                    version,
                    path: program.to_owned(),
                },
            }
        }
        _ => AdminError::Spawn {
            command: command.to_owned(),
            program: program.display().to_string(),
            source,
        },
    }
}
