//! String enums with a closed set of known values that still accept unknown values.
//!
//! The API server rejects values outside the schema's `enum`, but manifests read from files
//! (`fdb-operator explain`) or written by newer tools may still carry them; keeping them as
//! `Other(text)` lets validation name the field and the value instead of failing the whole
//! document.

/// Declares a string enum with a closed set of known values that still deserializes
/// unknown values (kept as `Other`), so validation can name the field and the value
/// instead of failing the whole document.
macro_rules! open_string_enum {
    (
        $(#[$meta:meta])*
        $name:ident { $( $(#[$vmeta:meta])* $variant:ident => $text:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this operator does not know; rejected by validation.
            Other(String),
        }

        impl $name {
            /// Every known value, in FoundationDB's spelling.
            pub const KNOWN: &'static [&'static str] = &[$($text),+];

            /// The known values for an error message: comma-separated, the empty value
            /// (which some enums accept as "not set") left out.
            pub fn known_names() -> String {
                Self::KNOWN
                    .iter()
                    .filter(|name| !name.is_empty())
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            }

            /// FoundationDB's spelling of the value.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $text, )+
                    Self::Other(text) => text,
                }
            }

            /// Whether the value is one this operator knows.
            pub fn is_known(&self) -> bool {
                !matches!(self, Self::Other(_))
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                match text {
                    $( $text => Self::$variant, )+
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <String as ::serde::Deserialize>::deserialize(deserializer)?;
                Ok(Self::from(text.as_str()))
            }
        }

        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(stringify!($name))
            }

            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({ "type": "string", "enum": Self::KNOWN })
            }
        }
    };
}

pub(crate) use open_string_enum;
