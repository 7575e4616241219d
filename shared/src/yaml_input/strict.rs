//! Building a JSON value from a YAML document the way Kubernetes clients would send it,
//! within bounds (nesting no deeper than the limit, alias expansions that do not blow up
//! in size) and, when strict, refusing what a conversion would silently change: a key
//! given twice (only one would be kept) and `.nan` / `.inf` (JSON has no such numbers,
//! so they would become `null`). Lenient reading keeps the last of duplicate keys and
//! reads non-finite numbers as `null`, as serde_json does.
//!
//! Errors are raised while serde_yaml_ng is looking at the offending node, so its
//! message carries the path and the line and column of that node.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::{MAX_NESTING_DEPTH, MAX_VALUES};

/// What a document may still use: values (after alias expansion).
pub(crate) struct Budget {
    values: usize,
}

impl Budget {
    pub(crate) fn new() -> Self {
        Self { values: 0 }
    }

    fn spend<E: de::Error>(&mut self) -> Result<(), E> {
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(E::custom(format!(
                "the document holds more than {MAX_VALUES} values (aliases expanded); \
                 a manifest or scenario needs far fewer: remove repeated aliases or split it"
            )));
        }
        Ok(())
    }
}

/// Deserializes one value with the checks above.
pub(crate) struct ValueSeed<'a> {
    pub(crate) budget: &'a mut Budget,
    /// Levels of collections around this value.
    pub(crate) depth: usize,
    /// Refuse duplicate keys and non-finite numbers.
    pub(crate) strict: bool,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl ValueSeed<'_> {
    fn enter<E: de::Error>(&mut self) -> Result<usize, E> {
        self.budget.spend()?;
        let depth = self.depth + 1;
        if depth > MAX_NESTING_DEPTH {
            return Err(E::custom(format!(
                "nested deeper than {MAX_NESTING_DEPTH} levels, the most this reader accepts; \
                 flatten the document"
            )));
        }
        Ok(depth)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a YAML or JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        self.budget.spend()?;
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        self.budget.spend()?;
        Ok(Value::from(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        self.budget.spend()?;
        Ok(Value::from(value))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        self.budget.spend()?;
        if !self.strict {
            return Ok(Number::from_f64(value).map_or(Value::Null, Value::Number));
        }
        Number::from_f64(value).map(Value::Number).ok_or_else(|| {
            E::custom(format!(
                "{value} is not a finite number: JSON, and so Kubernetes, has no such value \
                 (.nan and .inf would be sent as null); write a number, or quote it if you \
                 meant text"
            ))
        })
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        self.budget.spend()?;
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Value, E> {
        self.budget.spend()?;
        Ok(Value::String(value))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.budget.spend()?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        let depth = self.enter()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(ValueSeed {
            budget: self.budget,
            depth,
            strict: self.strict,
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let depth = self.enter()?;
        let mut fields = Map::new();
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key_seed(KeySeed {
            seen: &mut seen,
            strict: self.strict,
        })? {
            let value = map.next_value_seed(ValueSeed {
                budget: self.budget,
                depth,
                strict: self.strict,
            })?;
            fields.insert(key, value);
        }
        Ok(Value::Object(fields))
    }
}

/// A mapping key, refused when the mapping already has it (the error then points at the
/// second occurrence).
struct KeySeed<'a> {
    seen: &'a mut BTreeSet<String>,
    strict: bool,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = String;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = String;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<String, E> {
        if !self.seen.insert(key.to_owned()) && self.strict {
            return Err(E::custom(format!(
                "duplicate key {key:?}: this mapping already has it, and only one of the \
                 two would be used; remove one"
            )));
        }
        Ok(key.to_owned())
    }
}
