//! The FoundationDB tools of a served world, for an operator run outside it
//! (`simulate --serve --external-operator --fdb-tools-dir DIR`): the stand-ins written
//! to `DIR/<minor>/` (by `serve/tool_files.rs`) post their argv, the `FDB_*`
//! environment and the cluster file they read (`-C`, as real tools read it) to
//! [`TOOLS_PATH`] on the operator's listener; every request runs through [`run_tool`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use fdb_operator::fdb::FdbTool;
use fdb_operator::fdb::tools::TRACE_LOG_GROUP_ENV;
use fdb_shared::FdbVersion;
use http::{HeaderValue, StatusCode, header};
use serde::{Deserialize, Serialize};

use crate::fdbcli::{RoutedTools, image_tool_version};

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
    /// The cluster file's new contents after fdbcli changed the coordinators: the
    /// stand-in writes them to the file it read, as the real fdbcli rewrites its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_file: Option<String>,
}

/// What the tools reach: the world's databases (the first cluster's and each `fleet:`
/// member's), through the operator's admin interface.
#[derive(Clone)]
pub struct ServedTools {
    /// The simulated tools (the interpreter scenarios run) of each database, a run
    /// routed by the cluster file it was given; their admin records commands as the
    /// operator's.
    pub tools: RoutedTools,
    /// `world.operatorTools`: the minor versions the stand-ins exist for.
    pub minors: BTreeSet<String>,
    /// The world's turn: a tool run waits for it, as the served API's writes do.
    pub turn: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for ServedTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedTools")
            .field("minors", &self.minors)
            .finish_non_exhaustive()
    }
}

/// Runs one stand-in tool request: the one place every tool run of the external
/// operator goes through. The simulated tool of the stand-in's version (the operator
/// image's release of that minor) reads the arguments as the real one, reaches the
/// database the cluster file's contents the stand-in sent lead to (never a path of the
/// request opened here; a connection string of no database of the world reaches none,
/// as a real tool whose coordinators do not answer) and answers with that version's
/// texts and exit codes.
pub async fn run_tool(tools: &ServedTools, request: &ToolRequest) -> ToolReply {
    let (tool, version) = match known_tool(tools, request) {
        Ok(known) => known,
        Err(refusal) => return refusal,
    };
    let log_group = request
        .env
        .get(TRACE_LOG_GROUP_ENV)
        .map(String::as_str)
        .filter(|group| !group.is_empty())
        .unwrap_or("default");
    let _turn = tools.turn.lock().await;
    let run = tools
        .tools
        .route_text(request.cluster_file.as_deref())
        .run_remote_tool(
            tool,
            version,
            &request.args,
            log_group,
            request.cluster_file.as_deref(),
        )
        .await;
    ToolReply {
        stdout: run.printed.stdout,
        stderr: run.printed.stderr,
        exit_code: run.printed.code,
        cluster_file: run.new_cluster_file,
    }
}

/// The tool and version a request names: one of the world's stand-ins (a tool of a
/// minor the world has no stand-in for does not exist, as a missing binary).
fn known_tool(
    tools: &ServedTools,
    request: &ToolRequest,
) -> Result<(FdbTool, FdbVersion), ToolReply> {
    let tool = match request.tool.as_str() {
        "fdbcli" => FdbTool::Fdbcli,
        "fdbbackup" => FdbTool::Fdbbackup,
        "fdbrestore" => FdbTool::Fdbrestore,
        other => {
            return Err(failed(format!(
                "{other:?} is not a FoundationDB tool (fdbcli, fdbbackup, fdbrestore)"
            )));
        }
    };
    let version = tools
        .minors
        .contains(&request.version)
        .then(|| image_tool_version(&request.version))
        .flatten();
    let Some(version) = version else {
        return Err(failed(format!(
            "no {} {} in this world (world.operatorTools: {})",
            request.tool,
            request.version,
            tools.minors.iter().cloned().collect::<Vec<_>>().join(", ")
        )));
    };
    Ok((tool, version))
}

fn failed(message: String) -> ToolReply {
    ToolReply {
        stderr: format!("{message}\n"),
        exit_code: 1,
        ..ToolReply::default()
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
    reply(StatusCode::OK, &run_tool(tools, &request).await)
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
