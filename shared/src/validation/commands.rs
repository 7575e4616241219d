//! Checks of the cluster spec values that reach an fdbcli command (`configure`), and the
//! grammars the operator's command builders enforce again on their typed values: a
//! value that passes here is always one token of an `fdbcli --exec` command.

use crate::api::cluster::FoundationDBClusterSpec;
use crate::api::database_configuration::StorageMigrationType;

/// The longest locality key or value this operator writes into a command (FoundationDB
/// keeps localities as short strings; process group IDs stay far below this).
pub const MAX_LOCALITY_LENGTH: usize = 255;

/// Whether `key` may be the key of a locality filter (`locality_<key>:<value>`):
/// lowercase letters, digits and `_`, as FoundationDB's locality keys are written.
pub fn is_locality_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_LOCALITY_LENGTH
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Whether `value` may be the value of a locality filter, e.g. a process group ID:
/// letters, digits, `-`, `_` and `.`. Nothing that fdbcli reads as a separator (`;`,
/// whitespace), a quote or an escape can appear.
pub fn is_locality_value(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= MAX_LOCALITY_LENGTH
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

/// Whether `text` is a valid `perpetual_storage_wiggle_locality`: `0` (no filter) or
/// `<key>:<value>` pairs separated by `;` (FoundationDB 7.3 accepts several).
pub fn is_wiggle_locality(text: &str) -> bool {
    text == "0"
        || text.split(';').all(|pair| {
            pair.split_once(':')
                .is_some_and(|(key, value)| is_locality_key(key) && is_locality_value(value))
        })
}

/// Errors of the spec values that become fdbcli arguments, each naming its field.
pub fn command_value_errors(spec: &FoundationDBClusterSpec) -> Vec<String> {
    let field = "spec.databaseConfiguration";
    let config = &spec.database_configuration;
    let mut errors = Vec::new();
    if let Some(migration) = config
        .storage_migration_type
        .as_ref()
        .filter(|m| !m.is_known())
    {
        errors.push(format!(
            "{field}.storage_migration_type: {:?} is not one of {}",
            migration.as_str(),
            StorageMigrationType::known_names()
        ));
    }
    if let Some(locality) = config
        .perpetual_storage_wiggle_locality
        .as_deref()
        .filter(|l| !is_wiggle_locality(l))
    {
        errors.push(format!(
            "{field}.perpetual_storage_wiggle_locality: {locality:?} is neither 0 nor <key>:<value> pairs separated by `;` (keys: lowercase letters, digits and `_`; values: letters, digits, `-`, `_` and `.`)"
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locality_grammar_refuses_separators_quotes_and_spaces() {
        assert!(is_locality_value("sample-storage-1"));
        assert!(is_locality_value("a.b_c"));
        for bad in [
            "", "a;b", "a b", "a\nb", "a\"b", "a'b", "a\\b", "é", "a:b", "a\tb",
        ] {
            assert!(!is_locality_value(bad), "{bad:?}");
        }
        assert!(!is_locality_value(&"a".repeat(MAX_LOCALITY_LENGTH + 1)));
        assert!(is_locality_key("instance_id"));
        assert!(!is_locality_key("Instance"));
        assert!(!is_locality_key(""));
    }

    #[test]
    fn wiggle_locality_grammar() {
        for good in ["0", "zoneid:z1", "zoneid:z1;data_hall:h-2"] {
            assert!(is_wiggle_locality(good), "{good:?}");
        }
        for bad in [
            "",
            "zoneid",
            "zoneid:",
            ":z",
            "zoneid:z 1",
            "zoneid:z;",
            "x:y\"; kill",
        ] {
            assert!(!is_wiggle_locality(bad), "{bad:?}");
        }
    }
}
