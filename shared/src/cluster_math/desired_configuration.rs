//! The database configuration the operator wants, and the `configure` commands that get
//! the database there.

use crate::api::cluster::FoundationDBClusterSpec;
use crate::api::database_configuration::{
    DatabaseConfiguration, RedundancyMode, StorageEngine, StorageMigrationType,
};

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

/// The command that moves a configured database from `current` to `desired`, naming only
/// the settings that differ; `None` when nothing differs.
pub fn configure_change_command(
    current: &DatabaseConfiguration,
    desired: &DatabaseConfiguration,
) -> Option<String> {
    let mut current = current.clone();
    // Compare aliases by what FoundationDB reports (`ssd` is reported as `ssd-2`, ...).
    current.redundancy_mode = current.redundancy_mode.or(Some(RedundancyMode::DEFAULT));
    current.storage_engine = current.storage_engine.map(canonical_engine);
    // FoundationDB before 7.1.43 leaves out a perpetual wiggle engine that is not set;
    // later versions report `none` (`toJSON` in fdbclient/DatabaseConfiguration.cpp).
    current.perpetual_storage_wiggle_engine = current
        .perpetual_storage_wiggle_engine
        .or(Some(StorageEngine::None))
        .map(canonical_engine);
    let mut desired = desired.clone();
    desired.storage_engine = desired.storage_engine.map(canonical_engine);
    desired.perpetual_storage_wiggle_engine = desired
        .perpetual_storage_wiggle_engine
        .map(canonical_engine);
    let current_args = arguments(&current);
    let changed: Vec<String> = arguments(&desired)
        .into_iter()
        .filter(|arg| !current_args.contains(arg))
        .map(|(_, text)| text)
        .collect();
    (!changed.is_empty()).then(|| format!("configure {}", changed.join(" ")))
}

fn canonical_engine(engine: StorageEngine) -> StorageEngine {
    match engine {
        StorageEngine::Ssd => StorageEngine::Ssd2,
        StorageEngine::Memory => StorageEngine::Memory2,
        // 7.4 reports the engine 7.1 and 7.3 call `memory-radixtree-beta` by its new name.
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
        assert_eq!(configure_change_command(&current, &desired), None);
        current.redundancy_mode = Some(RedundancyMode::Double);
        current.logs = Some(3);
        current.storage_engine = Some(StorageEngine::Ssd);
        assert_eq!(
            configure_change_command(&current, &desired).as_deref(),
            Some("configure triple logs=5")
        );
    }

    #[test]
    fn reported_names_match_what_was_asked() {
        // 7.1.43 and later report `perpetual_storage_wiggle_engine: none` when none is set.
        let desired = desired_database_configuration(&spec("{}"));
        let mut current = desired.clone();
        current.perpetual_storage_wiggle_engine = Some(StorageEngine::None);
        assert_eq!(configure_change_command(&current, &desired), None);
        // Asking for `none` matches a version that leaves the key out.
        let desired = desired_database_configuration(&spec(
            "databaseConfiguration: {perpetual_storage_wiggle_engine: none}",
        ));
        let mut current = desired.clone();
        current.perpetual_storage_wiggle_engine = None;
        assert_eq!(configure_change_command(&current, &desired), None);
        // 7.4 renames the radix-tree engine in status json.
        let desired = desired_database_configuration(&spec(
            "databaseConfiguration: {storage_engine: memory-radixtree-beta}",
        ));
        let mut current = desired.clone();
        current.storage_engine = Some(StorageEngine::MemoryRadixtree);
        assert_eq!(configure_change_command(&current, &desired), None);
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
