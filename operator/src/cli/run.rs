//! `fdb-operator run`: reconcile FoundationDBClusters in the Kubernetes cluster of the
//! current kubeconfig or service account.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use fdb_shared::sidecar::{SidecarClientFactory, SidecarClientTls};

use crate::clock::SystemClock;
use crate::controller::Context;
use crate::controller::production::{RequeuePolicy, RunOptions, run as run_controller};
use crate::controller::providers::{FdbcliAdminProvider, HttpSidecarProvider};

/// Arguments of `fdb-operator run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Watch only this namespace (default: all namespaces).
    #[arg(long, env = "WATCH_NAMESPACE")]
    pub namespace: Option<String>,
    /// Address serving Prometheus metrics at /metrics.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub metrics_address: SocketAddr,
    /// The fdbcli binary.
    #[arg(long, default_value = "/usr/bin/fdbcli")]
    pub fdbcli: PathBuf,
    /// Directory for the cluster files fdbcli uses.
    #[arg(long, default_value = "/tmp/fdb-operator")]
    pub work_dir: PathBuf,
    /// CA file to verify sidecars serving HTTPS (turns on https to sidecars).
    #[arg(long)]
    pub sidecar_ca_file: Option<PathBuf>,
    /// Client certificate and key presented to sidecars (with --sidecar-ca-file).
    #[arg(long, num_args = 2, value_names = ["CERT", "KEY"])]
    pub sidecar_client_certificate: Option<Vec<PathBuf>>,
    /// Replace process groups (instead of recreating their pods) when the pods' file
    /// ownership changes (fsGroup, fsGroupChangePolicy, runAsUser, runAsGroup).
    #[arg(long)]
    pub replace_on_security_context_change: bool,
}

async fn run_async(args: RunArgs) -> Result<(), String> {
    let kube = kube::Client::try_default()
        .await
        .map_err(|e| format!("cannot connect to Kubernetes: {e}"))?;
    let tls = args
        .sidecar_ca_file
        .clone()
        .map(|ca_file| SidecarClientTls {
            ca_file,
            client_certificate: args
                .sidecar_client_certificate
                .as_deref()
                .and_then(|files| Some((files.first()?.clone(), files.get(1)?.clone()))),
        });
    let factory = SidecarClientFactory::new(tls.as_ref())
        .map_err(|e| format!("cannot build the sidecar client: {e}"))?;
    let admin = FdbcliAdminProvider {
        fdbcli_path: args.fdbcli,
        work_dir: args.work_dir,
        tls: None,
    };
    let mut ctx = Context::new(
        kube,
        Arc::new(admin),
        Arc::new(HttpSidecarProvider::new(factory, tls.is_some())),
        Arc::new(SystemClock),
    );
    ctx.settings.replace_on_security_context_change = args.replace_on_security_context_change;
    let options = RunOptions {
        namespace: args.namespace,
        metrics_address: Some(args.metrics_address),
        requeue: RequeuePolicy::default(),
    };
    run_controller(ctx, options)
        .await
        .map_err(|e| e.to_string())
}

/// Runs the operator until it is stopped.
pub fn run(args: RunArgs) -> ExitCode {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("fdb-operator run: cannot start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run_async(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("fdb-operator run: {message}");
            ExitCode::from(1)
        }
    }
}
