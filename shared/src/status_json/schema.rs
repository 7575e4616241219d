//! FoundationDB's check of a `status json` document against its schema
//! (`JSONSchemas::statusSchema` of fdbclient/Schemas.cpp), with the rules of
//! `schemaMatch` in fdbclient/ManagementAPI.actor.cpp:
//! - a value has the type of its schema value (integers and reals are both numbers);
//! - an object may only have keys its schema names (keys may be missing);
//! - a schema value `{"$enum": [...]}` admits exactly the listed values;
//! - a schema value `{"$map": S}` admits an object whose values each match `S` (any
//!   object when `S` is not an object);
//! - a schema array `[]` admits only the empty array, `[S]` arrays whose items each
//!   match `S`.
//!
//! The simulation checks the documents it renders with it; the schemas themselves are
//! test data (shared/tests/data/status-schema).

use serde_json::Value;

/// Everything in `value` that `schema` does not permit, one line each, in
/// FoundationDB's words (`ERROR: Unknown key `.cluster.x'`); empty when it matches.
pub fn schema_mismatches(schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    // One path buffer for the whole walk: the world checks every document it renders,
    // so the walk allocates only for the mismatches it reports.
    let mut path = String::new();
    match_value(schema, value, &mut path, &mut errors);
    errors
}

/// The JSON type as `schemaMatch` compares it: integers and reals are one type.
fn kind(value: &Value) -> u8 {
    match value {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    }
}

/// Runs `walk` with `suffix` appended to `path`, then restores `path`.
fn nested(path: &mut String, suffix: std::fmt::Arguments<'_>, walk: impl FnOnce(&mut String)) {
    use std::fmt::Write as _;
    let length = path.len();
    let _ = path.write_fmt(suffix);
    walk(path);
    path.truncate(length);
}

fn match_value(schema: &Value, value: &Value, path: &mut String, errors: &mut Vec<String>) {
    if kind(schema) != kind(value) {
        errors.push(format!("ERROR: Incorrect value type for key `{path}'"));
        return;
    }
    match (schema, value) {
        (Value::Object(schema), Value::Object(value)) => {
            for (key, item) in value {
                nested(path, format_args!(".{key}"), |key_path| {
                    match schema.get(key) {
                        None => errors.push(format!("ERROR: Unknown key `{key_path}'")),
                        Some(item_schema) => match_key(item_schema, item, key_path, errors),
                    }
                });
            }
        }
        (Value::Array(schema), Value::Array(items)) => match schema.as_slice() {
            [] if !items.is_empty() => {
                errors.push(format!("ERROR: Expected an empty array for key `{path}'"));
            }
            [] => {}
            [item_schema] => {
                for (index, item) in items.iter().enumerate() {
                    nested(path, format_args!("[{index}]"), |item_path| {
                        match_value(item_schema, item, item_path, errors);
                    });
                }
            }
            _ => errors.push(format!(
                "ERROR: The schema of `{path}' lists more than one array item"
            )),
        },
        _ => {}
    }
}

/// A key's value against its schema value, which may be an `$enum` or a `$map`.
fn match_key(schema: &Value, value: &Value, path: &mut String, errors: &mut Vec<String>) {
    if let Some(allowed) = schema.get("$enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            errors.push(format!("ERROR: Unknown value `{value}' for key `{path}'"));
        }
        return;
    }
    if let Some(entry_schema) = schema.get("$map") {
        let Value::Object(entries) = value else {
            errors.push(format!(
                "ERROR: Expected an object as the value for key `{path}'"
            ));
            return;
        };
        if !entry_schema.is_object() {
            return;
        }
        for (name, entry) in entries {
            nested(path, format_args!("[{name}]"), |entry_path| {
                if entry.is_object() {
                    match_value(entry_schema, entry, entry_path, errors);
                } else {
                    errors.push(format!("ERROR: Expected an object for `{entry_path}'"));
                }
            });
        }
        return;
    }
    match_value(schema, value, path, errors);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reports_each_rule_of_schema_match() {
        let schema = json!({
            "a": 1,
            "e": {"$enum": ["x", "y"]},
            "m": {"$map": {"v": true}},
            "any": {"$map": "value"},
            "none": [],
            "list": [{"n": "s"}],
        });
        let good = json!({"a": 2.5, "e": "y", "m": {"k": {"v": false}}, "any": {"z": 1},
                          "none": [], "list": [{"n": "t"}, {}]});
        assert!(schema_mismatches(&schema, &good).is_empty());
        let bad = json!({"a": "1", "e": "z", "m": {"k": 1}, "none": [1],
                         "list": [{"n": 1}], "extra": 0, "any": []});
        assert_eq!(
            schema_mismatches(&schema, &bad),
            [
                "ERROR: Incorrect value type for key `.a'",
                "ERROR: Expected an object as the value for key `.any'",
                "ERROR: Unknown value `\"z\"' for key `.e'",
                "ERROR: Unknown key `.extra'",
                "ERROR: Incorrect value type for key `.list[0].n'",
                "ERROR: Expected an object for `.m[k]'",
                "ERROR: Expected an empty array for key `.none'",
            ]
        );
    }

    #[test]
    fn enum_values_compare_as_json_values() {
        let schema = json!({"n": {"$enum": [1, "1"]}});
        assert!(schema_mismatches(&schema, &json!({"n": 1})).is_empty());
        assert!(schema_mismatches(&schema, &json!({"n": "1"})).is_empty());
        assert_eq!(schema_mismatches(&schema, &json!({"n": 2})).len(), 1);
    }
}
