//! Storage engines as FoundationDB knows them: the store types a `configure` name sets
//! (`configForToken`, fdbclient/ManagementAPI.actor.cpp), the names each version prints
//! for them, and the rule that an engine change needs a storage migration type
//! (`changeConfig`, fdbclient/GenericManagementAPI.actor.h in 7.1,
//! fdbclient/ManagementAPI.actor.cpp's headers from 7.3).

use fdb_shared::FdbVersion;
use fdb_shared::api::{DatabaseConfiguration, StorageEngine, StorageMigrationType};

/// FoundationDB's `KeyValueStoreType`: what an engine name configures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreType {
    SsdBtreeV1,
    SsdBtreeV2,
    Redwood,
    Rocksdb,
    ShardedRocksdb,
    Memory,
    RadixTree,
    None,
}

/// The log and storage store types a `configure` engine name sets (`configForToken`:
/// the log engine is `ssd-2` except for `ssd-1` and `memory-1`). `None` for names no
/// version configures.
pub(crate) fn store_types(engine: &StorageEngine) -> Option<(StoreType, StoreType)> {
    use StoreType as T;
    Some(match engine {
        StorageEngine::Ssd1 => (T::SsdBtreeV1, T::SsdBtreeV1),
        StorageEngine::Ssd | StorageEngine::Ssd2 => (T::SsdBtreeV2, T::SsdBtreeV2),
        StorageEngine::Memory1 => (T::Memory, T::Memory),
        StorageEngine::Memory | StorageEngine::Memory2 => (T::SsdBtreeV2, T::Memory),
        StorageEngine::MemoryRadixtreeBeta | StorageEngine::MemoryRadixtree => {
            (T::SsdBtreeV2, T::RadixTree)
        }
        StorageEngine::SsdRedwood1Experimental | StorageEngine::SsdRedwood1 => {
            (T::SsdBtreeV2, T::Redwood)
        }
        StorageEngine::SsdRocksdbV1 => (T::SsdBtreeV2, T::Rocksdb),
        StorageEngine::SsdShardedRocksdb => (T::SsdBtreeV2, T::ShardedRocksdb),
        StorageEngine::None => (T::None, T::None),
        _ => return None,
    })
}

pub(crate) fn at_least(version: Option<&FdbVersion>, minor: u32) -> bool {
    version.is_some_and(|v| v.is_at_least(&FdbVersion::new(7, minor, 0)))
}

/// `KeyValueStoreType::toString` of the version (fdbclient/FDBTypes.h in 7.1,
/// `getStoreTypeStr` in fdbclient/FDBTypes.cpp from 7.3).
pub(crate) fn store_type_name(store: StoreType, version: Option<&FdbVersion>) -> &'static str {
    match store {
        StoreType::SsdBtreeV1 => "ssd-1",
        StoreType::SsdBtreeV2 => "ssd-2",
        StoreType::Redwood if at_least(version, 3) => "ssd-redwood-1",
        StoreType::Redwood => "ssd-redwood-1-experimental",
        StoreType::Rocksdb => "ssd-rocksdb-v1",
        StoreType::ShardedRocksdb if at_least(version, 2) => "ssd-sharded-rocksdb",
        StoreType::Memory => "memory",
        StoreType::RadixTree if at_least(version, 4) => "memory-radixtree",
        StoreType::RadixTree => "memory-radixtree-beta",
        StoreType::None => "none",
        StoreType::ShardedRocksdb => "unknown",
    }
}

/// The `storage_engine` the version reports: 7.1 names the log/storage pair (`custom`
/// for a pair it has no name for), 7.3 and later the storage type.
pub(crate) fn storage_engine_name(engine: &StorageEngine, version: Option<&FdbVersion>) -> String {
    use StoreType as T;
    let Some((log, storage)) = store_types(engine) else {
        return engine.as_str().to_owned();
    };
    if at_least(version, 3) {
        return store_type_name(storage, version).to_owned();
    }
    match (log, storage) {
        (T::SsdBtreeV1, T::SsdBtreeV1) => "ssd-1",
        (T::SsdBtreeV2, T::SsdBtreeV2) => "ssd-2",
        (T::SsdBtreeV2, T::Redwood) => "ssd-redwood-1-experimental",
        (T::SsdBtreeV2, T::Rocksdb) => "ssd-rocksdb-v1",
        (T::Memory, T::Memory) => "memory-1",
        (T::SsdBtreeV2, T::RadixTree) => "memory-radixtree-beta",
        (T::SsdBtreeV2, T::Memory) => "memory-2",
        _ => "custom",
    }
    .to_owned()
}

/// fdbcli's text when `configure` changes the storage type while the migration type is
/// `disabled` (`ConfigurationResult::STORAGE_MIGRATION_DISABLED` in
/// fdbcli/ConfigureCommand.actor.cpp; the same in 7.1, 7.3 and 7.4); fdbcli exits 1.
pub(crate) const STORAGE_MIGRATION_DISABLED: &str = "ERROR: Storage engine type cannot be changed because storage_migration_type=disabled.\n\
Type `configure perpetual_storage_wiggle=1 storage_migration_type=gradual' to enable gradual migration with the perpetual wiggle, or `configure storage_migration_type=aggressive' for aggressive migration.";

/// Whether `configure` from `current` to `next` changes the storage servers' store type
/// (names of one type, e.g. `ssd` and `ssd-2`, are no change).
pub(crate) fn changes_storage_type(
    current: &DatabaseConfiguration,
    next: &DatabaseConfiguration,
) -> bool {
    let storage = |config: &DatabaseConfiguration| {
        config
            .storage_engine
            .as_ref()
            .map(|engine| store_types(engine).map(|(_, storage)| storage))
    };
    storage(current) != storage(next)
}

/// FoundationDB's refusal of a configuration change of a configured database: a new
/// storage type while the new configuration's migration type is `disabled` (the
/// default); the change may set the migration type in the same command.
pub(crate) fn migration_refusal(
    current: &DatabaseConfiguration,
    next: &DatabaseConfiguration,
) -> Option<&'static str> {
    let migration = next
        .storage_migration_type
        .clone()
        .unwrap_or(StorageMigrationType::Disabled);
    (changes_storage_type(current, next)
        && matches!(
            migration,
            StorageMigrationType::Disabled | StorageMigrationType::Unset
        ))
    .then_some(STORAGE_MIGRATION_DISABLED)
}
