//! Lenient deserializers that read each value once (issue 37: capturing a subtree's text
//! and parsing it again, as `or_default` in `lenient.rs` does, was most of the parse of a
//! 1000-process `status json`). A value of another shape than the field's is read and
//! dropped, so the document goes on: a field takes its default, a list or map entry is
//! left out. Only a document that is not JSON fails.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// A JSON value as far as a scalar field reads it.
#[derive(Debug)]
pub(crate) enum Scalar {
    /// A string.
    Text(String),
    /// `true` or `false`.
    Flag(bool),
    /// A negative integer.
    Signed(i64),
    /// A non-negative integer.
    Unsigned(u64),
    /// A number with a fraction or an exponent.
    Real(f64),
    /// `null`, a list or an object (read and dropped).
    Other,
}

impl Scalar {
    /// An integer: a whole real counts (FoundationDB's schema treats integers and reals
    /// as one type, `schemaMatch` in fdbclient/ManagementAPI.actor.cpp); a fraction or a
    /// number beyond `i64` does not.
    pub(crate) fn integer(&self) -> Option<i64> {
        match *self {
            Scalar::Signed(value) => Some(value),
            Scalar::Unsigned(value) => i64::try_from(value).ok(),
            Scalar::Real(value) if value.fract() == 0.0 && value.abs() < 9.0e18 => {
                Some(value as i64)
            }
            _ => None,
        }
    }

    /// A number as a real.
    fn real(&self) -> Option<f64> {
        match *self {
            Scalar::Signed(value) => Some(value as f64),
            Scalar::Unsigned(value) => Some(value as f64),
            Scalar::Real(value) => Some(value),
            _ => None,
        }
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Scalar, E> {
        Ok(Scalar::Flag(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Scalar, E> {
        Ok(Scalar::Signed(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Scalar, E> {
        Ok(Scalar::Unsigned(value))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Scalar, E> {
        Ok(Scalar::Real(value))
    }

    fn visit_str<E>(self, value: &str) -> Result<Scalar, E> {
        Ok(Scalar::Text(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Scalar, E> {
        Ok(Scalar::Text(value))
    }

    fn visit_unit<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }

    fn visit_none<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Scalar, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Scalar, A::Error> {
        drain_seq(seq)?;
        Ok(Scalar::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Scalar, A::Error> {
        drain_map(map)?;
        Ok(Scalar::Other)
    }
}

/// Reads the rest of a list (JSON parsers refuse a list left half read).
fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Reads the rest of an object.
fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Any value, as a [`Scalar`].
pub(crate) fn scalar<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Scalar, D::Error> {
    deserializer.deserialize_any(ScalarVisitor)
}

/// A string; `None` when absent or of another type.
pub(crate) fn string<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    Ok(match scalar(deserializer)? {
        Scalar::Text(text) => Some(text),
        _ => None,
    })
}

/// A string; empty when absent or of another type.
pub(crate) fn text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(string(deserializer)?.unwrap_or_default())
}

/// A boolean; `false` when absent or of another type.
pub(crate) fn flag<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    Ok(matches!(scalar(deserializer)?, Scalar::Flag(true)))
}

/// A number; `None` when absent or of another type.
pub(crate) fn real<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<f64>, D::Error> {
    Ok(scalar(deserializer)?.real())
}

/// An object read as `T`; `None` for a value of another type.
struct ObjectSeed<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for ObjectSeed<T> {
    type Value = Option<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<T>, D::Error> {
        anything_else_is_empty(deserializer, ObjectVisitor(PhantomData))
    }
}

/// An object as `Some(T)`, a list as `None` (scalars: see [`OrEmpty`]).
struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = Option<T>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<T>, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Some)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Option<T>, A::Error> {
        drain_seq(seq)?;
        Ok(None)
    }
}

/// An object whose fields are all lenient, read in place; `T::default()` for a value of
/// another type.
pub(crate) fn object<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(ObjectSeed::<T>(PhantomData)
        .deserialize(deserializer)?
        .unwrap_or_default())
}

/// A list of objects whose fields are all lenient; an entry that is not an object is
/// left out, and a value that is not a list is an empty one.
pub(crate) fn objects<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Entries<T>(PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for Entries<T> {
        type Value = Vec<T>;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("a list of JSON objects")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut entries = Vec::with_capacity(seq.size_hint().unwrap_or(0));
            while let Some(entry) = seq.next_element_seed(ObjectSeed::<T>(PhantomData))? {
                entries.extend(entry);
            }
            Ok(entries)
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Vec<T>, A::Error> {
            drain_map(map)?;
            Ok(Vec::new())
        }
    }
    anything_else_is_empty(deserializer, Entries(PhantomData))
}

/// A map of objects whose fields are all lenient, by key; an entry that is not an object
/// is left out, and a value that is not an object is an empty map.
pub(crate) fn objects_by_key<'de, D, T>(deserializer: D) -> Result<BTreeMap<String, T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Entries<T>(PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for Entries<T> {
        type Value = BTreeMap<String, T>;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("a JSON object of objects")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut entries = BTreeMap::new();
            while let Some(key) = map.next_key::<String>()? {
                if let Some(entry) = map.next_value_seed(ObjectSeed::<T>(PhantomData))? {
                    entries.insert(key, entry);
                }
            }
            Ok(entries)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            drain_seq(seq)?;
            Ok(BTreeMap::new())
        }
    }
    anything_else_is_empty(deserializer, Entries(PhantomData))
}

/// Runs `visitor` on a list or an object; any other value is read as a [`Scalar`] and
/// gives the collection's default.
fn anything_else_is_empty<'de, D, V>(deserializer: D, visitor: V) -> Result<V::Value, D::Error>
where
    D: Deserializer<'de>,
    V: Visitor<'de>,
    V::Value: Default,
{
    deserializer.deserialize_any(OrEmpty(visitor))
}

/// A collection visitor that also takes scalars (as an empty collection).
struct OrEmpty<V>(V);

impl<'de, V> Visitor<'de> for OrEmpty<V>
where
    V: Visitor<'de>,
    V::Value: Default,
{
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(formatter)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(map)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_bool<E>(self, _: bool) -> Result<V::Value, E> {
        Ok(V::Value::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<V::Value, E> {
        Ok(V::Value::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<V::Value, E> {
        Ok(V::Value::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<V::Value, E> {
        Ok(V::Value::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<V::Value, E> {
        Ok(V::Value::default())
    }

    fn visit_unit<E>(self) -> Result<V::Value, E> {
        Ok(V::Value::default())
    }

    fn visit_none<E>(self) -> Result<V::Value, E> {
        Ok(V::Value::default())
    }
}

/// A string field read leniently, for hand-written visitors: `None` when of another type.
#[derive(Debug, Default)]
pub(crate) struct LenientString(pub Option<String>);

impl<'de> Deserialize<'de> for LenientString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        string(deserializer).map(LenientString)
    }
}

#[cfg(test)]
#[path = "lenient_shapes_tests.rs"]
mod tests;
