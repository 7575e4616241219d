//! Value validation against a structural schema, with the messages of kube-openapi's
//! `pkg/validation/validate` (type.go, schema_props.go, object_validator.go,
//! slice_validator.go, values.go) as apiextensions-apiserver reports them, and
//! validation ratcheting (Kubernetes 1.30, kube-openapi `validate/ratcheting.go`): on an
//! update, a value equal to its correlated old value (same property, same list-map key,
//! same set element) is not checked again, so an invalid but unchanged value is kept.
//!
//! Formats: the server strips every format it does not know
//! (`StripUnsupportedFormatsPostProcess` in apiextensions' validation.go); `int32`,
//! `int64`, `double` are among them, so their ranges are not checked (as on a real
//! server). `date-time` and `byte` are. `x-kubernetes-validations`: only the transition
//! rule `self == oldSelf` is evaluated (the only rule the Go operator's CRDs carry); other
//! CEL rules are not evaluated.

use serde_json::{Map, Value};

use super::messages::{ErrorType, FieldError, go_float, go_quote};
use super::structural::{ListType, Schema};

/// Checks `value` at `path` against `schema`; `old` is the correlated old value on an
/// update (`None` on a create or where nothing correlates).
pub fn validate(
    schema: &Schema,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if old.is_some_and(|old| old == value) {
        return;
    }
    if value.is_null() {
        if !schema.nullable && (!schema.json_type.is_empty() || schema.int_or_string) {
            type_error(schema, path, "null", errors);
        }
        return;
    }
    let actual = json_type(value, schema);
    if !type_matches(schema, actual) {
        type_error(schema, path, actual, errors);
        return;
    }
    check_format(schema, value, path, errors);
    check_enum(schema, value, path, errors);
    match value {
        Value::Number(number) => check_number(schema, number, path, errors),
        Value::String(text) => check_string(schema, text, path, errors),
        Value::Array(items) => check_array(schema, items, old, path, errors),
        Value::Object(map) => check_object(schema, map, old, path, errors),
        Value::Bool(_) | Value::Null => {}
    }
    check_combinators(schema, value, path, errors);
    check_rules(schema, value, old, path, errors);
}

fn json_type(value: &Value, schema: &Schema) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        // A float that is a whole number passes as an integer (`isFloatInt` of type.go).
        Value::Number(number)
            if (schema.json_type == "integer" || schema.int_or_string)
                && number.as_f64().is_some_and(|f| f.fract() == 0.0) =>
        {
            "integer"
        }
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(schema: &Schema, actual: &str) -> bool {
    if schema.int_or_string {
        return matches!(actual, "integer" | "string");
    }
    match schema.json_type.as_str() {
        "" => true,
        "number" => matches!(actual, "number" | "integer"),
        expected => expected == actual,
    }
}

fn type_error(schema: &Schema, path: &str, actual: &str, errors: &mut Vec<FieldError>) {
    let expected = if schema.int_or_string {
        "integer,string"
    } else {
        schema.json_type.as_str()
    };
    errors.push(FieldError::new(
        ErrorType::TypeInvalid,
        path,
        Value::String(actual.to_owned()),
        format!(
            "{path} in body must be of type {expected}: {}",
            go_quote(actual)
        ),
    ));
}

fn check_format(schema: &Schema, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let Value::String(text) = value else {
        return;
    };
    let valid = match schema.format.as_str() {
        "date-time" | "datetime" => text.parse::<jiff::Timestamp>().is_ok(),
        "byte" => is_base64(text),
        _ => true,
    };
    if !valid {
        errors.push(FieldError::new(
            ErrorType::TypeInvalid,
            path,
            value.clone(),
            format!(
                "{path} in body must be of type {}: {}",
                schema.format,
                go_quote(text)
            ),
        ));
    }
}

fn is_base64(text: &str) -> bool {
    let bytes = text.as_bytes();
    let padding = bytes.iter().rev().take_while(|b| **b == b'=').count();
    bytes.len().is_multiple_of(4)
        && padding <= 2
        && bytes[..bytes.len() - padding]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
}

fn check_enum(schema: &Schema, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let Some(allowed) = &schema.enum_values else {
        return;
    };
    if allowed.contains(value) {
        return;
    }
    let supported: Vec<String> = allowed
        .iter()
        .map(|option| match option {
            Value::String(text) => go_quote(text),
            other => go_quote(&other.to_string()),
        })
        .collect();
    let detail = if supported.is_empty() {
        String::new()
    } else {
        format!("supported values: {}", supported.join(", "))
    };
    errors.push(FieldError::new(
        ErrorType::NotSupported,
        path,
        value.clone(),
        detail,
    ));
}

fn check_number(
    schema: &Schema,
    number: &serde_json::Number,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let Some(actual) = number.as_f64() else {
        return;
    };
    let value = Value::Number(number.clone());
    if let Some((maximum, exclusive)) = schema.maximum
        && (actual > maximum || (exclusive && actual == maximum))
    {
        let relation = if exclusive {
            "less than"
        } else {
            "less than or equal to"
        };
        errors.push(FieldError::new(
            ErrorType::Invalid,
            path,
            value.clone(),
            format!("{path} in body should be {relation} {}", go_float(maximum)),
        ));
    }
    if let Some((minimum, exclusive)) = schema.minimum
        && (actual < minimum || (exclusive && actual == minimum))
    {
        let relation = if exclusive {
            "greater than"
        } else {
            "greater than or equal to"
        };
        errors.push(FieldError::new(
            ErrorType::Invalid,
            path,
            value.clone(),
            format!("{path} in body should be {relation} {}", go_float(minimum)),
        ));
    }
    if let Some(factor) = schema.multiple_of
        && factor > 0.0
        && (actual / factor).fract() != 0.0
    {
        errors.push(FieldError::new(
            ErrorType::Invalid,
            path,
            value,
            format!(
                "{path} in body should be a multiple of {}",
                go_float(factor)
            ),
        ));
    }
}

fn check_string(schema: &Schema, text: &str, path: &str, errors: &mut Vec<FieldError>) {
    let length = text.chars().count() as u64;
    let value = Value::String(text.to_owned());
    if let Some(maximum) = schema.max_length
        && length > maximum
    {
        errors.push(FieldError::new(
            ErrorType::TooLong,
            path,
            value.clone(),
            format!("may not be longer than {maximum}"),
        ));
    }
    if let Some(minimum) = schema.min_length
        && length < minimum
    {
        errors.push(FieldError::new(
            ErrorType::Invalid,
            path,
            value.clone(),
            format!("{path} in body should be at least {minimum} chars long"),
        ));
    }
    if let Some((pattern, regex)) = &schema.pattern
        && !regex.is_match(text)
    {
        errors.push(FieldError::new(
            ErrorType::Invalid,
            path,
            value,
            format!("{path} in body should match '{pattern}'"),
        ));
    }
}

fn check_array(
    schema: &Schema,
    items: &[Value],
    old: Option<&Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let size = items.len() as u64;
    if let Some(maximum) = schema.max_items
        && size > maximum
    {
        errors.push(FieldError::new(
            ErrorType::TooMany,
            path,
            Value::from(size),
            format!("must have at most {maximum} items"),
        ));
    }
    if let Some(minimum) = schema.min_items
        && size < minimum
    {
        errors.push(FieldError::new(
            ErrorType::Invalid,
            path,
            Value::from(size),
            format!("{path} in body should have at least {minimum} items"),
        ));
    }
    let Some(item_schema) = schema.items.as_deref() else {
        return;
    };
    let old_items = old.and_then(Value::as_array);
    for (index, item) in items.iter().enumerate() {
        let old_item = old_items.and_then(|old_items| correlate(schema, item, old_items));
        validate(
            item_schema,
            item,
            old_item,
            &format!("{path}[{index}]"),
            errors,
        );
    }
}

/// The old item an item correlates with for ratcheting: the item of the same keys in a
/// list-map, an equal element in a set; none in an atomic list.
fn correlate<'a>(schema: &Schema, item: &Value, old_items: &'a [Value]) -> Option<&'a Value> {
    match &schema.list_type {
        Some(ListType::Map(keys)) if !keys.is_empty() => old_items
            .iter()
            .find(|old| keys.iter().all(|key| old.get(key) == item.get(key))),
        Some(ListType::Set) => old_items.iter().find(|old| *old == item),
        _ => None,
    }
}

fn check_object(
    schema: &Schema,
    map: &Map<String, Value>,
    old: Option<&Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let child_path = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    for required in &schema.required {
        if !map.contains_key(required) {
            errors.push(FieldError::new(
                ErrorType::Required,
                &child_path(required),
                Value::String(String::new()),
                "",
            ));
        }
    }
    let count = map.len() as u64;
    if let Some(maximum) = schema.max_properties
        && count > maximum
    {
        errors.push(FieldError::new(
            ErrorType::TooMany,
            path,
            Value::from(count),
            format!("must have at most {maximum} items"),
        ));
    }
    if let Some(minimum) = schema.min_properties
        && count < minimum
    {
        errors.push(FieldError::new(
            ErrorType::Invalid,
            path,
            Value::Null,
            format!("{path} in body should have at least {minimum} properties"),
        ));
    }
    for (key, child) in map {
        let old_child = old.and_then(|old| old.get(key));
        if let Some(property) = schema.properties.get(key) {
            validate(property, child, old_child, &child_path(key), errors);
        } else if let Some(values) = schema.additional_schema() {
            validate(values, child, old_child, &child_path(key), errors);
        }
    }
}

/// `anyOf`, `allOf`, `oneOf` and `not`, which a structural schema uses for value
/// validations only (e.g. int-or-string quantities with a `pattern`).
fn check_combinators(schema: &Schema, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let passes = |branch: &Schema| {
        let mut found = Vec::new();
        validate(branch, value, None, path, &mut found);
        found
    };
    for branch in &schema.all_of {
        errors.extend(passes(branch));
    }
    if !schema.any_of.is_empty() && schema.any_of.iter().all(|b| !passes(b).is_empty()) {
        errors.push(FieldError::new(
            ErrorType::Invalid,
            path,
            Value::String(String::new()),
            format!("{path} in body must validate at least one schema (anyOf)"),
        ));
    }
    if !schema.one_of.is_empty()
        && schema
            .one_of
            .iter()
            .filter(|b| passes(b).is_empty())
            .count()
            != 1
    {
        errors.push(FieldError::new(
            ErrorType::Invalid,
            path,
            Value::String(String::new()),
            format!("{path} in body must validate one and only one schema (oneOf)"),
        ));
    }
    if let Some(not) = &schema.not
        && passes(not).is_empty()
    {
        errors.push(FieldError::new(
            ErrorType::Invalid,
            path,
            Value::String(String::new()),
            format!("{path} in body should not validate the schema (not)"),
        ));
    }
}

/// The CEL subset evaluated: the transition rule `self == oldSelf` (immutability). It is
/// reached only when the value changed (an equal value returned early).
fn check_rules(
    schema: &Schema,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if old.is_none() {
        return;
    }
    for rule in &schema.rules {
        let compact: String = rule.rule.split_whitespace().collect();
        if compact != "self==oldSelf" {
            continue;
        }
        let detail = if rule.message.is_empty() {
            format!("failed rule: {}", rule.rule)
        } else {
            rule.message.clone()
        };
        let type_name = match value {
            Value::Object(_) => "object",
            Value::Array(_) => "array",
            Value::String(_) => "string",
            Value::Number(_) => "number",
            Value::Bool(_) => "boolean",
            Value::Null => "null",
        };
        errors.push(FieldError::new(
            ErrorType::Invalid,
            path,
            Value::String(type_name.to_owned()),
            detail,
        ));
    }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
