//! The kubeconfig of a served world: one cluster, one context, no credentials.

use std::net::SocketAddr;
use std::path::Path;

use serde_json::json;

use super::ServeError;

/// The name of the cluster, user and context in the kubeconfig.
pub const CONTEXT_NAME: &str = "fdb-simulation";

/// The kubeconfig document (YAML) for an API served on `address`, with `namespace` as the
/// context's namespace.
pub fn render(address: SocketAddr, namespace: &str) -> String {
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT_NAME, "cluster": {"server": format!("http://{address}")}}],
        "users": [{"name": CONTEXT_NAME, "user": {}}],
        "contexts": [{"name": CONTEXT_NAME, "context": {
            "cluster": CONTEXT_NAME, "user": CONTEXT_NAME, "namespace": namespace}}],
        "current-context": CONTEXT_NAME,
        "preferences": {},
    });
    // A JSON document is valid YAML; serde_yaml_ng renders it the way people expect.
    serde_yaml_ng::to_string(&config).unwrap_or_else(|_| config.to_string())
}

/// Writes the kubeconfig to `path` (through a temporary file and a rename, so a client
/// waiting for the file never reads half of it).
pub fn write(path: &Path, address: SocketAddr, namespace: &str) -> Result<(), ServeError> {
    let error = |source| ServeError::Kubeconfig {
        path: path.to_owned(),
        source,
    };
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = std::path::PathBuf::from(partial);
    std::fs::write(&partial, render(address, namespace)).map_err(error)?;
    std::fs::rename(&partial, path).map_err(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubeconfig_points_at_the_served_address() {
        let yaml = render("127.0.0.1:8001".parse().unwrap(), "db");
        let value: serde_json::Value = serde_yaml_ng::from_str(&yaml).unwrap();
        assert_eq!(
            value["clusters"][0]["cluster"]["server"],
            "http://127.0.0.1:8001"
        );
        assert_eq!(value["current-context"], CONTEXT_NAME);
        assert_eq!(value["contexts"][0]["context"]["namespace"], "db");
    }
}
