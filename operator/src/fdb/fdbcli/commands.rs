//! fdbcli command texts and output parsing (pure functions).

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::{DatabaseConfiguration, StorageEngine};

use fdb_shared::validation::commands::is_wiggle_locality;

use super::super::admin::ExclusionTarget;
use super::super::locks::{escape_bytes, unescape_bytes};

/// A value the command builders refuse: it would not be one token of the command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// A configuration value outside the closed set FoundationDB knows.
    #[error("{field} {value:?} is not a value fdbcli knows")]
    UnknownValue {
        /// The configuration key.
        field: &'static str,
        /// The refused value.
        value: String,
    },
    /// An empty value where a token is needed.
    #[error("the {what} is empty")]
    Empty {
        /// What is empty.
        what: &'static str,
    },
    /// An address whose host is neither an IP address nor a DNS name.
    #[error("{address:?} is not a valid process address")]
    Address {
        /// The refused address.
        address: String,
    },
}

/// The value of an open enum as a command token, when it is one fdbcli knows.
fn known(field: &'static str, value: &str, is_known: bool) -> Result<String, CommandError> {
    if is_known {
        Ok(value.to_owned())
    } else {
        Err(CommandError::UnknownValue {
            field,
            value: value.to_owned(),
        })
    }
}

/// `configure [new] <redundancy> <engine> key=value ...` for the settings that are set.
/// Every value is typed: enums from their closed sets (unknown values are refused),
/// numbers, and the wiggle locality and regions escaped into one token.
pub fn configure(
    configuration: &DatabaseConfiguration,
    new_database: bool,
) -> Result<String, CommandError> {
    let mut parts: Vec<String> = vec!["configure".to_owned()];
    if new_database {
        parts.push("new".to_owned());
    }
    if let Some(mode) = &configuration.redundancy_mode {
        parts.push(known("redundancy_mode", mode.as_str(), mode.is_known())?);
    }
    if let Some(engine) = &configuration.storage_engine {
        parts.push(known(
            "storage_engine",
            engine.as_str(),
            engine.is_configurable() && *engine != StorageEngine::None,
        )?);
    }
    let counts = [
        ("usable_regions", configuration.usable_regions),
        ("logs", configuration.logs),
        ("proxies", configuration.proxies),
        ("commit_proxies", configuration.commit_proxies),
        ("grv_proxies", configuration.grv_proxies),
        ("resolvers", configuration.resolvers),
        ("log_routers", configuration.log_routers),
        ("remote_logs", configuration.remote_logs),
        (
            "perpetual_storage_wiggle",
            configuration.perpetual_storage_wiggle,
        ),
    ];
    for (key, value) in counts {
        if let Some(value) = value {
            parts.push(format!("{key}={value}"));
        }
    }
    if let Some(locality) = &configuration.perpetual_storage_wiggle_locality {
        let locality = known(
            "perpetual_storage_wiggle_locality",
            locality,
            is_wiggle_locality(locality),
        )?;
        parts.push(format!(
            "perpetual_storage_wiggle_locality={}",
            escape_bytes(locality.as_bytes())
        ));
    }
    if let Some(engine) = &configuration.perpetual_storage_wiggle_engine {
        let engine = known(
            "perpetual_storage_wiggle_engine",
            engine.as_str(),
            engine.is_configurable(),
        )?;
        parts.push(format!("perpetual_storage_wiggle_engine={engine}"));
    }
    if let Some(migration) = &configuration.storage_migration_type {
        let migration = known(
            "storage_migration_type",
            migration.as_str(),
            migration.is_configurable(),
        )?;
        parts.push(format!("storage_migration_type={migration}"));
    }
    if !configuration.regions.is_empty() {
        // The regions JSON has quotes and spaces: escaped, it stays one token.
        let json = serde_json::to_string(&configuration.regions).unwrap_or_default();
        parts.push(format!("regions={}", escape_bytes(json.as_bytes())));
    }
    Ok(parts.join(" "))
}

/// `exclude [no_wait] <targets>`.
pub fn exclude(targets: &[ExclusionTarget], blocking: bool) -> Result<String, CommandError> {
    let mut command = "exclude".to_owned();
    if !blocking {
        command.push_str(" no_wait");
    }
    push_targets(&mut command, targets)?;
    Ok(command)
}

/// `include <targets>`.
pub fn include(targets: &[ExclusionTarget]) -> Result<String, CommandError> {
    let mut command = "include".to_owned();
    push_targets(&mut command, targets)?;
    Ok(command)
}

/// Locality filters and IPs are typed and always one token; an address is checked.
fn push_targets(command: &mut String, targets: &[ExclusionTarget]) -> Result<(), CommandError> {
    for target in targets {
        if let ExclusionTarget::Address(address) = target {
            address_tokens(std::slice::from_ref(address))?;
        }
        command.push(' ');
        command.push_str(&target.to_string());
    }
    Ok(())
}

/// The addresses as command tokens, each checked to read back as itself (an IP address
/// or a DNS name and a port), so none can split the command.
fn address_tokens(addresses: &[ProcessAddress]) -> Result<String, CommandError> {
    let mut tokens = String::new();
    for address in addresses {
        if !address.is_well_formed() {
            return Err(CommandError::Address {
                address: address.to_string(),
            });
        }
        tokens.push(' ');
        tokens.push_str(&address.to_string());
    }
    Ok(tokens)
}

/// `coordinators <addresses>`.
pub fn coordinators(addresses: &[ProcessAddress]) -> Result<String, CommandError> {
    Ok(format!("coordinators{}", address_tokens(addresses)?))
}

/// `kill; kill <addresses>; sleep 5`: the first `kill` loads the process list, and the
/// sleep lets the kill requests reach the processes before fdbcli exits.
pub fn kill(addresses: &[ProcessAddress]) -> Result<String, CommandError> {
    Ok(format!("kill; kill{}; sleep 5", address_tokens(addresses)?))
}

/// `maintenance on <zone> <seconds>`: the zone escaped into one token; an empty zone
/// is refused (it would be no token, and the seconds would be read as the zone).
pub fn maintenance_on(zone: &str, duration_seconds: u64) -> Result<String, CommandError> {
    if zone.is_empty() {
        return Err(CommandError::Empty { what: "zone" });
    }
    Ok(format!(
        "maintenance on {} {duration_seconds}",
        escape_bytes(zone.as_bytes())
    ))
}

/// Reads one key of the system key space.
pub fn get_key(key: &[u8]) -> String {
    format!("option on ACCESS_SYSTEM_KEYS; get {}", escape_bytes(key))
}

/// Reads a range of the system key space (up to 10000 keys).
pub fn get_range(begin: &[u8], end: &[u8]) -> String {
    format!(
        "option on ACCESS_SYSTEM_KEYS; getrange {} {} 10000",
        escape_bytes(begin),
        escape_bytes(end)
    )
}

/// Sets and clears keys of the system key space in one transaction.
pub fn write_keys(set: &[(Vec<u8>, Vec<u8>)], clear: &[Vec<u8>]) -> String {
    let mut command = "writemode on; option on ACCESS_SYSTEM_KEYS; begin".to_owned();
    for (key, value) in set {
        command.push_str(&format!(
            "; set {} {}",
            escape_bytes(key),
            escape_bytes(value)
        ));
    }
    for key in clear {
        command.push_str(&format!("; clear {}", escape_bytes(key)));
    }
    command.push_str("; commit");
    command
}

/// Clears a range of the system key space.
pub fn clear_range(begin: &[u8], end: &[u8]) -> String {
    format!(
        "writemode on; option on ACCESS_SYSTEM_KEYS; clearrange {} {}",
        escape_bytes(begin),
        escape_bytes(end)
    )
}

/// A key and its value.
pub type KeyValue = (Vec<u8>, Vec<u8>);

/// Every `` `key' is `value' `` pair in fdbcli's `get`/`getrange` output, unescaped.
/// Lines of another shape (`Range limited to ...`, `` `key': not found ``) are skipped.
pub fn parse_key_values(output: &str) -> Result<Vec<KeyValue>, String> {
    let mut pairs = Vec::new();
    for line in output.lines() {
        let line = line.trim_end();
        let Some(rest) = line.strip_prefix('`') else {
            continue;
        };
        let Some((key, value)) = rest.split_once("' is `") else {
            continue;
        };
        let Some(value) = value.strip_suffix('\'') else {
            return Err(format!("line {line:?} has no closing quote"));
        };
        let key = unescape_bytes(key).map_err(|e| e.to_string())?;
        let value = unescape_bytes(value).map_err(|e| e.to_string())?;
        pairs.push((key, value));
    }
    Ok(pairs)
}

/// How a failed fdbcli run should be reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// fdbcli hit its own `--timeout`.
    Timeout,
    /// The database could not be reached.
    Unavailable,
    /// Anything else.
    Failed,
}

/// Classifies fdbcli's output of a failed run. A run that waited on an unreachable
/// database prints both its status line (`The database is unavailable; type `status'
/// for more information.`, after 5 s) and, at its `--timeout`, `Specified timeout
/// reached -- exiting...` (`fdbcli/fdbcli.actor.cpp`: `checkStatus`, `timeExit`): the
/// unavailability is the cause, so it is looked for first.
pub fn classify_failure(output: &str) -> FailureKind {
    let lower = output.to_ascii_lowercase();
    if lower.contains("unavailable")
        || lower.contains("could not communicate")
        || lower.contains("unable to communicate")
        || lower.contains("unreachable")
        || lower.contains("no cluster file")
    {
        FailureKind::Unavailable
    } else if lower.contains("timed out") || lower.contains("timeout reached") {
        FailureKind::Timeout
    } else {
        FailureKind::Failed
    }
}

/// Whether fdbcli reported an error on its standard output despite exiting 0.
pub fn reports_error(stdout: &str) -> bool {
    stdout
        .lines()
        .any(|line| line.trim_start().starts_with("ERROR:"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdb_shared::api::RedundancyMode;

    #[test]
    fn configure_commands() {
        let configuration = DatabaseConfiguration {
            redundancy_mode: Some(RedundancyMode::Double),
            storage_engine: Some(StorageEngine::Ssd2),
            logs: Some(3),
            commit_proxies: Some(2),
            ..Default::default()
        };
        assert_eq!(
            configure(&configuration, true).unwrap(),
            "configure new double ssd-2 logs=3 commit_proxies=2"
        );
        let change = DatabaseConfiguration {
            resolvers: Some(2),
            ..Default::default()
        };
        assert_eq!(configure(&change, false).unwrap(), "configure resolvers=2");
    }

    #[test]
    fn exclusion_kill_and_coordinator_commands() {
        let address = ProcessAddress::parse("10.0.0.1:4501:tls").unwrap();
        let targets = [
            ExclusionTarget::instance_id("storage-1").unwrap(),
            ExclusionTarget::Address(address.clone()),
        ];
        assert_eq!(
            exclude(&targets, false).unwrap(),
            "exclude no_wait locality_instance_id:storage-1 10.0.0.1:4501:tls"
        );
        assert_eq!(
            exclude(&targets[..1], true).unwrap(),
            "exclude locality_instance_id:storage-1"
        );
        assert_eq!(
            include(&targets[..1]).unwrap(),
            "include locality_instance_id:storage-1"
        );
        assert_eq!(
            kill(std::slice::from_ref(&address)).unwrap(),
            "kill; kill 10.0.0.1:4501:tls; sleep 5"
        );
        assert_eq!(
            coordinators(&[address]).unwrap(),
            "coordinators 10.0.0.1:4501:tls"
        );
        assert_eq!(
            maintenance_on("zone a", 60).unwrap(),
            "maintenance on zone\\x20a 60"
        );
        assert!(maintenance_on("", 60).is_err());
    }

    /// The attack: `; writemode on; clearrange "" \xff` in a spec value.
    const ATTACK: &str = "x; writemode on; clearrange \"\" \\xff";

    #[test]
    fn configure_refuses_values_outside_the_closed_sets() {
        use fdb_shared::api::StorageMigrationType;
        let typed = DatabaseConfiguration {
            storage_migration_type: Some(StorageMigrationType::Gradual),
            perpetual_storage_wiggle_locality: Some("zoneid:z1".into()),
            ..Default::default()
        };
        assert_eq!(
            configure(&typed, false).unwrap(),
            "configure perpetual_storage_wiggle_locality=zoneid:z1 storage_migration_type=gradual"
        );
        let migration = DatabaseConfiguration {
            storage_migration_type: Some(StorageMigrationType::from(ATTACK)),
            ..Default::default()
        };
        assert!(matches!(
            configure(&migration, false),
            Err(CommandError::UnknownValue {
                field: "storage_migration_type",
                ..
            })
        ));
        let mode = DatabaseConfiguration {
            redundancy_mode: Some(RedundancyMode::from(ATTACK)),
            ..Default::default()
        };
        assert!(configure(&mode, true).is_err());
        let engine = DatabaseConfiguration {
            storage_engine: Some(StorageEngine::from(ATTACK)),
            ..Default::default()
        };
        assert!(configure(&engine, true).is_err());
        let wiggle = DatabaseConfiguration {
            perpetual_storage_wiggle_locality: Some(format!("zoneid:{ATTACK}")),
            ..Default::default()
        };
        assert!(configure(&wiggle, false).is_err());
    }

    #[test]
    fn configure_refuses_names_foundationdb_only_reports() {
        for engine in ["custom", "unknown", "", "none", "ssd-rocksdb-experimental"] {
            let storage = DatabaseConfiguration {
                storage_engine: Some(StorageEngine::from(engine)),
                ..Default::default()
            };
            assert!(
                configure(&storage, false).is_err(),
                "storage_engine {engine:?}"
            );
        }
        for engine in ["custom", "unknown", ""] {
            let wiggle = DatabaseConfiguration {
                perpetual_storage_wiggle_engine: Some(StorageEngine::from(engine)),
                ..Default::default()
            };
            assert!(
                configure(&wiggle, false).is_err(),
                "wiggle engine {engine:?}"
            );
        }
        let none = DatabaseConfiguration {
            perpetual_storage_wiggle_engine: Some(StorageEngine::None),
            ..Default::default()
        };
        assert_eq!(
            configure(&none, false).unwrap(),
            "configure perpetual_storage_wiggle_engine=none"
        );
        let empty = DatabaseConfiguration {
            storage_migration_type: Some(fdb_shared::api::StorageMigrationType::Unset),
            ..Default::default()
        };
        assert!(configure(&empty, false).is_err());
    }

    #[test]
    fn addresses_with_hostile_hosts_are_refused() {
        // `routing.dnsDomain` ends up in the host of a coordinator's DNS address.
        let hostile = ProcessAddress::new(format!("pod.svc.{ATTACK}"), 4501);
        assert!(matches!(
            coordinators(std::slice::from_ref(&hostile)),
            Err(CommandError::Address { .. })
        ));
        assert!(kill(std::slice::from_ref(&hostile)).is_err());
        assert!(include(&[ExclusionTarget::Address(hostile.clone())]).is_err());
        assert!(exclude(&[ExclusionTarget::Address(hostile)], false).is_err());
        assert!(ExclusionTarget::instance_id(ATTACK).is_err());
        let fine = ProcessAddress::parse("pod.sample.default.svc.cluster.local:4501").unwrap();
        assert_eq!(
            coordinators(&[fine]).unwrap(),
            "coordinators pod.sample.default.svc.cluster.local:4501"
        );
        assert_eq!(
            maintenance_on(ATTACK, 60).unwrap(),
            "maintenance on x\\x3b\\x20writemode\\x20on\\x3b\\x20clearrange\\x20\\x22\\x22\\x20\\x5cxff 60"
        );
    }

    #[test]
    fn parses_get_and_getrange_output() {
        let output = "Range limited to 10000 keys\n`\\xff\\x02/x/a' is `a'\n`\\xff\\x02/x/b\\\\' is `it's'\n";
        let pairs = parse_key_values(output).unwrap();
        assert_eq!(pairs[0], (b"\xff\x02/x/a".to_vec(), b"a".to_vec()));
        assert_eq!(pairs[1], (b"\xff\x02/x/b\\".to_vec(), b"it's".to_vec()));
        assert!(
            parse_key_values("`\\xff/lock': not found\n")
                .unwrap()
                .is_empty()
        );
        assert!(parse_key_values("`k' is `unterminated\n").is_err());
    }

    #[test]
    fn failure_classification() {
        assert_eq!(
            classify_failure("Specified timeout reached -- Failed to get status"),
            FailureKind::Timeout
        );
        assert_eq!(
            classify_failure("ERROR: The database is unavailable"),
            FailureKind::Unavailable
        );
        // A run that waited on an unavailable database to its timeout.
        assert_eq!(
            classify_failure(
                "\nWARNING: Long delay (Ctrl-C to interrupt)\n\nThe database is unavailable; type `status' for more information.\n\nSpecified timeout reached -- exiting...\n"
            ),
            FailureKind::Unavailable
        );
        assert_eq!(
            classify_failure("ERROR: No such address"),
            FailureKind::Failed
        );
        assert!(reports_error("foo\nERROR: bad\n"));
        assert!(!reports_error("all good"));
    }
}
