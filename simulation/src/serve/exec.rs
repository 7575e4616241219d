//! `pods/<name>/exec` of the served world: the websocket protocol `kubectl exec` and kube
//! clients speak (`v4.channel.k8s.io`: one binary message per output chunk, its first byte
//! the channel: 1 stdout, 2 stderr, 3 the final `Status`), and the commands a simulated
//! container can run:
//!
//! - `fdbcli --exec "CMD; CMD..."` (other fdbcli flags are ignored: the container's
//!   fdbcli reaches its own database), alone or as `sh -c` / `bash -c` text, read and
//!   answered by the simulated fdbcli the operator's tools run on too
//!   (`crate::fdbcli`: every command the operator sends, with FoundationDB's texts and
//!   exit codes), carried out through the world's admin interface, so they are logged
//!   and judged like any other admin command;
//! - `pkill fdbserver`: stops the pod's own fdbserver processes, which its fdbmonitor
//!   starts again (a signal: it needs no database, unlike fdbcli's `kill`);
//! - `cat PATH`, and `printf '%s\n' "$N" > PATH` (the value of a positional argument
//!   written to a file, as `kubectl fdb fix-coordinator-ips` rewrites the cluster file):
//!   in the pod's main container, through its volumes (`world/container_files.rs`), so
//!   the cluster file written on the data volume is the one fdbmonitor starts fdbserver
//!   with after `pkill fdbserver`;
//! - `sh -c SCRIPT NAME ARG...`: a script of those commands joined by `&&`, with its
//!   positional arguments (`$1`...) taken from ARG..., never expanded into the text.
//!
//! With a terminal (`tty=true`) the output comes on one stream and `fdbcli` without
//! `--exec` is interactive (`serve/exec_tty.rs`).
//!
//! Anything else exits 127, as a shell would for a command it cannot find; a script or
//! an fdbcli line with any unsupported part (`fdbcli --exec X ; rm -rf /`) is refused
//! whole, before any of it runs. Standard input is read up to 1 MiB and output kept up
//! to 16 MiB (`serve/exec_bounds.rs`). SPDY (the older exec protocol) is not served: the
//! request is refused with 400.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use futures::SinkExt as _;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};

use super::exec_bounds::{
    DRAIN_LIMIT, MAX_EXEC_STDIN, fdbcli_text, frame, is_supported, split_shell, websocket_config,
};
use crate::fdb::SimulatedFdb;
use crate::kube::{FakeApiServer, ResourceKey};
use fdb_operator::fdb::AdminClient;

/// The subprotocols served (v5 only adds a close signal from the client, which a
/// command without stdin never needs), in order of preference.
const PROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

/// What an exec request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// Namespace of the pod.
    pub namespace: String,
    /// The pod.
    pub pod: String,
    /// The container (`None`: the pod's first).
    pub container: Option<String>,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// The client sends standard input (`stdin=true`): read until it closes, then run.
    pub stdin: bool,
    /// The client asks for a terminal (`tty=true`): `serve/exec_tty.rs`.
    pub tty: bool,
}

/// What a command printed and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Exit status.
    pub exit_code: i32,
}

impl ExecOutput {
    pub(super) fn failed(code: i32, message: impl Into<String>) -> Self {
        Self {
            stdout: String::new(),
            stderr: message.into(),
            exit_code: code,
        }
    }
}

/// Runs commands in the simulated containers.
#[derive(Clone)]
pub struct SimulatedExec {
    /// The world's API (to find the pod and its processes' address).
    pub api: FakeApiServer,
    /// The admin interface commands go through (a recording one, so they are logged).
    pub admin: Arc<dyn AdminClient>,
    /// The database the containers' fdbcli reaches (its protocol, its texts): the first
    /// cluster's.
    pub fdb: SimulatedFdb,
    /// The fleet members' databases, each reached from its own pods
    /// (`serve/exec_database.rs`).
    pub fleet: Vec<super::exec_database::ExecDatabase>,
    /// Called after every command that changed the database (wakes the operator).
    pub on_change: Arc<dyn Fn() + Send + Sync>,
    /// The running pods' main container filesystems (`cat`, `printf ... > PATH`).
    pub container_files: crate::world::container_files::ContainerFiles,
    /// Held by the served world while it advances (`runner/live.rs`): a command runs
    /// between two advances, at one simulated moment, never inside an operator pass
    /// whose effects would then include the user's.
    pub turn: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for SimulatedExec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimulatedExec").finish_non_exhaustive()
    }
}

/// Parses `/api/v1/namespaces/NS/pods/NAME/exec` and its query (`command` repeated).
pub fn parse_request(path: &str, query: Option<&str>) -> Option<ExecRequest> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let ["api", "v1", "namespaces", namespace, "pods", pod, "exec"] = segments.as_slice() else {
        return None;
    };
    let mut command = Vec::new();
    let mut container = None;
    let mut stdin = false;
    let mut tty = false;
    for pair in query.unwrap_or_default().split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "command" => command.push(decode(value)),
            "container" => container = Some(decode(value)).filter(|c| !c.is_empty()),
            "stdin" => stdin = matches!(value, "true" | "1"),
            "tty" => tty = matches!(value, "true" | "1"),
            _ => {}
        }
    }
    Some(ExecRequest {
        namespace: decode(namespace),
        pod: decode(pod),
        container,
        command,
        stdin,
        tty,
    })
}

/// A query value as `application/x-www-form-urlencoded` writes it: `+` is a space,
/// `%XX` a byte; an invalid escape stays as written.
fn decode(text: &str) -> String {
    percent_encoding::percent_decode_str(&text.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

impl SimulatedExec {
    /// Runs one command in a pod's container, with no standard input.
    pub async fn run(&self, request: &ExecRequest) -> Result<ExecOutput, (u16, String)> {
        let pod = self.check(request)?;
        Ok(self.execute(&pod, request, "").await)
    }

    /// The pod of a request that can run (it exists, runs, has the container, and a
    /// command is given), or the error the API server answers with.
    fn check(&self, request: &ExecRequest) -> Result<Value, (u16, String)> {
        let key = ResourceKey::new("", "v1", "pods", &request.namespace, &request.pod);
        let Some(pod) = self.api.get(&key) else {
            return Err((404, format!("pods \"{}\" not found", request.pod)));
        };
        let containers: Vec<String> = pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
            .collect();
        let container = request
            .container
            .clone()
            .or_else(|| containers.first().cloned())
            .unwrap_or_default();
        if !containers.contains(&container) {
            return Err((
                400,
                format!("container {container} is not valid for pod {}", request.pod),
            ));
        }
        let running = pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
            && pod.pointer("/metadata/deletionTimestamp").is_none();
        if !running {
            return Err((
                400,
                format!(
                    "unable to upgrade connection: pod {} is not running",
                    request.pod
                ),
            ));
        }
        if request.command.is_empty() {
            return Err((400, "you must specify at least one command".into()));
        }
        Ok(pod)
    }

    /// Runs a checked request's command; `stdin` is what the client sent (fdbcli without
    /// `--exec` runs each of its lines, as it does reading commands from a pipe).
    pub(super) async fn execute(
        &self,
        pod: &Value,
        request: &ExecRequest,
        stdin: &str,
    ) -> ExecOutput {
        let _turn = self.turn.lock().await;
        match fdbcli_text(&request.command) {
            Some(Ok(text)) => return self.fdbcli(pod, &text).await,
            Some(Err(message)) => return ExecOutput::failed(127, format!("{message}\n")),
            None => {}
        }
        if let [shell, flag, script, _name, arguments @ ..] = request.command.as_slice()
            && shell.ends_with("sh")
            && flag == "-c"
        {
            return self.script(pod, script, arguments, stdin).await;
        }
        if request
            .command
            .first()
            .is_some_and(|p| p.ends_with("fdbcli"))
        {
            let text: Vec<&str> = stdin.lines().map(str::trim).collect();
            return self.fdbcli(pod, &text.join(";")).await;
        }
        if let [program, args @ ..] = request.command.as_slice()
            && program.ends_with("fdbbackup")
        {
            return self.fdbbackup(pod, args).await;
        }
        let words: Vec<&str> = request.command.iter().map(String::as_str).collect();
        self.simple(pod, &words, &[], stdin).await
    }

    /// A `&&` chain of simple commands; `$N` words are positional arguments.
    async fn script(
        &self,
        pod: &Value,
        script: &str,
        arguments: &[String],
        stdin: &str,
    ) -> ExecOutput {
        let mut output = ExecOutput::default();
        // Every part is checked before any runs: a chain with one unsupported part is
        // refused whole.
        let mut parts = Vec::new();
        for command in script.split("&&").map(str::trim) {
            let Some(words) = split_shell(command) else {
                return fail(output, &format!("sh: unterminated quote in `{command}`"));
            };
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            if !is_supported(&words) {
                return ExecOutput::failed(
                    127,
                    format!(
                        "sh: `{command}` is not run by the simulated container (it runs \
                         pkill fdbserver, cat, find, base64 and printf to a file, joined by &&); \
                         nothing ran\n"
                    ),
                );
            }
            parts.push(words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>());
        }
        for words in &parts {
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let step = self.simple(pod, &words, arguments, stdin).await;
            output.stdout.push_str(&step.stdout);
            output.stderr.push_str(&step.stderr);
            output.exit_code = step.exit_code;
            if step.exit_code != 0 {
                break;
            }
        }
        output
    }

    /// One simple command (`pkill fdbserver`, `cat PATH`, `printf '%s\n' "$N" > PATH`,
    /// and the file commands of `serve/exec_files.rs`).
    async fn simple(
        &self,
        pod: &Value,
        words: &[&str],
        arguments: &[String],
        stdin: &str,
    ) -> ExecOutput {
        let uid = pod
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        match words {
            ["pkill", .., "fdbserver"] => self.pkill(pod),
            ["find" | "base64", ..] => self.file_command(&uid, words, arguments, stdin),
            ["cat", path] => match self.container_files.read(&uid, path) {
                Ok(Some(text)) => ExecOutput {
                    stdout: text,
                    ..ExecOutput::default()
                },
                Ok(None) => {
                    ExecOutput::failed(1, format!("cat: {path}: No such file or directory\n"))
                }
                Err(error) => ExecOutput::failed(1, format!("cat: {error}\n")),
            },
            ["printf", "%s\\n", argument, ">", path] if path.starts_with('/') => {
                let value = argument
                    .strip_prefix('$')
                    .and_then(|n| n.parse::<usize>().ok())
                    .and_then(|n| n.checked_sub(1))
                    .and_then(|n| arguments.get(n));
                let Some(value) = value else {
                    return ExecOutput::failed(
                        1,
                        format!("sh: {argument}: not a positional argument\n"),
                    );
                };
                match self.container_files.write(&uid, path, format!("{value}\n")) {
                    Ok(()) => ExecOutput::default(),
                    Err(error) => ExecOutput::failed(1, format!("sh: {error}\n")),
                }
            }
            _ => ExecOutput::failed(
                127,
                format!(
                    "{}: command not found in the simulated container (it runs fdbcli --exec, fdbbackup, pkill fdbserver, cat, find, base64 and printf to a file)\n",
                    words.first().copied().unwrap_or_default()
                ),
            ),
        }
    }

    /// The admin interface and database `pod`'s containers reach: the one its cluster
    /// file names (`serve/exec_database.rs`).
    pub(super) fn database_of(&self, pod: &Value) -> (&Arc<dyn AdminClient>, &SimulatedFdb) {
        super::exec_database::member_database(&self.fleet, &self.container_files, pod)
            .map_or((&self.admin, &self.fdb), |database| {
                (&database.admin, &database.fdb)
            })
    }

    /// `pkill fdbserver`: the pod's processes (they listen on its IP) stop and their
    /// fdbmonitor starts them again.
    fn pkill(&self, pod: &Value) -> ExecOutput {
        let Some(ip) = pod.pointer("/status/podIP").and_then(Value::as_str) else {
            return ExecOutput::failed(1, "");
        };
        let (_, fdb) = self.database_of(pod);
        if fdb.signal_processes_on_host(ip) == 0 {
            // pkill's status when nothing matched.
            return ExecOutput::failed(1, "");
        }
        (self.on_change)();
        ExecOutput::default()
    }
}

pub(super) fn fail(mut output: ExecOutput, message: &str) -> ExecOutput {
    output.stderr.push_str(message);
    output.stderr.push('\n');
    output.exit_code = 1;
    output
}

/// The `Status` sent on channel 3 at the end.
fn final_status(exit_code: i32) -> Value {
    if exit_code == 0 {
        json!({"metadata": {}, "status": "Success"})
    } else {
        json!({"metadata": {}, "status": "Failure",
               "message": format!("command terminated with non-zero exit code: error executing command, exit status {exit_code}"),
               "reason": "NonZeroExitCode",
               "details": {"causes": [{"reason": "ExitCode", "message": exit_code.to_string()}]}})
    }
}

fn status_response(code: u16, message: &str) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": message, "code": code,
                      "reason": if code == 404 {"NotFound"} else {"BadRequest"}});
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Answers an exec request: runs the command, then upgrades to a websocket and streams
/// its output (or answers with the error `Status`).
pub async fn serve(
    exec: &SimulatedExec,
    request: ExecRequest,
    headers: &HeaderMap,
    upgrade: Option<hyper::upgrade::OnUpgrade>,
) -> Response {
    let (Some(key), Some(upgrade), Some(protocol)) = (
        headers.get(header::SEC_WEBSOCKET_KEY),
        upgrade,
        websocket_protocol(headers),
    ) else {
        return status_response(
            400,
            "exec is served over websockets with the v5.channel.k8s.io or v4.channel.k8s.io subprotocol only (no SPDY)",
        );
    };
    let pod = match exec.check(&request) {
        Ok(pod) => pod,
        Err((code, message)) => return status_response(code, &message),
    };
    let accept = derive_accept_key(key.as_bytes());
    let exec = exec.clone();
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else { return };
        stream_exec(&exec, &pod, &request, upgraded).await;
    });
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(
        header::SEC_WEBSOCKET_PROTOCOL,
        HeaderValue::from_static(protocol),
    );
    if let Ok(accept) = HeaderValue::from_str(&accept) {
        headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    }
    response
}

/// The protocol of the websocket upgrade the client asks for, if it asks for one we
/// serve.
fn websocket_protocol(headers: &HeaderMap) -> Option<&'static str> {
    let wants_websocket = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let offered: Vec<String> = headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').map(|p| p.trim().to_owned()))
        .collect();
    PROTOCOLS
        .into_iter()
        .find(|p| offered.iter().any(|o| o == p))
        .filter(|_| wants_websocket)
}

/// Runs the command on the upgraded connection and streams its output, then closes.
async fn stream_exec(
    exec: &SimulatedExec,
    pod: &Value,
    request: &ExecRequest,
    upgraded: hyper::upgrade::Upgraded,
) {
    let io = hyper_util::rt::TokioIo::new(upgraded);
    let mut socket = tokio_tungstenite::WebSocketStream::from_raw_socket(
        io,
        Role::Server,
        Some(websocket_config()),
    )
    .await;
    if request.tty {
        let code = exec.run_with_terminal(pod, request, &mut socket).await;
        let status = final_status(code).to_string();
        let _ = socket.send(frame(3, status.as_bytes())).await;
        let _ = socket
            .close(Some(CloseFrame {
                code: CloseCode::Normal,
                reason: "".into(),
            }))
            .await;
        return;
    }
    let stdin = if request.stdin {
        read_stdin(&mut socket).await
    } else {
        Some(String::new())
    };
    let refused = stdin.is_none();
    let output = match stdin {
        Some(stdin) => exec.execute(pod, request, &stdin).await,
        None => ExecOutput::failed(
            1,
            format!(
                "standard input above {MAX_EXEC_STDIN} bytes (the most the simulated \
                 container reads); nothing ran\n"
            ),
        ),
    };
    let mut messages = Vec::new();
    if !output.stdout.is_empty() {
        messages.push(frame(1, output.stdout.as_bytes()));
    }
    if !output.stderr.is_empty() {
        messages.push(frame(2, output.stderr.as_bytes()));
    }
    messages.push(frame(
        3,
        final_status(output.exit_code).to_string().as_bytes(),
    ));
    for message in messages {
        if socket.send(message).await.is_err() {
            return;
        }
    }
    if refused {
        // The client is still sending: closing now would reset the connection under
        // the refusal it has not read yet (kubectl then prints "connection reset by
        // peer"). Its input is read and dropped until it goes, for a bounded time.
        drain_stdin(&mut socket).await;
    }
    // A normal closure (1000): clients read it as the end of every stream.
    let _ = socket
        .close(Some(CloseFrame {
            code: CloseCode::Normal,
            reason: "".into(),
        }))
        .await;
}

/// What the client sends on channel 0 until it closes standard input (v5: the message
/// `[255, 0]`), closes the socket (v4 has no other way), or the socket ends; `None` past
/// [`MAX_EXEC_STDIN`] (reading stops there: nothing more is kept).
async fn read_stdin<S>(socket: &mut tokio_tungstenite::WebSocketStream<S>) -> Option<String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use futures::StreamExt as _;
    let mut input = Vec::new();
    while let Some(message) = socket.next().await {
        // A message above the websocket limits is an error: nothing runs.
        let Ok(message) = message else {
            return None;
        };
        match message {
            Message::Binary(bytes) => match bytes.split_first() {
                Some((0, data)) => {
                    if input.len() + data.len() > MAX_EXEC_STDIN {
                        return None;
                    }
                    input.extend_from_slice(data);
                }
                Some((255, [0])) => break,
                _ => {}
            },
            Message::Close(_) => break,
            _ => {}
        }
    }
    Some(String::from_utf8_lossy(&input).into_owned())
}

/// Reads and drops what the client still sends, until it closes its standard input or
/// the socket, or [`DRAIN_LIMIT`] has passed (wall clock); nothing is kept.
async fn drain_stdin<S>(socket: &mut tokio_tungstenite::WebSocketStream<S>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use futures::StreamExt as _;
    let drain = async {
        while let Some(Ok(message)) = socket.next().await {
            match message {
                Message::Binary(bytes) if bytes.as_ref() == [255, 0] => break,
                Message::Close(_) => break,
                _ => {}
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_LIMIT, drain).await;
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
