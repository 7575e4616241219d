//! `fdb-operator simulate SCENARIO.yaml`: runs a scenario in the simulated world.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use crate::simulation::runner::{RunOptions, run_scenario};
use crate::simulation::scenario::Scenario;

/// Arguments of `fdb-operator simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The scenario file (YAML): world, cluster manifest and steps.
    pub scenario: PathBuf,
    /// Write the result JSON to this file instead of stdout.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Seed of every random choice (overrides the scenario's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print no progress on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs the scenario; exit 0 when no invariant was violated, 1 when one was, 2 when the
/// scenario is invalid or cannot run.
pub fn run(args: &SimulateArgs) -> ExitCode {
    let scenario = match Scenario::from_file(&args.scenario) {
        Ok(scenario) => scenario,
        Err(error) => {
            eprintln!("error: invalid scenario: {error}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let progress: Option<crate::simulation::runner::ProgressSink> = if args.quiet {
        None
    } else {
        Some(Arc::new(|line: &str| eprintln!("{line}")))
    };
    let options = RunOptions {
        seed: args.seed,
        ip_block: 0,
        progress,
        ..RunOptions::default()
    };
    let result = match runtime.block_on(run_scenario(&scenario, options)) {
        Ok(result) => result,
        Err(error) => {
            let origin = args.scenario.display();
            if error.is_invalid_scenario() {
                eprintln!("error: invalid scenario: {origin}: {error}");
            } else {
                eprintln!("error: the simulation of {origin} failed: {error}");
            }
            return ExitCode::from(2);
        }
    };
    let json = match serde_json::to_string_pretty(&result) {
        Ok(json) => json,
        Err(error) => {
            eprintln!("error: cannot render the result: {error}");
            return ExitCode::from(2);
        }
    };
    let written = match &args.output {
        Some(path) => std::fs::write(path, format!("{json}\n"))
            .map_err(|error| format!("cannot write {}: {error}", path.display())),
        None => writeln!(std::io::stdout().lock(), "{json}").map_err(|error| error.to_string()),
    };
    if let Err(error) = written {
        eprintln!("error: {error}");
        return ExitCode::from(2);
    }
    if !args.quiet {
        summarize(&result);
    }
    if result.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// A closing summary on stderr: what each step ended with, and the violations.
fn summarize(result: &crate::simulation::result::SimulationResult) {
    eprintln!("\nscenario {:?} (seed {}):", result.name, result.seed);
    for step in &result.steps {
        let reconciled = match step.reconciled {
            Some(true) => " reconciled".to_owned(),
            Some(false) => format!(
                " NOT reconciled ({})",
                step.stopped_because.as_deref().unwrap_or("stopped")
            ),
            None => String::new(),
        };
        let available = step
            .fdb
            .get("available")
            .and_then(serde_json::Value::as_bool)
            .map_or("", |up| {
                if up {
                    ", database available"
                } else {
                    ", database UNAVAILABLE"
                }
            });
        eprintln!(
            "  step {} at {}s: {} passes{reconciled}{available}, {} pods, {} processes",
            step.index,
            step.time,
            step.passes,
            step.pods.len(),
            step.fdb
                .get("processes")
                .and_then(serde_json::Value::as_array)
                .map_or(0, Vec::len),
        );
    }
    if result.violations.is_empty() {
        eprintln!("no invariant violated");
    } else {
        for violation in &result.violations {
            eprintln!(
                "VIOLATION {} at {}s (pass {}): {}",
                violation.invariant, violation.time, violation.pass, violation.detail
            );
        }
    }
}
