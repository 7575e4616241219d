//! The database configuration the operator wants, and the `configure` commands that get
//! the database there.

use crate::api::cluster::FoundationDBClusterSpec;
use crate::api::database_configuration::{
    DatabaseConfiguration, RedundancyMode, StorageEngine, StorageMigrationType,
};
use crate::version::FdbVersion;

use super::counts::role_counts;

/// The desired database configuration: the spec's values with the defaults of the
/// redundancy mode filled in (redundancy `double`, engine `ssd-2`, `usable_regions` 1,
/// logs, proxies or commit/GRV proxies, resolvers, and remote roles with several regions).
pub fn desired_database_configuration(spec: &FoundationDBClusterSpec) -> DatabaseConfiguration {
    let mut desired = spec.database_configuration.clone();
    let roles = role_counts(&desired);
    desired.redundancy_mode = Some(spec.redundancy_mode());
    desired.storage_engine = Some(spec.storage_engine());
    desired.usable_regions = Some(spec.usable_regions());
    desired.logs = Some(roles.logs);
    desired.resolvers = Some(roles.resolvers);
    let positive = |n: i32| (n > 0).then_some(n);
    desired.proxies = positive(roles.proxies);
    desired.commit_proxies = positive(roles.commit_proxies);
    desired.grv_proxies = positive(roles.grv_proxies);
    desired.log_routers = positive(roles.log_routers);
    desired.remote_logs = positive(roles.remote_logs);
    // `storage` is informational: the process counts decide the storage servers.
    desired.storage = None;
    // An empty value (the Go operator's CRD allows it) means "not set", never an empty
    // `configure` argument.
    if desired.perpetual_storage_wiggle_engine == Some(StorageEngine::Unset) {
        desired.perpetual_storage_wiggle_engine = None;
    }
    if desired.storage_migration_type == Some(StorageMigrationType::Unset) {
        desired.storage_migration_type = None;
    }
    desired
}

/// One `configure` argument: a bare word (redundancy mode, engine) or `key=value`.
fn arguments(config: &DatabaseConfiguration) -> Vec<(&'static str, String)> {
    let mut args = Vec::new();
    if let Some(mode) = &config.redundancy_mode {
        args.push(("redundancy_mode", mode.as_str().to_owned()));
    }
    if let Some(engine) = &config.storage_engine {
        args.push(("storage_engine", engine.as_str().to_owned()));
    }
    let numbers = [
        ("logs", config.logs),
        ("proxies", config.proxies),
        ("commit_proxies", config.commit_proxies),
        ("grv_proxies", config.grv_proxies),
        ("resolvers", config.resolvers),
        ("usable_regions", config.usable_regions),
        ("log_routers", config.log_routers),
        ("remote_logs", config.remote_logs),
        ("log_spill", config.log_spill),
        ("log_version", config.log_version),
        ("perpetual_storage_wiggle", config.perpetual_storage_wiggle),
    ];
    for (key, value) in numbers {
        if let Some(value) = value {
            args.push((key, format!("{key}={value}")));
        }
    }
    if let Some(engine) = &config.perpetual_storage_wiggle_engine {
        args.push((
            "perpetual_storage_wiggle_engine",
            format!("perpetual_storage_wiggle_engine={engine}"),
        ));
    }
    if let Some(locality) = &config.perpetual_storage_wiggle_locality {
        args.push((
            "perpetual_storage_wiggle_locality",
            format!("perpetual_storage_wiggle_locality={locality}"),
        ));
    }
    if let Some(migration) = &config.storage_migration_type {
        args.push((
            "storage_migration_type",
            format!("storage_migration_type={}", migration.as_str()),
        ));
    }
    if !config.regions.is_empty() {
        // Region JSON is built from plain structs and cannot fail to serialize.
        let regions = serde_json::to_string(&config.regions).unwrap_or_default();
        args.push(("regions", format!("regions={regions}")));
    }
    args
}

/// The configuration as `fdbcli configure` arguments, e.g.
/// `double ssd-2 logs=3 proxies=3 resolvers=1 usable_regions=1`.
pub fn configuration_string(config: &DatabaseConfiguration) -> String {
    arguments(config)
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The command that configures a new database: `configure new <configuration>`.
pub fn configure_new_command(desired: &DatabaseConfiguration) -> String {
    format!("configure new {}", configuration_string(desired))
}

/// The command that moves a configured database from `current` (as the database running
/// `running` reports it) to `desired`, naming only the settings that differ; `None` when
/// nothing differs. Engine names are compared as `running` reports them: 7.3 reports a
/// Redwood database `ssd-redwood-1` whichever name configured it.
pub fn configure_change_command(
    current: &DatabaseConfiguration,
    desired: &DatabaseConfiguration,
    running: Option<&FdbVersion>,
) -> Option<String> {
    let mut current = current.clone();
    // Compare aliases by what FoundationDB reports (`ssd` is reported as `ssd-2`, ...).
    current.redundancy_mode = current.redundancy_mode.or(Some(RedundancyMode::DEFAULT));
    current.storage_engine = current
        .storage_engine
        .map(|e| storage_engine_as_reported(e, running));
    // FoundationDB before 7.1.43 leaves out a perpetual wiggle engine that is not set;
    // later versions report `none` (`toJSON` in fdbclient/DatabaseConfiguration.cpp).
    current.perpetual_storage_wiggle_engine = current
        .perpetual_storage_wiggle_engine
        .or(Some(StorageEngine::None))
        .map(|e| reported_wiggle_engine(e, running));
    let mut desired = desired.clone();
    desired.storage_engine = desired
        .storage_engine
        .map(|e| storage_engine_as_reported(e, running));
    desired.perpetual_storage_wiggle_engine = desired
        .perpetual_storage_wiggle_engine
        .map(|e| reported_wiggle_engine(e, running));
    let current_args = arguments(&current);
    let changed: Vec<String> = arguments(&desired)
        .into_iter()
        .filter(|arg| !current_args.contains(arg))
        .map(|(_, text)| text)
        .collect();
    (!changed.is_empty()).then(|| format!("configure {}", changed.join(" ")))
}

/// Whether `running` prints engine names as 7.3 and later do: the storage type alone
/// (`getStoreTypeStr`, fdbclient/FDBTypes.cpp), rather than 7.1's log/storage pair.
fn names_storage_type(running: Option<&FdbVersion>) -> bool {
    running.is_some_and(FdbVersion::supports_redwood_1)
}

/// The `storage_engine` the database running `running` reports after `configure
/// <engine>` (`DatabaseConfiguration::toJSON`, fdbclient/DatabaseConfiguration.cpp):
/// 7.1 names the log/storage pair (`memory` is `memory-2`, Redwood
/// `ssd-redwood-1-experimental`), 7.3 the storage type (`memory-1` and `memory-2` are
/// `memory`, Redwood `ssd-redwood-1`), 7.4 renames the radix tree. A name that
/// configures the same engine compares equal; an unknown version is read as 7.1,
/// Redwood's two names as one engine.
pub fn storage_engine_as_reported(
    engine: StorageEngine,
    running: Option<&FdbVersion>,
) -> StorageEngine {
    use StorageEngine as E;
    match engine {
        E::Ssd => E::Ssd2,
        E::Memory | E::Memory1 | E::Memory2 if names_storage_type(running) => E::Memory,
        E::Memory => E::Memory2,
        E::SsdRedwood1Experimental | E::SsdRedwood1 => E::SsdRedwood1,
        other => reported_radix_tree(other, running),
    }
}

/// The `perpetual_storage_wiggle_engine` `running` reports: the storage type's name
/// (`KeyValueStoreType::toString`, fdbclient/FDBTypes.h in 7.1): `memory` for every
/// memory engine.
fn reported_wiggle_engine(engine: StorageEngine, running: Option<&FdbVersion>) -> StorageEngine {
    use StorageEngine as E;
    match engine {
        E::Ssd => E::Ssd2,
        E::Memory | E::Memory1 | E::Memory2 => E::Memory,
        E::SsdRedwood1Experimental | E::SsdRedwood1 => E::SsdRedwood1,
        other => reported_radix_tree(other, running),
    }
}

/// 7.4 reports the engine 7.1 and 7.3 call `memory-radixtree-beta` by its new name.
fn reported_radix_tree(engine: StorageEngine, running: Option<&FdbVersion>) -> StorageEngine {
    match engine {
        StorageEngine::MemoryRadixtree | StorageEngine::MemoryRadixtreeBeta
            if running.is_some_and(FdbVersion::names_memory_radixtree) =>
        {
            StorageEngine::MemoryRadixtree
        }
        StorageEngine::MemoryRadixtree => StorageEngine::MemoryRadixtreeBeta,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> FoundationDBClusterSpec {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn defaults_fill_the_desired_configuration() {
        let desired = desired_database_configuration(&FoundationDBClusterSpec::default());
        assert_eq!(
            configure_new_command(&desired),
            "configure new double ssd-2 logs=3 proxies=3 resolvers=1 usable_regions=1"
        );
        let desired = desired_database_configuration(&spec(
            "databaseConfiguration: {redundancy_mode: three_data_hall, storage_engine: ssd-redwood-1, commit_proxies: 4}",
        ));
        assert_eq!(
            configuration_string(&desired),
            "three_data_hall ssd-redwood-1 logs=4 commit_proxies=4 grv_proxies=1 resolvers=1 usable_regions=1"
        );
    }

    #[test]
    fn change_command_names_only_what_differs() {
        let desired = desired_database_configuration(&spec(
            "databaseConfiguration: {redundancy_mode: triple, logs: 5}",
        ));
        let mut current = desired.clone();
        assert_eq!(configure_change_command(&current, &desired, None), None);
        current.redundancy_mode = Some(RedundancyMode::Double);
        current.logs = Some(3);
        current.storage_engine = Some(StorageEngine::Ssd);
        assert_eq!(
            configure_change_command(&current, &desired, None).as_deref(),
            Some("configure triple logs=5")
        );
    }

    #[test]
    fn reported_names_match_what_was_asked() {
        // 7.1.43 and later report `perpetual_storage_wiggle_engine: none` when none is set.
        let desired = desired_database_configuration(&spec("{}"));
        let mut current = desired.clone();
        current.perpetual_storage_wiggle_engine = Some(StorageEngine::None);
        assert_eq!(configure_change_command(&current, &desired, None), None);
        // Asking for `none` matches a version that leaves the key out.
        let desired = desired_database_configuration(&spec(
            "databaseConfiguration: {perpetual_storage_wiggle_engine: none}",
        ));
        let mut current = desired.clone();
        current.perpetual_storage_wiggle_engine = None;
        assert_eq!(configure_change_command(&current, &desired, None), None);
        // 7.4 renames the radix-tree engine in status json.
        let desired = desired_database_configuration(&spec(
            "databaseConfiguration: {storage_engine: memory-radixtree-beta}",
        ));
        let mut current = desired.clone();
        current.storage_engine = Some(StorageEngine::MemoryRadixtree);
        assert_eq!(configure_change_command(&current, &desired, None), None);
    }

    #[test]
    fn engines_compare_as_the_running_version_reports_them() {
        let v = |text: &str| text.parse::<FdbVersion>().unwrap();
        let cases = [
            // 7.3 reports Redwood as `ssd-redwood-1` for a spec in 7.1's naming.
            ("ssd-redwood-1-experimental", "ssd-redwood-1", "7.3.43"),
            (
                "ssd-redwood-1-experimental",
                "ssd-redwood-1-experimental",
                "7.1.57",
            ),
            // 7.3 reports every memory engine as `memory`, 7.1 `memory` as `memory-2`.
            ("memory-1", "memory", "7.3.43"),
            ("memory", "memory-2", "7.1.57"),
            ("ssd", "ssd-2", "7.4.5"),
            ("memory-radixtree-beta", "memory-radixtree", "7.4.5"),
        ];
        for (asked, reported, running) in cases {
            let desired = desired_database_configuration(&spec(&format!(
                "databaseConfiguration: {{storage_engine: {asked}}}"
            )));
            let mut current = desired.clone();
            current.storage_engine = Some(StorageEngine::from(reported));
            assert_eq!(
                configure_change_command(&current, &desired, Some(&v(running))),
                None,
                "{asked} reported as {reported} by {running}"
            );
        }
        // A real change is still one.
        let desired = desired_database_configuration(&spec(
            "databaseConfiguration: {storage_engine: ssd-redwood-1}",
        ));
        let mut current = desired.clone();
        current.storage_engine = Some(StorageEngine::Ssd2);
        assert_eq!(
            configure_change_command(&current, &desired, Some(&v("7.3.43"))).as_deref(),
            Some("configure ssd-redwood-1")
        );
        // 7.1 tells memory-1 from memory-2.
        let desired = desired_database_configuration(&spec(
            "databaseConfiguration: {storage_engine: memory-1}",
        ));
        let mut current = desired.clone();
        current.storage_engine = Some(StorageEngine::Memory2);
        assert!(configure_change_command(&current, &desired, Some(&v("7.1.57"))).is_some());
    }

    #[test]
    fn empty_values_are_not_set() {
        let desired = desired_database_configuration(&spec(
            r#"databaseConfiguration: {perpetual_storage_wiggle_engine: "", storage_migration_type: ""}"#,
        ));
        assert_eq!(desired.perpetual_storage_wiggle_engine, None);
        assert_eq!(desired.storage_migration_type, None);
        assert_eq!(
            configure_new_command(&desired),
            "configure new double ssd-2 logs=3 proxies=3 resolvers=1 usable_regions=1"
        );
    }

    #[test]
    fn regions_are_rendered_as_json() {
        let desired = desired_database_configuration(&spec(
            "databaseConfiguration: {usable_regions: 2, regions: [{datacenters: [{id: dc1, priority: 1}]}]}",
        ));
        let text = configuration_string(&desired);
        assert!(text.contains("log_routers=3 remote_logs=3"), "{text}");
        assert!(
            text.ends_with(r#"regions=[{"datacenters":[{"id":"dc1","priority":1}]}]"#),
            "{text}"
        );
    }
}
