//! The `fdbcli` (and `fdbbackup`) of a served container: the simulated fdbcli (`crate::fdbcli`) of the
//! container's version, reaching the pod's database (`serve/exec_database.rs`) through
//! the exec's admin interface (the user's commands, recorded and judged as the user's).

use std::sync::Arc;

use serde_json::Value;

use super::exec::{ExecOutput, SimulatedExec, fail};
use super::exec_bounds::MAX_EXEC_OUTPUT;
use crate::fdb::SimulatedFdb;
use crate::fdbcli::SimulatedTools;
use fdb_operator::fdb::AdminClient;
use fdb_operator::fdb::FdbTool;
use fdb_shared::FdbVersion;

impl SimulatedExec {
    /// fdbcli's `--exec` line, run by the simulated fdbcli of the container's version
    /// (its own fdbserver's; the database's when it runs none).
    pub(super) async fn fdbcli(&self, pod: &Value, text: &str) -> ExecOutput {
        let (admin, fdb) = self.database_of(pod);
        let Some(version) = container_version(fdb, pod) else {
            return ExecOutput::failed(
                1,
                "fdbcli: no FoundationDB process of this container or database to take the version from\n",
            );
        };
        let args = ["--exec".to_owned(), text.to_owned()];
        self.tool_of_version(admin, fdb, version, FdbTool::Fdbcli, &args)
            .await
    }

    /// `fdbbackup ARGS...` in the container (an agent pod's, as the Go runbooks run
    /// `describe` and `expire`), by the simulated fdbbackup of the database's version.
    pub(super) async fn fdbbackup(&self, pod: &Value, args: &[String]) -> ExecOutput {
        let (admin, fdb) = self.database_of(pod);
        let Some(version) = container_version(fdb, pod) else {
            return ExecOutput::failed(
                1,
                "fdbbackup: no FoundationDB process of this container or database to take the version from\n",
            );
        };
        self.tool_of_version(admin, fdb, version, FdbTool::Fdbbackup, args)
            .await
    }

    /// `tool ARGS...` run by the simulated tool of `version` on `fdb`.
    async fn tool_of_version(
        &self,
        admin: &Arc<dyn AdminClient>,
        fdb: &SimulatedFdb,
        version: FdbVersion,
        tool: FdbTool,
        args: &[String],
    ) -> ExecOutput {
        let tools = SimulatedTools::new(admin.clone(), fdb.clone(), std::iter::empty(), "/usr/bin")
            .with_on_change(self.on_change.clone());
        let printed = tools.run_tool(tool, version, args, "default", false).await;
        let mut output = ExecOutput {
            stdout: printed.stdout,
            stderr: printed.stderr,
            exit_code: printed.code,
        };
        if output.stdout.len() > MAX_EXEC_OUTPUT {
            output.stdout.truncate(
                (0..=MAX_EXEC_OUTPUT)
                    .rev()
                    .find(|at| output.stdout.is_char_boundary(*at))
                    .unwrap_or(0),
            );
            return fail(
                output,
                &format!("ERROR: output above {MAX_EXEC_OUTPUT} bytes; stopped"),
            );
        }
        output
    }
}

/// The version of the container's fdbcli: its fdbserver's, else the database's.
fn container_version(fdb: &SimulatedFdb, pod: &Value) -> Option<FdbVersion> {
    let ip = pod.pointer("/status/podIP").and_then(Value::as_str);
    let own = ip.and_then(|ip| {
        fdb.snapshot()
            .processes
            .iter()
            .find(|p| {
                p.address
                    .parse::<fdb_shared::address::ProcessAddress>()
                    .is_ok_and(|a| a.host == ip)
            })
            .map(|p| p.version)
    });
    own.or_else(|| fdb.protocol_version())
}
