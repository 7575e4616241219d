//! `fdb-operator snapshot`: captures a live cluster (objects through the Kubernetes API,
//! `status json` through fdbcli, as `run` reaches the database) into a scenario folder
//! that `fdb-operator simulate` runs; with `--rehearse`, the scenario then applies a
//! changed manifest, so the simulation answers "what happens if I apply this".

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use fdb_operator::capture::{CaptureOptions, capture};
use fdb_operator::controller::providers::FdbcliAdminProvider;
use fdb_simulation::scenario::snapshot_write::write_dir;

/// Arguments of `fdb-operator snapshot`.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// The kubeconfig to use (default: $KUBECONFIG, ~/.kube/config or the service
    /// account).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The cluster's namespace.
    #[arg(long, short = 'n', default_value = "default")]
    pub namespace: String,
    /// The FoundationDBCluster's name.
    pub cluster: String,
    /// The folder to write `scenario.yaml`, `live.yaml` and `status.json` to.
    #[arg(long, short = 'o', default_value = ".", value_name = "DIR")]
    pub output: PathBuf,
    /// A changed manifest of the cluster: the scenario applies it after the take-over and
    /// waits until it is reconciled.
    #[arg(long, value_name = "MANIFEST")]
    pub rehearse: Option<PathBuf>,
    /// Keep the values of the Secrets the pods mount (by default each value is replaced
    /// by a placeholder; the keys stay).
    #[arg(long)]
    pub include_secret_values: bool,
    /// The fdbcli binary that reads `status json`.
    #[arg(long, default_value = "/usr/bin/fdbcli")]
    pub fdbcli: PathBuf,
    /// Directory for the cluster file fdbcli uses.
    #[arg(long, default_value = "/tmp/fdb-operator")]
    pub work_dir: PathBuf,
}

async fn kube_client(kubeconfig: Option<&PathBuf>) -> Result<kube::Client, String> {
    let config = match kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| format!("cannot find a Kubernetes configuration: {e}"))?,
    };
    kube::Client::try_from(config).map_err(|e| format!("cannot connect to Kubernetes: {e}"))
}

/// Exit 0 when the folder is written, 1 when the capture failed, 2 on unusable input.
pub fn run(args: &SnapshotArgs) -> ExitCode {
    let rehearse = match &args.rehearse {
        Some(path) => {
            let manifest = fdb_shared::yaml_input::read_file(path)
                .map_err(|e| e.to_string())
                .and_then(|text| {
                    fdb_shared::yaml_input::single_document(&text).map_err(|e| e.to_string())
                });
            match manifest {
                Ok(manifest) => Some(manifest),
                Err(error) => {
                    eprintln!("error: --rehearse {}: {error}", path.display());
                    return ExitCode::from(2);
                }
            }
        }
        None => None,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let options = CaptureOptions {
        namespace: args.namespace.clone(),
        cluster: args.cluster.clone(),
        include_secret_values: args.include_secret_values,
    };
    let admin = FdbcliAdminProvider {
        fdbcli_path: args.fdbcli.clone(),
        work_dir: args.work_dir.clone(),
        tls: None,
    };
    let captured = runtime.block_on(async {
        let client = kube_client(args.kubeconfig.as_ref()).await?;
        capture(&client, &admin, &options, &|line| eprintln!("{line}"))
            .await
            .map_err(|e| e.to_string())
    });
    let captured = match captured {
        Ok(captured) => captured,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(1);
        }
    };
    match write_dir(
        &args.output,
        &captured.objects,
        captured.status.as_ref(),
        rehearse.as_ref(),
    ) {
        Ok(()) => {
            eprintln!(
                "wrote {} ({} objects{}); run it with: fdb-operator simulate {}",
                args.output.display(),
                captured.objects.len(),
                if captured.status.is_some() {
                    ", status json"
                } else {
                    ", no status json"
                },
                args.output.join("scenario.yaml").display()
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}
