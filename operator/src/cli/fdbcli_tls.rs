//! The `--tls-*` flags of the commands that run fdbcli against a TLS cluster (`run`,
//! `snapshot`): one definition, flattened into each command's arguments, so the two
//! cannot drift apart.

use std::path::PathBuf;

use clap::Args;

use crate::fdb::TlsFiles;

/// The TLS files fdbcli uses with a TLS cluster.
#[derive(Debug, Clone, Default, Args)]
pub struct FdbcliTlsArgs {
    /// Certificate (PEM chain) presented to TLS clusters: fdbcli's
    /// --tls_certificate_file (for `run`, also the client certificate for sidecars).
    #[arg(long, env = "FDB_TLS_CERTIFICATE_FILE")]
    pub tls_certificate_file: Option<PathBuf>,
    /// Key of --tls-certificate-file.
    #[arg(long, env = "FDB_TLS_KEY_FILE")]
    pub tls_key_file: Option<PathBuf>,
    /// CA (PEM) that signs the clusters' certificates: fdbcli's --tls_ca_file (for
    /// `run`, also the CA sidecars are verified against).
    #[arg(long, env = "FDB_TLS_CA_FILE")]
    pub tls_ca_file: Option<PathBuf>,
    /// Peer verification rules fdbcli applies to the cluster's processes
    /// (--tls_verify_peers).
    #[arg(long, env = "FDB_TLS_VERIFY_PEERS")]
    pub tls_verify_peers: Option<String>,
}

impl FdbcliTlsArgs {
    /// The files fdbcli uses with a TLS cluster: all three of certificate, key and CA,
    /// or none.
    pub fn files(&self) -> Result<Option<TlsFiles>, String> {
        TlsFiles::from_options(
            self.tls_certificate_file.as_ref(),
            self.tls_key_file.as_ref(),
            self.tls_ca_file.as_ref(),
            self.tls_verify_peers.as_ref(),
        )
    }
}
