//! Defaulting, as apiextensions-apiserver's `pkg/apiserver/schema/defaulting` does it
//! after pruning: `null` in a field that is not `nullable` is dropped when the field has
//! no `default` (`prunenulls.go`), and a missing (or such a `null`) field with a
//! `default:` gets a copy of it (`algorithm.go`), at every level.

use serde_json::{Map, Value};

use super::structural::Schema;

/// Drops the non-nullable `null`s without default, then applies the defaults.
pub fn default_object(object: &mut Value, schema: &Schema) {
    prune_nulls(object, schema);
    apply_defaults(object, schema);
}

fn is_non_nullable_null(value: &Value, schema: &Schema) -> bool {
    value.is_null() && !schema.nullable
}

fn prune_nulls(value: &mut Value, schema: &Schema) {
    match value {
        Value::Object(map) => prune_map_nulls(map, schema),
        Value::Array(items) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for item in items {
                    prune_nulls(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

fn prune_map_nulls(map: &mut Map<String, Value>, schema: &Schema) {
    map.retain(|key, value| {
        let child = schema
            .properties
            .get(key)
            .or_else(|| schema.additional_schema());
        match child {
            Some(child) if is_non_nullable_null(value, child) && child.default.is_none() => false,
            Some(child) => {
                prune_nulls(value, child);
                true
            }
            None => true,
        }
    });
}

fn apply_defaults(value: &mut Value, schema: &Schema) {
    match value {
        Value::Object(map) => {
            for (key, property) in &schema.properties {
                let Some(default) = &property.default else {
                    continue;
                };
                let missing = map
                    .get(key)
                    .is_none_or(|current| is_non_nullable_null(current, property));
                if missing {
                    map.insert(key.clone(), default.clone());
                }
            }
            for (key, child) in map.iter_mut() {
                if let Some(property) = schema.properties.get(key) {
                    apply_defaults(child, property);
                } else if let Some(values) = schema.additional_schema() {
                    if let Some(default) = &values.default
                        && is_non_nullable_null(child, values)
                    {
                        *child = default.clone();
                    }
                    apply_defaults(child, values);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = schema.items.as_deref() else {
                return;
            };
            for item in items {
                if let Some(default) = &item_schema.default
                    && is_non_nullable_null(item, item_schema)
                {
                    *item = default.clone();
                }
                apply_defaults(item, item_schema);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn defaults_fill_missing_and_non_nullable_null_fields() {
        let schema = Schema::from_json(
            &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "a": {"type": "integer", "default": 3},
                "b": {"type": "string"},
                "c": {"type": "string", "nullable": true},
                "d": {"type": "object", "default": {}, "properties": {
                    "e": {"type": "boolean", "default": true}}},
            }}}}),
            "",
        )
        .unwrap();
        let mut object = json!({"spec": {"a": null, "b": null, "c": null}});
        default_object(&mut object, &schema);
        assert_eq!(
            object,
            json!({"spec": {"a": 3, "c": null, "d": {"e": true}}})
        );
    }
}
