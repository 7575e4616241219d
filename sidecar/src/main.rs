//! `fdb-sidecar` command line: parse flags, run the start-up copies, serve until SIGTERM
//! or `POST /restart`.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use fdb_sidecar::{ConfigError, ExitReason, LogFormat, Sidecar, SidecarConfig, copy};
use tracing_subscriber::EnvFilter;

/// Exit code after a fatal configuration or start-up error.
const EXIT_FATAL: u8 = 1;
/// Exit code after `POST /restart`, so that the kubelet restarts the container.
const EXIT_RESTART: u8 = 3;
/// How long blocking tasks may delay the exit.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

fn init_tracing(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn main() -> ExitCode {
    let env: BTreeMap<String, String> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let args = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned());
    let config = match SidecarConfig::from_args(args, &env) {
        Ok(config) => config,
        Err(ConfigError::Cli(e)) => e.exit(),
        Err(e) => {
            eprintln!("fdb-sidecar: {}", fdb_shared::error_chain::ErrorChain(&e));
            return ExitCode::from(EXIT_FATAL);
        }
    };
    init_tracing(config.args.log_format);

    if config.args.init_mode {
        return match copy::run_startup_copies(&config) {
            Ok(()) => {
                tracing::info!("init mode: copies done");
                ExitCode::SUCCESS
            }
            Err(e) => {
                tracing::error!(error = %fdb_shared::error_chain::ErrorChain(&e), "init mode: copy failed");
                ExitCode::from(EXIT_FATAL)
            }
        };
    }
    let Some(bind) = config.bind_address else {
        tracing::error!(
            "no listen address: FDB_POD_IP and FDB_PUBLIC_IP are unset and the host name resolves to no address; pass --bind-address or set FDB_POD_IP"
        );
        return ExitCode::from(EXIT_FATAL);
    };

    // Two workers and a blocking pool sized for the bounded kinds of blocking work (so
    // that a stuck copy never starves hashing), started on demand.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(fdb_sidecar::server::blocking_threads(&config))
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::from(EXIT_FATAL);
        }
    };
    let code = runtime.block_on(serve(config, bind));
    // Dropping the runtime would wait for every blocking task (a hash of a huge or stuck
    // file, a copy on a hung volume); exiting must not depend on them.
    runtime.shutdown_timeout(SHUTDOWN_TIMEOUT);
    code
}

/// Serves until a termination signal or a restart request; returns the exit code.
async fn serve(config: SidecarConfig, bind: std::net::SocketAddr) -> ExitCode {
    // Install the SIGTERM handler before serving: a signal that arrives as soon as the
    // "listening" line is out must stop the sidecar gracefully, not kill it.
    let termination = termination_signal();
    let mut running = match Sidecar::start(config, bind).await {
        Ok(running) => running,
        Err(e) => {
            tracing::error!(error = %fdb_shared::error_chain::ErrorChain(&e), "cannot start");
            return ExitCode::from(EXIT_FATAL);
        }
    };
    let stop = running.stop_token();
    tokio::spawn(async move {
        wait_for_signal(termination).await;
        tracing::info!("termination signal received; shutting down");
        stop.cancel();
    });
    match running.wait().await {
        ExitReason::Stopped => ExitCode::SUCCESS,
        ExitReason::RestartRequested => {
            tracing::warn!("exiting for restart");
            ExitCode::from(EXIT_RESTART)
        }
    }
}

/// The SIGTERM stream, registered now (or `None` where it cannot be).
fn termination_signal() -> Option<tokio::signal::unix::Signal> {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(term) => Some(term),
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops the sidecar");
            None
        }
    }
}

async fn wait_for_signal(termination: Option<tokio::signal::unix::Signal>) {
    match termination {
        Some(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
