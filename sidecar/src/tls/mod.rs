//! TLS for the sidecar server: certificate loading and reloading, and client approval.
//!
//! The handshake accepts clients without a certificate (so that `GET /ready` works for
//! probes) and clients with any certificate whose handshake signature is valid; whether
//! the presented chain is trusted by the CA and satisfies the peer verification rules is
//! decided right after the handshake and attached to every request of the connection as
//! a [`ClientApproval`]. Unapproved clients get 401 on every path but `/ready`.

pub mod identity;
/// The rules' parser and matcher live in `fdb-shared`, so that spec validation refuses
/// the rules this sidecar would refuse.
pub use fdb_shared::sidecar::peer_rules as rules;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{
    DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, UnixTime};

use crate::config::TlsSettings;
use rules::PeerRules;

/// Why certificates could not be loaded.
#[derive(Debug, Clone, thiserror::Error)]
#[error("TLS setup failed for {file}: {reason}")]
pub struct TlsError {
    /// The file at fault.
    pub file: PathBuf,
    /// What went wrong.
    pub reason: String,
}

fn tls_error(file: &Path, reason: impl fmt::Display) -> TlsError {
    TlsError {
        file: file.to_owned(),
        reason: reason.to_string(),
    }
}

/// Whether the client of a connection may use the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientApproval {
    /// The server runs without TLS: every client is allowed.
    NotTls,
    /// A certificate chaining to the CA and satisfying the rules.
    Approved {
        /// Subject of the client certificate.
        subject: String,
    },
    /// No client certificate was presented.
    NoCertificate,
    /// A certificate was presented but is not trusted or does not satisfy the rules.
    Rejected {
        /// Why (logged, never sent to the client).
        reason: String,
    },
}

impl ClientApproval {
    /// Whether requests other than `/ready` may be served.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Self::NotTls | Self::Approved { .. })
    }
}

/// One loaded generation of the certificate files.
struct LoadedTls {
    server_config: Arc<ServerConfig>,
    /// Trust anchors of the CA file; `roots.roots[i]` was made from `trusted[i]`.
    roots: Arc<RootCertStore>,
    trusted: Vec<CertificateDer<'static>>,
    algorithms: WebPkiSupportedAlgorithms,
}

/// The TLS state of a server: settings and the currently loaded certificates.
pub struct TlsState {
    settings: TlsSettings,
    current: RwLock<Arc<LoadedTls>>,
}

impl fmt::Debug for TlsState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsState")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| tls_error(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| tls_error(path, e))?;
    if certs.is_empty() {
        return Err(tls_error(path, "no PEM certificate found"));
    }
    Ok(certs)
}

fn load(settings: &TlsSettings) -> Result<LoadedTls, TlsError> {
    let provider = provider();
    let chain = read_certs(&settings.certificate_file)?;
    let key = PrivateKeyDer::from_pem_file(&settings.key_file)
        .map_err(|e| tls_error(&settings.key_file, e))?;
    let trusted = read_certs(&settings.ca_file)?;
    let mut roots = RootCertStore::empty();
    for cert in &trusted {
        roots
            .add(cert.clone())
            .map_err(|e| tls_error(&settings.ca_file, e))?;
    }
    if roots.roots.len() != trusted.len() {
        return Err(tls_error(
            &settings.ca_file,
            "not every certificate could be used as a trust anchor",
        ));
    }
    let algorithms = provider.signature_verification_algorithms;
    let handshake_verifier = Arc::new(AnyPresentedCertificate {
        algorithms,
        hints: roots.subjects(),
    });
    let mut server_config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error(&settings.certificate_file, e))?
        .with_client_cert_verifier(handshake_verifier)
        .with_single_cert(chain, key)
        .map_err(|e| tls_error(&settings.key_file, e))?;
    server_config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(LoadedTls {
        server_config: Arc::new(server_config),
        roots: Arc::new(roots),
        trusted,
        algorithms,
    })
}

impl TlsState {
    /// Loads the certificate, key and CA files.
    pub fn load(settings: TlsSettings) -> Result<Self, TlsError> {
        let loaded = load(&settings)?;
        Ok(Self {
            settings,
            current: RwLock::new(Arc::new(loaded)),
        })
    }

    /// The files to watch for changes.
    pub fn watched_files(&self) -> [&Path; 3] {
        [
            &self.settings.certificate_file,
            &self.settings.key_file,
            &self.settings.ca_file,
        ]
    }

    /// Re-reads the files; on error the previous certificates stay in use.
    pub fn reload(&self) -> Result<(), TlsError> {
        let loaded = Arc::new(load(&self.settings)?);
        match self.current.write() {
            Ok(mut current) => *current = loaded,
            Err(poisoned) => *poisoned.into_inner() = loaded,
        }
        Ok(())
    }

    fn current(&self) -> Arc<LoadedTls> {
        match self.current.read() {
            Ok(current) => current.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The server configuration to use for a new connection.
    pub fn server_config(&self) -> Arc<ServerConfig> {
        self.current().server_config.clone()
    }

    /// Decides whether the client that presented `peer_certificates` is approved.
    pub fn approve(&self, peer_certificates: Option<&[CertificateDer<'static>]>) -> ClientApproval {
        let Some((leaf, intermediates)) = peer_certificates.and_then(<[_]>::split_first) else {
            return ClientApproval::NoCertificate;
        };
        let loaded = self.current();
        let root = match verified_root(&loaded, leaf, intermediates) {
            Ok(root) => root,
            Err(reason) => {
                return ClientApproval::Rejected {
                    reason: format!(
                        "certificate {} not trusted: {reason}",
                        identity::describe_subject(leaf)
                    ),
                };
            }
        };
        let rules: &PeerRules = &self.settings.verify_peers;
        match identity::peer_identity(leaf, root) {
            Ok(peer) if rules.matches(&peer) => ClientApproval::Approved {
                subject: identity::describe_subject(leaf),
            },
            Ok(_) => ClientApproval::Rejected {
                reason: format!(
                    "certificate {} does not match the peer verification rules",
                    identity::describe_subject(leaf)
                ),
            },
            Err(e) => ClientApproval::Rejected {
                reason: e.to_string(),
            },
        }
    }
}

/// Verifies `leaf` + `intermediates` against the CA file for client authentication and
/// returns the CA-file certificate that anchors the verified path (the `R.` scope of the
/// peer rules is about that certificate, never one the client presented).
fn verified_root<'a>(
    loaded: &'a LoadedTls,
    leaf: &CertificateDer<'_>,
    intermediates: &[CertificateDer<'_>],
) -> Result<&'a CertificateDer<'static>, String> {
    let end_entity = webpki::EndEntityCert::try_from(leaf).map_err(|e| e.to_string())?;
    let path = end_entity
        .verify_for_usage(
            loaded.algorithms.all,
            &loaded.roots.roots,
            intermediates,
            UnixTime::now(),
            webpki::KeyUsage::client_auth(),
            None,
            None,
        )
        .map_err(|e| e.to_string())?;
    let anchor = path.anchor();
    loaded
        .roots
        .roots
        .iter()
        .position(|candidate| std::ptr::eq(candidate, anchor))
        .and_then(|index| loaded.trusted.get(index))
        .ok_or_else(|| "verified trust anchor is not in the CA file".to_owned())
}

/// Handshake-time verifier: offers client authentication without requiring it, and
/// accepts any presented certificate whose handshake signature is valid (proof of key
/// possession). Trust and rules are checked after the handshake by [`TlsState::approve`].
#[derive(Debug)]
struct AnyPresentedCertificate {
    algorithms: WebPkiSupportedAlgorithms,
    hints: Vec<DistinguishedName>,
}

impl ClientCertVerifier for AnyPresentedCertificate {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The crypto provider of all TLS in the sidecar (ring).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}
