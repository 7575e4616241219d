//! Values that travel as their text form in JSON and YAML (versions, addresses,
//! connection strings): serialized with `Display`, deserialized with `FromStr`, so the
//! wire form and the parser's error messages are the ones users see everywhere else.

/// Implements `Serialize` (via `Display`) and `Deserialize` (via `FromStr`) for a type.
macro_rules! serde_as_text {
    ($type:ty) => {
        impl serde::Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                text.parse()
                    .map_err(|error: <$type as std::str::FromStr>::Err| {
                        serde::de::Error::custom($crate::error_chain::ErrorChain(&error))
                    })
            }
        }
    };
}

pub(crate) use serde_as_text;
