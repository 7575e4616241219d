//! Pruning, as apiextensions-apiserver's `pkg/apiserver/schema/pruning/algorithm.go`
//! does it on every write: fields the schema does not specify are dropped, unless a level
//! says `x-kubernetes-preserve-unknown-fields` (then only its known fields are pruned
//! further). The root (and an `x-kubernetes-embedded-resource`) keeps `apiVersion`,
//! `kind` and `metadata`; the root's `metadata` keeps only ObjectMeta's fields, as the
//! real server decodes it into ObjectMeta (`pkg/apiserver/schema/objectmeta`).

use serde_json::{Map, Value};

use super::structural::Schema;

/// The fields of `metav1.ObjectMeta`.
const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

const TYPE_AND_OBJECT_META: &[&str] = &["apiVersion", "kind", "metadata"];

/// The fields of `original` that pruning dropped (`pruned` is the pruned copy), as
/// `fieldValidation=Strict` names them: `.spec.bogus`, `.spec.items[0].x`.
pub fn dropped_fields(original: &Value, pruned: &Value, path: &str, out: &mut Vec<String>) {
    match (original, pruned) {
        (Value::Object(before), Value::Object(after)) => {
            for (key, value) in before {
                let child = format!("{path}.{key}");
                match after.get(key) {
                    Some(kept) => dropped_fields(value, kept, &child, out),
                    None => out.push(child),
                }
            }
        }
        (Value::Array(before), Value::Array(after)) => {
            for (index, (value, kept)) in before.iter().zip(after).enumerate() {
                dropped_fields(value, kept, &format!("{path}[{index}]"), out);
            }
        }
        _ => {}
    }
}

/// Prunes a whole object against its kind's schema.
pub fn prune_object(object: &mut Value, schema: &Schema) {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.retain(|key, _| OBJECT_META_FIELDS.contains(&key.as_str()));
    }
    if let Some(map) = object.as_object_mut() {
        prune_map(map, Some(schema), true);
    }
}

fn prune(value: &mut Value, schema: Option<&Schema>) {
    if schema.is_some_and(|s| s.preserve_unknown) {
        skip_prune(value, schema);
        return;
    }
    match value {
        Value::Object(map) => prune_map(map, schema, schema.is_some_and(|s| s.embedded_resource)),
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.items.as_deref());
            for item in items {
                prune(item, item_schema);
            }
        }
        _ => {}
    }
}

fn prune_map(map: &mut Map<String, Value>, schema: Option<&Schema>, embedded: bool) {
    let Some(schema) = schema else {
        map.clear();
        return;
    };
    map.retain(|key, value| {
        if embedded && TYPE_AND_OBJECT_META.contains(&key.as_str()) {
            return true;
        }
        if let Some(property) = schema.properties.get(key) {
            prune(value, Some(property));
            true
        } else if schema.additional.is_some() {
            prune(value, schema.additional_schema());
            true
        } else {
            false
        }
    });
}

/// Below `x-kubernetes-preserve-unknown-fields`: unknown fields stay, known ones are
/// pruned by their own schema.
fn skip_prune(value: &mut Value, schema: Option<&Schema>) {
    let Some(schema) = schema else {
        return;
    };
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if schema.embedded_resource && TYPE_AND_OBJECT_META.contains(&key.as_str()) {
                    continue;
                }
                if let Some(property) = schema.properties.get(key) {
                    prune(child, Some(property));
                } else if schema.additional.is_some() {
                    prune(child, schema.additional_schema());
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                skip_prune(item, schema.items.as_deref());
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(node: Value) -> Schema {
        Schema::from_json(&node, "").unwrap()
    }

    #[test]
    fn unknown_fields_go_and_preserved_levels_keep_theirs() {
        let schema = schema(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "known": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                          "properties": {"inner": {"type": "object", "properties": {}}}},
                "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
            }},
        }}));
        let mut object = json!({"apiVersion": "v1", "kind": "K",
            "metadata": {"name": "n", "bogus": 1},
            "spec": {"known": "k", "unknown": 1, "labels": {"x": "y"},
                     "free": {"any": {"deep": 1}, "inner": {"gone": 1}},
                     "items": [{"a": "1", "b": 2}]},
            "extra": true});
        prune_object(&mut object, &schema);
        assert_eq!(
            object,
            json!({"apiVersion": "v1", "kind": "K", "metadata": {"name": "n"},
                "spec": {"known": "k", "labels": {"x": "y"},
                         "free": {"any": {"deep": 1}, "inner": {}},
                         "items": [{"a": "1"}]}})
        );
    }
}
