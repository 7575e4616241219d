//! `fdb-operator simulate SCENARIO.yaml`: runs a scenario in the simulated world.

use fdb_shared::error_chain::{ErrorChain, chain_text};
use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use fdb_simulation::runner::{RunOptions, run_scenario, serve_scenario};
use fdb_simulation::scenario::Scenario;
use fdb_simulation::scenario::snapshot_secrets::placeholder_warning;
use fdb_simulation::serve::ServeOptions;

use crate::stop_signals::StopSignals;

/// Arguments of `fdb-operator simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The scenario file (YAML): world, cluster manifest and steps.
    pub scenario: PathBuf,
    /// Write the result JSON to this file instead of stdout. When stdout is a terminal
    /// and this is not given, the JSON goes to `<scenario name>.result.json` in the
    /// current directory.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// The loopback block N the sidecars listen in (`127.N.y.z:8080`). By default the run
    /// picks a block that no other run on this machine holds; a block held by another run
    /// is an error. Pod IPs in the result are `127.0.y.z` whichever block serves them.
    #[arg(long, value_name = "N")]
    pub ip_block: Option<u8>,
    /// Seed of every random choice (overrides the scenario's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print no progress on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// After the steps, keep the world running and serve its Kubernetes API over HTTP on
    /// this loopback address (e.g. 127.0.0.1:8001; port 0 picks one) until SIGINT or
    /// SIGTERM, then write the result as usual.
    #[arg(long, value_name = "ADDR", requires = "kubeconfig")]
    pub serve: Option<std::net::SocketAddr>,
    /// With --serve: where to write a kubeconfig for the served API, once it answers.
    #[arg(long, value_name = "FILE", requires = "serve")]
    pub kubeconfig: Option<PathBuf>,
    /// With --serve: simulated seconds per wall-clock second, from 0.001 to 1000.
    #[arg(long, value_name = "N", default_value_t = 1.0, requires = "serve",
          value_parser = parse_speed)]
    pub speed: f64,
    /// With --serve: run the world without its own operator, for an operator run outside
    /// it (`fdb-operator run`). The steps may then only set up the world and make user
    /// changes (a `reconcile`, `expect`, `restartOperator` or `act: {as: operator}` step
    /// is refused, naming it); the world's clock starts at the real current time and
    /// runs at speed 1. The operator's kubeconfig is written to FILE.operator (FILE of
    /// --kubeconfig): it points at a listener of its own, and what arrives there is the
    /// operator's: judged by the invariants, in the result's events and violations.
    #[arg(long, requires = "serve")]
    pub external_operator: bool,
    /// With --external-operator: write stand-in FoundationDB tools for it to DIR, per
    /// minor version of `world.operatorTools` (DIR/7.1/fdbcli, fdbbackup, fdbrestore,
    /// ...), as the operator image lays out the real ones: run the operator with
    /// --fdb-binaries-dir DIR. They reach the world's database through the cluster file
    /// given with -C, as real tools do; so far they run fdbcli `status json` and `kill`
    /// and refuse anything else (exit 1, saying so).
    #[arg(long, value_name = "DIR", requires = "external_operator")]
    pub fdb_tools_dir: Option<PathBuf>,
}

/// Runs the scenario; exit 0 when no invariant was violated, 1 when one was, 2 when the
/// scenario is invalid or cannot run.
pub fn run(args: &SimulateArgs) -> ExitCode {
    // First of all: from here on a signal removes the world's directory.
    let stop = match StopSignals::install() {
        Ok(stop) => stop,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let scenario = match Scenario::from_file(&args.scenario) {
        Ok(scenario) => scenario,
        Err(error) => {
            eprintln!("error: invalid scenario: {}", ErrorChain(&error));
            return ExitCode::from(2);
        }
    };
    // Up front, --quiet or not: it changes what the result means.
    if let Some(warning) = scenario
        .snapshot
        .as_ref()
        .and_then(|snapshot| snapshot.objects.as_array())
        .and_then(|objects| placeholder_warning(objects))
    {
        eprintln!("warning: {warning}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!(
                "error: cannot start the async runtime: {}",
                ErrorChain(&error)
            );
            return ExitCode::from(2);
        }
    };
    let progress: Option<fdb_simulation::runner::ProgressSink> = if args.quiet {
        None
    } else {
        Some(Arc::new(|line: &str| eprintln!("{line}")))
    };
    let options = RunOptions {
        seed: args.seed,
        ip_block: args.ip_block,
        progress,
        ..RunOptions::default()
    };
    let serve = match serve_options(args) {
        Ok(serve) => serve,
        Err(error) => {
            eprintln!("error: --serve: {error}");
            return ExitCode::from(2);
        }
    };
    let run = async {
        match serve {
            Some(serve) => serve_scenario(&scenario, options, serve, stop.graceful_stop()).await,
            None => run_scenario(&scenario, options).await,
        }
    };
    let result = match runtime.block_on(run) {
        Ok(result) => result,
        Err(error) => {
            let origin = args.scenario.display();
            if error.is_invalid_scenario() {
                eprintln!("error: invalid scenario: {origin}: {}", ErrorChain(&error));
            } else {
                eprintln!(
                    "error: the simulation of {origin} failed: {}",
                    ErrorChain(&error)
                );
            }
            return ExitCode::from(2);
        }
    };
    let output = match write_result(args, &result) {
        Ok(output) => output,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    if !args.quiet {
        summarize(&result);
    }
    if let Some(path) = &output {
        eprintln!("result written to {}", path.display());
    }
    if result.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `--speed`: a number within the served world's bounds (`1e308` used to panic, `1e9`
/// to grow without bound and outrun SIGTERM).
fn parse_speed(text: &str) -> Result<f64, String> {
    let speed: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    fdb_simulation::serve::check_speed(speed)
}

/// `--serve` with `--kubeconfig` (and `--speed`), checked.
fn serve_options(args: &SimulateArgs) -> Result<Option<ServeOptions>, String> {
    let (Some(address), Some(kubeconfig)) = (&args.serve, &args.kubeconfig) else {
        return Ok(None);
    };
    let serve = ServeOptions {
        address: *address,
        kubeconfig: kubeconfig.clone(),
        speed: args.speed,
        external_operator: args.external_operator,
        fdb_tools: match &args.fdb_tools_dir {
            Some(dir) => Some(fdb_simulation::serve::ToolsDir {
                dir: dir.clone(),
                program: std::env::current_exe()
                    .map_err(|e| format!("cannot find the fdb-operator binary: {e}"))?,
            }),
            None => None,
        },
    };
    serve.validate().map_err(|error| chain_text(&error))?;
    Ok(Some(serve))
}

/// Writes the result JSON to `--output`, else to a file named after the scenario when
/// stdout is a terminal, else to stdout; returns the file written, if any.
fn write_result(
    args: &SimulateArgs,
    result: &fdb_simulation::result::SimulationResult,
) -> Result<Option<PathBuf>, String> {
    let json = serde_json::to_string_pretty(result)
        .map_err(|error| format!("cannot render the result: {error}"))?;
    let output = args.output.clone().or_else(|| {
        std::io::stdout()
            .is_terminal()
            .then(|| PathBuf::from(result_file_name(&result.name)))
    });
    match &output {
        Some(path) => std::fs::write(path, format!("{json}\n"))
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?,
        None => writeln!(std::io::stdout().lock(), "{json}").map_err(|error| chain_text(&error))?,
    }
    Ok(output)
}

/// `<scenario name>.result.json`, the name made safe for a file name.
pub fn result_file_name(scenario: &str) -> String {
    let safe: String = scenario
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let safe = safe.trim_matches(|c| c == '.' || c == '-');
    if safe.is_empty() {
        "scenario.result.json".to_owned()
    } else {
        format!("{safe}.result.json")
    }
}

/// A closing summary on stderr: what each step ended with, and the violations.
fn summarize(result: &fdb_simulation::result::SimulationResult) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_files_are_named_after_the_scenario() {
        assert_eq!(result_file_name("quickstart"), "quickstart.result.json");
        assert_eq!(
            result_file_name("scale down / v2"),
            "scale-down---v2.result.json"
        );
        assert_eq!(result_file_name("../x"), "x.result.json");
        assert_eq!(result_file_name(""), "scenario.result.json");
    }
}
