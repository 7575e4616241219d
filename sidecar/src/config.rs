//! Command-line flags and the validated sidecar configuration.
//!
//! Flags are parsed by clap, but environment fallbacks are applied from an explicit
//! environment map instead of the process environment, so that many sidecars with
//! different `FDB_POD_IP`, `FDB_INSTANCE_ID`, ... can run in one process (the operator's
//! simulation). The binary passes the process environment; both go through
//! [`SidecarConfig::from_args`].

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::{Component, Path, PathBuf};

use clap::Parser;
use fdb_shared::FdbVersion;

use fdb_shared::sidecar::peer_rules::{PeerRules, RuleParseError};

/// Environment variables of the pre-6.3 sidecar; their presence is an error.
pub const DEPRECATED_ENV_VARS: [&str; 4] =
    ["SIDECAR_CONF_DIR", "INPUT_DIR", "OUTPUT_DIR", "COPY_ONCE"];

/// The substitution variables every sidecar provides.
pub const STANDARD_SUBSTITUTIONS: [&str; 6] = [
    "FDB_PUBLIC_IP",
    "FDB_MACHINE_ID",
    "FDB_ZONE_ID",
    "FDB_INSTANCE_ID",
    "FDB_POD_IP",
    "BINARY_DIR",
];

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The command line of `fdb-sidecar` (compatible with the Python sidecar's flags).
#[derive(Debug, Clone, Parser)]
#[command(
    name = "fdb-sidecar",
    version,
    about = "FoundationDB Kubernetes sidecar: copies the cluster file, renders the fdbmonitor conf, stages binaries for upgrades and serves the sidecar HTTP API."
)]
pub struct SidecarArgs {
    /// Run the start-up copies once and exit 0 (for the init container).
    #[arg(long)]
    pub init_mode: bool,
    /// Listen address, IP:PORT or [IPv6]:PORT. Default: $FDB_POD_IP:8080, else $FDB_PUBLIC_IP:8080.
    #[arg(long, value_name = "IP:PORT")]
    pub bind_address: Option<String>,
    /// Serve HTTPS; needs the certificate, key and CA files.
    #[arg(long)]
    pub tls: bool,
    /// PEM certificate chain of the server [env: FDB_TLS_CERTIFICATE_FILE].
    #[arg(long, value_name = "FILE")]
    pub tls_certificate_file: Option<PathBuf>,
    /// PEM private key of the server [env: FDB_TLS_KEY_FILE].
    #[arg(long, value_name = "FILE")]
    pub tls_key_file: Option<PathBuf>,
    /// PEM CA certificates that client certificates must chain to [env: FDB_TLS_CA_FILE].
    #[arg(long, value_name = "FILE")]
    pub tls_ca_file: Option<PathBuf>,
    /// FoundationDB peer verification rules for client certificates, e.g.
    /// "S.CN=operator,I.O=Example;S.subjectAltName>=DNS:op." [env: FDB_TLS_VERIFY_PEERS].
    #[arg(long, value_name = "RULES")]
    pub tls_verify_peers: Option<String>,
    /// Directory the ConfigMap is mounted at (read side).
    #[arg(long, value_name = "DIR", default_value = "/var/input-files")]
    pub input_dir: PathBuf,
    /// Directory shared with the main container (write side).
    #[arg(long, value_name = "DIR", default_value = "/var/output-files")]
    pub output_dir: PathBuf,
    /// File copied from the input dir to the output dir (repeatable).
    #[arg(long = "copy-file", value_name = "FILE")]
    pub copy_files: Vec<String>,
    /// Binary staged into bin/<version>/ for upgrades, e.g. fdbserver (repeatable).
    #[arg(long = "copy-binary", value_name = "NAME")]
    pub copy_binaries: Vec<String>,
    /// Client library version to copy (repeatable); the first is the primary library.
    #[arg(long = "copy-library", value_name = "VERSION")]
    pub copy_libraries: Vec<String>,
    /// Monitor conf template in the input dir, rendered to <output-dir>/fdbmonitor.conf.
    #[arg(long, value_name = "FILE")]
    pub input_monitor_conf: Option<String>,
    /// FoundationDB version of the main container of the pod.
    #[arg(long, value_name = "VERSION")]
    pub main_container_version: Option<String>,
    /// Environment variable made available to the monitor conf template (repeatable).
    #[arg(long = "substitute-variable", value_name = "NAME")]
    pub substitute_variables: Vec<String>,
    /// Treat FDB_PUBLIC_IP/FDB_POD_IP as comma lists and keep the first address of this family.
    #[arg(long, value_name = "4|6", value_parser = clap::builder::PossibleValuesParser::new(["4", "6"]))]
    pub public_ip_family: Option<String>,
    /// Where the output dir is mounted in the main container.
    #[arg(long, value_name = "DIR", default_value = "/var/dynamic-conf")]
    pub main_container_conf_dir: PathBuf,
    /// Input file that must exist and be non-empty before files are copied (repeatable).
    #[arg(long = "require-not-empty", value_name = "FILE")]
    pub require_not_empty: Vec<String>,
    /// File holding this image's FoundationDB version (the primary version).
    #[arg(long, value_name = "PATH", default_value = "/var/fdb/version")]
    pub version_file: PathBuf,
    /// Directory --copy-binary reads from.
    #[arg(long, value_name = "PATH", default_value = "/usr/bin")]
    pub binary_dir: PathBuf,
    /// Directory --copy-library reads libfdb_c_<VERSION>.so from.
    #[arg(long, value_name = "PATH", default_value = "/var/fdb/lib")]
    pub library_dir: PathBuf,
    /// Watch the input dir and re-run copy files + copy monitor conf when it changes.
    #[arg(long)]
    pub watch_input: bool,
    /// Number of file hashes remembered (keyed by inode, size and change time); 0 disables.
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub hash_cache_entries: usize,
    /// Maximum number of files hashed at the same time.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub max_concurrent_hashes: u32,
    /// Maximum number of connections served at once (bounds memory under load). When all
    /// are taken, a new client closes the connection idle for the longest (at least 1 s
    /// without a request: silent or slowloris clients cannot lock others out); otherwise
    /// it waits in the listen queue, and while all slots are busy each response closes its
    /// connection so that waiting clients get their turn.
    #[arg(long, value_name = "N", default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub max_connections: u32,
    /// Longest time a copy request (`POST /copy_*`, and the `--watch-input` copies) waits
    /// for its result, queueing included; a copy still running after it goes on in the
    /// background, later copies get 503 until it ends, and `/ready` answers 503 while it
    /// runs past the limit. The default answers within the operator's 10 s POST timeout.
    #[arg(long, value_name = "SECONDS", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub copy_timeout_seconds: u64,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// Why the configuration is invalid.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The command line does not parse (also carries `--help` / `--version` output).
    #[error(transparent)]
    Cli(#[from] clap::Error),
    /// The version file could not be read or holds no valid version.
    #[error("cannot read the primary version from {path}: {reason}")]
    VersionFile {
        /// The version file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A deprecated environment variable of the pre-6.3 sidecar is set.
    #[error(
        "environment variable {name} is not supported with primary version {version}; use the command-line flags instead"
    )]
    DeprecatedEnv {
        /// The variable.
        name: String,
        /// The primary version.
        version: String,
    },
    /// `--tls` without one of its files.
    #[error("--tls needs {flag} (or environment variable {env})")]
    MissingTlsFile {
        /// The missing flag.
        flag: &'static str,
        /// Its environment fallback.
        env: &'static str,
    },
    /// The peer verification rules do not parse.
    #[error("invalid --tls-verify-peers")]
    PeerRules(#[from] RuleParseError),
    /// A flag value that must name a file inside a directory escapes it.
    #[error("{flag} {value:?} must be a relative path without '..' inside its directory")]
    UnsafeName {
        /// The flag.
        flag: &'static str,
        /// The offending value.
        value: String,
    },
    /// `--substitute-variable` names an environment variable that is not set.
    #[error("--substitute-variable {name}: environment variable {name} is not set")]
    UnsetSubstituteVariable {
        /// The variable.
        name: String,
    },
    /// The listen address is invalid or cannot be derived.
    #[error("invalid listen address: {0}")]
    BindAddress(String),
    /// An IP environment variable does not hold an address of the requested family.
    #[error("environment variable {name}={value:?} holds no IPv{family} address")]
    IpFamily {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// The requested family.
        family: String,
    },
}

/// TLS settings of a sidecar started with `--tls`.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// Server certificate chain (PEM).
    pub certificate_file: PathBuf,
    /// Server private key (PEM).
    pub key_file: PathBuf,
    /// CA certificates for client verification (PEM).
    pub ca_file: PathBuf,
    /// Parsed peer verification rules (empty: any certificate signed by the CA).
    pub verify_peers: PeerRules,
}

/// A validated sidecar configuration.
#[derive(Debug, Clone)]
pub struct SidecarConfig {
    /// The parsed flags, as given.
    pub args: SidecarArgs,
    /// This image's FoundationDB version (trimmed content of the version file).
    pub primary_version: String,
    /// The listen address from `--bind-address`, else `FDB_POD_IP`, `FDB_PUBLIC_IP` or the
    /// host's own address, with port 8080; `None` when no address can be determined.
    pub bind_address: Option<SocketAddr>,
    /// TLS settings when `--tls` is set.
    pub tls: Option<TlsSettings>,
    /// The monitor conf substitutions (`GET /substitutions`).
    pub substitutions: BTreeMap<String, String>,
}

/// Every file argument is a relative path (binaries and libraries as bare names).
fn check_file_arguments(args: &SidecarArgs) -> Result<(), ConfigError> {
    for value in args.copy_files.iter().chain(&args.require_not_empty) {
        check_relative(value, "--copy-file/--require-not-empty", false)?;
    }
    if let Some(conf) = &args.input_monitor_conf {
        check_relative(conf, "--input-monitor-conf", false)?;
    }
    for value in &args.copy_binaries {
        check_relative(value, "--copy-binary", true)?;
    }
    for value in &args.copy_libraries {
        check_relative(value, "--copy-library", true)?;
    }
    Ok(())
}

/// With `--tls`, the three files (each from its flag or its environment variable) and the
/// peer verification rules.
fn tls_settings(args: &SidecarArgs) -> Result<Option<TlsSettings>, ConfigError> {
    if !args.tls {
        return Ok(None);
    }
    let need = |value: &Option<PathBuf>, flag, env| {
        value
            .clone()
            .ok_or(ConfigError::MissingTlsFile { flag, env })
    };
    Ok(Some(TlsSettings {
        certificate_file: need(
            &args.tls_certificate_file,
            "--tls-certificate-file",
            "FDB_TLS_CERTIFICATE_FILE",
        )?,
        key_file: need(&args.tls_key_file, "--tls-key-file", "FDB_TLS_KEY_FILE")?,
        ca_file: need(&args.tls_ca_file, "--tls-ca-file", "FDB_TLS_CA_FILE")?,
        verify_peers: PeerRules::parse(args.tls_verify_peers.as_deref().unwrap_or(""))?,
    }))
}

/// `--bind-address`, else FDB_POD_IP, else FDB_PUBLIC_IP, else the host's own address
/// (the fallback of the FDB_PUBLIC_IP substitution); None when no address is known.
fn bind_address(
    flag: Option<&str>,
    pod_ip: &str,
    public_ip: &str,
) -> Result<Option<SocketAddr>, ConfigError> {
    if let Some(text) = flag {
        return parse_bind_address(text).map(Some);
    }
    [pod_ip, public_ip]
        .into_iter()
        .find(|ip| !ip.is_empty())
        .map(|ip| {
            let bare = ip.trim_start_matches('[').trim_end_matches(']');
            bare.parse::<IpAddr>()
                .map(|ip| SocketAddr::new(ip, fdb_shared::sidecar::protocol::DEFAULT_PORT))
                .map_err(|e| ConfigError::BindAddress(format!("{ip:?} from the environment: {e}")))
        })
        .transpose()
}

/// The substitutions every sidecar provides, with their fallbacks (the machine ID from
/// HOSTNAME, the zone from the machine ID, the binaries staged for another version).
fn standard_substitutions(
    args: &SidecarArgs,
    env: &BTreeMap<String, String>,
    primary_version: &str,
    public_ip: String,
    pod_ip: String,
) -> BTreeMap<String, String> {
    let get = |name: &str| env.get(name).map(String::as_str).unwrap_or("");
    let mut machine_id = get("FDB_MACHINE_ID").to_owned();
    if machine_id.is_empty() {
        machine_id = get("HOSTNAME").to_owned();
    }
    let mut zone_id = get("FDB_ZONE_ID").to_owned();
    if zone_id.is_empty() {
        zone_id = machine_id.clone();
    }
    let binary_dir = if versions_differ(args.main_container_version.as_deref(), primary_version) {
        args.main_container_conf_dir
            .join("bin")
            .join(primary_version)
            .display()
            .to_string()
    } else {
        "/usr/bin".to_owned()
    };
    BTreeMap::from([
        ("FDB_PUBLIC_IP".to_owned(), public_ip),
        ("FDB_MACHINE_ID".to_owned(), machine_id),
        ("FDB_ZONE_ID".to_owned(), zone_id),
        (
            "FDB_INSTANCE_ID".to_owned(),
            get("FDB_INSTANCE_ID").to_owned(),
        ),
        ("FDB_POD_IP".to_owned(), pod_ip),
        ("BINARY_DIR".to_owned(), binary_dir),
    ])
}

impl SidecarConfig {
    /// Parses `args` (the arguments after the program name) like the binary does, with
    /// environment fallbacks taken from `env`, reads the version file and validates
    /// everything.
    pub fn from_args(
        args: impl IntoIterator<Item = String>,
        env: &BTreeMap<String, String>,
    ) -> Result<Self, ConfigError> {
        let argv = std::iter::once("fdb-sidecar".to_owned()).chain(args);
        let args = SidecarArgs::try_parse_from(argv)?;
        Self::from_parsed(args, env)
    }

    /// Validates already parsed flags against `env`.
    pub fn from_parsed(
        mut args: SidecarArgs,
        env: &BTreeMap<String, String>,
    ) -> Result<Self, ConfigError> {
        let get = |name: &str| env.get(name).map(String::as_str).unwrap_or("");
        fill_from_env(
            &mut args.tls_certificate_file,
            env,
            "FDB_TLS_CERTIFICATE_FILE",
        );
        fill_from_env(&mut args.tls_key_file, env, "FDB_TLS_KEY_FILE");
        fill_from_env(&mut args.tls_ca_file, env, "FDB_TLS_CA_FILE");
        if args.tls_verify_peers.is_none() {
            args.tls_verify_peers = env.get("FDB_TLS_VERIFY_PEERS").cloned();
        }

        let primary_version = read_primary_version(&args.version_file)?;
        for name in DEPRECATED_ENV_VARS {
            // Set but empty is not "set": the Python sidecar tested `if os.getenv(name)`.
            if env.get(name).is_some_and(|value| !value.is_empty()) {
                return Err(ConfigError::DeprecatedEnv {
                    name: name.to_owned(),
                    version: primary_version.clone(),
                });
            }
        }

        check_file_arguments(&args)?;
        let tls = tls_settings(&args)?;

        let family = args.public_ip_family.as_deref();
        let pod_ip = select_ip("FDB_POD_IP", get("FDB_POD_IP"), family)?;
        let env_public_ip = select_ip("FDB_PUBLIC_IP", get("FDB_PUBLIC_IP"), family)?;

        let public_ip = if !env_public_ip.is_empty() {
            env_public_ip
        } else if !pod_ip.is_empty() {
            pod_ip.clone()
        } else {
            host_address(get("HOSTNAME"), family)
        };
        let bind_address = bind_address(args.bind_address.as_deref(), &pod_ip, &public_ip)?;

        let mut substitutions =
            standard_substitutions(&args, env, &primary_version, public_ip, pod_ip);
        for name in &args.substitute_variables {
            if STANDARD_SUBSTITUTIONS.contains(&name.as_str()) {
                continue; // already computed, with its fallbacks
            }
            let value = env
                .get(name)
                .ok_or_else(|| ConfigError::UnsetSubstituteVariable { name: name.clone() })?;
            substitutions.insert(name.clone(), value.clone());
        }

        Ok(Self {
            args,
            primary_version,
            bind_address,
            tls,
            substitutions,
        })
    }

    /// Whether binaries must be staged: the main container runs another version, or its
    /// version is unknown (no `--main-container-version`, as in the Python sidecar).
    pub fn version_mismatch(&self) -> bool {
        versions_differ(
            self.args.main_container_version.as_deref(),
            &self.primary_version,
        )
    }
}

/// Whether the main container's version differs from the primary version. An omitted
/// `--main-container-version` counts as different: the Python sidecar compared `None`
/// with the primary version, which is never equal, so it staged the binaries.
fn versions_differ(main_container_version: Option<&str>, primary_version: &str) -> bool {
    main_container_version.map(str::trim) != Some(primary_version)
}

fn fill_from_env(value: &mut Option<PathBuf>, env: &BTreeMap<String, String>, name: &str) {
    if value.is_none() {
        *value = env.get(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    }
}

fn read_primary_version(path: &Path) -> Result<String, ConfigError> {
    let err = |reason: String| ConfigError::VersionFile {
        path: path.to_owned(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let version = text.trim();
    version
        .parse::<FdbVersion>()
        .map_err(|e| err(e.to_string()))?;
    Ok(version.to_owned())
}

/// Checks that a flag value is a plain relative path (a single file name when
/// `single_component`).
fn check_relative(
    value: &str,
    flag: &'static str,
    single_component: bool,
) -> Result<(), ConfigError> {
    let mut normal = 0;
    let mut safe = !value.contains('\0');
    for component in Path::new(value).components() {
        match component {
            Component::Normal(_) => normal += 1,
            Component::CurDir if !single_component => {}
            _ => safe = false,
        }
    }
    let ok = safe && normal >= 1 && (!single_component || normal == 1);
    if ok {
        Ok(())
    } else {
        Err(ConfigError::UnsafeName {
            flag,
            value: value.to_owned(),
        })
    }
}

/// Applies `--public-ip-family` to an IP environment variable: without a family the
/// value is used as is; with one, the first address of that family in the comma list
/// (IPv6 in brackets).
fn select_ip(name: &'static str, value: &str, family: Option<&str>) -> Result<String, ConfigError> {
    let Some(family) = family else {
        return Ok(value.trim().to_owned());
    };
    if value.trim().is_empty() {
        return Ok(String::new());
    }
    let chosen = value
        .split(',')
        .filter_map(|item| {
            item.trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .ok()
        })
        .find(|ip| matches!((ip, family), (IpAddr::V4(_), "4") | (IpAddr::V6(_), "6")));
    match chosen {
        Some(IpAddr::V4(ip)) => Ok(ip.to_string()),
        Some(IpAddr::V6(ip)) => Ok(format!("[{ip}]")),
        None => Err(ConfigError::IpFamily {
            name,
            value: value.to_owned(),
            family: family.to_owned(),
        }),
    }
}

fn parse_bind_address(text: &str) -> Result<SocketAddr, ConfigError> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    text.to_socket_addrs()
        .map_err(|e| ConfigError::BindAddress(format!("{text:?}: {e}")))?
        .next()
        .ok_or_else(|| ConfigError::BindAddress(format!("{text:?} resolves to no address")))
}

/// The host's own address, the last fallback of `FDB_PUBLIC_IP` ("" when unknown).
fn host_address(hostname: &str, family: Option<&str>) -> String {
    let hostname = if hostname.is_empty() {
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default()
    } else {
        hostname.to_owned()
    };
    let hostname = hostname.trim();
    if hostname.is_empty() {
        return String::new();
    }
    let Ok(addrs) = (hostname, 0).to_socket_addrs() else {
        return String::new();
    };
    addrs
        .map(|a| a.ip())
        .find(|ip| match family {
            Some("6") => ip.is_ipv6(),
            Some(_) => ip.is_ipv4(),
            None => true,
        })
        .map(|ip| match ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        })
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
