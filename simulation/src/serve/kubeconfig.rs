//! The kubeconfigs of a served world: the users' (one cluster, one context, no
//! credentials) and, with `--external-operator`, the operator's (the address of the
//! listener whose requests are the operator's).

use std::net::SocketAddr;
use std::path::Path;

use serde_json::json;

use super::ServeError;

/// The name of the cluster, user and context in the kubeconfig.
pub const CONTEXT_NAME: &str = "fdb-simulation";

/// The user and context name of the external operator's kubeconfig.
pub const OPERATOR_CONTEXT_NAME: &str = "fdb-operator";

/// The kubeconfig document (YAML) for an API served on `address`, with `namespace` as the
/// context's namespace.
pub fn render(address: SocketAddr, namespace: &str) -> String {
    render_as(address, namespace, CONTEXT_NAME)
}

/// The kubeconfig document of the external operator, whose listener is `address`.
pub fn render_operator(address: SocketAddr, namespace: &str) -> String {
    render_as(address, namespace, OPERATOR_CONTEXT_NAME)
}

fn render_as(address: SocketAddr, namespace: &str, user: &str) -> String {
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT_NAME, "cluster": {"server": format!("http://{address}")}}],
        "users": [{"name": user, "user": {}}],
        "contexts": [{"name": user, "context": {
            "cluster": CONTEXT_NAME, "user": user, "namespace": namespace}}],
        "current-context": user,
        "preferences": {},
    });
    // A JSON document is valid YAML; serde_yaml_ng renders it the way people expect.
    serde_yaml_ng::to_string(&config).unwrap_or_else(|_| config.to_string())
}

/// Writes the kubeconfig to `path` (through a temporary file and a rename, so a client
/// waiting for the file never reads half of it).
pub fn write(path: &Path, address: SocketAddr, namespace: &str) -> Result<(), ServeError> {
    write_document(path, &render(address, namespace))
}

/// Writes the external operator's kubeconfig (its listener is `address`) to `path`.
pub fn write_operator(path: &Path, address: SocketAddr, namespace: &str) -> Result<(), ServeError> {
    write_document(path, &render_operator(address, namespace))
}

fn write_document(path: &Path, document: &str) -> Result<(), ServeError> {
    let error = |source| ServeError::Kubeconfig {
        path: path.to_owned(),
        source,
    };
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = std::path::PathBuf::from(partial);
    // A file left by an earlier run (or planted) is replaced, never written through.
    match std::fs::remove_file(&partial) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(error(e)),
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&partial)
        .map_err(error)?;
    std::io::Write::write_all(&mut file, document.as_bytes()).map_err(error)?;
    drop(file);
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
        assert_eq!(value["users"][0]["user"], serde_json::json!({}));
    }

    #[test]
    fn the_operators_kubeconfig_points_at_its_own_listener() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("op");
        write_operator(&path, "127.0.0.1:8002".parse().unwrap(), "db").unwrap();
        let value: serde_json::Value =
            serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(value["current-context"], OPERATOR_CONTEXT_NAME);
        assert_eq!(
            value["clusters"][0]["cluster"]["server"],
            "http://127.0.0.1:8002"
        );
        // Written again (a restarted world): replaced, not refused.
        write_operator(&path, "127.0.0.1:8003".parse().unwrap(), "db").unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().contains("8003"));
    }
}
