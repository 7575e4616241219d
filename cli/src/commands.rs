//! The `fdb-operator` command line: one subcommand each; `run`, `explain` and `crds` are
//! the operator library's, `simulate` the simulation's.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use fdb_operator::cli::{crds, explain, run};

use crate::{served_tool, simulate, snapshot};

/// The FoundationDB operator for Kubernetes.
#[derive(Debug, Parser)]
#[command(
    name = "fdb-operator",
    version,
    about = "FoundationDB operator for Kubernetes (apps.foundationdb.org/v1beta2)",
    long_about = "FoundationDB operator for Kubernetes.\n\n\
        It manages FoundationDBCluster, FoundationDBBackup and FoundationDBRestore resources \
        (apps.foundationdb.org/v1beta2), compatible with the manifests of the Go \
        fdb-kubernetes-operator.",
    after_help = "Examples:\n  \
        fdb-operator crds | kubectl apply --server-side -f -\n  \
        fdb-operator explain -f cluster.yaml"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the three CustomResourceDefinitions as one YAML stream.
    #[command(
        long_about = "Print the CustomResourceDefinitions of FoundationDBCluster, \
            FoundationDBBackup and FoundationDBRestore as one YAML stream, generated from \
            the operator's own API types. The repository's crds/foundationdb-crds.yaml holds \
            exactly this output.",
        after_help = "Example:\n  fdb-operator crds | kubectl apply --server-side -f -"
    )]
    Crds,
    /// Show, as JSON, what the operator would build from a FoundationDBCluster manifest.
    #[command(
        long_about = "Read a FoundationDBCluster manifest and print, as JSON, what the operator \
        would build from it: validation errors and warnings (including fields this operator \
        does not know, which the API server would silently drop), the fault tolerance, the \
        process counts per class, the coordinator count, the desired database configuration \
        and its `configure new` command, the container images and whether locks are used.\n\n\
        With --kind FoundationDBBackup or FoundationDBRestore, explain a backup (the agents' \
        Deployment, the backup URL, the `fdbbackup start` command) or a restore (the URL, \
        the key ranges, the `fdbrestore start` command) instead.\n\n\
        Exit status: 0 valid, 1 invalid, 2 unreadable (missing file, not YAML, or no \
        resource of the kind in it).",
        after_help = "Examples:\n  fdb-operator explain -f cluster.yaml | jq .processCounts\n  \
        fdb-operator explain -f backup.yaml --kind FoundationDBBackup"
    )]
    Explain(explain::ExplainArgs),
    /// Run the operator: reconcile FoundationDBClusters until stopped.
    Run(Box<run::RunArgs>),
    /// Run a scenario in the simulated world (Kubernetes, sidecars, FoundationDB).
    #[command(
        long_about = "Run a scenario in the simulated world: the real operator code against an \
        in-memory Kubernetes API, a real fdb-sidecar per pod on a loopback IP, simulated \
        fdbmonitors and a simulated FoundationDB, on a virtual clock (hours run in seconds).\n\n\
        A scenario names the world (nodes, zones, delays, clients), a FoundationDBCluster \
        manifest and steps: reconcile, apply (a merge patch, as `kubectl apply` would), \
        advance, fault, heal, restartOperator. The result JSON (stdout or --output) shows the \
        cluster, pods, sidecars and database after each step, every operator action, and any \
        invariant violated; progress goes to stderr. See docs/simulation.md.\n\n\
        Exit status: 0 ran without violations, 1 an invariant was violated, 2 the scenario is \
        invalid (the message names the field and line).",
        after_help = "Examples:\n  \
        fdb-operator simulate docs/examples/quickstart.yaml\n  \
        fdb-operator simulate docs/examples/quickstart-upgrade.yaml\n  \
        fdb-operator simulate my-change.yaml --seed 7 --output result.json"
    )]
    Simulate(simulate::SimulateArgs),
    /// Capture a live cluster into a scenario folder that `simulate` runs.
    #[command(
        long_about = "Capture a live cluster: the FoundationDBCluster, its pods, PVCs, services, \
        ConfigMaps, the Secrets its pods mount (values replaced by placeholders unless \
        --include-secret-values), the nodes they run on and its backups and restores, read \
        through the Kubernetes API, and its `status json` (through fdbcli). Writes DIR/\
        scenario.yaml, live.yaml and status.json; `fdb-operator simulate DIR/scenario.yaml` \
        then starts the simulated world as the cluster is. With --rehearse MANIFEST the \
        scenario applies that manifest after the take-over and waits until it is reconciled.\n\n\
        Exit status: 0 written, 1 the capture failed, 2 unusable input.",
        after_help = "Examples:\n  \
        fdb-operator snapshot -n prod my-cluster -o snap\n  \
        fdb-operator snapshot -n prod my-cluster -o snap --rehearse changed.yaml\n  \
        fdb-operator simulate snap/scenario.yaml"
    )]
    Snapshot(snapshot::SnapshotArgs),
    /// What the stand-in FoundationDB tools of a served world run (`simulate
    /// --fdb-tools-dir`); not for direct use.
    #[command(hide = true)]
    ServedTool(served_tool::ServedToolArgs),
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Crds => crds::run(),
        Command::Explain(args) => explain::run(&args),
        Command::Run(args) => run::run(*args),
        Command::Simulate(args) => simulate::run(&args),
        Command::Snapshot(args) => snapshot::run(&args),
        Command::ServedTool(args) => served_tool::run(&args),
    }
}

/// Parses the process arguments and runs them.
pub fn main() -> ExitCode {
    run(Cli::parse())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from(["fdb-operator", "explain", "-f", "x.yaml"]).unwrap();
        assert!(
            matches!(cli.command, Command::Explain(ref args) if args.file.to_str() == Some("x.yaml"))
        );
    }
}
