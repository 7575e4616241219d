//! The TLS material of a simulated run (`world.tls`): a fresh certificate authority, a
//! certificate for the cluster's pods (the sidecars serve https with it), stored in a
//! Secret the pods mount, and a client certificate for the operator, written to files the
//! operator's sidecar client reads. Generated at run time, so no key is ever checked in;
//! nothing of it appears in the result (only file hashes and URLs do), so a run stays
//! reproducible.

use std::collections::BTreeMap;
use std::path::Path;

use fdb_shared::sidecar::SidecarClientTls;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};

/// The Secret key of the pods' certificate chain.
pub const CERT_KEY: &str = "cert.pem";
/// The Secret key of the pods' private key.
pub const KEY_KEY: &str = "key.pem";
/// The Secret key of the CA certificate.
pub const CA_KEY: &str = "ca.pem";
/// The common name of the operator's client certificate (the Go operator's TLS manual
/// names it so in its peer verification rules).
pub const OPERATOR_COMMON_NAME: &str = "fdb-kubernetes-operator.foundationdb.example";

/// Why the TLS material could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// Key generation or signing failed.
    #[error("cannot generate the test certificates")]
    Generate(#[from] rcgen::Error),
    /// The operator's files could not be written.
    #[error("cannot write {path}")]
    Write {
        /// The file.
        path: String,
        /// The IO error.
        source: std::io::Error,
    },
}

/// A certificate and its key, as PEM.
#[derive(Clone)]
pub struct Leaf {
    /// The certificate.
    pub cert_pem: String,
    /// The private key.
    pub key_pem: String,
}

impl std::fmt::Debug for Leaf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leaf").finish_non_exhaustive()
    }
}

/// The run's certificate authority and the certificates it signed.
#[derive(Debug, Clone)]
pub struct SimulatedPki {
    /// The CA certificate.
    pub ca_pem: String,
    /// The pods' certificate (server and client use), common name
    /// `<cluster>.foundationdb.example`.
    pub pods: Leaf,
    /// The operator's client certificate ([`OPERATOR_COMMON_NAME`]).
    pub operator: Leaf,
}

impl SimulatedPki {
    /// A new CA with a certificate for the pods of `cluster` and one for the operator.
    pub fn generate(cluster: &str) -> Result<Self, TlsSetupError> {
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "Simulated FoundationDB CA");
        let ca_pem = ca_params.self_signed(&ca_key)?.pem();
        let issuer = Issuer::new(ca_params, ca_key);
        let issue =
            |cn: &str, usages: Vec<ExtendedKeyUsagePurpose>| -> Result<Leaf, TlsSetupError> {
                let key = KeyPair::generate()?;
                let mut params = CertificateParams::new(vec![cn.to_owned()])?;
                params.distinguished_name.push(DnType::CommonName, cn);
                params.extended_key_usages = usages;
                let cert = params.signed_by(&key, &issuer)?;
                Ok(Leaf {
                    cert_pem: cert.pem(),
                    key_pem: key.serialize_pem(),
                })
            };
        let pods = issue(
            &format!("{cluster}.foundationdb.example"),
            vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        )?;
        let operator = issue(
            OPERATOR_COMMON_NAME,
            vec![ExtendedKeyUsagePurpose::ClientAuth],
        )?;
        Ok(Self {
            ca_pem,
            pods,
            operator,
        })
    }

    /// The Secret `namespace/name` holding the pods' certificate, key and the CA.
    pub fn pod_secret(&self, namespace: &str, name: &str) -> Secret {
        let data = BTreeMap::from([
            (
                CERT_KEY.to_owned(),
                ByteString(self.pods.cert_pem.clone().into_bytes()),
            ),
            (
                KEY_KEY.to_owned(),
                ByteString(self.pods.key_pem.clone().into_bytes()),
            ),
            (
                CA_KEY.to_owned(),
                ByteString(self.ca_pem.clone().into_bytes()),
            ),
        ]);
        Secret {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(namespace.to_owned()),
                ..ObjectMeta::default()
            },
            data: Some(data),
            ..Secret::default()
        }
    }

    /// Writes the operator's certificate, key and CA under `dir`; returns the sidecar
    /// client settings naming them.
    pub fn write_operator_files(&self, dir: &Path) -> Result<SidecarClientTls, TlsSetupError> {
        let write = |name: &str, content: &str| {
            let path = dir.join(name);
            std::fs::create_dir_all(dir)
                .and_then(|()| std::fs::write(&path, content))
                .map_err(|source| TlsSetupError::Write {
                    path: path.display().to_string(),
                    source,
                })?;
            Ok::<_, TlsSetupError>(path)
        };
        let cert = write("operator.crt", &self.operator.cert_pem)?;
        let key = write("operator.key", &self.operator.key_pem)?;
        let ca = write("ca.pem", &self.ca_pem)?;
        Ok(SidecarClientTls {
            ca_file: ca,
            client_certificate: Some((cert, key)),
            skip_server_verification: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_and_the_operator_files_hold_the_generated_material() {
        let pki = SimulatedPki::generate("sample").unwrap();
        let secret = pki.pod_secret("default", "fdb-certs");
        let data = secret.data.unwrap();
        assert!(String::from_utf8_lossy(&data[CERT_KEY].0).contains("BEGIN CERTIFICATE"));
        assert!(String::from_utf8_lossy(&data[KEY_KEY].0).contains("PRIVATE KEY"));
        assert_eq!(data[CA_KEY].0, pki.ca_pem.as_bytes());
        let dir = tempfile::tempdir().unwrap();
        let tls = pki.write_operator_files(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&tls.ca_file).unwrap(), pki.ca_pem);
        // The operator's client accepts the files.
        assert!(fdb_shared::sidecar::SidecarClientFactory::new(Some(&tls)).is_ok());
    }
}
