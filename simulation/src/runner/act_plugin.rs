//! `act: {as: user, kubectlFdb: [ARG...]}`: a user runs `kubectl fdb ARG...` against the
//! world. The plugin is the shipped `kubectl-fdb` binary, run as a process of its own
//! against the world's API served over HTTP on a loopback port for the length of the
//! command (the listener `simulate --serve` uses, with `pods/exec`), through a
//! kubeconfig written for it: the plugin's whole code path runs (kubeconfig loading,
//! kube client, websocket exec, its prompts and exit codes). Every request arriving
//! there is the user's, so its writes and its fdbcli commands are judged as a user's.
//!
//! Why a process, not a library call: `kubectl-fdb` depends on this crate (its
//! `snapshot` and `rehearse` run the simulation), so this crate cannot depend on it; the
//! binary is found as kubectl finds plugins (`kubectl-fdb` on the `PATH`), or given in
//! [`super::RunOptions::kubectl_fdb`] (tests pass the one cargo built).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use super::{Runner, USER_ACTOR};
use crate::result::EventSource;
use crate::serve::{ServeError, control, http, kubeconfig};

/// The plugin's executable name, as kubectl looks it up for `kubectl fdb`.
pub const PLUGIN_PROGRAM: &str = "kubectl-fdb";

/// How long one command may take (wall clock): the world does not advance meanwhile, so
/// a command still running after this is stuck, not waiting for the world.
const PLUGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// How much of the plugin's output the event log keeps.
const LOGGED_OUTPUT: usize = 4096;

/// Why a `kubectlFdb` act could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum PluginActError {
    /// No plugin binary to run.
    #[error(
        "no `{PLUGIN_PROGRAM}` executable on the PATH (install the plugin, or run the scenario \
         with the path of one)"
    )]
    NotFound,
    /// The world's API could not be served to the plugin.
    #[error("serving the world to the plugin")]
    Serve(#[from] ServeError),
    /// The kubeconfig's folder could not be made.
    #[error("a folder for the plugin's kubeconfig: {0}")]
    Folder(std::io::Error),
    /// The plugin could not be started.
    #[error("starting {}", program.display())]
    Spawn {
        /// The binary.
        program: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The plugin did not end in time.
    #[error("still running after {} s (killed)", PLUGIN_TIMEOUT.as_secs())]
    TimedOut,
    /// The plugin exited with a failure, as a user would have seen it.
    #[error("kubectl fdb exited with {code}: {stderr}")]
    Failed {
        /// The exit status (`-1`: killed by a signal).
        code: i32,
        /// What it printed on standard error.
        stderr: String,
    },
}

impl Runner {
    /// Runs `kubectl fdb args` as a user against the world; a non-zero exit fails the
    /// step with what the plugin printed.
    pub(super) async fn run_kubectl_fdb(&mut self, args: &[String]) -> Result<(), PluginActError> {
        let program = self
            .kubectl_fdb
            .clone()
            .or_else(|| find_on_path(PLUGIN_PROGRAM))
            .ok_or(PluginActError::NotFound)?;
        let server = self.serve_to_user().await?;
        let ran = self.run_plugin(&program, server.address, args).await;
        server.stop().await;
        let (code, stdout, stderr) = ran?;
        let detail = format!(
            "exit {code}\n{}{}",
            clip(&stdout),
            if stderr.is_empty() {
                String::new()
            } else {
                format!("\nstderr: {}", clip(&stderr))
            }
        );
        self.log.record(
            EventSource::K8s,
            "kubectl-fdb",
            &args.join(" "),
            detail.trim_end(),
        );
        if code == 0 {
            Ok(())
        } else {
            Err(PluginActError::Failed {
                code,
                stderr: stderr.trim().to_owned(),
            })
        }
    }

    /// The world's API on a free loopback port, every request the user's, with
    /// `pods/exec` whose commands are recorded as the user's.
    async fn serve_to_user(&self) -> Result<http::RunningServer, PluginActError> {
        let exec = self.act_exec();
        let extras = http::Extras {
            exec: Some(exec),
            actor: USER_ACTOR,
            tools: None,
            turn: None,
            control: Arc::new(control::Control::new(self.api.clone())),
        };
        let clock = Arc::new(self.clock.clock().clone());
        let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        Ok(http::start(&self.api, clock, loopback, extras).await?)
    }

    /// Runs the plugin with a kubeconfig for `address` (the scenario's namespace as the
    /// context's), standard input closed (a question is answered "no", as with no one at
    /// the terminal); returns its exit status and output.
    async fn run_plugin(
        &self,
        program: &Path,
        address: std::net::SocketAddr,
        args: &[String],
    ) -> Result<(i32, String, String), PluginActError> {
        let folder = tempfile::tempdir().map_err(PluginActError::Folder)?;
        let config = folder.path().join("kubeconfig");
        kubeconfig::write(&config, address, &self.namespace)?;
        let child = tokio::process::Command::new(program)
            .arg("--kubeconfig")
            .arg(&config)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| PluginActError::Spawn {
                program: program.to_owned(),
                source,
            })?;
        let output = tokio::time::timeout(PLUGIN_TIMEOUT, child.wait_with_output())
            .await
            .map_err(|_| PluginActError::TimedOut)?
            .map_err(|source| PluginActError::Spawn {
                program: program.to_owned(),
                source,
            })?;
        Ok((
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        ))
    }
}

/// `program` in a folder of the `PATH`, as a shell (and kubectl) finds it.
fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|folder| folder.join(program))
        .find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// At most [`LOGGED_OUTPUT`] bytes of `text`, cut at a character boundary.
pub(super) fn clip(text: &str) -> &str {
    if text.len() <= LOGGED_OUTPUT {
        return text;
    }
    let mut end = LOGGED_OUTPUT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
