//! Running a command in a pod through `pods/exec` (websocket), as `kubectl exec` does.

use fdb_shared::api::FoundationDBCluster;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::AttachParams;
use tokio::io::AsyncWriteExt as _;

use crate::error::PluginError;
use crate::exec_output::{OutputError, read_to_status};
use crate::session::Session;

/// The container fdbcli runs in.
pub const MAIN_CONTAINER: &str = "foundationdb";

/// The most output [`exec`] keeps of a stream (a large cluster's `status json` is a few
/// MiB); `exec` streams what it prints and keeps nothing.
pub const MAX_KEPT_OUTPUT: usize = 64 * 1024 * 1024;

/// What a command printed and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecResult {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Exit status (from the final `Status`).
    pub code: i32,
}

/// Runs `command` in `container` of `pod`.
pub async fn exec(
    session: &Session,
    pod: &str,
    container: &str,
    command: Vec<String>,
) -> Result<ExecResult, PluginError> {
    run(session, pod, container, command, None).await
}

/// Runs `command` in `container` of `pod` with `input` as its standard input (closed
/// after it), keeping its output like [`exec`].
pub async fn exec_with_input(
    session: &Session,
    pod: &str,
    container: &str,
    command: Vec<String>,
    input: &[u8],
) -> Result<ExecResult, PluginError> {
    run(session, pod, container, command, Some(input)).await
}

/// [`exec`] and [`exec_with_input`]: attaches standard input only when there is some to
/// send.
async fn run(
    session: &Session,
    pod: &str,
    container: &str,
    command: Vec<String>,
    input: Option<&[u8]>,
) -> Result<ExecResult, PluginError> {
    let pods: Api<Pod> = Api::namespaced(session.client.clone(), &session.namespace);
    let params = AttachParams::default()
        .container(container)
        .stdin(input.is_some())
        .stdout(true)
        .stderr(true);
    let action = format!("exec in pod {pod}");
    let mut attached = pods
        .exec(&crate::names::segment(pod), command, &params)
        .await
        .map_err(|error| session.error(error, &action))?;
    if let (Some(input), Some(mut writer)) = (input, attached.stdin()) {
        let sent = writer.write_all(input).await.and(writer.shutdown().await);
        sent.map_err(|error| PluginError::Exec {
            action: action.clone(),
            message: format!("standard input: {error}"),
        })?;
    }
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status = read_to_status(attached, &mut out, &mut err, MAX_KEPT_OUTPUT)
        .await
        .map_err(|error| lost(session, &action, error))?;
    Ok(ExecResult {
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
        code: exit_code(status),
    })
}

/// An exec whose output could not be read to its end, as the plugin's error.
fn lost(session: &Session, action: &str, error: OutputError) -> PluginError {
    match error {
        OutputError::Lost(detail) => PluginError::Unreachable {
            server: session.server.clone(),
            detail: format!("{action}: {detail}"),
        },
        other => PluginError::Exec {
            action: action.to_owned(),
            message: other.to_string(),
        },
    }
}

/// Runs `command` in `container` of `pod` with this process's standard input, output and
/// error attached, as the Go plugin's `exec` does: output is streamed as it comes, input
/// is forwarded until it ends (then the remote standard input is closed). With
/// `terminal`, the command gets a terminal (`src/terminal.rs`): this one in raw mode, its
/// size followed, standard error merged into the output. Returns the command's exit
/// status.
pub async fn exec_attached(
    session: &Session,
    pod: &str,
    container: &str,
    command: Vec<String>,
    terminal: bool,
) -> Result<i32, PluginError> {
    let pods: Api<Pod> = Api::namespaced(session.client.clone(), &session.namespace);
    // A terminal carries one stream: kube refuses standard error with it.
    let params = AttachParams::default()
        .container(container)
        .stdin(true)
        .stdout(true)
        .stderr(!terminal)
        .tty(terminal);
    let action = format!("exec in pod {pod}");
    let mut attached = pods
        .exec(&crate::names::segment(pod), command, &params)
        .await
        .map_err(|error| session.error(error, &action))?;
    // Restored when this function returns, however the command ended.
    let _raw = if terminal {
        let raw = crate::terminal::RawMode::enter().map_err(|error| PluginError::Exec {
            action: "put the terminal in raw mode".to_owned(),
            message: error.to_string(),
        })?;
        if let Some(sizes) = attached.terminal_size() {
            tokio::spawn(crate::terminal::follow_size(sizes));
        }
        Some(raw)
    } else {
        None
    };
    // Standard input is read on a thread of its own: a blocking read of a terminal
    // cannot be cancelled, and the command may end without reading it.
    let (send, mut receive) = tokio::sync::mpsc::channel::<Vec<u8>>(4);
    std::thread::spawn(move || {
        use std::io::Read as _;
        let mut input = std::io::stdin().lock();
        let mut buffer = vec![0u8; 8192];
        while let Ok(read) = input.read(&mut buffer) {
            if read == 0 || send.blocking_send(buffer[..read].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut remote_stdin = attached.stdin();
    let forward = tokio::spawn(async move {
        if let Some(writer) = remote_stdin.as_mut() {
            while let Some(chunk) = receive.recv().await {
                if writer.write_all(&chunk).await.is_err() {
                    return;
                }
            }
            let _ = writer.shutdown().await;
        }
        // Dropping the writer closes the remote standard input.
        drop(remote_stdin);
    });
    let read = read_to_status(
        attached,
        &mut tokio::io::stdout(),
        &mut tokio::io::stderr(),
        usize::MAX,
    )
    .await;
    // The exec has ended: standard input is no longer forwarded (its reading thread
    // stops at its next chunk, the channel being closed).
    forward.abort();
    let status = read.map_err(|error| lost(session, &action, error))?;
    Ok(exit_code(status))
}

/// The exit status a final `Status` reports (0 on success, 1 when it names none).
fn exit_code(status: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>) -> i32 {
    match status {
        Some(status) if status.status.as_deref() == Some("Success") => 0,
        Some(status) => status
            .details
            .and_then(|d| d.causes)
            .into_iter()
            .flatten()
            .find(|c| c.reason.as_deref() == Some("ExitCode"))
            .and_then(|c| c.message)
            .and_then(|m| m.parse().ok())
            .unwrap_or(1),
        None => 0,
    }
}

/// The names of the cluster's running pods (not being deleted), sorted.
pub fn fdbcli_pods(pods: &[Pod]) -> Vec<String> {
    let mut names: Vec<String> = pods
        .iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter(|pod| pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .filter_map(|pod| pod.metadata.name.clone())
        .collect();
    names.sort();
    names
}

/// A running pod of the cluster to run fdbcli in (the first by name).
pub fn fdbcli_pod(cluster: &FoundationDBCluster, pods: &[Pod]) -> Result<String, PluginError> {
    fdbcli_pods(pods).into_iter().next().ok_or_else(|| {
        PluginError::NotFound(format!(
            "FoundationDBCluster {}/{} has no running pod to run fdbcli in",
            cluster.metadata.namespace.as_deref().unwrap_or_default(),
            cluster.metadata.name.as_deref().unwrap_or_default()
        ))
    })
}

/// Runs `fdbcli --exec TEXT` in `pod`; a non-zero exit is an error naming the command.
pub async fn fdbcli(session: &Session, pod: &str, text: &str) -> Result<String, PluginError> {
    let command = vec!["fdbcli".to_owned(), "--exec".to_owned(), text.to_owned()];
    let result = exec(session, pod, MAIN_CONTAINER, command).await?;
    if result.code != 0 {
        return Err(PluginError::Refused {
            action: format!("run fdbcli --exec '{text}' in pod {pod}"),
            message: crate::error::one_line(&result.stderr),
            code: 500,
        });
    }
    Ok(result.stdout)
}
