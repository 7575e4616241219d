//! `snapshot` and `rehearse`: what no other plugin has. `snapshot` captures the cluster
//! as the operator's `fdb-operator snapshot` does (the same capture of its objects through
//! the Kubernetes API, and the same scenario folder), reading `status json` through
//! `fdbcli` in one of its pods, as every other command of the plugin reaches the database.
//! `rehearse` then runs that scenario with a changed manifest applied in the simulated
//! world, on this machine, and tells what the operator would do to the cluster: nothing
//! is written to the live cluster by either.

use std::path::{Path, PathBuf};

use fdb_operator::capture::{CaptureOptions, capture_objects, status_line};
use fdb_operator::cli::explain::explain_manifest;
use fdb_shared::error_chain::chain_text;
use fdb_simulation::result::{EventSource, SimulationResult};
use fdb_simulation::runner::{RunOptions, run_scenario};
use fdb_simulation::scenario::Scenario;
use fdb_simulation::scenario::safe_write::{check_output_dir, replace_file};
use fdb_simulation::scenario::snapshot_secrets::placeholder_warning;
use fdb_simulation::scenario::snapshot_write::{WriteError, rehearsal_identity_error, write_dir};
use serde_json::Value;

use crate::cli::{RehearseArgs, SnapshotArgs};
use crate::error::PluginError;
use crate::exec::{fdbcli, fdbcli_pod};
use crate::session::Session;

/// A captured cluster: its objects and, when the database answered, its `status json`.
struct Captured {
    objects: Vec<Value>,
    status: Option<Value>,
}

/// Captures `name` (progress on stderr).
async fn capture(
    session: &Session,
    name: &str,
    include_secret_values: bool,
) -> Result<Captured, PluginError> {
    // A missing cluster is named as every command names it.
    let cluster = session.cluster(name).await?;
    let options = CaptureOptions {
        namespace: session.namespace.clone(),
        cluster: name.to_owned(),
        include_secret_values,
    };
    let progress = |line: &str| eprintln!("{line}");
    let (objects, _) = capture_objects(&session.client, &options, &progress)
        .await
        .map_err(|error| PluginError::Unreachable {
            server: session.server.clone(),
            detail: crate::error::one_line(&chain_text(&error)),
        })?;
    let pods = session.pods_of(&cluster).await?;
    let status = match fdbcli_pod(&cluster, &pods) {
        Ok(pod) => match fdbcli(session, &pod, "status json").await {
            Ok(text) => match serde_json::from_str::<Value>(&text) {
                Ok(status) => Some(status),
                Err(error) => {
                    eprintln!(
                        "status json from pod {pod} is not JSON: {error} (captured without it)"
                    );
                    None
                }
            },
            Err(error) => {
                eprintln!("status json: {error} (captured without it)");
                None
            }
        },
        Err(error) => {
            eprintln!("status json: {error} (captured without it)");
            None
        }
    };
    if let Some(status) = &status {
        eprintln!("{}", status_line(status));
    }
    Ok(Captured { objects, status })
}

/// The folder of a capture: `--output`, else `<cluster>-snapshot` here.
fn output_dir(output: Option<&PathBuf>, cluster: &str, what: &str) -> PathBuf {
    output
        .cloned()
        .unwrap_or_else(|| PathBuf::from(format!("{cluster}-{what}")))
}

/// Runs `snapshot`.
pub async fn snapshot(session: &Session, args: &SnapshotArgs) -> Result<u8, PluginError> {
    let dir = output_dir(args.output.as_ref(), &args.cluster, "snapshot");
    // Refused before the capture, which may take a while.
    check_output_dir(&dir, args.force).map_err(|error| PluginError::Usage(chain_text(&error)))?;
    let captured = capture(session, &args.cluster, args.include_secret_values).await?;
    write_dir(
        &dir,
        &captured.objects,
        captured.status.as_ref(),
        None,
        args.force,
    )
    .map_err(|error| PluginError::Usage(chain_text(&error)))?;
    println!(
        "Wrote {} ({} objects, {}); run it with: fdb-operator simulate {}",
        dir.display(),
        captured.objects.len(),
        if captured.status.is_some() {
            "status json"
        } else {
            "no status json"
        },
        dir.join("scenario.yaml").display()
    );
    Ok(0)
}

/// Reads the changed manifest: one YAML or JSON document, a FoundationDBCluster that
/// `fdb-operator explain` finds valid (a `kind: Pod` was merged as the cluster's spec,
/// and an invalid spec ran six simulated hours without naming the field). Checked before
/// anything is captured or written.
fn read_manifest(path: &Path) -> Result<Value, PluginError> {
    let usage = |error: String| PluginError::Usage(format!("--file {}: {error}", path.display()));
    let text = fdb_shared::yaml_input::read_file(path)
        .map_err(|error| usage(fdb_shared::error_chain::chain_text(&error)))?;
    let manifest = fdb_shared::yaml_input::single_document(&text)
        .map_err(|error| usage(fdb_shared::error_chain::chain_text(&error)))?;
    match manifest.get("kind").and_then(Value::as_str) {
        Some("FoundationDBCluster") => {}
        Some(kind) => {
            return Err(usage(format!(
                "holds a {kind:?}, not a FoundationDBCluster; rehearse applies a changed \
                 cluster manifest"
            )));
        }
        None => {
            return Err(usage(
                "holds no kind; rehearse applies a FoundationDBCluster manifest".into(),
            ));
        }
    }
    let explanation = explain_manifest(path, &text)
        .map_err(|error| usage(fdb_shared::error_chain::chain_text(&error)))?;
    if !explanation.valid {
        return Err(usage(format!(
            "not a valid FoundationDBCluster (as `fdb-operator explain` says): {}",
            explanation.errors.join("; ")
        )));
    }
    Ok(manifest)
}

/// Runs `rehearse`: exit 0 when the change is reconciled with no invariant violated, 1
/// when it is not (the summary says why).
pub async fn rehearse(session: &Session, args: &RehearseArgs) -> Result<u8, PluginError> {
    let manifest = read_manifest(&args.file)?;
    // Before the capture: a manifest of another cluster is named as such.
    if let Some(problem) = rehearsal_identity_error(&manifest, &args.cluster, &session.namespace) {
        return Err(PluginError::Usage(format!(
            "--file {}: {problem}",
            args.file.display()
        )));
    }
    let dir = output_dir(args.output.as_ref(), &args.cluster, "rehearsal");
    check_output_dir(&dir, args.force).map_err(|error| PluginError::Usage(chain_text(&error)))?;
    let captured = capture(session, &args.cluster, false).await?;
    write_dir(
        &dir,
        &captured.objects,
        captured.status.as_ref(),
        Some(&manifest),
        args.force,
    )
    .map_err(|error| match error {
        WriteError::Rehearse(message) => {
            PluginError::Usage(format!("--file {}: {message}", args.file.display()))
        }
        other => PluginError::Usage(chain_text(&other)),
    })?;
    let path = dir.join("scenario.yaml");
    let scenario = Scenario::from_file(&path).map_err(|error| {
        PluginError::Usage(format!(
            "the captured cluster cannot be simulated: {}",
            crate::error::one_line(&chain_text(&error))
        ))
    })?;
    if let Some(warning) = placeholder_warning(&captured.objects) {
        eprintln!("warning: {warning}");
    }
    eprintln!("simulating {} ...", path.display());
    let result = simulate(scenario).await?;
    let result_path = dir.join("result.json");
    let json = serde_json::to_string_pretty(&result).unwrap_or_default();
    replace_file(&dir, "result.json", &format!("{json}\n"))
        .map_err(|error| PluginError::Usage(chain_text(&error)))?;
    let summary = summarize(&result);
    for line in &summary.lines {
        println!("{line}");
    }
    println!("Result: {}", result_path.display());
    Ok(if summary.ok { 0 } else { 1 })
}

/// Runs the scenario on a runtime of its own (the simulation runs its sidecars and API
/// server as tasks; the plugin's runtime has one thread).
async fn simulate(scenario: Scenario) -> Result<SimulationResult, PluginError> {
    let (send, receive) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let outcome = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|error| format!("cannot start the simulation's runtime: {error}"))
            .and_then(|runtime| {
                runtime
                    .block_on(run_scenario(&scenario, RunOptions::default()))
                    .map_err(|error| chain_text(&error))
            });
        let _ = send.send(outcome);
    });
    match receive.await {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(error)) => Err(PluginError::Usage(format!(
            "the rehearsal could not run: {}",
            crate::error::one_line(&error)
        ))),
        Err(_) => Err(PluginError::Usage(
            "the rehearsal stopped before its end".into(),
        )),
    }
}

/// What a rehearsal found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Lines to print.
    pub lines: Vec<String>,
    /// The take-over and the change were reconciled, no invariant violated.
    pub ok: bool,
}

/// What the operator did, by phase (take-over or change) and kind: object deletions and
/// creations, admin commands.
fn operator_actions(result: &SimulationResult) -> std::collections::BTreeMap<String, usize> {
    let apply_at = result.steps.get(2).map_or(0, |s| s.index);
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for event in &result.events {
        // What the operator did, not the scenario's own steps.
        if event.by.as_deref() == Some("user") {
            continue;
        }
        let counted = match event.source {
            EventSource::K8s => {
                matches!(event.action.as_str(), "delete" | "create")
                    && (event.target.starts_with("pod/")
                        || event.target.starts_with("pvc/")
                        || event.target.starts_with("service/"))
            }
            EventSource::Fdb => matches!(
                event.action.as_str(),
                "kill" | "exclude" | "include" | "configure" | "coordinators"
            ),
            _ => false,
        };
        if counted {
            let phase = if event.step < apply_at {
                "take-over"
            } else {
                "change"
            };
            let kind = event.target.split('/').next().unwrap_or_default();
            let what = match event.source {
                EventSource::K8s => format!("{phase}: {} {kind}", event.action),
                _ => format!("{phase}: fdb {}", event.action),
            };
            *counts.entry(what).or_default() += 1;
        }
    }
    counts
}

/// Summarizes a rehearsal's result (pure): the take-over, the change, and what the
/// operator did to the cluster to carry it out.
pub fn summarize(result: &SimulationResult) -> Summary {
    let mut lines = Vec::new();
    let mut ok = result.violations.is_empty();
    // The scenario is: reconcile, expect (the take-over), apply, reconcile, expect.
    let take_over = result.steps.first();
    let change = result.steps.get(3);
    for (what, step) in [("take-over", take_over), ("change", change)] {
        let line = match step {
            Some(step) if step.reconciled == Some(true) => {
                format!("{what}: reconciled at {} s simulated", step.time)
            }
            Some(step) => {
                ok = false;
                format!(
                    "{what}: NOT reconciled ({})",
                    step.stopped_because.as_deref().unwrap_or("stopped")
                )
            }
            None => {
                ok = false;
                format!("{what}: not reached")
            }
        };
        lines.push(line);
    }
    // Expect failures are violations of the scenario; they are listed with the rest.
    let counts = operator_actions(result);
    for phase in ["take-over", "change"] {
        let prefix = format!("{phase}: ");
        let found: Vec<String> = counts
            .iter()
            .filter(|(what, _)| what.starts_with(&prefix))
            .map(|(what, count)| format!("{what} x{count}"))
            .collect();
        if found.is_empty() {
            lines.push(format!(
                "{phase}: the operator deleted, created, killed, excluded or reconfigured nothing"
            ));
        }
        lines.extend(found);
    }
    for violation in &result.violations {
        lines.push(format!(
            "VIOLATION {} at {} s: {}",
            violation.invariant, violation.time, violation.detail
        ));
    }
    Summary { lines, ok }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdb_simulation::result::{Event, StepResult, Violation};

    fn step(index: usize, reconciled: Option<bool>) -> StepResult {
        StepResult {
            index,
            time: 60 * index as u64,
            reconciled,
            stopped_because: Some("waiting".into()),
            ..StepResult::default()
        }
    }

    fn event(step: usize, source: EventSource, action: &str, target: &str) -> Event {
        Event {
            step,
            time: 0,
            pass: 1,
            source,
            action: action.into(),
            target: target.into(),
            detail: String::new(),
            by: None,
            issuer: None,
        }
    }

    #[test]
    fn a_rehearsal_says_what_each_phase_did_and_whether_it_ended_reconciled() {
        let mut result = SimulationResult {
            steps: vec![
                step(0, Some(true)),
                step(1, None),
                step(2, None),
                step(3, Some(true)),
                step(4, None),
            ],
            events: vec![
                event(3, EventSource::K8s, "delete", "pod/sample-log-1"),
                event(3, EventSource::K8s, "delete", "pod/sample-log-2"),
                event(3, EventSource::Fdb, "exclude", "10.0.0.1:4501"),
                event(3, EventSource::K8s, "patch", "foundationdbcluster/sample"),
            ],
            ..SimulationResult::default()
        };
        let summary = summarize(&result);
        assert!(summary.ok);
        assert_eq!(
            summary.lines,
            [
                "take-over: reconciled at 0 s simulated",
                "change: reconciled at 180 s simulated",
                "take-over: the operator deleted, created, killed, excluded or reconfigured nothing",
                "change: delete pod x2",
                "change: fdb exclude x1",
            ]
        );
        result.steps[3].reconciled = Some(false);
        result.violations.push(Violation {
            invariant: "expect".into(),
            time: 7,
            pass: 2,
            detail: "not reconciled".into(),
        });
        let summary = summarize(&result);
        assert!(!summary.ok);
        assert!(
            summary
                .lines
                .contains(&"change: NOT reconciled (waiting)".to_owned())
        );
        assert_eq!(
            summary.lines.last().map(String::as_str),
            Some("VIOLATION expect at 7 s: not reconciled")
        );
    }
}
