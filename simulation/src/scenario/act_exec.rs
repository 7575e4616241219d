//! `act: {as: user, exec: {...}}`: a user runs a command in a pod's container, as
//! `kubectl exec` does (the runbooks' `kubectl exec deploy/<backup>-backup-agents -c
//! foundationdb -- fdbbackup expire ...`, docs/backup.md), through the same simulated
//! containers the served API's `pods/exec` reaches (`serve/exec.rs`).

use serde::{Deserialize, Serialize};

/// The `exec` field of an `act` step, as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecAct {
    /// `pod/<name>`, or `deployment/<name>`: then the first running pod of the
    /// Deployment's selector by name (`kubectl exec deploy/<name>` picks one of them).
    pub target: String,
    /// The container (default: the pod's first, as kubectl).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The command and its arguments, each a word of its own (no shell).
    pub command: Vec<String>,
    /// The exit status the command must end with (default 0); any other fails the step
    /// with what the command printed.
    #[serde(default)]
    pub exit_code: i32,
    /// Text the command's output (its standard output, then its standard error) must
    /// contain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_contains: Option<String>,
}

/// Where an `exec` act runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecTarget {
    /// This pod.
    Pod(String),
    /// The first running pod of this Deployment's selector, by name.
    Deployment(String),
}

/// An `exec` act, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecCommand {
    /// Where it runs.
    pub target: ExecTarget,
    /// The container (`None`: the pod's first).
    pub container: Option<String>,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// The exit status it must end with.
    pub exit_code: i32,
    /// Text its output must contain.
    pub output_contains: Option<String>,
}

impl ExecAct {
    /// The command, validated; the error names the field inside `act`.
    pub fn validated(&self) -> Result<ExecCommand, (&'static str, String)> {
        let (kind, name) = self.target.split_once('/').ok_or_else(|| {
            (
                "exec.target",
                format!(
                    "{:?} is not of the form pod/<name> or deployment/<name>",
                    self.target
                ),
            )
        })?;
        if name.is_empty() || name.contains('/') {
            return Err((
                "exec.target",
                format!("{:?} has no valid object name", self.target),
            ));
        }
        let target = match kind {
            "pod" => ExecTarget::Pod(name.to_owned()),
            "deployment" | "deploy" => ExecTarget::Deployment(name.to_owned()),
            other => {
                return Err((
                    "exec.target",
                    format!("{other:?} is not a kind exec runs in (pod, deployment)"),
                ));
            }
        };
        if self
            .command
            .first()
            .is_none_or(|word| word.trim().is_empty())
        {
            return Err((
                "exec.command",
                "must name a program and its arguments (e.g. [fdbbackup, describe, -d, URL])"
                    .to_owned(),
            ));
        }
        if self
            .container
            .as_deref()
            .is_some_and(|c| c.trim().is_empty())
        {
            return Err((
                "exec.container",
                "must name a container, or be left out for the pod's first".to_owned(),
            ));
        }
        Ok(ExecCommand {
            target,
            container: self.container.clone(),
            command: self.command.clone(),
            exit_code: self.exit_code,
            output_contains: self.output_contains.clone(),
        })
    }
}
