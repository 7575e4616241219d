//! Secrets captured without their values (`fdb-operator snapshot` without
//! `--include-secret-values` puts a placeholder in each value, `operator/src/capture.rs`):
//! a run of such a capture mounts placeholder files where the cluster has certificates
//! and keys, so whatever needs them (TLS) cannot behave as in the cluster. Users are told
//! before the run, naming the Secrets.

use serde_json::Value;

use fdb_operator::capture::{SECRET_PLACEHOLDER, SECRET_PLACEHOLDER_BASE64};

/// The Secrets (`namespace/name`) of `objects` whose `data` or `stringData` hold the
/// capture's placeholder.
pub fn placeholder_secrets(objects: &[Value]) -> Vec<String> {
    objects
        .iter()
        .filter(|object| object.get("kind").and_then(Value::as_str) == Some("Secret"))
        .filter(|secret| {
            let holds = |field: &str, placeholder: &str| {
                secret
                    .get(field)
                    .and_then(Value::as_object)
                    .is_some_and(|values| values.values().any(|v| v == placeholder))
            };
            holds("data", SECRET_PLACEHOLDER_BASE64) || holds("stringData", SECRET_PLACEHOLDER)
        })
        .map(|secret| {
            let text = |pointer: &str| secret.pointer(pointer).and_then(Value::as_str);
            format!(
                "{}/{}",
                text("/metadata/namespace").unwrap_or("default"),
                text("/metadata/name").unwrap_or_default()
            )
        })
        .collect()
}

/// The warning for a capture whose Secrets hold placeholders, if any do.
pub fn placeholder_warning(objects: &[Value]) -> Option<String> {
    let secrets = placeholder_secrets(objects);
    if secrets.is_empty() {
        return None;
    }
    Some(format!(
        "the capture's Secret(s) {} hold placeholders, not values (captured without \
         --include-secret-values): the pods mount placeholder files where the cluster has \
         its certificates and keys, so what needs them (TLS between the operator and the \
         sidecars, or between processes) cannot work as in the cluster and its outcome says \
         nothing about the cluster; capture with --include-secret-values to rehearse it",
        secrets.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_holding_placeholders_are_named() {
        let objects = [
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "fdb-tls", "namespace": "db"},
                   "data": {"cert.pem": SECRET_PLACEHOLDER_BASE64}}),
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "kept", "namespace": "db"},
                   "data": {"cert.pem": "LS0tLS1CRUdJTg=="}}),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "typed"},
                   "stringData": {"key": SECRET_PLACEHOLDER}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                   "data": {"x": SECRET_PLACEHOLDER}}),
        ];
        assert_eq!(
            placeholder_secrets(&objects),
            ["db/fdb-tls", "default/typed"]
        );
        let warning = placeholder_warning(&objects).unwrap();
        assert!(
            warning.contains("db/fdb-tls, default/typed")
                && warning.contains("--include-secret-values"),
            "{warning}"
        );
        assert_eq!(placeholder_warning(&objects[1..2]), None);
    }
}
