//! The FoundationDB tools of a served world, for an operator run outside it
//! (`simulate --serve --external-operator --fdb-tools-dir DIR`): the stand-ins written
//! to `DIR/<minor>/` (by `serve/tool_files.rs`) post their argv, the `FDB_*`
//! environment and the cluster file they read (`-C`, as real tools read it) to
//! [`TOOLS_PATH`] on the operator's listener; every request runs through [`run_tool`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use fdb_shared::FdbVersion;
use fdb_shared::connection_string::ConnectionString;
use http::{HeaderValue, StatusCode, header};
use serde::{Deserialize, Serialize};

use super::exec::{ExecOutput, SimulatedExec};

/// The path the stand-ins post to (on the external operator's listener only).
pub const TOOLS_PATH: &str = "/simulation/fdb-tools/v1/run";

/// The tools of each minor version.
pub const TOOL_NAMES: [&str; 3] = ["fdbcli", "fdbbackup", "fdbrestore"];

/// Most bytes of a cluster file a stand-in sends (a real one is under 1 KiB).
pub const MAX_CLUSTER_FILE: usize = 64 << 10;

/// One run of a stand-in tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolRequest {
    /// `fdbcli`, `fdbbackup` or `fdbrestore`.
    pub tool: String,
    /// The minor version of the stand-in (`7.1`): its directory under DIR.
    pub version: String,
    /// The arguments, as the tool got them (never through a shell).
    pub args: Vec<String>,
    /// The tool's `FDB_*` environment (`FDB_NETWORK_OPTION_TRACE_LOG_GROUP`, ...).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// What the stand-in read from the cluster file its arguments name (`None`: they
    /// name none, or it could not be read; the stand-in says why on its own).
    #[serde(default)]
    pub cluster_file: Option<String>,
}

/// What a stand-in prints and exits with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolReply {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Exit status.
    pub exit_code: i32,
}

/// What the tools reach: the world's database, through the operator's admin interface.
#[derive(Clone)]
pub struct ServedTools {
    /// Runs fdbcli texts; its admin records commands as the operator's.
    pub exec: SimulatedExec,
    /// `world.operatorTools`: the minor versions the stand-ins exist for.
    pub minors: BTreeSet<String>,
    /// The database's connection string, once it has one.
    pub connection_string: Arc<dyn Fn() -> Option<ConnectionString> + Send + Sync>,
    /// The version most of the database's processes run, once it runs.
    pub running_version: Arc<dyn Fn() -> Option<FdbVersion> + Send + Sync>,
}

impl std::fmt::Debug for ServedTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedTools")
            .field("minors", &self.minors)
            .finish_non_exhaustive()
    }
}

/// Runs one stand-in tool request: the one place every tool run of the external
/// operator goes through. fdbcli `--exec` texts of `status json` and `kill` run on the
/// database; anything else is refused whole (nothing runs) as not supported yet.
pub async fn run_tool(tools: &ServedTools, request: &ToolRequest) -> ExecOutput {
    if let Err(refusal) = reachable(tools, request) {
        return refusal;
    }
    match request.tool.as_str() {
        "fdbcli" => fdbcli(tools, &request.version, &request.args).await,
        other => failed(format!(
            "{other} {}: not supported by the stand-in yet (the served world's stand-ins \
             run fdbcli `status json` and `kill` so far)",
            request.args.first().map_or("", String::as_str)
        )),
    }
}

/// Whether the request reaches the database: a tool of the world, of a version the
/// world has tools for, with a cluster file naming the database, of the database's
/// protocol (a tool of another minor version cannot talk to it).
fn reachable(tools: &ServedTools, request: &ToolRequest) -> Result<(), ExecOutput> {
    if !TOOL_NAMES.contains(&request.tool.as_str()) {
        return Err(failed(format!(
            "{:?} is not a FoundationDB tool (fdbcli, fdbbackup, fdbrestore)",
            request.tool
        )));
    }
    if !tools.minors.contains(&request.version) {
        return Err(failed(format!(
            "no {} {} in this world (world.operatorTools: {})",
            request.tool,
            request.version,
            tools.minors.iter().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    let Some(text) = &request.cluster_file else {
        return Err(failed(format!(
            "{}: no cluster file (give one with -C FILE)",
            request.tool
        )));
    };
    let named: ConnectionString = text
        .trim()
        .parse()
        .map_err(|error| failed(format!("ERROR: the cluster file is not valid: {error}")))?;
    if let Some(database) = (tools.connection_string)()
        && database.description != named.description
    {
        // Coordinators forward an old generation to the new one: only another
        // database's description leaves the tool with nothing to talk to.
        return Err(failed(format!(
            "ERROR: no database of the served world is named {:?} (it serves {:?}); a real \
             {} would time out",
            named.description, database.description, request.tool
        )));
    }
    if let Some(running) = (tools.running_version)() {
        let minor = format!("{}.{}", running.major, running.minor);
        if minor != request.version {
            return Err(failed(format!(
                "ERROR: the database runs FoundationDB {running}, whose protocol {} {} does \
                 not speak; a real one cannot connect and times out",
                request.tool, request.version
            )));
        }
    }
    Ok(())
}

/// fdbcli: only `--exec` texts, and of those only `status json` and `kill` so far.
async fn fdbcli(tools: &ServedTools, version_minor: &str, args: &[String]) -> ExecOutput {
    let Some(text) = args
        .iter()
        .position(|arg| arg == "--exec")
        .and_then(|at| args.get(at + 1))
    else {
        return failed(
            "fdbcli without --exec (interactive) is not supported by the stand-in yet".to_owned(),
        );
    };
    for command in text.split(';').map(str::trim).filter(|c| !c.is_empty()) {
        let words: Vec<&str> = command.split_whitespace().collect();
        if !matches!(words.as_slice(), ["status", "json"] | ["kill", ..]) {
            return failed(format!(
                "ERROR: `{command}` is not supported by the stand-in yet (it runs `status \
                 json` and `kill`); nothing was run"
            ));
        }
    }
    let _turn = tools.exec.turn.lock().await;
    // The simulated fdbcli of the stand-in's version (checked against the database's
    // in `reachable`): the running version when it is of that minor, else the minor's
    // first release (a database not created yet runs none).
    let running = (tools.running_version)();
    let version = running
        .filter(|v| format!("{}.{}", v.major, v.minor) == version_minor)
        .or_else(|| format!("{version_minor}.0").parse().ok());
    let Some(version) = version else {
        return failed(format!(
            "fdbcli {version_minor}: not a FoundationDB version"
        ));
    };
    tools.exec.fdbcli_of_version(version, text).await
}

fn failed(message: String) -> ExecOutput {
    ExecOutput {
        stdout: String::new(),
        stderr: format!("{message}\n"),
        exit_code: 1,
    }
}

/// Answers one POST to [`TOOLS_PATH`]: a [`ToolRequest`] in, a [`ToolReply`] out.
pub async fn serve(tools: &ServedTools, body: &[u8]) -> Response {
    let request: ToolRequest = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(error) => {
            return reply(
                StatusCode::BAD_REQUEST,
                &ToolReply {
                    stderr: format!("not a tool request: {error}\n"),
                    exit_code: 1,
                    ..ToolReply::default()
                },
            );
        }
    };
    let output = run_tool(tools, &request).await;
    reply(
        StatusCode::OK,
        &ToolReply {
            stdout: output.stdout,
            stderr: output.stderr,
            exit_code: output.exit_code,
        },
    )
}

fn reply(status: StatusCode, body: &ToolReply) -> Response {
    let text = serde_json::to_string(body).unwrap_or_default();
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
