//! fdbcli command texts and output parsing (pure functions).

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::DatabaseConfiguration;

use super::super::admin::ExclusionTarget;
use super::super::locks::{escape_bytes, unescape_bytes};

/// `configure [new] <redundancy> <engine> key=value ...` for the settings that are set.
pub fn configure(configuration: &DatabaseConfiguration, new_database: bool) -> String {
    let mut parts: Vec<String> = vec!["configure".to_owned()];
    if new_database {
        parts.push("new".to_owned());
    }
    if let Some(mode) = &configuration.redundancy_mode {
        parts.push(mode.to_string());
    }
    if let Some(engine) = &configuration.storage_engine {
        parts.push(engine.to_string());
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
        parts.push(format!(
            "perpetual_storage_wiggle_locality={}",
            escape_bytes(locality.as_bytes())
        ));
    }
    if let Some(engine) = &configuration.perpetual_storage_wiggle_engine {
        parts.push(format!("perpetual_storage_wiggle_engine={engine}"));
    }
    if let Some(migration) = &configuration.storage_migration_type {
        parts.push(format!("storage_migration_type={migration}"));
    }
    if !configuration.regions.is_empty() {
        // The regions JSON has quotes and spaces: escaped, it stays one token.
        let json = serde_json::to_string(&configuration.regions).unwrap_or_default();
        parts.push(format!("regions={}", escape_bytes(json.as_bytes())));
    }
    parts.join(" ")
}

/// `exclude [no_wait] <targets>`.
pub fn exclude(targets: &[ExclusionTarget], blocking: bool) -> String {
    let mut command = "exclude".to_owned();
    if !blocking {
        command.push_str(" no_wait");
    }
    push_targets(&mut command, targets);
    command
}

/// `include <targets>`.
pub fn include(targets: &[ExclusionTarget]) -> String {
    let mut command = "include".to_owned();
    push_targets(&mut command, targets);
    command
}

fn push_targets(command: &mut String, targets: &[ExclusionTarget]) {
    for target in targets {
        command.push(' ');
        command.push_str(&target.to_string());
    }
}

/// `coordinators <addresses>`.
pub fn coordinators(addresses: &[ProcessAddress]) -> String {
    let mut command = "coordinators".to_owned();
    for address in addresses {
        command.push(' ');
        command.push_str(&address.to_string());
    }
    command
}

/// `kill; kill <addresses>; sleep 5`: the first `kill` loads the process list, and the
/// sleep lets the kill requests reach the processes before fdbcli exits.
pub fn kill(addresses: &[ProcessAddress]) -> String {
    let mut command = "kill; kill".to_owned();
    for address in addresses {
        command.push(' ');
        command.push_str(&address.to_string());
    }
    command.push_str("; sleep 5");
    command
}

/// `maintenance on <zone> <seconds>`.
pub fn maintenance_on(zone: &str, duration_seconds: u64) -> String {
    format!(
        "maintenance on {} {duration_seconds}",
        escape_bytes(zone.as_bytes())
    )
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

/// Classifies fdbcli's output of a failed run.
pub fn classify_failure(output: &str) -> FailureKind {
    let lower = output.to_ascii_lowercase();
    if lower.contains("timed out") || lower.contains("timeout reached") {
        FailureKind::Timeout
    } else if lower.contains("unavailable")
        || lower.contains("could not communicate")
        || lower.contains("unable to communicate")
        || lower.contains("unreachable")
        || lower.contains("no cluster file")
    {
        FailureKind::Unavailable
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
    use fdb_shared::api::{RedundancyMode, StorageEngine};

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
            configure(&configuration, true),
            "configure new double ssd-2 logs=3 commit_proxies=2"
        );
        let change = DatabaseConfiguration {
            resolvers: Some(2),
            ..Default::default()
        };
        assert_eq!(configure(&change, false), "configure resolvers=2");
    }

    #[test]
    fn exclusion_kill_and_coordinator_commands() {
        let address = ProcessAddress::parse("10.0.0.1:4501:tls").unwrap();
        let targets = [
            ExclusionTarget::instance_id("storage-1"),
            ExclusionTarget::Address(address.clone()),
        ];
        assert_eq!(
            exclude(&targets, false),
            "exclude no_wait locality_instance_id:storage-1 10.0.0.1:4501:tls"
        );
        assert_eq!(
            exclude(&targets[..1], true),
            "exclude locality_instance_id:storage-1"
        );
        assert_eq!(
            include(&targets[..1]),
            "include locality_instance_id:storage-1"
        );
        assert_eq!(
            kill(std::slice::from_ref(&address)),
            "kill; kill 10.0.0.1:4501:tls; sleep 5"
        );
        assert_eq!(coordinators(&[address]), "coordinators 10.0.0.1:4501:tls");
        assert_eq!(maintenance_on("zone a", 60), "maintenance on zone\\x20a 60");
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
        assert_eq!(
            classify_failure("ERROR: No such address"),
            FailureKind::Failed
        );
        assert!(reports_error("foo\nERROR: bad\n"));
        assert!(!reports_error("all good"));
    }
}
