//! Deserializers that never fail on a bad value: a document with one odd field must
//! still parse.

use std::str::FromStr;

use serde::{Deserialize, Deserializer};

/// A string parsed with `FromStr`; `None` when absent, not a string, or unparsable.
pub(crate) fn from_str<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
{
    let value = Option::<serde_json::Value>::deserialize(deserializer)?;
    Ok(value.and_then(|value| value.as_str().and_then(|text| text.parse().ok())))
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
pub(crate) fn or_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned + Default,
{
    let value = Option::<serde_json::Value>::deserialize(deserializer)?;
    Ok(value
        .and_then(|value| serde_json::from_value(value).ok())
        .unwrap_or_default())
}
