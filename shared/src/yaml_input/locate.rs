//! Finding the line of a node given its path, for errors found after the YAML was turned
//! into JSON (which has no lines): the document is walked again along the path, and the
//! walk stops with an error at the node, which serde_yaml_ng marks with its position.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::PathSegment;

/// The walk's way of stopping at the node (never shown to anyone).
const FOUND: &str = "found the node";

pub(super) fn line_in_document(
    document: serde_yaml_ng::Deserializer<'_>,
    path: &[PathSegment],
) -> Option<usize> {
    match (Walk { path }).deserialize(document) {
        Err(error) if error.to_string().contains(FOUND) => {
            error.location().map(|location| location.line())
        }
        _ => None,
    }
}

struct Walk<'a> {
    path: &'a [PathSegment],
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        match self.path.first() {
            None => deserializer.deserialize_any(Stop),
            Some(PathSegment::Key(_)) => deserializer.deserialize_map(self),
            Some(PathSegment::Index(_)) => deserializer.deserialize_seq(self),
        }
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a mapping or sequence on the path")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((PathSegment::Key(wanted), rest)) = self.path.split_first() else {
            return Ok(());
        };
        while let Some(key) = map.next_key::<KeyText>()? {
            if key.0.as_deref() == Some(wanted.as_str()) {
                return map.next_value_seed(Walk { path: rest });
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some((PathSegment::Index(wanted), rest)) = self.path.split_first() else {
            return Ok(());
        };
        let mut index = 0;
        loop {
            if index == *wanted {
                return seq.next_element_seed(Walk { path: rest }).map(|_| ());
            }
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }
}

/// Fails on whatever node it is given, so that the error carries that node's position.
struct Stop;

impl<'de> Visitor<'de> for Stop {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(FOUND)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(E::custom(FOUND))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(E::custom(FOUND))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(E::custom(FOUND))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(E::custom(FOUND))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(E::custom(FOUND))
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(FOUND))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(de::Error::custom(FOUND))
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(de::Error::custom(FOUND))
    }
}

/// A mapping key as text (`None` for keys that are not scalars).
struct KeyText(Option<String>);

impl<'de> de::Deserialize<'de> for KeyText {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = KeyText;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<KeyText, E> {
        Ok(KeyText(Some(key.to_owned())))
    }
}
