//! `configure [new] TOKEN...` read into a typed configuration, as FoundationDB's
//! `ManagementAPI` reads the tokens (`fdbclient/ManagementAPI.actor.cpp`
//! `configForToken`): a bare word is a redundancy mode or a storage engine, `key=value`
//! sets the configuration key of that name. Keys are matched generically against the
//! fields of [`DatabaseConfiguration`] by name, so a field added there is understood
//! here without a change.

use fdb_shared::api::{DatabaseConfiguration, RedundancyMode, StorageEngine};
use serde_json::{Map, Value};

use super::line::text;

/// The usage fdbcli prints for a `configure` it cannot read (`printUsage`).
pub const USAGE: &str = "Usage: configure [new|tss] <single|double|triple|three_data_hall|three_datacenter|ssd|memory|memory-radixtree-beta|commit_proxies=<COMMIT_PROXIES>|grv_proxies=<GRV_PROXIES>|logs=<LOGS>|resolvers=<RESOLVERS>>*|count=<TSS_COUNT>|perpetual_storage_wiggle=<WIGGLE_SPEED>|perpetual_storage_wiggle_locality=<<LOCALITY_KEY>:<LOCALITY_VALUE>|0>|storage_migration_type={disabled|gradual|aggressive}\n";

/// A read `configure` command.
#[derive(Debug, Clone, PartialEq)]
pub struct Configure {
    /// `configure new`.
    pub new_database: bool,
    /// The settings it names.
    pub configuration: DatabaseConfiguration,
}

/// Keys whose value is always text, even when it looks like a number.
const TEXT_KEYS: [&str; 3] = [
    "perpetual_storage_wiggle_locality",
    "perpetual_storage_wiggle_engine",
    "storage_migration_type",
];

/// Reads the tokens after `configure`; `None` when fdbcli would print its usage (no
/// option, an unknown word or key, a value of the wrong kind).
pub fn parse(tokens: &[Vec<u8>]) -> Option<Configure> {
    let mut tokens: Vec<String> = tokens.iter().map(|t| text(t)).collect();
    let new_database = tokens.first().is_some_and(|t| t == "new");
    if new_database {
        tokens.remove(0);
    }
    if tokens.is_empty() {
        return None;
    }
    let mut fields = Map::new();
    for token in &tokens {
        let (key, value) = match token.split_once('=') {
            Some((key, value)) => (key.to_owned(), field_value(key, value)?),
            None => bare_word(token)?,
        };
        if fields.insert(key, value).is_some() {
            // Two tokens setting one key: CONFLICTING_OPTIONS.
            return None;
        }
    }
    let configuration: DatabaseConfiguration =
        serde_json::from_value(Value::Object(fields.clone())).ok()?;
    // A key the configuration does not have would be dropped silently by serde: it is
    // an unknown option to FoundationDB.
    let known = serde_json::to_value(&configuration).ok()?;
    if fields.keys().any(|key| known.get(key).is_none()) {
        return None;
    }
    Some(Configure {
        new_database,
        configuration,
    })
}

/// The value of `key=value` as the configuration field holds it.
fn field_value(key: &str, value: &str) -> Option<Value> {
    if key == "regions" {
        return serde_json::from_str(value).ok();
    }
    if TEXT_KEYS.contains(&key) {
        return Some(Value::String(value.to_owned()));
    }
    match value.parse::<i64>() {
        Ok(number) => Some(Value::from(number)),
        Err(_) => Some(Value::String(value.to_owned())),
    }
}

/// A bare word: a redundancy mode or a storage engine.
fn bare_word(word: &str) -> Option<(String, Value)> {
    if RedundancyMode::from(word).is_known() {
        return Some(("redundancy_mode".to_owned(), Value::String(word.to_owned())));
    }
    let engine = StorageEngine::from(word);
    if engine.is_configurable() && engine != StorageEngine::None {
        return Some(("storage_engine".to_owned(), Value::String(word.to_owned())));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fdbcli::line::parse_line;
    use fdb_operator::fdb::fdbcli::commands;
    use fdb_shared::api::StorageMigrationType;
    use fdb_shared::api::database_configuration::{DataCenter, Region};

    /// The builder's text read back gives the configuration it was built from.
    fn round_trip(configuration: &DatabaseConfiguration, new_database: bool) {
        let text = commands::configure(configuration, new_database).unwrap();
        let tokens = parse_line(&text).unwrap().remove(0);
        assert_eq!(tokens[0], b"configure");
        let parsed = parse(&tokens[1..]).unwrap_or_else(|| panic!("{text}"));
        assert_eq!(parsed.new_database, new_database, "{text}");
        assert_eq!(&parsed.configuration, configuration, "{text}");
    }

    #[test]
    fn every_setting_the_builder_writes_reads_back() {
        round_trip(
            &DatabaseConfiguration {
                redundancy_mode: Some(RedundancyMode::Triple),
                storage_engine: Some(StorageEngine::from("ssd-redwood-1-experimental")),
                usable_regions: Some(2),
                logs: Some(3),
                proxies: Some(3),
                commit_proxies: Some(2),
                grv_proxies: Some(1),
                resolvers: Some(1),
                log_routers: Some(4),
                remote_logs: Some(5),
                perpetual_storage_wiggle: Some(1),
                perpetual_storage_wiggle_locality: Some("zoneid:z-1".to_owned()),
                perpetual_storage_wiggle_engine: Some(StorageEngine::None),
                storage_migration_type: Some(StorageMigrationType::Gradual),
                regions: vec![Region {
                    datacenters: vec![
                        DataCenter {
                            id: "dc1".into(),
                            priority: Some(1),
                            satellite: None,
                        },
                        DataCenter {
                            id: "dc2".into(),
                            priority: Some(1),
                            satellite: Some(1),
                        },
                    ],
                    satellite_logs: Some(3),
                    satellite_redundancy_mode: Some("one_satellite_double".into()),
                }],
                ..Default::default()
            },
            true,
        );
        round_trip(
            &DatabaseConfiguration {
                resolvers: Some(2),
                ..Default::default()
            },
            false,
        );
    }

    #[test]
    fn words_and_keys_fdbcli_does_not_know_print_the_usage() {
        let tokens = |text: &str| parse_line(text).unwrap().remove(0);
        assert!(parse(&tokens("")).is_none());
        assert!(parse(&tokens("new")).is_none());
        assert!(parse(&tokens("quadruple")).is_none());
        assert!(parse(&tokens("frobs=3")).is_none());
        assert!(parse(&tokens("logs=three")).is_none());
        assert!(parse(&tokens("logs=3 logs=4")).is_none());
    }
}
