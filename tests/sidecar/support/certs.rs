//! Test PKI with rcgen: CAs, server and client certificates, and rustls client configs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A certificate authority.
pub struct Ca {
    /// PEM of the CA certificate.
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// A leaf certificate and its key, as PEM.
pub struct Leaf {
    /// Certificate PEM.
    pub cert_pem: String,
    /// Key PEM.
    pub key_pem: String,
}

impl Ca {
    /// A self-signed CA named `cn`.
    pub fn new(cn: &str) -> Self {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, cn);
        params
            .distinguished_name
            .push(DnType::OrganizationName, "FDB Test");
        let cert = params.self_signed(&key).expect("self-sign");
        Self {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A leaf certificate with common name `cn` and DNS names `dns`, for server or
    /// client use.
    pub fn issue(&self, cn: &str, dns: &[&str], server: bool) -> Leaf {
        let key = KeyPair::generate().expect("key");
        let mut params =
            CertificateParams::new(dns.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .expect("params");
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![if server {
            ExtendedKeyUsagePurpose::ServerAuth
        } else {
            ExtendedKeyUsagePurpose::ClientAuth
        }];
        let cert = params.signed_by(&key, &self.issuer).expect("sign");
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// A CA certificate whose subject and issuer look like those of [`Ca::new`] CAs named
/// `subject_cn` and `issuer_cn`, but signed by a fresh unrelated key: a forgery that
/// merely *names* a trusted root as its issuer.
pub fn forged_ca_pem(subject_cn: &str, issuer_cn: &str) -> String {
    let ca_params = |cn: &str| {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, cn);
        params
            .distinguished_name
            .push(DnType::OrganizationName, "FDB Test");
        params
    };
    let forger = Issuer::new(ca_params(issuer_cn), KeyPair::generate().expect("key"));
    let key = KeyPair::generate().expect("key");
    ca_params(subject_cn)
        .signed_by(&key, &forger)
        .expect("sign")
        .pem()
}

/// Files of a TLS sidecar: server cert/key (no IP SAN) and CA.
pub struct TlsFiles {
    /// Server certificate file.
    pub cert: PathBuf,
    /// Server key file.
    pub key: PathBuf,
    /// CA file.
    pub ca: PathBuf,
}

impl TlsFiles {
    /// Writes a server certificate for DNS name `sidecar` signed by `ca` into `dir`.
    pub fn write(dir: &Path, ca: &Ca, cn: &str) -> Self {
        let server = ca.issue(cn, &["sidecar"], true);
        let files = Self {
            cert: dir.join("tls.crt"),
            key: dir.join("tls.key"),
            ca: dir.join("ca.crt"),
        };
        std::fs::write(&files.cert, server.cert_pem).expect("write cert");
        std::fs::write(&files.key, server.key_pem).expect("write key");
        std::fs::write(&files.ca, &ca.pem).expect("write ca");
        files
    }

    /// The sidecar flags for these files.
    pub fn args(&self, rules: Option<&str>) -> Vec<String> {
        let mut args = vec![
            "--tls".to_owned(),
            "--tls-certificate-file".to_owned(),
            self.cert.display().to_string(),
            "--tls-key-file".to_owned(),
            self.key.display().to_string(),
            "--tls-ca-file".to_owned(),
            self.ca.display().to_string(),
        ];
        if let Some(rules) = rules {
            args.extend(["--tls-verify-peers".to_owned(), rules.to_owned()]);
        }
        args
    }
}

/// A rustls client config trusting `ca_pem`, presenting `client` if given.
pub fn client_config(ca_pem: &str, client: Option<&Leaf>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("ca pem")).expect("add root");
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some(leaf) => {
            let chain = CertificateDer::pem_slice_iter(leaf.cert_pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .expect("chain");
            let key = PrivateKeyDer::from_pem_slice(leaf.key_pem.as_bytes()).expect("key");
            builder
                .with_client_auth_cert(chain, key)
                .expect("client auth")
        }
    };
    Arc::new(config)
}
