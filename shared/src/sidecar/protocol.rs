//! Endpoint paths, fixed bodies and defaults of the sidecar HTTP API (the wire contract of
//! the Python `foundationdb-kubernetes-sidecar`, which `fdb-sidecar` keeps).

use std::net::IpAddr;
use std::time::Duration;

/// Port the sidecar listens on in a pod.
pub const DEFAULT_PORT: u16 = 8080;
/// Timeout of the operator's GET requests.
pub const GET_TIMEOUT: Duration = Duration::from_secs(5);
/// Timeout of the operator's POST requests.
pub const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// `GET`: liveness/readiness; answers without a client certificate.
pub const READY: &str = "/ready";
/// `GET`: JSON object of the monitor conf substitutions.
pub const SUBSTITUTIONS: &str = "/substitutions";
/// `GET /check_hash/<rel>`: SHA-256 of a file in the output dir.
pub const CHECK_HASH_PREFIX: &str = "/check_hash/";
/// `GET /is_present/<rel>`: whether a file exists in the output dir.
pub const IS_PRESENT_PREFIX: &str = "/is_present/";
/// `POST`: copy the `--copy-file` files.
pub const COPY_FILES: &str = "/copy_files";
/// `POST`: stage the `--copy-binary` binaries.
pub const COPY_BINARIES: &str = "/copy_binaries";
/// `POST`: copy the `--copy-library` client libraries.
pub const COPY_LIBRARIES: &str = "/copy_libraries";
/// `POST`: render and write the monitor conf.
pub const COPY_MONITOR_CONF: &str = "/copy_monitor_conf";
/// `POST`: reload the TLS certificates.
pub const REFRESH_CERTS: &str = "/refresh_certs";
/// `POST`: exit so that the kubelet restarts the container.
pub const RESTART: &str = "/restart";
/// `GET`: Prometheus metrics (an addition of `fdb-sidecar`).
pub const METRICS: &str = "/metrics";

/// Body of every successful request that has no other payload.
pub const OK_BODY: &str = "OK\n";
/// Body of a 401 answer under TLS.
pub const NOT_APPROVED_BODY: &str = "Client certificate was not approved";
/// Body of `POST /refresh_certs` without TLS (status 400).
pub const NOT_USING_TLS_BODY: &str = "Server is not using TLS";

/// Name of the monitor conf the sidecar writes into its output dir.
pub const MONITOR_CONF_FILE: &str = "fdbmonitor.conf";
/// Name of the cluster file in the input and output dirs.
pub const CLUSTER_FILE: &str = "fdb.cluster";

/// The base URL of the sidecar of a pod with IP `ip`: `http(s)://ip:8080`, with brackets
/// around IPv6 addresses.
pub fn base_url(ip: IpAddr, tls: bool) -> String {
    let scheme = if tls { "https" } else { "http" };
    match ip {
        IpAddr::V4(v4) => format!("{scheme}://{v4}:{DEFAULT_PORT}"),
        IpAddr::V6(v6) => format!("{scheme}://[{v6}]:{DEFAULT_PORT}"),
    }
}

/// Relative path of a staged binary: `bin/<version>/<name>`.
pub fn staged_binary_path(version: &str, name: &str) -> String {
    format!("bin/{version}/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_bracket_ipv6() {
        assert_eq!(
            base_url("10.0.0.1".parse().unwrap(), false),
            "http://10.0.0.1:8080"
        );
        assert_eq!(
            base_url("fd00::1".parse().unwrap(), true),
            "https://[fd00::1]:8080"
        );
    }

    #[test]
    fn staged_binary_path_layout() {
        assert_eq!(
            staged_binary_path("7.3.43", "fdbserver"),
            "bin/7.3.43/fdbserver"
        );
    }
}
