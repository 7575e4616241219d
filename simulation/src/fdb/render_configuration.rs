//! `cluster.configuration` as FoundationDB of each version renders it
//! (`DatabaseConfiguration::toJSON`, fdbclient/DatabaseConfiguration.cpp): engine names
//! as that version prints them, the keys it always writes, and the proxy counts split
//! as `configure proxies=N` splits them (`configForToken`,
//! fdbclient/ManagementAPI.actor.cpp).

use serde_json::{Value, json};

use fdb_shared::FdbVersion;
use fdb_shared::api::DatabaseConfiguration;

use super::engines::{at_least, storage_engine_name, store_type_name, store_types};
use super::state::State;
use fdb_operator::fdb::ExclusionTarget;

/// The configuration keys FoundationDB writes whether or not they were ever configured,
/// with the value it writes when they were not (`toJSON`): the perpetual wiggle engine
/// as `none` from 7.1.43 on (the 7.1 captures in shared/tests/fixtures show it),
/// `usable_regions`, `tenant_mode`, blob granules and the backup worker in every
/// supported version, the encryption mode from 7.3.
pub(crate) fn always_reported_configuration(version: Option<&FdbVersion>) -> Vec<(String, Value)> {
    let mut keys = vec![
        ("backup_worker_enabled", json!(0)),
        ("blob_granules_enabled", json!(0)),
        ("log_spill", json!(2)),
        ("perpetual_storage_wiggle", json!(0)),
        ("perpetual_storage_wiggle_locality", json!("0")),
        ("storage_migration_type", json!("disabled")),
        ("tenant_mode", json!("disabled")),
        ("usable_regions", json!(1)),
    ];
    if version.is_some_and(|v| v.is_at_least(&FdbVersion::new(7, 1, 43))) {
        keys.push(("perpetual_storage_wiggle_engine", json!("none")));
    }
    if at_least(version, 3) {
        keys.push(("encryption_at_rest_mode", json!("disabled")));
    }
    keys.into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect()
}

/// The role counts as the version reports them: `proxies=N` is split into commit and
/// GRV proxies (`configForToken`: GRV proxies are N / 4, between 1 and 4); `proxies` is
/// their sum; from 7.3 the desired logs, proxies and resolvers are reported also when
/// they were never set (`getDesiredLogs` and friends, the `DEFAULT_AUTO_*` client knobs
/// 3, 3, 1, 1).
fn role_counts(
    configuration: &DatabaseConfiguration,
    version: Option<&FdbVersion>,
) -> Vec<(&'static str, i32)> {
    let mut commit = configuration.commit_proxies;
    let mut grv = configuration.grv_proxies;
    if let (Some(proxies), None, None) = (configuration.proxies, commit, grv) {
        let split = (proxies / 4).clamp(1, 4);
        grv = Some(split);
        commit = Some(proxies - split);
    }
    let mut logs = configuration.logs;
    let mut resolvers = configuration.resolvers;
    if at_least(version, 3) {
        logs = logs.or(Some(3));
        resolvers = resolvers.or(Some(1));
        commit = commit.or(Some(3));
        grv = grv.or(Some(1));
    }
    let proxies = match (commit, grv) {
        (None, None) => None,
        (commit, grv) => Some(commit.unwrap_or(0) + grv.unwrap_or(0)),
    };
    [
        ("logs", logs),
        ("resolvers", resolvers),
        ("commit_proxies", commit),
        ("grv_proxies", grv),
        ("proxies", proxies),
    ]
    .into_iter()
    .filter_map(|(key, count)| Some((key, count?)))
    .collect()
}

/// `cluster.configuration`; `Null` before the database is configured.
pub(crate) fn render_configuration(state: &State, version: Option<&FdbVersion>) -> Value {
    let Some(configuration) = &state.configuration else {
        return Value::Null;
    };
    let Ok(Value::Object(mut map)) = serde_json::to_value(configuration) else {
        return Value::Null;
    };
    // `storage` is a count the operator may carry; FoundationDB has no such setting.
    map.remove("storage");
    if let Some(engine) = &configuration.storage_engine {
        map.insert(
            "storage_engine".to_owned(),
            json!(storage_engine_name(engine, version)),
        );
    }
    if let Some((_, wiggle)) = configuration
        .perpetual_storage_wiggle_engine
        .as_ref()
        .and_then(store_types)
    {
        map.insert(
            "perpetual_storage_wiggle_engine".to_owned(),
            json!(store_type_name(wiggle, version)),
        );
    }
    for (key, count) in role_counts(configuration, version) {
        map.insert(key.to_owned(), json!(count));
    }
    for (key, default) in always_reported_configuration(version) {
        map.entry(key).or_insert(default);
    }
    let excluded: Vec<Value> = state
        .exclusions
        .iter()
        .map(|target| match target {
            ExclusionTarget::Locality(locality) => json!({ "locality": locality.to_string() }),
            other => json!({ "address": other.to_string() }),
        })
        .collect();
    map.insert("excluded_servers".to_owned(), Value::Array(excluded));
    let coordinators = state
        .connection_string
        .as_ref()
        .map_or(0, |c| c.coordinators.len());
    map.insert("coordinators_count".to_owned(), json!(coordinators));
    Value::Object(map)
}
