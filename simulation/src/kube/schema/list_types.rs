//! `x-kubernetes-list-type` uniqueness, as apiextensions-apiserver's
//! `pkg/apiserver/schema/listtype/validation.go` checks it: a `set` holds each element
//! once, a `map` each combination of its `x-kubernetes-list-map-keys` once (a missing key
//! counts as a value of its own). The whole check ratchets: on an update the errors count
//! only when the old object had none (`status_strategy.go`, `strategy.go`).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::messages::{ErrorType, FieldError};
use super::structural::{ListType, Schema};

/// The duplicates in every set and list-map of `value`.
pub fn duplicates(schema: &Schema, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let child_path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                if let Some(property) = schema.properties.get(key) {
                    duplicates(property, child, &child_path, errors);
                } else if let Some(values) = schema.additional_schema() {
                    duplicates(values, child, &child_path, errors);
                }
            }
        }
        Value::Array(items) => {
            match &schema.list_type {
                Some(ListType::Set) => report(items.iter(), path, errors),
                Some(ListType::Map(keys)) => check_map(items, keys, path, errors),
                Some(ListType::Atomic) | None => {}
            }
            if let Some(item_schema) = schema.items.as_deref() {
                for (index, item) in items.iter().enumerate() {
                    duplicates(item_schema, item, &format!("{path}[{index}]"), errors);
                }
            }
        }
        _ => {}
    }
}

fn check_map(items: &[Value], keys: &[String], path: &str, errors: &mut Vec<FieldError>) {
    if let Some((index, item)) = items
        .iter()
        .enumerate()
        .find(|(_, item)| !item.is_object() && !item.is_null())
    {
        errors.push(FieldError::new(
            ErrorType::Invalid,
            &format!("{path}[{index}]"),
            item.clone(),
            "must be an object for an array of list-type map",
        ));
        return;
    }
    let key_values: Vec<Value> = items
        .iter()
        .map(|item| {
            let mut key = Map::new();
            for field in keys {
                if let Some(value) = item.get(field) {
                    key.insert(field.clone(), value.clone());
                }
            }
            Value::Object(key)
        })
        .collect();
    report(key_values.iter(), path, errors);
}

/// Reports the second appearance of each repeated value (once per value).
fn report<'a>(values: impl Iterator<Item = &'a Value>, path: &str, errors: &mut Vec<FieldError>) {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (index, value) in values.enumerate() {
        let times = seen.entry(value.to_string()).or_insert(0);
        *times += 1;
        if *times == 2 {
            errors.push(FieldError::new(
                ErrorType::Duplicate,
                &format!("{path}[{index}]"),
                value.clone(),
                "",
            ));
        }
    }
}
