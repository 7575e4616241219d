//! HTTP client for the sidecar API, one [`SidecarClient`] per pod sharing one connection
//! pool ([`SidecarClientFactory`]).
//!
//! Server certificates are verified against the CA but not against the pod's address:
//! sidecar certificates do not need an IP SAN (pod IPs change on every reschedule).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::{Method, StatusCode, Url};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::protocol;

/// Why a sidecar request failed.
#[derive(Debug, thiserror::Error)]
pub enum SidecarClientError {
    /// The sidecar could not be reached: connection refused, timeout, reset. The operator
    /// reports this as the `SidecarUnreachable` condition.
    #[error("sidecar at {url} is unreachable")]
    Unreachable {
        /// The requested URL.
        url: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    /// The sidecar answered with an unexpected HTTP status.
    #[error("sidecar at {url} answered {status}: {body}")]
    Status {
        /// The requested URL.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// The response body (trimmed, at most 1 KiB).
        body: String,
    },
    /// The sidecar answered 200 with a body that does not parse.
    #[error("sidecar at {url} sent an invalid response: {reason}")]
    InvalidResponse {
        /// The requested URL.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// The base URL given for a pod is not a valid http(s) URL.
    #[error("invalid sidecar base URL {url:?}: {reason}")]
    InvalidUrl {
        /// The rejected URL.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// A relative path with `.`/`..` components, an absolute path or an empty path.
    #[error("invalid sidecar path {rel:?}: must be a relative path without '.' or '..' components")]
    InvalidPath {
        /// The rejected path.
        rel: String,
    },
    /// A TLS file could not be read or used.
    #[error("sidecar client TLS setup failed for {file}: {reason}")]
    Tls {
        /// The file (or setting) at fault.
        file: String,
        /// What was wrong.
        reason: String,
    },
}

impl SidecarClientError {
    /// Whether this is a transport failure (as opposed to an answer from the sidecar).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Self::Unreachable { .. })
    }

    /// Whether the request got no answer within its time limit (a kind of
    /// [`SidecarClientError::Unreachable`]).
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Unreachable { source, .. } if source.is_timeout())
    }

    /// Whether no connection could be made (nothing listens, refused): a kind of
    /// [`SidecarClientError::Unreachable`], as opposed to a connection that failed later.
    pub fn is_connect(&self) -> bool {
        matches!(self, Self::Unreachable { source, .. } if source.is_connect())
    }

    /// The HTTP status of the answer, if the sidecar answered with an error status.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// The operations the operator performs on a pod's sidecar. Implemented by
/// [`SidecarClient`]; the operator may wrap it (fault injection, recording).
#[async_trait]
pub trait SidecarApi: Send + Sync {
    /// `GET /ready`.
    async fn ready(&self) -> Result<(), SidecarClientError>;
    /// `GET /substitutions`: the values the sidecar uses to render the monitor conf.
    async fn substitutions(&self) -> Result<BTreeMap<String, String>, SidecarClientError>;
    /// `GET /check_hash/<rel>`: lowercase hex SHA-256 of the file, `None` when it does
    /// not exist (404).
    async fn check_hash(&self, rel: &str) -> Result<Option<String>, SidecarClientError>;
    /// `GET /is_present/<rel>`: whether the file exists (200) or not (404).
    async fn is_present(&self, rel: &str) -> Result<bool, SidecarClientError>;
    /// `POST /copy_files`.
    async fn copy_files(&self) -> Result<(), SidecarClientError>;
    /// `POST /copy_binaries`.
    async fn copy_binaries(&self) -> Result<(), SidecarClientError>;
    /// `POST /copy_libraries`.
    async fn copy_libraries(&self) -> Result<(), SidecarClientError>;
    /// `POST /copy_monitor_conf`.
    async fn copy_monitor_conf(&self) -> Result<(), SidecarClientError>;
}

/// TLS material of the operator for talking to sidecars started with `--tls`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SidecarClientTls {
    /// PEM file of the CA(s) that sign sidecar certificates.
    pub ca_file: PathBuf,
    /// PEM certificate chain presented to the sidecar, with its key.
    pub client_certificate: Option<(PathBuf, PathBuf)>,
    /// Accept any server certificate (the Go operator's `DISABLE_SIDECAR_TLS_CHECK`):
    /// the connection is still encrypted and the client certificate still presented,
    /// but the sidecar is not authenticated. For sidecars whose certificates the
    /// operator's CA does not sign.
    pub skip_server_verification: bool,
}

/// How the clients of a [`SidecarClientFactory`] send requests. The default is the
/// operator's: [`protocol::GET_TIMEOUT`], [`protocol::POST_TIMEOUT`], kept-alive
/// connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SidecarClientSettings {
    /// Longest wait for the answer to a GET request.
    pub get_timeout: Duration,
    /// Longest wait for the answer to a POST request.
    pub post_timeout: Duration,
    /// Keep idle connections open for the next request to the same sidecar. Without it,
    /// every request opens its own connection, so that nothing depends on how long a
    /// connection stayed idle (the sidecar closes idle connections after a while).
    pub reuse_connections: bool,
}

impl Default for SidecarClientSettings {
    fn default() -> Self {
        Self {
            get_timeout: protocol::GET_TIMEOUT,
            post_timeout: protocol::POST_TIMEOUT,
            reuse_connections: true,
        }
    }
}

/// Shared connection pool and TLS settings; hands out one [`SidecarClient`] per pod.
#[derive(Clone)]
pub struct SidecarClientFactory {
    http: reqwest::Client,
    settings: SidecarClientSettings,
}

impl fmt::Debug for SidecarClientFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SidecarClientFactory")
            .finish_non_exhaustive()
    }
}

impl SidecarClientFactory {
    /// Builds the pool with the operator's settings; `tls` is needed only for `https`
    /// base URLs.
    pub fn new(tls: Option<&SidecarClientTls>) -> Result<Self, SidecarClientError> {
        Self::with_settings(tls, SidecarClientSettings::default())
    }

    /// Builds the pool with `settings`.
    pub fn with_settings(
        tls: Option<&SidecarClientTls>,
        settings: SidecarClientSettings,
    ) -> Result<Self, SidecarClientError> {
        let config = rustls_config(tls)?;
        let mut builder = reqwest::Client::builder()
            .tls_backend_preconfigured(config)
            .no_proxy();
        if !settings.reuse_connections {
            builder = builder.pool_max_idle_per_host(0);
        }
        let http = builder.build().map_err(|e| SidecarClientError::Tls {
            file: "reqwest client".into(),
            reason: e.to_string(),
        })?;
        Ok(Self { http, settings })
    }

    /// A client for the sidecar at `base_url` (e.g. `http://10.1.2.3:8080`).
    pub fn client(&self, base_url: &str) -> Result<SidecarClient, SidecarClientError> {
        let invalid = |reason: &str| SidecarClientError::InvalidUrl {
            url: base_url.to_owned(),
            reason: reason.to_owned(),
        };
        let base = Url::parse(base_url).map_err(|e| invalid(&e.to_string()))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(invalid("scheme must be http or https"));
        }
        if base.cannot_be_a_base() || base.host().is_none() {
            return Err(invalid("no host"));
        }
        Ok(SidecarClient {
            http: self.http.clone(),
            base,
            settings: self.settings,
        })
    }
}

/// HTTP client of one pod's sidecar.
#[derive(Debug, Clone)]
pub struct SidecarClient {
    http: reqwest::Client,
    base: Url,
    settings: SidecarClientSettings,
}

impl SidecarClient {
    /// A client with its own connection pool (prefer [`SidecarClientFactory`] for many pods).
    pub fn new(base_url: &str, tls: Option<&SidecarClientTls>) -> Result<Self, SidecarClientError> {
        SidecarClientFactory::new(tls)?.client(base_url)
    }

    /// The base URL this client talks to.
    pub fn base_url(&self) -> &Url {
        &self.base
    }

    /// `POST /restart`: ask the sidecar to exit so that its container is restarted.
    pub async fn restart(&self) -> Result<(), SidecarClientError> {
        self.post_ok(protocol::RESTART).await
    }

    /// `POST /refresh_certs`: ask the sidecar to reload its TLS certificates.
    pub async fn refresh_certs(&self) -> Result<(), SidecarClientError> {
        self.post_ok(protocol::REFRESH_CERTS).await
    }

    fn file_url(&self, prefix: &str, rel: &str) -> Result<Url, SidecarClientError> {
        let valid = !rel.is_empty()
            && !rel.starts_with('/')
            && rel
                .split('/')
                .all(|s| !s.is_empty() && s != "." && s != "..");
        if !valid {
            return Err(SidecarClientError::InvalidPath {
                rel: rel.to_owned(),
            });
        }
        Ok(self.url(prefix, Some(rel)))
    }

    fn url(&self, path: &str, rel: Option<&str>) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty();
            segments.extend(path.split('/').filter(|s| !s.is_empty()));
            if let Some(rel) = rel {
                segments.extend(rel.split('/').filter(|s| !s.is_empty()));
            }
        }
        url
    }

    /// Sends a request; returns the status and body, or `Unreachable`.
    async fn send(
        &self,
        method: Method,
        url: Url,
    ) -> Result<(StatusCode, String), SidecarClientError> {
        let timeout = if method == Method::GET {
            self.settings.get_timeout
        } else {
            self.settings.post_timeout
        };
        let unreachable = |source| SidecarClientError::Unreachable {
            url: url.to_string(),
            source,
        };
        let response = self
            .http
            .request(method, url.clone())
            .timeout(timeout)
            .send()
            .await
            .map_err(unreachable)?;
        let status = response.status();
        let body = response.text().await.map_err(unreachable)?;
        Ok((status, body))
    }

    fn status_error(url: &Url, status: StatusCode, body: &str) -> SidecarClientError {
        let mut body = body.trim().to_owned();
        if body.len() > 1024 {
            let mut cut = 1024;
            while !body.is_char_boundary(cut) {
                cut -= 1;
            }
            body.truncate(cut);
        }
        SidecarClientError::Status {
            url: url.to_string(),
            status: status.as_u16(),
            body,
        }
    }

    async fn post_ok(&self, path: &str) -> Result<(), SidecarClientError> {
        let url = self.url(path, None);
        let (status, body) = self.send(Method::POST, url.clone()).await?;
        if status == StatusCode::OK {
            Ok(())
        } else {
            Err(Self::status_error(&url, status, &body))
        }
    }
}

#[async_trait]
impl SidecarApi for SidecarClient {
    async fn ready(&self) -> Result<(), SidecarClientError> {
        let url = self.url(protocol::READY, None);
        let (status, body) = self.send(Method::GET, url.clone()).await?;
        if status == StatusCode::OK {
            Ok(())
        } else {
            Err(Self::status_error(&url, status, &body))
        }
    }

    async fn substitutions(&self) -> Result<BTreeMap<String, String>, SidecarClientError> {
        let url = self.url(protocol::SUBSTITUTIONS, None);
        let (status, body) = self.send(Method::GET, url.clone()).await?;
        if status != StatusCode::OK {
            return Err(Self::status_error(&url, status, &body));
        }
        serde_json::from_str(&body).map_err(|e| SidecarClientError::InvalidResponse {
            url: url.to_string(),
            reason: format!("substitutions are not a JSON object of strings: {e}"),
        })
    }

    async fn check_hash(&self, rel: &str) -> Result<Option<String>, SidecarClientError> {
        let url = self.file_url(protocol::CHECK_HASH_PREFIX, rel)?;
        let (status, body) = self.send(Method::GET, url.clone()).await?;
        match status {
            StatusCode::OK => {
                let hash = body.trim();
                if hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                    Ok(Some(hash.to_ascii_lowercase()))
                } else {
                    Err(SidecarClientError::InvalidResponse {
                        url: url.to_string(),
                        reason: format!("{hash:?} is not a hex SHA-256"),
                    })
                }
            }
            StatusCode::NOT_FOUND => Ok(None),
            _ => Err(Self::status_error(&url, status, &body)),
        }
    }

    async fn is_present(&self, rel: &str) -> Result<bool, SidecarClientError> {
        let url = self.file_url(protocol::IS_PRESENT_PREFIX, rel)?;
        let (status, body) = self.send(Method::GET, url.clone()).await?;
        match status {
            StatusCode::OK => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(Self::status_error(&url, status, &body)),
        }
    }

    async fn copy_files(&self) -> Result<(), SidecarClientError> {
        self.post_ok(protocol::COPY_FILES).await
    }

    async fn copy_binaries(&self) -> Result<(), SidecarClientError> {
        self.post_ok(protocol::COPY_BINARIES).await
    }

    async fn copy_libraries(&self) -> Result<(), SidecarClientError> {
        self.post_ok(protocol::COPY_LIBRARIES).await
    }

    async fn copy_monitor_conf(&self) -> Result<(), SidecarClientError> {
        self.post_ok(protocol::COPY_MONITOR_CONF).await
    }
}

fn tls_error(file: &Path, reason: impl fmt::Display) -> SidecarClientError {
    SidecarClientError::Tls {
        file: file.display().to_string(),
        reason: reason.to_string(),
    }
}

/// The rustls configuration handed to reqwest (built with the ring provider, since
/// reqwest is compiled without one).
fn rustls_config(
    tls: Option<&SidecarClientTls>,
) -> Result<rustls::ClientConfig, SidecarClientError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error(Path::new("protocol versions"), e))?;
    let Some(tls) = tls else {
        return Ok(builder
            .with_root_certificates(RootCertStore::empty())
            .with_no_client_auth());
    };
    let mut roots = RootCertStore::empty();
    let cas = CertificateDer::pem_file_iter(&tls.ca_file)
        .map_err(|e| tls_error(&tls.ca_file, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| tls_error(&tls.ca_file, e))?;
    let (added, _ignored) = roots.add_parsable_certificates(cas);
    if added == 0 {
        return Err(tls_error(&tls.ca_file, "no usable CA certificate"));
    }
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| tls_error(&tls.ca_file, e))?;
    let verifier = CaOnlyVerifier {
        inner,
        skip: tls.skip_server_verification,
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    match &tls.client_certificate {
        None => Ok(builder.with_no_client_auth()),
        Some((cert_file, key_file)) => {
            let chain = CertificateDer::pem_file_iter(cert_file)
                .map_err(|e| tls_error(cert_file, e))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| tls_error(cert_file, e))?;
            if chain.is_empty() {
                return Err(tls_error(cert_file, "no certificate in file"));
            }
            let key = PrivateKeyDer::from_pem_file(key_file).map_err(|e| tls_error(key_file, e))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| tls_error(key_file, e))
        }
    }
}

/// Verifies the server chain against the CA, ignoring whether the certificate names the
/// address we dialed (sidecar certificates carry no per-pod IP SAN). With `skip`, any
/// chain is accepted (handshake signatures are still checked).
#[derive(Debug)]
struct CaOnlyVerifier {
    inner: Arc<WebPkiServerVerifier>,
    skip: bool,
}

impl ServerCertVerifier for CaOnlyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.skip {
            return Ok(ServerCertVerified::assertion());
        }
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_built_from_segments() {
        let client = SidecarClient::new("http://127.0.0.1:8080", None).unwrap();
        assert_eq!(
            client
                .url(protocol::CHECK_HASH_PREFIX, Some("bin/7.1.57/fdbserver"))
                .as_str(),
            "http://127.0.0.1:8080/check_hash/bin/7.1.57/fdbserver"
        );
        assert_eq!(
            client.url(protocol::READY, None).as_str(),
            "http://127.0.0.1:8080/ready"
        );
        assert_eq!(
            client
                .url(protocol::CHECK_HASH_PREFIX, Some("a b#c"))
                .as_str(),
            "http://127.0.0.1:8080/check_hash/a%20b%23c"
        );
    }

    #[test]
    fn dot_segments_are_refused() {
        let client = SidecarClient::new("http://127.0.0.1:8080", None).unwrap();
        for rel in ["../x", "a/../x", "./x", "/etc/passwd", "", "a//b"] {
            assert!(
                matches!(
                    client.file_url(protocol::CHECK_HASH_PREFIX, rel),
                    Err(SidecarClientError::InvalidPath { .. })
                ),
                "{rel}"
            );
        }
    }

    #[test]
    fn bad_base_urls_are_rejected() {
        let factory = SidecarClientFactory::new(None).unwrap();
        assert!(matches!(
            factory.client("ftp://x"),
            Err(SidecarClientError::InvalidUrl { .. })
        ));
        assert!(matches!(
            factory.client("not a url"),
            Err(SidecarClientError::InvalidUrl { .. })
        ));
    }

    #[tokio::test]
    async fn connection_refused_is_unreachable() {
        // Bind then drop to get a port nobody listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let client = SidecarClient::new(&format!("http://127.0.0.1:{port}"), None).unwrap();
        let err = client.ready().await.unwrap_err();
        assert!(err.is_unreachable(), "{err}");
        assert!(err.is_connect() && !err.is_timeout(), "{err}");
    }

    #[test]
    fn missing_ca_file_is_a_tls_error_naming_it() {
        let tls = SidecarClientTls {
            ca_file: "/nonexistent/ca.pem".into(),
            client_certificate: None,
            skip_server_verification: false,
        };
        let err = SidecarClientFactory::new(Some(&tls)).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
    }
}
