//! Secrets captured without their values (`fdb-operator snapshot` without
//! `--include-secret-values` puts a placeholder in each value, `operator/src/capture.rs`).
//! A TLS Secret's placeholders are not the cluster's certificates: judging them would show
//! every sidecar unreachable and the operator replacing pods for it, which says nothing
//! about the cluster. The run puts certificates of its own in their place (a CA, the
//! pods' certificate and key, and the operator's client certificate, `crate::tls`), so
//! TLS works as in a cluster whose certificates are valid. Users are told before the run,
//! naming the Secrets.

use serde_json::Value;

use crate::tls::SimulatedPki;
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
    let tls: Vec<String> = objects
        .iter()
        .filter(|object| is_tls_placeholder_secret(object))
        .map(secret_name)
        .collect();
    let others: Vec<&String> = secrets.iter().filter(|s| !tls.contains(s)).collect();
    let mut parts = Vec::new();
    if !tls.is_empty() {
        parts.push(format!(
            "the capture's TLS Secret(s) {} hold placeholders, not certificates (captured \
             without --include-secret-values): the run puts certificates generated for it \
             in their place (a CA, the pods' certificate and key, and the operator's client \
             certificate, CN {}), so TLS works as with valid certificates and the outcome \
             says nothing about the cluster's own certificates",
            tls.join(", "),
            crate::tls::OPERATOR_COMMON_NAME
        ));
    }
    if !others.is_empty() {
        let names: Vec<&str> = others.iter().map(|s| s.as_str()).collect();
        parts.push(format!(
            "the capture's Secret(s) {} hold placeholders, not values (captured without \
             --include-secret-values): the pods mount placeholder files where the cluster \
             has its values, so what needs them cannot work as in the cluster and its \
             outcome says nothing about the cluster",
            names.join(", ")
        ));
    }
    Some(format!(
        "{}; capture with --include-secret-values to rehearse with the cluster's own",
        parts.join("; ")
    ))
}

/// `namespace/name` of a captured object.
fn secret_name(secret: &Value) -> String {
    let text = |pointer: &str| secret.pointer(pointer).and_then(Value::as_str);
    format!(
        "{}/{}",
        text("/metadata/namespace").unwrap_or("default"),
        text("/metadata/name").unwrap_or_default()
    )
}

/// Whether `object` is a Secret of TLS material holding placeholders: of type
/// `kubernetes.io/tls`, or with a placeholder under a key named like a PEM file
/// (`*.pem`, `*.crt`, `*.key`).
pub fn is_tls_placeholder_secret(object: &Value) -> bool {
    if object.get("kind").and_then(Value::as_str) != Some("Secret") {
        return false;
    }
    let typed_tls = object.get("type").and_then(Value::as_str) == Some("kubernetes.io/tls");
    placeholder_keys(object)
        .iter()
        .any(|key| typed_tls || [".pem", ".crt", ".key"].iter().any(|e| key.ends_with(e)))
}

/// The keys of a Secret whose values are the capture's placeholder.
fn placeholder_keys(secret: &Value) -> Vec<String> {
    let mut keys = Vec::new();
    for (field, placeholder) in [
        ("data", SECRET_PLACEHOLDER_BASE64),
        ("stringData", SECRET_PLACEHOLDER),
    ] {
        if let Some(values) = secret.get(field).and_then(Value::as_object) {
            keys.extend(
                values
                    .iter()
                    .filter(|(_, v)| *v == placeholder)
                    .map(|(k, _)| k.clone()),
            );
        }
    }
    keys
}

/// Puts `pki`'s material in place of the placeholders of every TLS Secret of `objects`
/// (chosen by key name: a CA key `ca.*`/`*ca.crt`/`cacert*`, a private key `*key*`, else
/// the pods' certificate); returns the Secrets changed (`namespace/name`).
pub fn fill_tls_placeholders(objects: &mut [Value], pki: &SimulatedPki) -> Vec<String> {
    let mut filled = Vec::new();
    for object in objects.iter_mut().filter(|o| is_tls_placeholder_secret(o)) {
        for (field, placeholder, base64) in [
            ("data", SECRET_PLACEHOLDER_BASE64, true),
            ("stringData", SECRET_PLACEHOLDER, false),
        ] {
            let Some(values) = object.get_mut(field).and_then(Value::as_object_mut) else {
                continue;
            };
            for (key, value) in values.iter_mut().filter(|(_, v)| **v == placeholder) {
                let pem = material_for(key, pki);
                *value = if base64 {
                    // A Secret's `data` is base64, as k8s-openapi writes a ByteString.
                    serde_json::to_value(k8s_openapi::ByteString(pem.as_bytes().to_vec()))
                        .unwrap_or(Value::Null)
                } else {
                    Value::from(pem)
                };
            }
        }
        filled.push(secret_name(object));
    }
    filled
}

/// The PEM a TLS Secret's key holds, by the key's name.
fn material_for<'a>(key: &str, pki: &'a SimulatedPki) -> &'a str {
    let lower = key.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let is_ca = words
        .iter()
        .any(|w| *w == "ca" || w.starts_with("cacert") || *w == "cabundle");
    if is_ca {
        &pki.ca_pem
    } else if words.iter().any(|w| w.ends_with("key")) {
        &pki.pods.key_pem
    } else {
        &pki.pods.cert_pem
    }
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
            warning.contains("TLS Secret(s) db/fdb-tls hold placeholders")
                && warning.contains("Secret(s) default/typed hold placeholders")
                && warning.contains("--include-secret-values"),
            "{warning}"
        );
        assert_eq!(placeholder_warning(&objects[1..2]), None);
    }

    #[test]
    fn tls_placeholders_get_the_runs_material_by_key_name() {
        let pki = SimulatedPki::generate("sample").unwrap();
        let mut objects = vec![
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "fdb-certs", "namespace": "db"},
                   "data": {"cert.pem": SECRET_PLACEHOLDER_BASE64,
                            "key.pem": SECRET_PLACEHOLDER_BASE64,
                            "ca.pem": SECRET_PLACEHOLDER_BASE64}}),
            json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                   "metadata": {"name": "issued", "namespace": "db"},
                   "stringData": {"tls.crt": SECRET_PLACEHOLDER, "tls.key": SECRET_PLACEHOLDER,
                                  "ca.crt": SECRET_PLACEHOLDER}}),
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "backup-credentials", "namespace": "db"},
                   "data": {"credentials": SECRET_PLACEHOLDER_BASE64}}),
        ];
        let filled = fill_tls_placeholders(&mut objects, &pki);
        assert_eq!(filled, ["db/fdb-certs", "db/issued"]);
        let data = |i: usize, key: &str| {
            let secret: k8s_openapi::api::core::v1::Secret =
                serde_json::from_value(objects[i].clone()).unwrap();
            String::from_utf8(secret.data.unwrap()[key].0.clone()).unwrap()
        };
        assert_eq!(data(0, "cert.pem"), pki.pods.cert_pem);
        assert_eq!(data(0, "key.pem"), pki.pods.key_pem);
        assert_eq!(data(0, "ca.pem"), pki.ca_pem);
        assert_eq!(
            objects[1]["stringData"]["tls.key"],
            pki.pods.key_pem.as_str()
        );
        assert_eq!(objects[1]["stringData"]["ca.crt"], pki.ca_pem.as_str());
        assert_eq!(
            objects[1]["stringData"]["tls.crt"],
            pki.pods.cert_pem.as_str()
        );
        // Not TLS material: its placeholder stays (and the warning names it).
        assert_eq!(objects[2]["data"]["credentials"], SECRET_PLACEHOLDER_BASE64);
    }
}
