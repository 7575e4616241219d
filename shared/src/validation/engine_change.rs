//! An engine change needs a storage migration type: FoundationDB refuses `configure` of
//! a new storage type while the new configuration's `storage_migration_type` is
//! `disabled`, its default (`changeConfig`: fdbclient/GenericManagementAPI.actor.h in
//! 7.1, fdbclient/ManagementAPI.actor.cpp's header in 7.3 and 7.4; the message is
//! fdbcli/ConfigureCommand.actor.cpp's STORAGE_MIGRATION_DISABLED). The operator sends
//! the spec's migration type in the same `configure` as the engine, so a spec that sets
//! `aggressive` or `gradual` changes the engine at once; one that does not is refused
//! here, naming the field, rather than sent to fail on every pass.

use crate::api::cluster::FoundationDBClusterSpec;
use crate::api::database_configuration::{DatabaseConfiguration, StorageMigrationType};
use crate::cluster_math::desired_configuration::storage_engine_as_reported;
use crate::cluster_math::desired_database_configuration;
use crate::version::FdbVersion;

/// Why the spec's engine cannot be configured on the live database (`live`, as the
/// database running `running` reports it): the engine changes and neither the spec nor
/// the database sets a storage migration type. `None` when there is no change or the
/// change can go through.
pub fn engine_change_error(
    spec: &FoundationDBClusterSpec,
    live: &DatabaseConfiguration,
    running: Option<&FdbVersion>,
) -> Option<String> {
    let desired = desired_database_configuration(spec);
    let reported = |config: &DatabaseConfiguration| {
        config
            .storage_engine
            .clone()
            .map(|engine| storage_engine_as_reported(engine, running))
    };
    let (from, to) = (reported(live)?, reported(&desired)?);
    if from == to {
        return None;
    }
    let migration = desired
        .storage_migration_type
        .or_else(|| live.storage_migration_type.clone())
        .unwrap_or(StorageMigrationType::Disabled);
    if !matches!(
        migration,
        StorageMigrationType::Disabled | StorageMigrationType::Unset
    ) {
        return None;
    }
    Some(format!(
        "spec.databaseConfiguration.storage_migration_type: changing storage_engine from {} to {} needs a storage migration type, and FoundationDB refuses the change while storage_migration_type is disabled (its default): set it to aggressive (the storage servers are replaced by new ones at once) or gradual (with perpetual_storage_wiggle: 1, one storage server at a time), or keep storage_engine {}",
        from.as_str(),
        to.as_str(),
        from.as_str()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::database_configuration::StorageEngine;

    fn spec(yaml: &str) -> FoundationDBClusterSpec {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    fn live(engine: StorageEngine) -> DatabaseConfiguration {
        DatabaseConfiguration {
            storage_engine: Some(engine),
            storage_migration_type: Some(StorageMigrationType::Disabled),
            ..Default::default()
        }
    }

    #[test]
    fn an_engine_change_without_a_migration_type_names_the_field() {
        let v: FdbVersion = "7.3.43".parse().unwrap();
        let redwood =
            spec("{version: 7.3.43, databaseConfiguration: {storage_engine: ssd-redwood-1}}");
        let error = engine_change_error(&redwood, &live(StorageEngine::Ssd2), Some(&v)).unwrap();
        assert!(
            error.starts_with("spec.databaseConfiguration.storage_migration_type: changing storage_engine from ssd-2 to ssd-redwood-1"),
            "{error}"
        );
        // The same engine under another name is no change.
        let experimental = spec(
            "{version: 7.3.43, databaseConfiguration: {storage_engine: ssd-redwood-1-experimental}}",
        );
        assert_eq!(
            engine_change_error(&experimental, &live(StorageEngine::SsdRedwood1), Some(&v)),
            None
        );
        // A migration type in the spec, or already in the database, lets it through.
        let aggressive = spec(
            "{version: 7.3.43, databaseConfiguration: {storage_engine: ssd-redwood-1, storage_migration_type: aggressive}}",
        );
        assert_eq!(
            engine_change_error(&aggressive, &live(StorageEngine::Ssd2), Some(&v)),
            None
        );
        let mut gradual = live(StorageEngine::Ssd2);
        gradual.storage_migration_type = Some(StorageMigrationType::Gradual);
        assert_eq!(engine_change_error(&redwood, &gradual, Some(&v)), None);
    }
}
