//! Stable hashes of desired objects: SHA-256 over canonical JSON (keys sorted at every
//! level), so the same desired object always hashes the same, across passes and operator
//! restarts.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The canonical JSON text of a value: object keys sorted at every level, no whitespace.
pub(crate) fn canonical_json<T: Serialize>(value: &T) -> String {
    // k8s-openapi types only have string map keys, so serializing them to a JSON value
    // cannot fail; `Null` is an unreachable fallback, not a silent default.
    let value = serde_json::to_value(value).unwrap_or(Value::Null);
    let mut out = String::new();
    write_canonical(&value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (key, value)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The hash written to `foundationdb.org/last-applied-spec`: SHA-256 of the canonical
/// JSON of the pod's `spec`.
///
/// Metadata is left out on purpose: labels and annotations are updated in place
/// (UpdateLabels, IncorrectPodMetadata) and must not cause a pod to be recreated. Every
/// option that changes the processes (images, args, env, fault-domain values, affinity)
/// lives in the spec.
pub(crate) fn pod_spec_hash(pod: &Pod) -> String {
    sha256_hex(canonical_json(&pod.spec).as_bytes())
}

/// The hash written to a PVC's `foundationdb.org/last-applied-spec`: SHA-256 of the
/// canonical JSON of its `spec` (any change needs a new process group).
pub(crate) fn pvc_spec_hash(pvc: &PersistentVolumeClaim) -> String {
    sha256_hex(canonical_json(&pvc.spec).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let value: Value =
            serde_json::from_str(r#"{"b": {"z": 1, "a": [ {"y": 2, "x": "s"} ]}, "a": null}"#)
                .unwrap();
        assert_eq!(
            canonical_json(&value),
            r#"{"a":null,"b":{"a":[{"x":"s","y":2}],"z":1}}"#
        );
    }

    #[test]
    fn sha256_of_known_input() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
