//! `fdb-operator run`: reconcile FoundationDBClusters in the Kubernetes cluster of the
//! current kubeconfig or service account.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use fdb_shared::sidecar::{SidecarClientFactory, SidecarClientTls};

use super::fdbcli_tls::FdbcliTlsArgs;
use crate::clock::SystemClock;
use crate::controller::Context;
use crate::controller::cache::{CLUSTER_NAME_LABEL, CacheSelector};
use crate::controller::pass::requeue::RequeuePolicy;
use crate::controller::production::leader::{
    DEFAULT_LEASE_NAME, LeaderElectionConfig, default_identity,
};
use crate::controller::production::providers::{FdbcliAdminProvider, HttpSidecarProvider};
use crate::controller::production::{
    DEFAULT_MAX_CONCURRENT_RECONCILES, RunError as ProductionRunError, RunOptions,
    run as run_controller,
};
use crate::fdb::tools::{DEFAULT_FDB_BINARIES_DIR, OPERATOR_LOG_GROUP};
use crate::fdb::{FdbTools, TlsFiles};

/// Arguments of `fdb-operator run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Watch only this namespace (default: all namespaces).
    #[arg(long, env = "WATCH_NAMESPACE")]
    pub namespace: Option<String>,
    /// Address serving Prometheus metrics at /metrics, and /healthz and /readyz. The
    /// operator refuses to start when another process holds it (as the sidecars of a
    /// served simulated world hold port 8080): pick a free one, e.g. 127.0.0.1:9090.
    #[arg(long, default_value = "0.0.0.0:8080", value_name = "ADDR")]
    pub metrics_address: SocketAddr,
    /// The FoundationDB tools of each minor version, laid out as
    /// DIR/<major.minor>/{fdbcli,fdbbackup,fdbrestore} (DIR/7.1/fdbcli, DIR/7.3/fdbcli,
    /// ...), as in the operator image. Each cluster's commands run with the tools of its
    /// running version, and with the target's once an incompatible upgrade restarted
    /// its processes; a version without tools gets a Warning Event `MissingFdbTools` and
    /// no upgrade to it starts.
    #[arg(long, env = "FDB_BINARY_DIR", value_name = "DIR", default_value = DEFAULT_FDB_BINARIES_DIR)]
    pub fdb_binaries_dir: PathBuf,
    /// One fdbcli for every cluster, whatever its version (fdbbackup and fdbrestore are
    /// taken from its directory): overrides --fdb-binaries-dir. Only for operators whose
    /// clusters all run the minor version of this fdbcli; an fdbcli cannot read a
    /// cluster of another minor version, so upgrades across minors need
    /// --fdb-binaries-dir.
    #[arg(long, value_name = "PATH")]
    pub fdbcli: Option<PathBuf>,
    /// The trace log group of the tools the operator runs, passed to them as
    /// FDB_NETWORK_OPTION_TRACE_LOG_GROUP: their connections are listed under it in
    /// `status json`. The default (also what the operator image sets) is the group
    /// `automationOptions.ignoreLogGroupsForUpgrade` ignores by default; with another
    /// group, add it there or the operator's own connections block version upgrades.
    #[arg(long, env = "FDB_NETWORK_OPTION_TRACE_LOG_GROUP", value_name = "GROUP",
          default_value = OPERATOR_LOG_GROUP)]
    pub fdb_trace_log_group: Option<String>,
    /// Directory for the cluster files fdbcli uses.
    #[arg(long, default_value = "/tmp/fdb-operator")]
    pub work_dir: PathBuf,
    /// How many clusters are reconciled at once (one reconcile per cluster at a time).
    #[arg(long, env = "MAX_CONCURRENT_RECONCILES", default_value_t = DEFAULT_MAX_CONCURRENT_RECONCILES,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub max_concurrent_reconciles: u16,

    /// Reconcile only while holding a coordination.k8s.io Lease, so that of several
    /// replicas exactly one acts.
    #[arg(long, env = "ENABLE_LEADER_ELECTION")]
    pub leader_election: bool,
    /// Namespace of the Lease (default: POD_NAMESPACE, else --namespace, else the
    /// service account's namespace, else `default`).
    #[arg(long, env = "POD_NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// Name of the Lease.
    #[arg(long, default_value = DEFAULT_LEASE_NAME)]
    pub leader_election_id: String,
    /// This replica's identity in the Lease (default: POD_NAME, else the host name).
    #[arg(long, env = "POD_NAME")]
    pub leader_election_identity: Option<String>,
    /// How long an unrenewed Lease keeps the other replicas waiting (e.g. 15s).
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub lease_duration: Duration,
    /// How long the leader keeps reconciling without renewing the Lease; must be
    /// shorter than --lease-duration (e.g. 10s).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub renew_deadline: Duration,
    /// How often the Lease is renewed or tried (e.g. 2s).
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub retry_period: Duration,
    /// On SIGTERM or SIGINT, how long the running reconciles may take to finish before
    /// they are cancelled (a second signal cancels them at once); then the Lease is
    /// released and the operator exits 0. Keep it below the pod's
    /// terminationGracePeriodSeconds (default 30 s).
    #[arg(long, env = "GRACEFUL_SHUTDOWN_TIMEOUT", default_value = "20s", value_parser = parse_duration)]
    pub graceful_shutdown_timeout: Duration,

    /// fdbcli's TLS files (the sidecars' too, unless the --sidecar-* flags say
    /// otherwise).
    #[command(flatten)]
    pub fdbcli_tls: FdbcliTlsArgs,
    /// Do not verify sidecar server certificates (the connection stays encrypted and
    /// the client certificate is still presented).
    #[arg(long, env = "DISABLE_SIDECAR_TLS_CHECK", value_parser = clap::builder::FalseyValueParser::new())]
    pub disable_sidecar_tls_check: bool,
    /// CA file to verify sidecars serving HTTPS (overrides --tls-ca-file for sidecars).
    #[arg(long)]
    pub sidecar_ca_file: Option<PathBuf>,
    /// Client certificate and key presented to sidecars (overrides
    /// --tls-certificate-file/--tls-key-file for sidecars).
    #[arg(long, num_args = 2, value_names = ["CERT", "KEY"])]
    pub sidecar_client_certificate: Option<Vec<PathBuf>>,
    /// Label keys (comma-separated) every object of the clusters carries: the watch
    /// caches hold only objects with all of them. A cluster whose
    /// `spec.labels.matchLabels` lacks one is read with LISTs instead. Empty: cache every
    /// pod, PVC, service and ConfigMap of the watched namespaces.
    #[arg(long, env = "CACHE_LABEL_SELECTOR", default_value = CLUSTER_NAME_LABEL)]
    pub cache_label_selector: String,
    /// Replace process groups (instead of recreating their pods) when the pods' file
    /// ownership changes (fsGroup, fsGroupChangePolicy, runAsUser, runAsGroup).
    #[arg(long)]
    pub replace_on_security_context_change: bool,
    /// What pod templates may ask for (--restrict-pod-templates and its --allow* flags).
    #[command(flatten)]
    pub pod_templates: super::pod_template_args::PodTemplatePolicyArgs,
}

/// Parses `500ms`, `15s`, `2m` or a plain number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(index) => text.split_at(index),
        None => (text, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 500ms, 15s or 2m"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => return Err(format!("{text:?}: the unit must be ms, s or m")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{text:?}: {e}"))
}

/// The files fdbcli uses with TLS clusters: all three of certificate, key and CA, or
/// none.
fn fdbcli_tls(args: &RunArgs) -> Result<Option<TlsFiles>, String> {
    args.fdbcli_tls.files()
}

/// The tools the operator runs: per version under --fdb-binaries-dir, or the one
/// --fdbcli; with the trace log group of the operator's connections.
fn fdb_tools(args: &RunArgs) -> FdbTools {
    FdbTools::new(args.fdb_binaries_dir.clone(), args.fdbcli.clone())
        .with_trace_log_group(args.fdb_trace_log_group.clone())
}

/// The operator's TLS material for sidecars: the sidecar-specific flags, else the
/// operator's TLS files.
fn sidecar_tls(args: &RunArgs) -> Option<SidecarClientTls> {
    let ca_file = args
        .sidecar_ca_file
        .clone()
        .or_else(|| args.fdbcli_tls.tls_ca_file.clone())?;
    let client_certificate = match args.sidecar_client_certificate.as_deref() {
        Some([cert, key]) => Some((cert.clone(), key.clone())),
        _ => args
            .fdbcli_tls
            .tls_certificate_file
            .clone()
            .zip(args.fdbcli_tls.tls_key_file.clone()),
    };
    Some(SidecarClientTls {
        ca_file,
        client_certificate,
        skip_server_verification: args.disable_sidecar_tls_check,
    })
}

/// The namespace of the service account the operator runs as, if in a pod.
fn service_account_namespace() -> Option<String> {
    std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
        .ok()
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
}

fn leader_election(args: &RunArgs) -> Option<LeaderElectionConfig> {
    if !args.leader_election {
        return None;
    }
    let namespace = args
        .leader_election_namespace
        .clone()
        .or_else(|| args.namespace.clone())
        .or_else(service_account_namespace)
        .unwrap_or_else(|| "default".to_owned());
    let identity = args
        .leader_election_identity
        .clone()
        .filter(|identity| !identity.is_empty())
        .unwrap_or_else(default_identity);
    Some(LeaderElectionConfig {
        namespace,
        lease_name: args.leader_election_id.clone(),
        identity,
        lease_duration: args.lease_duration,
        renew_deadline: args.renew_deadline,
        retry_period: args.retry_period,
    })
}

async fn run_async(args: RunArgs) -> Result<(), String> {
    let fdbcli_tls = fdbcli_tls(&args)?;
    let leader_election = leader_election(&args);
    if let Some(config) = &leader_election {
        config.validate().map_err(|e| e.to_string())?;
    }
    let kube = kube::Client::try_default()
        .await
        .map_err(|e| format!("cannot connect to Kubernetes: {e}"))?;
    let tls = sidecar_tls(&args);
    let factory = SidecarClientFactory::new(tls.as_ref()).map_err(|e| {
        format!(
            "cannot build the sidecar client: {}",
            fdb_shared::error_chain::ErrorChain(&e)
        )
    })?;
    let admin = FdbcliAdminProvider {
        tools: fdb_tools(&args),
        work_dir: args.work_dir,
        tls: fdbcli_tls,
        runner: crate::fdb::ProcessRunner::shared(),
    };
    // https is chosen per pod, from whether its sidecar runs with --tls.
    let mut ctx = Context::new(
        kube,
        Arc::new(admin),
        Arc::new(HttpSidecarProvider::new(factory, false)),
        Arc::new(SystemClock),
    );
    ctx.settings.replace_on_security_context_change = args.replace_on_security_context_change;
    ctx.settings.pod_template_policy = args.pod_templates.policy();
    let options = RunOptions {
        namespace: args.namespace,
        metrics_address: Some(args.metrics_address),
        requeue: RequeuePolicy::default(),
        max_concurrent_reconciles: args.max_concurrent_reconciles,
        leader_election,
        cache_selector: CacheSelector::parse(&args.cache_label_selector),
        graceful_shutdown_timeout: args.graceful_shutdown_timeout,
        ..RunOptions::default()
    };
    run_controller(ctx, options)
        .await
        .map_err(|error| explain_run_error(&error))
}

/// The controller's error as the command line explains it: a metrics address another
/// process holds names the flag that moves it (the default 0.0.0.0:8080 is often taken,
/// e.g. by a sidecar or another operator on the same host).
fn explain_run_error(error: &ProductionRunError) -> String {
    match error {
        ProductionRunError::Metrics { address, source }
            if source.kind() == std::io::ErrorKind::AddrInUse =>
        {
            format!(
                "the metrics address {address} is already in use ({source}): another process \
                 listens on that port; give a free address with --metrics-address ADDR \
                 (e.g. --metrics-address 127.0.0.1:9090)"
            )
        }
        ProductionRunError::Metrics { address, source } => format!(
            "cannot serve /metrics, /healthz and /readyz on {address} ({source}); choose \
             another address with --metrics-address ADDR"
        ),
        other => fdb_shared::error_chain::chain_text(other),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn parse(args: &[&str]) -> RunArgs {
        Cli::try_parse_from(std::iter::once("run").chain(args.iter().copied()))
            .unwrap()
            .run
    }

    #[test]
    fn the_tools_are_per_version_unless_one_fdbcli_is_given() {
        use crate::fdb::ToolLayout;
        let default = parse(&[]);
        assert_eq!(
            fdb_tools(&default).layout,
            ToolLayout::PerVersion {
                binaries_dir: "/usr/bin/fdb".into()
            }
        );
        // Outside the image too, the operator's own connections are in the log group
        // upgrades ignore by default: in `default` they would block every upgrade.
        assert_eq!(
            fdb_tools(&default).trace_log_group.as_deref(),
            Some("fdb-kubernetes-operator")
        );
        let dir = parse(&[
            "--fdb-binaries-dir",
            "/opt/fdb",
            "--fdb-trace-log-group",
            "ops",
        ]);
        let tools = fdb_tools(&dir);
        assert_eq!(
            tools.layout,
            ToolLayout::PerVersion {
                binaries_dir: "/opt/fdb".into()
            }
        );
        assert_eq!(tools.trace_log_group.as_deref(), Some("ops"));
        let single = parse(&["--fdbcli", "/usr/bin/fdbcli"]);
        assert_eq!(
            fdb_tools(&single).layout,
            ToolLayout::Single {
                fdbcli: "/usr/bin/fdbcli".into()
            }
        );
        // The image's environment reaches the flags (as the Go operator's image sets them).
        let command = <Cli as clap::CommandFactory>::command();
        let env_of = |id: &str| {
            command
                .get_arguments()
                .find(|arg| arg.get_id() == id)
                .and_then(|arg| arg.get_env())
                .map(|env| env.to_string_lossy().into_owned())
        };
        assert_eq!(
            env_of("fdb_binaries_dir").as_deref(),
            Some("FDB_BINARY_DIR")
        );
        assert_eq!(
            env_of("fdb_trace_log_group").as_deref(),
            Some("FDB_NETWORK_OPTION_TRACE_LOG_GROUP")
        );
        assert_eq!(env_of("fdbcli"), None);
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("3h").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn tls_files_serve_fdbcli_and_the_sidecar_client() {
        let args = parse(&[
            "--tls-certificate-file",
            "/certs/op.crt",
            "--tls-key-file",
            "/certs/op.key",
            "--tls-ca-file",
            "/certs/ca.pem",
            "--tls-verify-peers",
            "S.CN=fdb",
        ]);
        let fdbcli = fdbcli_tls(&args).unwrap().unwrap();
        assert_eq!(fdbcli.certificate_file, PathBuf::from("/certs/op.crt"));
        assert_eq!(fdbcli.verify_peers.as_deref(), Some("S.CN=fdb"));
        let sidecar = sidecar_tls(&args).unwrap();
        assert_eq!(sidecar.ca_file, PathBuf::from("/certs/ca.pem"));
        assert_eq!(
            sidecar.client_certificate,
            Some(("/certs/op.crt".into(), "/certs/op.key".into()))
        );
        assert!(!sidecar.skip_server_verification);

        let partial = parse(&["--tls-certificate-file", "/certs/op.crt"]);
        assert!(fdbcli_tls(&partial).is_err());
        let none = parse(&[]);
        assert_eq!(fdbcli_tls(&none), Ok(None));
        assert_eq!(sidecar_tls(&none), None);
        assert_eq!(
            none.max_concurrent_reconciles,
            DEFAULT_MAX_CONCURRENT_RECONCILES
        );
        assert!(leader_election(&none).is_none());
        assert_eq!(none.graceful_shutdown_timeout, Duration::from_secs(20));

        let overridden = parse(&[
            "--tls-ca-file",
            "/certs/ca.pem",
            "--sidecar-ca-file",
            "/sidecar/ca.pem",
            "--disable-sidecar-tls-check",
        ]);
        let sidecar = sidecar_tls(&overridden).unwrap();
        assert_eq!(sidecar.ca_file, PathBuf::from("/sidecar/ca.pem"));
        assert!(sidecar.skip_server_verification);
    }

    #[test]
    fn leader_election_flags() {
        let args = parse(&[
            "--leader-election",
            "--leader-election-namespace",
            "fdb",
            "--leader-election-id",
            "lease-x",
            "--leader-election-identity",
            "replica-1",
            "--lease-duration",
            "3s",
            "--renew-deadline",
            "2s",
            "--retry-period",
            "500ms",
        ]);
        let config = leader_election(&args).unwrap();
        assert_eq!(
            config,
            LeaderElectionConfig {
                namespace: "fdb".into(),
                lease_name: "lease-x".into(),
                identity: "replica-1".into(),
                lease_duration: Duration::from_secs(3),
                renew_deadline: Duration::from_secs(2),
                retry_period: Duration::from_millis(500),
            }
        );
        assert!(config.validate().is_ok());
        assert!(
            Cli::try_parse_from(["run", "--max-concurrent-reconciles", "0"]).is_err(),
            "at least one reconcile at a time"
        );
    }
}
