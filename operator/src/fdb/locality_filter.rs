//! A locality exclusion target, `locality_<key>:<value>`: only [`LocalityFilter::new`]
//! makes one, and it refuses anything but the characters a locality (a process group
//! ID) may have, so an `exclude`/`include` command built from it cannot carry a `;`,
//! whitespace or a quote even if the spec's validation was skipped.

use std::fmt;

use fdb_shared::validation::commands::{is_locality_key, is_locality_value};

/// A validated locality filter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalityFilter {
    key: String,
    value: String,
}

/// Why a locality filter cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocalityFilterError {
    /// The key is not a locality key.
    #[error("{key:?} is not a locality key (lowercase letters, digits and `_`)")]
    Key {
        /// The refused key.
        key: String,
    },
    /// The value has characters a locality may not have.
    #[error("{value:?} is not a valid locality value (letters, digits, `-`, `_` and `.`)")]
    Value {
        /// The refused value.
        value: String,
    },
    /// The text is not of the form `locality_<key>:<value>`.
    #[error("{text:?} is not of the form locality_<key>:<value>")]
    Form {
        /// The refused text.
        text: String,
    },
}

impl LocalityFilter {
    /// The filter `locality_<key>:<value>`.
    pub fn new(key: &str, value: &str) -> Result<Self, LocalityFilterError> {
        if !is_locality_key(key) {
            return Err(LocalityFilterError::Key {
                key: key.to_owned(),
            });
        }
        if !is_locality_value(value) {
            return Err(LocalityFilterError::Value {
                value: value.to_owned(),
            });
        }
        Ok(Self {
            key: key.to_owned(),
            value: value.to_owned(),
        })
    }

    /// The filter of a process group: `locality_instance_id:<id>`.
    pub fn instance_id(process_group_id: &str) -> Result<Self, LocalityFilterError> {
        Self::new("instance_id", process_group_id)
    }

    /// Parses `locality_<key>:<value>` (as [`fmt::Display`] writes it).
    pub fn parse(text: &str) -> Result<Self, LocalityFilterError> {
        let (key, value) = text
            .strip_prefix("locality_")
            .and_then(|rest| rest.split_once(':'))
            .ok_or_else(|| LocalityFilterError::Form {
                text: text.to_owned(),
            })?;
        Self::new(key, value)
    }

    /// The locality key (`instance_id`, `zoneid`, ...).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The locality value.
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Display for LocalityFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "locality_{}:{}", self.key, self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_anything_that_could_break_a_command() {
        let filter = LocalityFilter::instance_id("sample-storage-1").unwrap();
        assert_eq!(filter.to_string(), "locality_instance_id:sample-storage-1");
        assert_eq!(LocalityFilter::parse(&filter.to_string()), Ok(filter));
        for hostile in [
            "x; writemode on; clearrange \"\" \\xff",
            "a b",
            "a\nb",
            "a'b",
            "a\"b",
            "",
            "é",
        ] {
            assert!(
                matches!(
                    LocalityFilter::instance_id(hostile),
                    Err(LocalityFilterError::Value { .. })
                ),
                "{hostile:?}"
            );
        }
        assert!(LocalityFilter::new("Zone ID", "z").is_err());
        assert!(LocalityFilter::parse("instance_id:x").is_err());
        assert!(LocalityFilter::parse("locality_instance_id:a;b").is_err());
    }
}
