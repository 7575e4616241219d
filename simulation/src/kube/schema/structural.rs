//! A CRD's `openAPIV3Schema` read into the structural form the API server works with
//! (apiextensions-apiserver `pkg/apiserver/schema/structural.go`): one node per schema
//! level, with the Kubernetes extensions (`nullable`, `x-kubernetes-int-or-string`,
//! `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-embedded-resource`, list types,
//! `x-kubernetes-validations`) as typed fields.

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::Value;

/// A schema that cannot be used (the real server refuses such a CRD).
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// A `pattern:` is not a regular expression.
    #[error("{path}.pattern: {pattern:?} is not a valid regular expression")]
    Pattern {
        /// Where in the schema.
        path: String,
        /// The pattern as written.
        pattern: String,
        /// The parser's error.
        #[source]
        source: regex::Error,
    },
    /// A keyword holds a value of the wrong JSON type.
    #[error("{path}.{keyword}: must be {expected}")]
    Keyword {
        /// Where in the schema.
        path: String,
        /// The keyword.
        keyword: &'static str,
        /// What it must be.
        expected: &'static str,
    },
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// The default: the list is one value.
    Atomic,
    /// Scalars, each at most once.
    Set,
    /// Objects, each key combination at most once.
    Map(Vec<String>),
}

/// `additionalProperties`.
#[derive(Debug, Clone)]
pub enum Additional {
    /// `true` or `false`.
    Allowed(bool),
    /// A schema for every value.
    Schema(Box<Schema>),
}

/// One `x-kubernetes-validations` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The CEL expression.
    pub rule: String,
    /// The message shown when it fails (empty: the rule is shown).
    pub message: String,
}

/// One level of a structural schema.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    /// `type` (empty: any).
    pub json_type: String,
    /// `format`.
    pub format: String,
    /// `nullable`.
    pub nullable: bool,
    /// `enum`.
    pub enum_values: Option<Vec<Value>>,
    /// `required`.
    pub required: Vec<String>,
    /// `properties`.
    pub properties: BTreeMap<String, Schema>,
    /// `additionalProperties`.
    pub additional: Option<Additional>,
    /// `items`.
    pub items: Option<Box<Schema>>,
    /// `default`.
    pub default: Option<Value>,
    /// `x-kubernetes-preserve-unknown-fields`.
    pub preserve_unknown: bool,
    /// `x-kubernetes-int-or-string`.
    pub int_or_string: bool,
    /// `x-kubernetes-embedded-resource`.
    pub embedded_resource: bool,
    /// `x-kubernetes-list-type` (with `x-kubernetes-list-map-keys`).
    pub list_type: Option<ListType>,
    /// `minimum` and whether it is exclusive.
    pub minimum: Option<(f64, bool)>,
    /// `maximum` and whether it is exclusive.
    pub maximum: Option<(f64, bool)>,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `minLength`.
    pub min_length: Option<u64>,
    /// `maxLength`.
    pub max_length: Option<u64>,
    /// `pattern`, as written and compiled.
    pub pattern: Option<(String, Regex)>,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// `minProperties`.
    pub min_properties: Option<u64>,
    /// `maxProperties`.
    pub max_properties: Option<u64>,
    /// `anyOf` (value validations only, as in a structural schema).
    pub any_of: Vec<Schema>,
    /// `allOf`.
    pub all_of: Vec<Schema>,
    /// `oneOf`.
    pub one_of: Vec<Schema>,
    /// `not`.
    pub not: Option<Box<Schema>>,
    /// `x-kubernetes-validations`.
    pub rules: Vec<Rule>,
}

fn text(node: &Value, key: &str) -> String {
    node.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn flag(node: &Value, key: &str) -> bool {
    node.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn count(node: &Value, key: &'static str, path: &str) -> Result<Option<u64>, SchemaError> {
    match node.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value.as_u64().map(Some).ok_or(SchemaError::Keyword {
            path: path.to_owned(),
            keyword: key,
            expected: "a non-negative integer",
        }),
    }
}

fn bound(
    node: &Value,
    key: &'static str,
    exclusive: &str,
    path: &str,
) -> Result<Option<(f64, bool)>, SchemaError> {
    match node.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_f64()
            .map(|limit| Some((limit, flag(node, exclusive))))
            .ok_or(SchemaError::Keyword {
                path: path.to_owned(),
                keyword: key,
                expected: "a number",
            }),
    }
}

fn branches(node: &Value, key: &str, path: &str) -> Result<Vec<Schema>, SchemaError> {
    node.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(index, branch)| Schema::from_json(branch, &format!("{path}.{key}[{index}]")))
        .collect()
}

impl Schema {
    /// Reads a schema node (the `openAPIV3Schema` of a CRD version, or any level below);
    /// `path` names it in errors.
    pub fn from_json(node: &Value, path: &str) -> Result<Self, SchemaError> {
        let mut schema = Self {
            json_type: text(node, "type"),
            format: text(node, "format"),
            nullable: flag(node, "nullable"),
            enum_values: node.get("enum").and_then(Value::as_array).cloned(),
            required: node
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            default: node.get("default").cloned(),
            preserve_unknown: flag(node, "x-kubernetes-preserve-unknown-fields"),
            int_or_string: flag(node, "x-kubernetes-int-or-string"),
            embedded_resource: flag(node, "x-kubernetes-embedded-resource"),
            list_type: list_type(node),
            minimum: bound(node, "minimum", "exclusiveMinimum", path)?,
            maximum: bound(node, "maximum", "exclusiveMaximum", path)?,
            multiple_of: node.get("multipleOf").and_then(Value::as_f64),
            min_length: count(node, "minLength", path)?,
            max_length: count(node, "maxLength", path)?,
            min_items: count(node, "minItems", path)?,
            max_items: count(node, "maxItems", path)?,
            min_properties: count(node, "minProperties", path)?,
            max_properties: count(node, "maxProperties", path)?,
            any_of: branches(node, "anyOf", path)?,
            all_of: branches(node, "allOf", path)?,
            one_of: branches(node, "oneOf", path)?,
            rules: rules(node),
            ..Self::default()
        };
        if let Some(pattern) = node.get("pattern").and_then(Value::as_str) {
            let compiled = Regex::new(pattern).map_err(|source| SchemaError::Pattern {
                path: path.to_owned(),
                pattern: pattern.to_owned(),
                source,
            })?;
            schema.pattern = Some((pattern.to_owned(), compiled));
        }
        if let Some(properties) = node.get("properties").and_then(Value::as_object) {
            for (name, child) in properties {
                let child = Self::from_json(child, &format!("{path}.properties.{name}"))?;
                schema.properties.insert(name.clone(), child);
            }
        }
        schema.additional = match node.get("additionalProperties") {
            Some(Value::Bool(allowed)) => Some(Additional::Allowed(*allowed)),
            Some(child @ Value::Object(_)) => Some(Additional::Schema(Box::new(Self::from_json(
                child,
                &format!("{path}.additionalProperties"),
            )?))),
            _ => None,
        };
        if let Some(items) = node.get("items").filter(|items| items.is_object()) {
            schema.items = Some(Box::new(Self::from_json(items, &format!("{path}.items"))?));
        }
        if let Some(not) = node.get("not").filter(|not| not.is_object()) {
            schema.not = Some(Box::new(Self::from_json(not, &format!("{path}.not"))?));
        }
        Ok(schema)
    }

    /// The schema of the values of an object's unknown keys, when it has one.
    pub fn additional_schema(&self) -> Option<&Schema> {
        match &self.additional {
            Some(Additional::Schema(schema)) => Some(schema),
            _ => None,
        }
    }

    /// Whether an object's unknown keys are kept (a map, or `additionalProperties: true`).
    pub fn keeps_additional(&self) -> bool {
        matches!(
            self.additional,
            Some(Additional::Schema(_) | Additional::Allowed(true))
        )
    }
}

fn list_type(node: &Value) -> Option<ListType> {
    match node.get("x-kubernetes-list-type").and_then(Value::as_str)? {
        "set" => Some(ListType::Set),
        "map" => Some(ListType::Map(
            node.get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        )),
        _ => Some(ListType::Atomic),
    }
}

fn rules(node: &Value) -> Vec<Rule> {
    node.get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|rule| Rule {
            rule: text(rule, "rule"),
            message: text(rule, "message"),
        })
        .collect()
}
