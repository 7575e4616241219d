//! Finding fields of a manifest that the typed API does not know.
//!
//! The API server silently prunes fields that are not in the CRD schema, and serde
//! silently drops them too; a dropped field is a silently ignored user setting. This
//! module compares the input document with what the typed object serializes back to and
//! reports every input path that did not survive, so `explain` (and the operator, as
//! events) can warn about it.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::yaml_input::PathSegment;

/// The typed object could not be decoded from the document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct DecodeError {
    /// Path of the offending field (`spec.processCounts.storage`), `.` for the root.
    pub path: String,
    /// The same path, step by step (empty for the root), to find the field's line in
    /// the YAML it came from ([`crate::yaml_input::line_of`]).
    pub segments: Vec<PathSegment>,
    /// What is wrong with it.
    pub message: String,
}

fn segments(path: &serde_path_to_error::Path) -> Vec<PathSegment> {
    use serde_path_to_error::Segment;
    path.iter()
        .filter_map(|segment| match segment {
            Segment::Seq { index } => Some(PathSegment::Index(*index)),
            Segment::Map { key } => Some(PathSegment::Key(key.clone())),
            Segment::Enum { variant } => Some(PathSegment::Key(variant.clone())),
            Segment::Unknown => None,
        })
        .collect()
}

/// The warning text for an unknown field.
pub fn unknown_field_warning(path: &str) -> String {
    format!("unknown field {path}: ignored by this operator")
}

/// Paths present in `input` but missing from `known` (the re-serialized typed object),
/// in document order: `spec.fooBar`, `spec.processes.general.podTemplate.spec.foo`,
/// `spec.coordinatorSelection[1].bar`. Empty values (`null`, `[]`, `{}`) that were left
/// out are not reported: they carry no setting.
pub fn unknown_field_paths(input: &Value, known: &Value) -> Vec<String> {
    let mut out = Vec::new();
    compare(input, Some(known), "", &mut out);
    out
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.iter().all(is_empty),
        Value::Object(map) => map.values().all(is_empty),
        _ => false,
    }
}

fn compare(input: &Value, known: Option<&Value>, path: &str, out: &mut Vec<String>) {
    match (input, known) {
        (Value::Object(fields), Some(Value::Object(known_fields))) => {
            for (key, value) in fields {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match known_fields.get(key) {
                    Some(known_value) => compare(value, Some(known_value), &child, out),
                    None if is_empty(value) => {}
                    None => out.push(child),
                }
            }
        }
        (Value::Array(items), Some(Value::Array(known_items))) => {
            for (index, item) in items.iter().enumerate() {
                compare(
                    item,
                    known_items.get(index),
                    &format!("{path}[{index}]"),
                    out,
                );
            }
        }
        // An object or array that became something else entirely (or vanished) is
        // reported as a whole unless it was empty.
        (value, None) if !is_empty(value) => out.push(path.to_owned()),
        _ => {}
    }
}

/// Decodes a typed object from a JSON document and lists the input's unknown fields as
/// warnings (`unknown field spec.fooBar: ignored by this operator`).
pub fn decode_reporting_unknown_fields<T>(input: &Value) -> Result<(T, Vec<String>), DecodeError>
where
    T: DeserializeOwned + Serialize,
{
    let typed: T = serde_path_to_error::deserialize(input).map_err(|error| DecodeError {
        path: error.path().to_string(),
        segments: segments(error.path()),
        message: error.inner().to_string(),
    })?;
    let known = serde_json::to_value(&typed).map_err(|error| DecodeError {
        path: ".".to_owned(),
        segments: Vec::new(),
        message: format!("cannot serialize the decoded object again: {error}"),
    })?;
    let warnings = unknown_field_paths(input, &known)
        .iter()
        .map(|path| unknown_field_warning(path))
        .collect();
    Ok((typed, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::FoundationDBCluster;
    use serde_json::json;

    #[test]
    fn reports_unknown_paths_at_every_depth_but_not_empty_values() {
        let input = json!({
            "apiVersion": "apps.foundationdb.org/v1beta2",
            "kind": "FoundationDBCluster",
            "metadata": {"name": "sample", "creationTimestamp": null},
            "spec": {
                "version": "7.1.57",
                "fooBar": 3,
                "emptyThing": {},
                "routing": {"useDNSInClusterFile": false, "useDnsInClusterFile": true},
                "coordinatorSelection": [{"processClass": "log", "priority": 1, "weight": 2}],
                "processes": {"general": {"podTemplate": {"spec": {"containers": [], "bogus": "x"}}}}
            }
        });
        let (cluster, warnings): (FoundationDBCluster, _) =
            decode_reporting_unknown_fields(&input).unwrap();
        assert_eq!(cluster.spec.version, "7.1.57");
        assert_eq!(
            warnings,
            [
                "unknown field spec.coordinatorSelection[0].weight: ignored by this operator",
                "unknown field spec.fooBar: ignored by this operator",
                "unknown field spec.processes.general.podTemplate.spec.bogus: ignored by this operator",
                "unknown field spec.routing.useDnsInClusterFile: ignored by this operator",
            ]
        );
    }

    #[test]
    fn decode_errors_name_the_field() {
        let input = json!({"spec": {"processCounts": {"storage": "many"}}});
        let error = decode_reporting_unknown_fields::<FoundationDBCluster>(&input).unwrap_err();
        assert_eq!(error.path, "spec.processCounts.storage");
        assert_eq!(
            error.segments,
            [
                PathSegment::Key("spec".into()),
                PathSegment::Key("processCounts".into()),
                PathSegment::Key("storage".into())
            ]
        );
        assert!(error.message.contains("invalid type"), "{}", error.message);
    }
}
