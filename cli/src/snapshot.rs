//! `fdb-operator snapshot`: captures a live cluster (objects through the Kubernetes API,
//! `status json` through fdbcli, as `run` reaches the database) into a scenario folder
//! that `fdb-operator simulate` runs; with `--rehearse`, the scenario then applies a
//! changed manifest, so the simulation answers "what happens if I apply this".

use fdb_shared::error_chain::{ErrorChain, chain_text};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use fdb_operator::capture::{CaptureOptions, capture};
use fdb_operator::cli::fdbcli_tls::FdbcliTlsArgs;
use fdb_operator::controller::FdbcliAdminProvider;
use fdb_operator::fdb::tools::{DEFAULT_FDB_BINARIES_DIR, TRACE_LOG_GROUP_ENV};
use fdb_operator::fdb::{FdbTools, TlsFiles};
use fdb_simulation::scenario::safe_write::check_output_dir;
use fdb_simulation::scenario::snapshot_write::{rehearsal_identity_error, write_dir};

/// Arguments of `fdb-operator snapshot`.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// The kubeconfig to use (default: $KUBECONFIG, ~/.kube/config or the service
    /// account).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The cluster's namespace (a DNS-1123 label).
    #[arg(long, short = 'n', default_value = "default", value_parser = namespace_name)]
    pub namespace: String,
    /// The FoundationDBCluster's name (a DNS-1123 subdomain).
    #[arg(value_parser = cluster_name)]
    pub cluster: String,
    /// The folder to write `scenario.yaml`, `live.yaml` and `status.json` to; it must be
    /// new or empty unless --force (default: `CLUSTER-snapshot` here).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Write into a non-empty output folder (the snapshot's own files are replaced; no
    /// symlink in it is followed).
    #[arg(long)]
    pub force: bool,
    /// A changed manifest of the cluster: the scenario applies it after the take-over and
    /// waits until it is reconciled.
    #[arg(long, value_name = "MANIFEST")]
    pub rehearse: Option<PathBuf>,
    /// Keep the values of the Secrets the pods mount (by default each value is replaced
    /// by a placeholder, the keys stay, in `data`, `stringData` and every annotation,
    /// `kubectl apply`'s last-applied copy included; `managedFields` are dropped).
    #[arg(long)]
    pub include_secret_values: bool,
    /// The FoundationDB tools of each minor version, as `run` takes them
    /// (DIR/<major.minor>/fdbcli): `status json` is read with the fdbcli of the
    /// cluster's running version.
    #[arg(long, env = "FDB_BINARY_DIR", value_name = "DIR", default_value = DEFAULT_FDB_BINARIES_DIR)]
    pub fdb_binaries_dir: PathBuf,
    /// One fdbcli for the cluster whatever its version: overrides --fdb-binaries-dir
    /// (it must be of the cluster's minor version to read it).
    #[arg(long, value_name = "PATH")]
    pub fdbcli: Option<PathBuf>,
    /// Directory for the cluster file fdbcli uses.
    #[arg(long, default_value = "/tmp/fdb-operator")]
    pub work_dir: PathBuf,
    /// fdbcli's TLS files, as `run` takes them.
    #[command(flatten)]
    pub fdbcli_tls: FdbcliTlsArgs,
}

/// A namespace as the API server accepts it (it joins request paths).
fn namespace_name(value: &str) -> Result<String, String> {
    match fdb_shared::validation::names::dns1123_label_error(value) {
        None => Ok(value.to_owned()),
        Some(problem) => Err(problem),
    }
}

/// A cluster name as the API server accepts it (it joins request paths and names the
/// default output folder).
fn cluster_name(value: &str) -> Result<String, String> {
    match fdb_shared::validation::names::dns1123_subdomain_error(value) {
        None => Ok(value.to_owned()),
        Some(problem) => Err(problem),
    }
}

/// The files fdbcli uses with a TLS cluster, as `run` takes them: all three of
/// certificate, key and CA, or none.
pub fn fdbcli_tls(args: &SnapshotArgs) -> Result<Option<TlsFiles>, String> {
    args.fdbcli_tls.files()
}

/// The tools the capture runs: per version under --fdb-binaries-dir, or the one
/// --fdbcli; with the log group of the operator's connections when the environment
/// names one (as in the operator image), so a capture is listed like the operator.
pub fn fdb_tools(args: &SnapshotArgs) -> FdbTools {
    FdbTools::new(args.fdb_binaries_dir.clone(), args.fdbcli.clone())
        .with_trace_log_group(std::env::var(TRACE_LOG_GROUP_ENV).ok())
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

/// The manifest `--rehearse` names: one YAML document, a FoundationDBCluster that
/// `fdb-operator explain` finds valid, of the cluster captured. Checked before the
/// capture, so a wrong manifest is named as such, never reported as what the capture met
/// (an unreachable API).
fn read_rehearsal(
    path: &std::path::Path,
    cluster: &str,
    namespace: &str,
) -> Result<serde_json::Value, String> {
    let checked = fdb_shared::yaml_input::read_file(path)
        .map_err(|e| chain_text(&e))
        .and_then(|text| {
            let manifest =
                fdb_shared::yaml_input::single_document(&text).map_err(|e| chain_text(&e))?;
            match manifest.get("kind").and_then(serde_json::Value::as_str) {
                Some("FoundationDBCluster") => {}
                Some(kind) => return Err(format!("holds a {kind:?}, not a FoundationDBCluster")),
                None => return Err("holds no kind, not a FoundationDBCluster".to_owned()),
            }
            let explanation = fdb_operator::cli::explain::explain_manifest(path, &text)
                .map_err(|e| chain_text(&e))?;
            if !explanation.valid {
                return Err(format!(
                    "not a valid FoundationDBCluster (as `fdb-operator explain` says): {}",
                    explanation.errors.join("; ")
                ));
            }
            match rehearsal_identity_error(&manifest, cluster, namespace) {
                Some(problem) => Err(problem),
                None => Ok(manifest),
            }
        });
    checked.map_err(|error| format!("--rehearse {}: {error}", path.display()))
}

/// Exit 0 when the folder is written, 1 when the capture failed, 2 on unusable input.
pub fn run(args: &SnapshotArgs) -> ExitCode {
    let tls = match fdbcli_tls(args) {
        Ok(tls) => tls,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let rehearse = match args
        .rehearse
        .as_deref()
        .map(|path| read_rehearsal(path, &args.cluster, &args.namespace))
        .transpose()
    {
        Ok(rehearse) => rehearse,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}-snapshot", args.cluster)));
    // Refused before the capture, which may take a while.
    if let Err(error) = check_output_dir(&output, args.force) {
        eprintln!("error: {}", ErrorChain(&error));
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!(
                "error: cannot start the async runtime: {}",
                ErrorChain(&error)
            );
            return ExitCode::from(2);
        }
    };
    let options = CaptureOptions {
        namespace: args.namespace.clone(),
        cluster: args.cluster.clone(),
        include_secret_values: args.include_secret_values,
    };
    let admin = FdbcliAdminProvider {
        tools: fdb_tools(args),
        work_dir: args.work_dir.clone(),
        tls,
        runner: fdb_operator::fdb::ProcessRunner::shared(),
    };
    let captured = runtime.block_on(async {
        let client = kube_client(args.kubeconfig.as_ref()).await?;
        capture(&client, &admin, &options, &|line| eprintln!("{line}"))
            .await
            .map_err(|e| chain_text(&e))
    });
    let captured = match captured {
        Ok(captured) => captured,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(1);
        }
    };
    match write_dir(
        &output,
        &captured.objects,
        captured.status.as_ref(),
        rehearse.as_ref(),
        args.force,
    ) {
        Ok(()) => {
            eprintln!(
                "wrote {} ({} objects{}); run it with: fdb-operator simulate {}",
                output.display(),
                captured.objects.len(),
                if captured.status.is_some() {
                    ", status json"
                } else {
                    ", no status json"
                },
                output.join("scenario.yaml").display()
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {}", ErrorChain(&error));
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: SnapshotArgs,
    }

    fn parse(extra: &[&str]) -> SnapshotArgs {
        let mut words = vec!["snapshot", "sample"];
        words.extend(extra);
        Cli::try_parse_from(words).map(|cli| cli.args).unwrap()
    }

    #[test]
    fn tls_files_reach_fdbcli_as_run_takes_them() {
        let args = parse(&[
            "--tls-certificate-file",
            "/tls/cert.pem",
            "--tls-key-file",
            "/tls/key.pem",
            "--tls-ca-file",
            "/tls/ca.pem",
            "--tls-verify-peers",
            "Check.Valid=1",
        ]);
        let tls = fdbcli_tls(&args).unwrap().unwrap();
        assert_eq!(tls.certificate_file, PathBuf::from("/tls/cert.pem"));
        assert_eq!(tls.key_file, PathBuf::from("/tls/key.pem"));
        assert_eq!(tls.ca_file, PathBuf::from("/tls/ca.pem"));
        assert_eq!(tls.verify_peers.as_deref(), Some("Check.Valid=1"));
        let partial = parse(&["--tls-certificate-file", "/tls/cert.pem"]);
        assert!(fdbcli_tls(&partial).unwrap_err().contains("go together"));
    }

    #[test]
    fn status_is_read_with_the_tools_of_the_clusters_version() {
        use fdb_operator::fdb::ToolLayout;
        assert_eq!(
            fdb_tools(&parse(&[])).layout,
            ToolLayout::PerVersion {
                binaries_dir: "/usr/bin/fdb".into()
            }
        );
        assert_eq!(
            fdb_tools(&parse(&["--fdb-binaries-dir", "/opt/fdb"])).layout,
            ToolLayout::PerVersion {
                binaries_dir: "/opt/fdb".into()
            }
        );
        assert_eq!(
            fdb_tools(&parse(&["--fdbcli", "/opt/fdbcli"])).layout,
            ToolLayout::Single {
                fdbcli: "/opt/fdbcli".into()
            }
        );
    }

    #[test]
    fn names_that_would_change_a_request_path_are_refused_by_the_parser() {
        for words in [
            vec!["snapshot", "sample/status"],
            vec!["snapshot", "../x"],
            vec!["snapshot", "-n", "a/b", "sample"],
        ] {
            let error = Cli::try_parse_from(words.clone()).unwrap_err();
            assert_eq!(error.exit_code(), 2, "{words:?}");
            assert!(error.to_string().contains("invalid value"), "{error}");
        }
        assert_eq!(parse(&[]).output, None);
    }
}
