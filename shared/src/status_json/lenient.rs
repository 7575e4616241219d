//! Deserializers that never fail on a bad value: a document with one odd field must
//! still parse.

use std::str::FromStr;

use serde::{Deserialize, Deserializer};

use super::lenient_shapes::{Scalar, scalar};

/// A string parsed with `FromStr`; `None` when absent, not a string, or unparsable.
pub(crate) fn from_str<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
{
    Ok(match scalar(deserializer)? {
        Scalar::Text(text) => text.parse().ok(),
        _ => None,
    })
}

/// A list of strings parsed with `FromStr`; unparsable entries are dropped.
pub(crate) fn vec_from_str<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
{
    let value = Option::<Vec<serde_json::Value>>::deserialize(deserializer)?;
    Ok(value
        .unwrap_or_default()
        .iter()
        .filter_map(|value| value.as_str().and_then(|text| text.parse().ok()))
        .collect())
}

/// Any value deserializable as `T`; `T::default()` when absent, `null` or of another shape.
///
/// The value is taken as its JSON text, then parsed as `T`: a `serde_json::Value` first
/// would build a map for every object of the subtree (the processes of a 1000-process
/// `status json` are most of its parse, issue 37).
pub(crate) fn or_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned + Default,
{
    let raw = Option::<Box<serde_json::value::RawValue>>::deserialize(deserializer)?;
    Ok(raw
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default())
}

/// An integer: FoundationDB's schema admits any number where it prints an integer
/// (`schemaMatch` in fdbclient/ManagementAPI.actor.cpp treats integers and reals as one
/// type), so a real without a fraction counts; a fraction, a number beyond `i64` or
/// another type is `None`.
pub(crate) fn int<'de, D>(deserializer: D) -> Result<Option<i64>, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(scalar(deserializer)?.integer())
}

/// Whole reals as integers, at any depth (`3.0` is `3`), so integer fields take them.
fn integral_reals_as_integers(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Number(number) if !number.is_i64() && !number.is_u64() => {
            if let Some(real) = number
                .as_f64()
                .filter(|r| r.fract() == 0.0 && r.abs() < 9.0e18)
            {
                *value = serde_json::Value::from(real as i64);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(integral_reals_as_integers),
        serde_json::Value::Object(fields) => {
            fields.values_mut().for_each(integral_reals_as_integers);
        }
        _ => {}
    }
}

/// An object deserialized key by key: a key whose value does not fit its field is
/// dropped, the others are kept (`None` only when the value is not an object). For
/// types shared with the spec (the database configuration), whose fields stay strict
/// there.
pub(crate) fn object_by_key<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = Option::<serde_json::Value>::deserialize(deserializer)?;
    let Some(mut value) = value.filter(serde_json::Value::is_object) else {
        return Ok(None);
    };
    integral_reals_as_integers(&mut value);
    if let Ok(parsed) = serde_json::from_value(value.clone()) {
        return Ok(Some(parsed));
    }
    let serde_json::Value::Object(fields) = value else {
        return Ok(None);
    };
    let kept: serde_json::Map<String, serde_json::Value> = fields
        .into_iter()
        .filter(|(key, field)| {
            let single = serde_json::Value::Object(serde_json::Map::from_iter([(
                key.clone(),
                field.clone(),
            )]));
            serde_json::from_value::<T>(single).is_ok()
        })
        .collect();
    Ok(serde_json::from_value(serde_json::Value::Object(kept)).ok())
}
