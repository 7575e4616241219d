//! The CustomResourceDefinitions of the three kinds, generated from the Rust types (the
//! single source of truth), and their YAML form as committed in `crds/`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::api::backup::FoundationDBBackup;
use crate::api::cluster::FoundationDBCluster;
use crate::api::restore::FoundationDBRestore;

/// The CRD YAML could not be rendered.
#[derive(Debug, thiserror::Error)]
#[error("cannot render the CustomResourceDefinition of {kind} as YAML")]
pub struct CrdRenderError {
    /// The kind whose CRD failed.
    pub kind: String,
    /// The serializer's error.
    #[source]
    pub source: serde_yaml_ng::Error,
}

/// The three CRDs: FoundationDBCluster, FoundationDBBackup, FoundationDBRestore.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        FoundationDBCluster::crd(),
        FoundationDBBackup::crd(),
        FoundationDBRestore::crd(),
    ]
}

/// The three CRDs as one YAML stream (documents separated by `---`), exactly what
/// `fdb-operator crds` prints and `crds/foundationdb-crds.yaml` holds.
pub fn crds_yaml() -> Result<String, CrdRenderError> {
    let mut out = String::new();
    for crd in crds() {
        let yaml = serde_yaml_ng::to_string(&crd).map_err(|source| CrdRenderError {
            kind: crd.spec.names.kind.clone(),
            source,
        })?;
        out.push_str("---\n");
        out.push_str(&yaml);
    }
    Ok(out)
}
