//! `kubectl-fdb`: the kubectl plugin for FoundationDB clusters. `kubectl fdb ...` runs it
//! when it is on the PATH. Every command acts through the Kubernetes API, as the operator
//! does: it reads the FoundationDBCluster and its pods, and changes the cluster's spec,
//! which the operator then carries out safely.

mod cli;
mod commands;
mod error;
mod exec;
mod exec_output;
mod names;
mod selection;
mod session;
mod terminal;

use std::process::ExitCode;

use clap::Parser as _;

use cli::{Cli, Command};
use error::PluginError;
use session::{Connection, Session};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            use clap::error::ErrorKind;
            if matches!(
                error.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = error.print();
                return if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                };
            }
            // One line: clap's first paragraph, without its usage block.
            let rendered = error.render().to_string();
            let paragraph: Vec<&str> = rendered
                .lines()
                .take_while(|line| !line.trim().is_empty())
                .map(str::trim)
                .collect();
            let line = paragraph.join(" ");
            let line = line.strip_prefix("error: ").unwrap_or(&line);
            eprintln!("error: {line} (see kubectl-fdb --help)");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(outcome) => ExitCode::from(outcome),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

/// Runs a parsed command; returns the exit status (0 done, 1 a problem was found).
async fn run(cli: Cli) -> Result<u8, PluginError> {
    if let Command::Version(args) = &cli.command
        && args.client_only
    {
        println!("kubectl-fdb: {}", env!("CARGO_PKG_VERSION"));
        return Ok(0);
    }
    let connection = Connection {
        kubeconfig: cli.kubeconfig.clone(),
        context: cli.context.clone(),
        namespace: cli.namespace.clone(),
    };
    let session = Session::connect(&connection, cli.yes || !cli.wait).await?;
    commands::run(&session, cli.command).await
}
