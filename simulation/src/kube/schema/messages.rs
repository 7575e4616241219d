//! Field errors worded as the real API server words them: apimachinery's
//! `pkg/util/validation/field/errors.go` (`<field>: <Type>: <value>: <detail>`, the value
//! printed as Go prints it) after apiextensions-apiserver's
//! `pkg/apiserver/validation/validation.go` mapped kube-openapi's errors
//! (`pkg/validation/errors/schema.go`: `<field> in body must be of type integer: "string"`)
//! to field errors.

use serde_json::{Value, json};

/// The kind of a field error (`metav1.CauseType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    /// `FieldValueRequired`: "Required value".
    Required,
    /// `FieldValueNotSupported`: "Unsupported value".
    NotSupported,
    /// `FieldValueInvalid`: "Invalid value".
    Invalid,
    /// `FieldValueTypeInvalid`: "Invalid value".
    TypeInvalid,
    /// `FieldValueTooLong`: "Too long" (the value is not shown).
    TooLong,
    /// `FieldValueTooMany`: "Too many".
    TooMany,
    /// `FieldValueDuplicate`: "Duplicate value".
    Duplicate,
}

impl ErrorType {
    /// The cause type of a `Status`.
    pub fn cause(self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Invalid => "FieldValueInvalid",
            Self::TypeInvalid => "FieldValueTypeInvalid",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::Duplicate => "FieldValueDuplicate",
        }
    }

    fn text(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::NotSupported => "Unsupported value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
            Self::Duplicate => "Duplicate value",
        }
    }
}

/// The value a field error shows.
#[derive(Debug, Clone, PartialEq)]
pub enum BadValue {
    /// A JSON value, printed as Go prints the decoded value.
    Json(Value),
    /// A Go `[]string` (the `dryRun` option).
    Strings(Vec<String>),
}

/// One refused field.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// What is wrong.
    pub kind: ErrorType,
    /// The field path, e.g. `spec.processCounts.storage`.
    pub field: String,
    /// The offending value.
    pub value: BadValue,
    /// The explanation (may be empty).
    pub detail: String,
}

impl FieldError {
    /// An error of `kind` at `field` showing the JSON `value`.
    pub fn new(kind: ErrorType, field: &str, value: Value, detail: impl Into<String>) -> Self {
        Self {
            kind,
            field: field.to_owned(),
            value: BadValue::Json(value),
            detail: detail.into(),
        }
    }

    /// The message without the field (`ErrorBody` of field/errors.go).
    pub fn body(&self) -> String {
        let mut body = match self.kind {
            ErrorType::Required | ErrorType::TooLong => self.kind.text().to_owned(),
            _ => format!("{}: {}", self.kind.text(), self.printed_value()),
        };
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        body
    }

    /// `field: body`.
    pub fn message(&self) -> String {
        format!("{}: {}", self.field, self.body())
    }

    /// The `details.causes[]` entry of the `Status`.
    pub fn cause(&self) -> Value {
        json!({"reason": self.kind.cause(), "message": self.body(), "field": self.field})
    }

    fn printed_value(&self) -> String {
        match &self.value {
            BadValue::Json(value) => go_value(value, true),
            BadValue::Strings(values) => format!(
                "[]string{{{}}}",
                values
                    .iter()
                    .map(|v| go_quote(v))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// A string as Go's `%q` prints it (close enough: JSON escaping of the same text).
pub fn go_quote(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// A number as Go's `%v` prints an int64 or a float64 decoded from JSON.
pub fn go_number(number: &serde_json::Number) -> String {
    if let Some(int) = number.as_i64() {
        return int.to_string();
    }
    if let Some(uint) = number.as_u64() {
        return uint.to_string();
    }
    go_float(number.as_f64().unwrap_or_default())
}

/// A float64 as Go's `%v` prints it: shortest form, exponent from 1e21.
pub fn go_float(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e21 {
        format!("{value:.0}")
    } else {
        format!("{value}")
    }
}

/// A decoded JSON value as field/errors.go prints a bad value: scalars simply (strings
/// quoted when `top`), compound values with Go's `%#v`.
fn go_value(value: &Value, top: bool) -> String {
    match value {
        Value::Null if top => "null".to_owned(),
        Value::Null => "interface {}(nil)".to_owned(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) if top => go_number(number),
        Value::Number(number) => match number.as_i64() {
            Some(int) => int.to_string(),
            None => go_float(number.as_f64().unwrap_or_default()),
        },
        Value::String(text) => go_quote(text),
        Value::Array(items) => format!(
            "[]interface {{}}{{{}}}",
            items
                .iter()
                .map(|item| go_value(item, false))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(map) => format!(
            "map[string]interface {{}}{{{}}}",
            map.iter()
                .map(|(key, item)| format!("{}:{}", go_quote(key), go_value(item, false)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The message of several field errors as an aggregate prints them: one alone, or
/// `[a, b]`, identical messages once.
pub fn aggregate(errors: &[FieldError]) -> String {
    let mut messages: Vec<String> = Vec::new();
    for error in errors {
        let message = error.message();
        if !messages.contains(&message) {
            messages.push(message);
        }
    }
    match messages.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_worded_as_field_errors_go() {
        let enum_error = FieldError::new(
            ErrorType::NotSupported,
            "status.x",
            json!("x"),
            "supported values: \"ssd\", \"memory\"",
        );
        assert_eq!(
            enum_error.message(),
            "status.x: Unsupported value: \"x\": supported values: \"ssd\", \"memory\""
        );
        let required = FieldError::new(ErrorType::Required, "spec.a", json!(""), "");
        assert_eq!(required.message(), "spec.a: Required value");
        let too_long = FieldError::new(
            ErrorType::TooLong,
            "spec.t",
            json!("abc"),
            "may not be longer than 2",
        );
        assert_eq!(
            too_long.message(),
            "spec.t: Too long: may not be longer than 2"
        );
        let duplicate =
            FieldError::new(ErrorType::Duplicate, "spec.l[1]", json!({"name": "a"}), "");
        assert_eq!(
            duplicate.message(),
            "spec.l[1]: Duplicate value: map[string]interface {}{\"name\":\"a\"}"
        );
        let dry_run = FieldError {
            kind: ErrorType::NotSupported,
            field: "dryRun".into(),
            value: BadValue::Strings(vec!["x".into()]),
            detail: "supported values: \"All\"".into(),
        };
        assert_eq!(
            dry_run.message(),
            "dryRun: Unsupported value: []string{\"x\"}: supported values: \"All\""
        );
        assert_eq!(
            aggregate(&[required.clone(), required, too_long])
                .chars()
                .next(),
            Some('[')
        );
    }
}
