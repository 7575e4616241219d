//! Every configuration value real FoundationDB reports in `status json` must be storable
//! in `status.databaseConfiguration`: UpdateStatus copies the live configuration there, and
//! a real API server validates the whole object on `/status` writes (422 on an enum miss).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use fdb_shared::api::DatabaseConfiguration;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::status_json::DatabaseStatus;
use kube::CustomResourceExt;
use serde_json::{Value, json};

/// The schema of `status.databaseConfiguration` in the CRD we serve.
fn status_configuration_schema() -> Value {
    let crd = serde_json::to_value(FoundationDBCluster::crd()).unwrap();
    let versions = crd["spec"]["versions"].as_array().unwrap();
    let served = versions
        .iter()
        .find(|version| version["storage"] == json!(true))
        .unwrap();
    served["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
        ["databaseConfiguration"]
        .clone()
}

/// The type and enum checks of a structural schema, with the path of each miss.
fn misses(schema: &Value, value: &Value, path: &str, found: &mut Vec<String>) {
    if value.is_null() {
        if schema["nullable"] != json!(true) {
            found.push(format!("{path}: null where the schema is not nullable"));
        }
        return;
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(value)
    {
        found.push(format!("{path}: Unsupported value: {value}"));
    }
    let kind = schema["type"].as_str().unwrap_or("");
    let fits = match kind {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    };
    if !fits {
        found.push(format!(
            "{path}: Invalid value: {value}: must be of type {kind}"
        ));
        return;
    }
    match value {
        Value::Object(fields) => {
            for (key, field) in fields {
                // A field the schema does not name is pruned by a real server.
                if let Some(inner) = schema["properties"].get(key) {
                    misses(inner, field, &format!("{path}.{key}"), found);
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                misses(&schema["items"], item, &format!("{path}[{index}]"), found);
            }
        }
        _ => {}
    }
}

/// What UpdateStatus would write for a live configuration, checked against the CRD.
fn check(configuration: &Value, source: &str) {
    let typed: DatabaseConfiguration = serde_json::from_value(configuration.clone()).unwrap();
    let written = serde_json::to_value(&typed).unwrap();
    let mut found = Vec::new();
    misses(
        &status_configuration_schema(),
        &written,
        "status.databaseConfiguration",
        &mut found,
    );
    assert!(found.is_empty(), "{source}: {found:#?}");
}

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_configuration_of_each_real_capture_is_storable() {
    for name in ["status-7.1.0-rc1.json", "status-unreachable-processes.json"] {
        let status = DatabaseStatus::parse_fdbcli_output(&fixture(name)).unwrap();
        let configuration = status.cluster.configuration.unwrap();
        check(&serde_json::to_value(configuration).unwrap(), name);
        // The raw capture too, field by field as FoundationDB printed it.
        let raw: Value = serde_json::from_str(&fixture(name)).unwrap();
        check(&raw["cluster"]["configuration"], name);
    }
}

/// Engine names `status json` carries per release, from FoundationDB's source:
/// `storage_engine` from `toJSON` in fdbclient/DatabaseConfiguration.cpp (7.1 names the
/// log/storage pair, `custom` otherwise; 7.3 and 7.4 print the storage type's name), and
/// `perpetual_storage_wiggle_engine` from `KeyValueStoreType::toString` (7.1,
/// fdbclient/FDBTypes.h) and `getStoreTypeStr` (7.3, 7.4, fdbclient/FDBTypes.cpp).
const REPORTED_ENGINES: &[(&str, &[&str], &[&str])] = &[
    (
        "7.1",
        &[
            "ssd-1",
            "ssd-2",
            "ssd-redwood-1-experimental",
            "ssd-rocksdb-v1",
            "memory-1",
            "memory-radixtree-beta",
            "memory-2",
            "custom",
        ],
        &[
            "ssd-1",
            "ssd-2",
            "ssd-redwood-1-experimental",
            "ssd-rocksdb-v1",
            "memory",
            "memory-radixtree-beta",
            "none",
            "unknown",
        ],
    ),
    (
        "7.3",
        &[
            "ssd-1",
            "ssd-2",
            "ssd-redwood-1",
            "ssd-rocksdb-v1",
            "ssd-sharded-rocksdb",
            "memory",
            "memory-radixtree-beta",
            "none",
            "unknown",
        ],
        &[
            "ssd-1",
            "ssd-2",
            "ssd-redwood-1",
            "ssd-rocksdb-v1",
            "ssd-sharded-rocksdb",
            "memory",
            "memory-radixtree-beta",
            "none",
            "unknown",
        ],
    ),
    (
        "7.4",
        &[
            "ssd-1",
            "ssd-2",
            "ssd-redwood-1",
            "ssd-rocksdb-v1",
            "ssd-sharded-rocksdb",
            "memory",
            "memory-radixtree",
            "none",
            "unknown",
        ],
        &[
            "ssd-1",
            "ssd-2",
            "ssd-redwood-1",
            "ssd-rocksdb-v1",
            "ssd-sharded-rocksdb",
            "memory",
            "memory-radixtree",
            "none",
            "unknown",
        ],
    ),
];

#[test]
fn every_engine_name_a_release_reports_is_storable() {
    for (release, storage_engines, wiggle_engines) in REPORTED_ENGINES {
        for engine in *storage_engines {
            check(
                &json!({"storage_engine": engine}),
                &format!("{release} storage_engine"),
            );
        }
        for engine in *wiggle_engines {
            check(
                &json!({"perpetual_storage_wiggle_engine": engine}),
                &format!("{release} perpetual_storage_wiggle_engine"),
            );
        }
        // `StorageMigrationType::toString` in FDBTypes.h of each release.
        for migration in ["disabled", "aggressive", "gradual"] {
            check(
                &json!({"storage_migration_type": migration}),
                &format!("{release} storage_migration_type"),
            );
        }
    }
}

/// The Go operator's CRD accepts these in the spec too (go-operator-crds in the shared
/// reference): a Go user's manifest carrying them must be storable after the swap.
#[test]
fn the_go_crds_extra_engine_values_are_storable() {
    for value in ["", "custom", "none", "ssd-rocksdb-experimental"] {
        check(
            &json!({"perpetual_storage_wiggle_engine": value}),
            "Go CRD perpetual_storage_wiggle_engine",
        );
    }
    check(
        &json!({"storage_migration_type": ""}),
        "Go CRD storage_migration_type",
    );
}
