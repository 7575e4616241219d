use serde_json::json;

use super::*;

fn errors_of(schema: Value, value: Value, old: Option<Value>) -> Vec<String> {
    let schema = Schema::from_json(&schema, "").unwrap();
    let mut errors = Vec::new();
    validate(&schema, &value, old.as_ref(), "spec", &mut errors);
    errors.iter().map(FieldError::message).collect()
}

#[test]
fn types_enums_bounds_lengths_patterns_and_counts_are_worded_as_kube_openapi() {
    let schema = json!({"type": "object", "required": ["name"], "properties": {
        "count": {"type": "integer", "minimum": 1, "maximum": 5},
        "engine": {"type": "string", "enum": ["ssd", "memory"]},
        "tag": {"type": "string", "maxLength": 3, "minLength": 1, "pattern": "^[a-z]+$"},
        "zones": {"type": "array", "maxItems": 1, "minItems": 1, "items": {"type": "string"}},
        "size": {"x-kubernetes-int-or-string": true},
        "at": {"type": "string", "format": "date-time"},
        "name": {"type": "string"},
    }});
    let value = json!({"count": "three", "engine": "x", "tag": "ABCD", "zones": ["a", "b"],
                       "size": true, "at": "yesterday"});
    assert_eq!(
        errors_of(schema.clone(), value, None),
        vec![
            "spec.name: Required value",
            "spec.at: Invalid value: \"yesterday\": spec.at in body must be of type date-time: \"yesterday\"",
            "spec.count: Invalid value: \"string\": spec.count in body must be of type integer: \"string\"",
            "spec.engine: Unsupported value: \"x\": supported values: \"ssd\", \"memory\"",
            "spec.size: Invalid value: \"boolean\": spec.size in body must be of type integer,string: \"boolean\"",
            "spec.tag: Too long: may not be longer than 3",
            "spec.tag: Invalid value: \"ABCD\": spec.tag in body should match '^[a-z]+$'",
            "spec.zones: Too many: 2: must have at most 1 items",
        ]
    );
    let value = json!({"name": "n", "count": 0, "tag": "", "zones": [], "size": "1Gi"});
    assert_eq!(
        errors_of(schema.clone(), value, None),
        vec![
            "spec.count: Invalid value: 0: spec.count in body should be greater than or equal to 1",
            "spec.tag: Invalid value: \"\": spec.tag in body should be at least 1 chars long",
            "spec.tag: Invalid value: \"\": spec.tag in body should match '^[a-z]+$'",
            "spec.zones: Invalid value: 0: spec.zones in body should have at least 1 items",
        ]
    );
    assert!(errors_of(schema, json!({"name": "n", "count": 5.0, "size": 3}), None).is_empty());
}

#[test]
fn unchanged_invalid_values_ratchet_and_changed_ones_do_not() {
    let schema = json!({"type": "object", "properties": {
        "engine": {"type": "string", "enum": ["ssd"]},
        "other": {"type": "string"},
        "items": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "properties": {
                      "name": {"type": "string"}, "v": {"type": "integer", "maximum": 1}}}},
    }});
    let old = json!({"engine": "none", "other": "a", "items": [{"name": "a", "v": 9}]});
    let kept = json!({"engine": "none", "other": "b", "items": [{"name": "b", "v": 0}, {"name": "a", "v": 9}]});
    assert!(errors_of(schema.clone(), kept, Some(old.clone())).is_empty());
    let changed = json!({"engine": "nope", "items": [{"name": "a", "v": 8}]});
    assert_eq!(errors_of(schema, changed, Some(old)).len(), 2);
}

#[test]
fn the_immutability_rule_is_evaluated_on_updates_only() {
    let schema = json!({"type": "object", "properties": {"tag": {"type": "string",
        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "BackupTag is immutable"}]}}});
    assert!(errors_of(schema.clone(), json!({"tag": "a"}), None).is_empty());
    assert!(
        errors_of(
            schema.clone(),
            json!({"tag": "a"}),
            Some(json!({"tag": "a"}))
        )
        .is_empty()
    );
    assert_eq!(
        errors_of(schema, json!({"tag": "b"}), Some(json!({"tag": "a"}))),
        vec!["spec.tag: Invalid value: \"string\": BackupTag is immutable"]
    );
}
