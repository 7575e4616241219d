//! The FoundationDB tools of the simulated world: an in-process [`ToolRunner`] that
//! reads the argv exactly as the real `fdbcli`, `fdbbackup` and `fdbrestore` receive it,
//! carries each command out on the simulated database through the admin interface it
//! is given (the recording one: the events log and the judges see every command), and
//! answers with the text and exit code the real tool of that version prints.
//!
//! Clients have versions: the tool's minor version comes from its path
//! (`DIR/<major.minor>/fdbcli`, `fdb/tools.rs`), and a tool whose protocol the
//! database does not speak reaches nothing (it waits to its timeout; `status json` shows
//! no reachable coordinator). Every run of a tool that reaches the database is listed as
//! a client for 10 s with its version and trace log group
//! (`FDB_NETWORK_OPTION_TRACE_LOG_GROUP`, `default` when unset).

mod argv;
mod backup;
mod configure;
mod force_recovery;
mod keys;
mod line;
mod output;
mod routes;
mod session;
#[cfg(test)]
mod tests;
mod texts;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use fdb_operator::fdb::tools::{TRACE_LOG_GROUP_ENV, binary_version};
use fdb_operator::fdb::{AdminClient, FdbTool, ToolOutput, ToolRun, ToolRunError, ToolRunner};
use fdb_shared::FdbVersion;
use fdb_shared::connection_string::ConnectionString;

use self::output::Printed;
use self::session::Session;
use self::texts::{Stop, hang_output, tool_hang_output, unreachable_status};
use crate::event_log::EventLog;
use crate::fdb::{SimulatedFdb, ToolClient};
use crate::result::ToolRunRecord;

pub use self::output::Printed as ToolPrinted;
pub use self::routes::RoutedTools;

/// The version of each minor's tools in the operator image (`images/operator/Dockerfile`
/// `FDB_7_1_VERSION`, `FDB_7_3_VERSION`, `FDB_7_4_VERSION`).
const IMAGE_TOOL_VERSIONS: [&str; 3] = ["7.1.57", "7.3.43", "7.4.5"];

/// The version of the operator image's tools of `minor` (`7.3` -> 7.3.43; the minor's
/// first release for a minor the image does not name); `None` when `minor` is not one.
pub fn image_tool_version(minor: &str) -> Option<FdbVersion> {
    IMAGE_TOOL_VERSIONS
        .iter()
        .filter_map(|v| v.parse::<FdbVersion>().ok())
        .find(|v| binary_version(v) == minor)
        .or_else(|| format!("{minor}.0").parse().ok())
        .filter(|v: &FdbVersion| binary_version(v) == minor)
}

/// The address the operator's tool runs connect from (a pod IP of the operator);
/// each run gets its own port, as each fdbcli process has its own connection.
const TOOL_CLIENT_HOST: &str = "10.1.255.250";

/// Called after a run that changed the database.
pub type OnChange = Arc<dyn Fn() + Send + Sync>;

/// The simulated tools of one database.
#[derive(Clone)]
pub struct SimulatedTools {
    admin: Arc<dyn AdminClient>,
    fdb: SimulatedFdb,
    installed: BTreeSet<String>,
    binaries_dir: PathBuf,
    on_change: Option<OnChange>,
    next_port: Arc<AtomicU32>,
    /// Where each run is recorded, and the name of the database it is recorded on.
    recorder: Option<(EventLog, String)>,
}

impl std::fmt::Debug for SimulatedTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimulatedTools")
            .field("installed", &self.installed)
            .field("binaries_dir", &self.binaries_dir)
            .finish_non_exhaustive()
    }
}

impl SimulatedTools {
    /// The tools of minors `installed` (`7.3`) under `binaries_dir`, reaching `fdb`
    /// through `admin`.
    pub fn new(
        admin: Arc<dyn AdminClient>,
        fdb: SimulatedFdb,
        installed: impl IntoIterator<Item = String>,
        binaries_dir: impl Into<PathBuf>,
    ) -> Self {
        Self {
            admin,
            fdb,
            installed: installed.into_iter().collect(),
            binaries_dir: binaries_dir.into(),
            on_change: None,
            next_port: Arc::new(AtomicU32::new(40000)),
            recorder: None,
        }
    }

    /// The same tools, recording each run into `log` as a run on the database of
    /// cluster `database` (a reached `status json` is counted, not recorded).
    pub fn with_recorder(mut self, log: EventLog, database: &str) -> Self {
        self.recorder = Some((log, database.to_owned()));
        self
    }

    /// The same tools, recording their runs on no database (a run whose cluster file
    /// leads to none of the world's databases).
    pub fn on_no_database(&self) -> Self {
        let mut tools = self.clone();
        if let Some((_, database)) = tools.recorder.as_mut() {
            database.clear();
        }
        tools
    }

    /// Whether the cluster file `run` names leads to this tools' database (a fleet's
    /// operator reaches each database through the cluster file of its cluster).
    pub fn leads_here(&self, run: &ToolRun) -> bool {
        let Some((tool, _)) = self.installed_tool(&run.program) else {
            return false;
        };
        let Some(path) = argv::parse(tool, &run.args)
            .ok()
            .and_then(|invocation| invocation.cluster_file)
        else {
            return false;
        };
        let Ok(text) = std::fs::read_to_string(&path) else {
            return false;
        };
        self.leads_here_text(&text)
    }

    /// Whether a cluster file holding `text` leads to this tools' database (directly,
    /// or forwarded by a former coordinator): what a served world's stand-in sends.
    pub fn leads_here_text(&self, text: &str) -> bool {
        matches!(
            self.reach_text(text, "fdb.cluster"),
            Reach::Database | Reach::Forwarded(_)
        )
    }

    /// Records a run (see [`Self::with_recorder`]).
    fn record(
        &self,
        tool: FdbTool,
        version: &FdbVersion,
        invocation: &argv::Invocation,
        reached: bool,
        printed: &Printed,
    ) {
        let Some((log, database)) = &self.recorder else {
            return;
        };
        let command = invocation
            .exec
            .clone()
            .unwrap_or_else(|| invocation.subcommand.join(" "));
        if reached && command.trim() == "status json" {
            return;
        }
        log.record_tool_run(ToolRunRecord {
            step: 0,
            time: 0,
            pass: 0,
            database: database.clone(),
            tool: tool.file_name().to_owned(),
            version: version.to_string(),
            command,
            reached,
            exit_code: printed.code,
        });
    }

    /// The same tools, calling `on_change` after a run that changed the database.
    pub fn with_on_change(mut self, on_change: OnChange) -> Self {
        self.on_change = Some(on_change);
        self
    }

    /// The tool and version of an installed program path, if it is one.
    fn installed_tool(&self, program: &Path) -> Option<(FdbTool, FdbVersion)> {
        let tool = [FdbTool::Fdbcli, FdbTool::Fdbbackup, FdbTool::Fdbrestore]
            .into_iter()
            .find(|tool| program.file_name() == Some(tool.file_name().as_ref()))?;
        let minor_dir = program.parent()?;
        if minor_dir.parent()? != self.binaries_dir {
            return None;
        }
        let minor = minor_dir.file_name()?.to_str()?;
        if !self.installed.contains(minor) {
            return None;
        }
        Some((tool, image_tool_version(minor)?))
    }

    /// Runs `tool` of `version` with `args`, as a client in `log_group`; the cluster file
    /// the arguments name is read from this machine (`cluster_file_required: false`:
    /// without one the tool reaches the database, as a container's own fdbcli does).
    pub async fn run_tool(
        &self,
        tool: FdbTool,
        version: FdbVersion,
        args: &[String],
        log_group: &str,
        cluster_file_required: bool,
    ) -> Printed {
        let source = if cluster_file_required {
            ClusterFile::OnDisk
        } else {
            ClusterFile::OnDiskOrContainer
        };
        self.run_with(tool, version, args, log_group, source)
            .await
            .printed
    }

    /// Runs `tool` of `version` with `args` as a tool elsewhere ran it (a served world's
    /// stand-in): `cluster_file` is what that tool read from the file its arguments name
    /// (`None`: they name none); the path is only shown, never opened here. A changed
    /// connection string comes back for the tool to write to its file, as fdbcli does.
    pub async fn run_remote_tool(
        &self,
        tool: FdbTool,
        version: FdbVersion,
        args: &[String],
        log_group: &str,
        cluster_file: Option<&str>,
    ) -> RemoteRun {
        self.run_with(
            tool,
            version,
            args,
            log_group,
            ClusterFile::Given(cluster_file),
        )
        .await
    }

    async fn run_with(
        &self,
        tool: FdbTool,
        version: FdbVersion,
        args: &[String],
        log_group: &str,
        source: ClusterFile<'_>,
    ) -> RemoteRun {
        let invocation = match argv::parse(tool, args) {
            Ok(invocation) => invocation,
            Err(text) => return RemoteRun::printed(Printed::failed(1, &text)),
        };
        let reach = match (&invocation.cluster_file, source) {
            (_, ClusterFile::Given(Some(text))) => {
                self.reach_text(text, &shown_path(invocation.cluster_file.as_deref()))
            }
            (Some(path), ClusterFile::OnDisk | ClusterFile::OnDiskOrContainer) => self.reach(path),
            (None, ClusterFile::OnDiskOrContainer) => Reach::Database,
            (_, ClusterFile::Given(None)) | (None, ClusterFile::OnDisk) => {
                return RemoteRun::printed(Printed::failed(1, NO_CLUSTER_FILE));
            }
        };
        let mut forwarded = None;
        let coordinators = match reach {
            Reach::Failed(printed) => return RemoteRun::printed(printed),
            Reach::Database => None,
            Reach::Forwarded(connection) => {
                forwarded = Some(connection);
                None
            }
            Reach::NoCoordinator(coordinators) => Some(coordinators),
        };
        let speaks = self
            .fdb
            .protocol_version()
            .map(|running| running.is_protocol_compatible(&version));
        if speaks == Some(false) || coordinators.is_some() {
            let printed = self.unreached(tool, &invocation, coordinators.unwrap_or_default());
            self.record(tool, &version, &invocation, false, &printed);
            return RemoteRun::printed(printed);
        }
        if speaks == Some(true) {
            // Without a quorum there is no cluster controller to list the client.
            self.fdb.connect_tool_client(&ToolClient {
                address: format!(
                    "{TOOL_CLIENT_HOST}:{}",
                    self.next_port.fetch_add(1, Ordering::Relaxed)
                ),
                version,
                log_group: log_group.to_owned(),
            });
        }
        let (printed, changed, new_connection) = match tool {
            FdbTool::Fdbcli => self.fdbcli(&invocation).await,
            _ => {
                let tool_call = backup::ToolCall {
                    tool,
                    version: &version,
                };
                let (printed, changed) = backup::run(
                    tool_call,
                    &invocation.subcommand,
                    self.admin.as_ref(),
                    &self.fdb,
                )
                .await;
                (printed, changed, None)
            }
        };
        self.record(tool, &version, &invocation, true, &printed);
        if changed && let Some(on_change) = &self.on_change {
            on_change();
        }
        let new_cluster_file = new_connection
            .or(forwarded)
            .map(|connection| format!("{connection}\n"));
        if let (Some(text), Some(path), ClusterFile::OnDisk | ClusterFile::OnDiskOrContainer) =
            (&new_cluster_file, &invocation.cluster_file, source)
        {
            // fdbcli rewrites its cluster file after a coordinators change.
            let _ = std::fs::write(path, text);
        }
        RemoteRun {
            printed,
            new_cluster_file,
        }
    }

    async fn fdbcli(
        &self,
        invocation: &argv::Invocation,
    ) -> (Printed, bool, Option<ConnectionString>) {
        let Some(line) = &invocation.exec else {
            return (
                Printed::failed(1, "ERROR: the simulated fdbcli runs only with --exec\n"),
                false,
                None,
            );
        };
        let (printed, session) = Session::new(self.admin.as_ref(), &self.fdb)
            .run_line(line)
            .await;
        (printed, session.changed, session.new_connection)
    }

    /// A tool that reaches no coordinator it can talk to: `status json` answers with
    /// the client section alone, anything else waits to its timeout.
    fn unreached(
        &self,
        tool: FdbTool,
        invocation: &argv::Invocation,
        coordinators: Vec<String>,
    ) -> Printed {
        let stop = Stop::Unavailable;
        if tool != FdbTool::Fdbcli {
            return tool_hang_output(stop);
        }
        let only_status = invocation.exec.as_deref().map(str::trim) == Some("status json");
        if !only_status {
            return hang_output(stop);
        }
        let coordinators = if coordinators.is_empty() {
            self.fdb
                .connection_string()
                .map(|c| c.coordinators.iter().map(ToString::to_string).collect())
                .unwrap_or_default()
        } else {
            coordinators
        };
        let path = invocation
            .cluster_file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let now = self.fdb.now_unix();
        let document = unreachable_status(&path, &coordinators, now);
        let mut printed = Printed::default();
        printed.out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&document).unwrap_or_default()
        ));
        printed
    }

    /// Whether the cluster file at `path` leads to the database: through a current
    /// coordinator, or a former one's forward.
    fn reach(&self, path: &Path) -> Reach {
        let shown = path.display().to_string();
        let Ok(text) = std::fs::read_to_string(path) else {
            return Reach::Failed(Printed::failed(
                1,
                &format!(
                    "Unable to read cluster file `{shown}': 1515 No cluster file found in current directory or default location\n"
                ),
            ));
        };
        self.reach_text(&text, &shown)
    }

    /// Whether a cluster file holding `text` (shown as `shown`) leads to the database:
    /// it must share a coordinator with it and name it (its description; coordinators
    /// forward an older generation's ID to the current one).
    fn reach_text(&self, text: &str, shown: &str) -> Reach {
        let Ok(file) = text.trim().parse::<ConnectionString>() else {
            return Reach::Failed(Printed::failed(
                1,
                &format!("Invalid cluster file `{shown}': 2101 Connection string invalid\n"),
            ));
        };
        let current = self.fdb.connection_string();
        let leads_to_it = current.as_ref().is_some_and(|current| {
            current.description == file.description
                && file
                    .coordinators
                    .iter()
                    .any(|c| current.coordinators.contains(c))
        });
        if leads_to_it {
            return Reach::Database;
        }
        if let Some(current) = current.filter(|_| self.fdb.forwards(&file)) {
            // A former coordinator forwarded the client, which keeps the new connection
            // string in its cluster file (`fdb/forwards.rs`).
            return Reach::Forwarded(current);
        }
        Reach::NoCoordinator(file.coordinators.iter().map(ToString::to_string).collect())
    }
}

/// What fdbcli prints when it finds no cluster file (`fdbclient/MonitorLeader.actor.cpp`
/// `ClusterConnectionFile::lookupClusterFileName`, error 1515).
const NO_CLUSTER_FILE: &str = "Unable to read cluster file `./fdb.cluster' or `/etc/foundationdb/fdb.cluster' and FDB_CLUSTER_FILE unset: 1515 No cluster file found in current directory or default location\n";

/// The path a remote tool's cluster file is shown as.
fn shown_path(path: Option<&Path>) -> String {
    path.map_or_else(|| "fdb.cluster".to_owned(), |p| p.display().to_string())
}

/// Where a run's cluster file comes from.
#[derive(Clone, Copy)]
enum ClusterFile<'a> {
    /// Read from this machine at the path the arguments name; they must name one.
    OnDisk,
    /// Read from this machine when the arguments name one; else the container's own.
    OnDiskOrContainer,
    /// Read by the tool elsewhere: its contents (`None`: it found none).
    Given(Option<&'a str>),
}

/// What a run printed, and the cluster file it leaves (after a coordinators change).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteRun {
    /// What the tool printed and its exit code.
    pub printed: Printed,
    /// The cluster file's new contents, when fdbcli changed the coordinators.
    pub new_cluster_file: Option<String>,
}

impl RemoteRun {
    fn printed(printed: Printed) -> Self {
        Self {
            printed,
            new_cluster_file: None,
        }
    }
}

/// Where a cluster file leads.
enum Reach {
    /// To the database.
    Database,
    /// To the database, through a former coordinator's forward to this connection string
    /// (the tool rewrites its cluster file with it).
    Forwarded(ConnectionString),
    /// To coordinators none of which is the database's.
    NoCoordinator(Vec<String>),
    /// Nowhere: the tool printed this and exited.
    Failed(Printed),
}

#[async_trait::async_trait]
impl ToolRunner for SimulatedTools {
    async fn run(&self, run: &ToolRun) -> Result<ToolOutput, ToolRunError> {
        let Some((tool, version)) = self.installed_tool(&run.program) else {
            return Err(ToolRunError::Spawn(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "{} is not in the simulated operator image",
                    run.program.display()
                ),
            )));
        };
        let log_group = run.env_value(TRACE_LOG_GROUP_ENV).unwrap_or("default");
        Ok(self
            .run_tool(tool, version, &run.args, log_group, true)
            .await
            .into())
    }

    fn is_installed(&self, program: &Path) -> bool {
        self.installed_tool(program).is_some()
    }
}
