//! How a FoundationDB tool (`fdbcli`, `fdbbackup`, `fdbrestore`) is run: one program
//! with its arguments and environment, within a deadline, answering with what it printed
//! and its exit code.
//!
//! The admin client (`fdb/fdbcli.rs`) builds every argument and reads every answer
//! itself; only the running is behind this trait, so the same argument building,
//! output parsing and failure classification run in production ([`ProcessRunner`],
//! a child process) and in the simulation (an in-process runner that interprets the
//! argv as the real tool of that version would).

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

/// One run of a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRun {
    /// The program (a path, or a bare name looked up on `PATH`).
    pub program: PathBuf,
    /// Its arguments, as the program receives them (`argv[1..]`).
    pub args: Vec<String>,
    /// Environment variables set for it (on top of the runner's own environment).
    pub env: Vec<(String, String)>,
    /// How long the run may take before it is stopped.
    pub deadline: Duration,
}

impl ToolRun {
    /// The value of environment variable `name` given to this run, if set.
    pub fn env_value(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// What a finished run printed, and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolOutput {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// The exit code (`None`: ended by a signal).
    pub exit_code: Option<i32>,
}

impl ToolOutput {
    /// Whether the program exited with 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// Why a run produced no output.
#[derive(Debug, thiserror::Error)]
pub enum ToolRunError {
    /// The deadline passed; the program was stopped.
    #[error("the program ran past its deadline and was stopped")]
    DeadlinePassed,
    /// The program could not be started.
    #[error("the program could not be started")]
    Spawn(#[source] std::io::Error),
}

/// Runs FoundationDB tools.
#[async_trait::async_trait]
pub trait ToolRunner: Send + Sync + fmt::Debug {
    /// Runs `run` to its end or its deadline.
    async fn run(&self, run: &ToolRun) -> Result<ToolOutput, ToolRunError>;

    /// Whether `program` is there to be run (a missing tool is reported by version
    /// before anything runs, `controller/versions/tool_choice.rs`).
    fn is_installed(&self, program: &Path) -> bool {
        super::tools::is_present(program)
    }
}

/// Runs each tool as a child process (production).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessRunner;

impl ProcessRunner {
    /// The process runner, shared.
    pub fn shared() -> Arc<dyn ToolRunner> {
        Arc::new(Self)
    }
}

#[async_trait::async_trait]
impl ToolRunner for ProcessRunner {
    async fn run(&self, run: &ToolRun) -> Result<ToolOutput, ToolRunError> {
        let mut child = tokio::process::Command::new(&run.program);
        child
            .args(&run.args)
            .envs(run.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let output = match tokio::time::timeout(run.deadline, child.output()).await {
            Err(_) => return Err(ToolRunError::DeadlinePassed),
            Ok(Err(source)) => return Err(ToolRunError::Spawn(source)),
            Ok(Ok(output)) => output,
        };
        Ok(ToolOutput {
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            exit_code: output.status.code(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, deadline: Duration) -> ToolRun {
        ToolRun {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![("GREETING".into(), "hello".into())],
            deadline,
        }
    }

    #[tokio::test]
    async fn a_process_answers_with_its_streams_code_and_environment() {
        let output = ProcessRunner
            .run(&sh(
                "echo \"$GREETING\"; echo oops >&2; exit 3",
                Duration::from_secs(30),
            ))
            .await
            .unwrap();
        assert_eq!(output.stdout, "hello\n");
        assert_eq!(output.stderr, "oops\n");
        assert_eq!(output.exit_code, Some(3));
        assert!(!output.success());
    }

    #[tokio::test]
    async fn a_process_past_its_deadline_is_stopped_and_a_missing_one_is_a_spawn_error() {
        let slow = ProcessRunner
            .run(&sh("sleep 30", Duration::from_millis(200)))
            .await;
        assert!(
            matches!(slow, Err(ToolRunError::DeadlinePassed)),
            "{slow:?}"
        );
        let missing = ProcessRunner
            .run(&ToolRun {
                program: "/nonexistent/fdbcli".into(),
                args: Vec::new(),
                env: Vec::new(),
                deadline: Duration::from_secs(5),
            })
            .await;
        assert!(
            matches!(&missing, Err(ToolRunError::Spawn(e)) if e.kind() == std::io::ErrorKind::NotFound),
            "{missing:?}"
        );
    }
}
