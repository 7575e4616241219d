//! Errors of admin operations on the database.

use fdb_shared::status_json::StatusParseError;

/// An admin operation failed. Every variant names the command that failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The command did not finish in time.
    #[error("`{command}` timed out after {seconds}s")]
    Timeout {
        /// The command.
        command: String,
        /// The time limit.
        seconds: u64,
    },
    /// The database could not be reached or is unavailable.
    #[error("`{command}`: the database is unavailable: {output}")]
    Unavailable {
        /// The command.
        command: String,
        /// What the tool said.
        output: String,
    },
    /// The command ran and failed.
    #[error("`{command}` failed (exit code {code:?}): {stderr}")]
    Failed {
        /// The command.
        command: String,
        /// Exit code, if the process exited normally.
        code: Option<i32>,
        /// The error output (or standard output when that is where the error was).
        stderr: String,
    },
    /// The status document could not be parsed.
    #[error("`{command}`: cannot parse the output")]
    Parse {
        /// The command.
        command: String,
        /// The parse error.
        source: StatusParseError,
    },
    /// The command's output has an unexpected shape (e.g. a lock value that is not a
    /// tuple).
    #[error("`{command}`: unexpected output: {detail}")]
    InvalidResponse {
        /// The command.
        command: String,
        /// What is wrong.
        detail: String,
    },
    /// The tool could not be started.
    #[error("`{command}`: cannot run {program}")]
    Spawn {
        /// The command.
        command: String,
        /// The program that failed to start.
        program: String,
        /// The IO error.
        source: std::io::Error,
    },
    /// The database refused the operation in its current state.
    #[error("`{command}` was refused: {reason}")]
    Rejected {
        /// The command.
        command: String,
        /// Why.
        reason: String,
    },
    /// The operation is not supported by this client or version.
    #[error("`{command}` is not supported: {reason}")]
    Unsupported {
        /// The command.
        command: String,
        /// Why.
        reason: String,
    },
    /// The operator has no tool of the version the command needs (its image lacks
    /// that minor's directory under `--fdb-binaries-dir`); nothing was run.
    #[error("`{command}`: {missing}")]
    MissingTool {
        /// The command.
        command: String,
        /// The tool, its version and where it was looked for.
        missing: crate::fdb::tools::MissingTool,
    },
}

/// A copy of a parse error; the JSON error is rebuilt from its message.
fn clone_parse_error(error: &StatusParseError) -> StatusParseError {
    match error {
        StatusParseError::NoDocument { prefix } => StatusParseError::NoDocument {
            prefix: prefix.clone(),
        },
        StatusParseError::Json {
            line,
            column,
            source,
        } => StatusParseError::Json {
            line: *line,
            column: *column,
            source: <serde_json::Error as serde::de::Error>::custom(source.to_string()),
        },
    }
}

/// A remembered failure (the pass's `status json` memo) is handed out again as a copy;
/// the IO error of [`AdminError::Spawn`] and the JSON error of a parse failure are rebuilt
/// from their messages.
impl Clone for AdminError {
    fn clone(&self) -> Self {
        match self {
            Self::Timeout { command, seconds } => Self::Timeout {
                command: command.clone(),
                seconds: *seconds,
            },
            Self::Unavailable { command, output } => Self::Unavailable {
                command: command.clone(),
                output: output.clone(),
            },
            Self::Failed {
                command,
                code,
                stderr,
            } => Self::Failed {
                command: command.clone(),
                code: *code,
                stderr: stderr.clone(),
            },
            Self::Parse { command, source } => Self::Parse {
                command: command.clone(),
                source: clone_parse_error(source),
            },
            Self::InvalidResponse { command, detail } => Self::InvalidResponse {
                command: command.clone(),
                detail: detail.clone(),
            },
            Self::Spawn {
                command,
                program,
                source,
            } => Self::Spawn {
                command: command.clone(),
                program: program.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Self::Rejected { command, reason } => Self::Rejected {
                command: command.clone(),
                reason: reason.clone(),
            },
            Self::Unsupported { command, reason } => Self::Unsupported {
                command: command.clone(),
                reason: reason.clone(),
            },
            Self::MissingTool { command, missing } => Self::MissingTool {
                command: command.clone(),
                missing: missing.clone(),
            },
        }
    }
}

impl AdminError {
    /// Whether retrying later may succeed without any change.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Timeout { .. } | Self::Unavailable { .. } | Self::Failed { .. }
        )
    }

    /// The refusal of fdbcli's `exclude` this failure is, if it is one (still
    /// transient: the same command may succeed later).
    pub fn exclude_refusal(&self) -> Option<crate::fdb::fdbcli::refusals::ExcludeRefusal> {
        match self {
            Self::Failed { stderr, .. } => crate::fdb::fdbcli::refusals::exclude_refusal(stderr),
            _ => None,
        }
    }

    /// A short, fixed name of the kind of failure, for metric labels and event reasons.
    pub fn category(&self) -> &'static str {
        match self {
            Self::Timeout { .. } => "Timeout",
            Self::Unavailable { .. } => "Unavailable",
            Self::Failed { .. } => "CommandFailed",
            Self::Parse { .. } => "ParseError",
            Self::InvalidResponse { .. } => "InvalidResponse",
            Self::Spawn { .. } => "SpawnFailed",
            Self::Rejected { .. } => "Rejected",
            Self::Unsupported { .. } => "Unsupported",
            Self::MissingTool { .. } => "MissingTool",
        }
    }

    /// The command that failed.
    pub fn command(&self) -> &str {
        match self {
            Self::Timeout { command, .. }
            | Self::Unavailable { command, .. }
            | Self::Failed { command, .. }
            | Self::Parse { command, .. }
            | Self::InvalidResponse { command, .. }
            | Self::Spawn { command, .. }
            | Self::Rejected { command, .. }
            | Self::Unsupported { command, .. }
            | Self::MissingTool { command, .. } => command,
        }
    }
}
