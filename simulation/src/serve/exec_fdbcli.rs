//! The `fdbcli` of a served container: the simulated fdbcli (`crate::fdbcli`) of the
//! container's version, reaching the world's database through the exec's admin
//! interface (the user's commands, recorded and judged as the user's).

use serde_json::Value;

use super::exec::{ExecOutput, SimulatedExec, fail};
use super::exec_bounds::MAX_EXEC_OUTPUT;
use crate::fdbcli::SimulatedTools;
use fdb_operator::fdb::FdbTool;
use fdb_shared::FdbVersion;

impl SimulatedExec {
    /// fdbcli's `--exec` line, run by the simulated fdbcli of the container's version
    /// (its own fdbserver's; the database's when it runs none).
    pub(super) async fn fdbcli(&self, pod: &Value, text: &str) -> ExecOutput {
        let Some(version) = self.container_version(pod) else {
            return ExecOutput::failed(
                1,
                "fdbcli: no FoundationDB process of this container or database to take the version from\n",
            );
        };
        self.fdbcli_of_version(version, text).await
    }

    /// fdbcli's `--exec` line, run by the simulated fdbcli of `version`.
    pub(super) async fn fdbcli_of_version(&self, version: FdbVersion, text: &str) -> ExecOutput {
        let tools = SimulatedTools::new(
            self.admin.clone(),
            self.fdb.clone(),
            std::iter::empty(),
            "/usr/bin",
        )
        .with_on_change(self.on_change.clone());
        let args = ["--exec".to_owned(), text.to_owned()];
        let printed = tools
            .run_tool(FdbTool::Fdbcli, version, &args, "default", false)
            .await;
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

    /// The version of the container's fdbcli: its fdbserver's, else the database's.
    fn container_version(&self, pod: &Value) -> Option<FdbVersion> {
        let ip = pod.pointer("/status/podIP").and_then(Value::as_str);
        let own = ip.and_then(|ip| {
            self.fdb
                .snapshot()
                .processes
                .iter()
                .find(|p| {
                    p.address
                        .parse::<fdb_shared::address::ProcessAddress>()
                        .is_ok_and(|a| a.host == ip)
                })
                .map(|p| p.version)
        });
        own.or_else(|| self.fdb.protocol_version())
    }
}
