//! The world's own check of what it renders: every `status json` the simulated database
//! renders is matched against FoundationDB's schema of the version it runs
//! (`JSONSchemas::statusSchema` of `fdbclient/Schemas.cpp`, kept per release in
//! shared/tests/data/status-schema, matched with `schemaMatch`'s rules:
//! `fdb_shared::status_json::schema`). A mismatch is a bug of the world, not of the
//! operator: the operator would never meet that document on a real cluster. The runner
//! reports it as the violation `status-off-schema`, each mismatch once.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use fdb_operator::fdb::tools::binary_version;
use fdb_shared::FdbVersion;
use fdb_shared::status_json::schema::schema_mismatches;
use serde_json::Value;

use super::SimulatedFdb;
use super::state::State;

/// Told each new mismatch, one line naming the key path and the version.
pub type OffSchemaSink = Arc<dyn Fn(String) + Send + Sync>;

/// The schemas to match against, by minor version (`7.3`).
pub type SchemaSource = fn(&str) -> Option<&'static Value>;

/// Checks rendered documents and reports each mismatch once.
#[derive(Clone)]
pub struct StatusCheck {
    sink: OffSchemaSink,
    schemas: SchemaSource,
    reported: Arc<Mutex<BTreeSet<String>>>,
}

impl std::fmt::Debug for StatusCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusCheck").finish_non_exhaustive()
    }
}

impl StatusCheck {
    /// Against FoundationDB's schemas ([`foundationdb_schema`]), reporting to `sink`.
    pub fn new(sink: OffSchemaSink) -> Self {
        Self::with_schemas(sink, foundationdb_schema)
    }

    /// Against the schemas of `schemas` (tests use a stricter one).
    pub fn with_schemas(sink: OffSchemaSink, schemas: SchemaSource) -> Self {
        Self {
            sink,
            schemas,
            reported: Arc::default(),
        }
    }

    /// Matches `document`, rendered by a database of `version`.
    pub(super) fn check(&self, document: &Value, version: &FdbVersion) {
        let minor = binary_version(version);
        let Some(schema) = (self.schemas)(&minor) else {
            return;
        };
        let mismatches = schema_mismatches(schema, document);
        if mismatches.is_empty() {
            return;
        }
        let mut reported = self.reported.lock().unwrap_or_else(PoisonError::into_inner);
        for mismatch in mismatches {
            let line =
                format!("status json of {version} against Schemas.cpp of {minor}: {mismatch}");
            if reported.insert(line.clone()) {
                (self.sink)(line);
            }
        }
    }
}

/// FoundationDB's status schema of a minor release, with what real FoundationDB renders
/// beyond it: a process's `class_type` is any class `ProcessClass::toString` prints
/// ([`RENDERED_CLASSES`]; the schema's enum lists only the classes its authors met, not
/// `log` or `cluster_controller`), the backup agents' layer status under `cluster.layers.backup`
/// (written by the agents, fdbclient/FileBackupAgent.actor.cpp, merged by
/// `layerStatusFetcher` in fdbserver/Status.actor.cpp), and the addresses of processes
/// on another protocol in `cluster.incompatible_connections` (`incompatibleConnections`
/// in fdbserver/Status.actor.cpp), which the schema writes as an empty array.
pub fn foundationdb_schema(minor: &str) -> Option<&'static Value> {
    static SCHEMAS: OnceLock<[(&str, Option<Value>); 3]> = OnceLock::new();
    let schemas = SCHEMAS.get_or_init(|| {
        [
            (
                "7.1",
                include_str!("../../../shared/tests/data/status-schema/7.1.json"),
            ),
            (
                "7.3",
                include_str!("../../../shared/tests/data/status-schema/7.3.json"),
            ),
            (
                "7.4",
                include_str!("../../../shared/tests/data/status-schema/7.4.json"),
            ),
        ]
        .map(|(minor, text)| {
            let schema = serde_json::from_str(text).ok();
            (minor, schema.map(|schema| as_rendered(schema, minor)))
        })
    });
    schemas
        .iter()
        .find(|(known, _)| *known == minor)
        .and_then(|(_, schema)| schema.as_ref())
}

/// The process classes `ProcessClass::toString` prints (fdbrpc/Locality.h at
/// release-7.1, fdbrpc/include/fdbrpc/Locality.h at release-7.3 and -7.4), but
/// `invalid`.
const RENDERED_CLASSES: [&str; 21] = [
    "unset",
    "storage",
    "transaction",
    "resolution",
    "commit_proxy",
    "grv_proxy",
    "master",
    "test",
    "stateless",
    "log",
    "router",
    "cluster_controller",
    "fast_restore",
    "data_distributor",
    "coordinator",
    "ratekeeper",
    "blob_manager",
    "blob_worker",
    "storage_cache",
    "backup",
    "encrypt_key_proxy",
];

/// The classes 7.3 added to `ProcessClass::toString`.
const RENDERED_CLASSES_FROM_7_3: [&str; 2] = ["consistency_scan", "sim_http_server"];

/// The schema widened by what FoundationDB renders beyond it ([`foundationdb_schema`]).
fn as_rendered(mut schema: Value, minor: &str) -> Value {
    let extra: &[&str] = if minor == "7.1" {
        &[]
    } else {
        &RENDERED_CLASSES_FROM_7_3
    };
    let classes: Vec<Value> = RENDERED_CLASSES
        .iter()
        .chain(extra)
        .map(|class| Value::from(*class))
        .collect();
    schema["cluster"]["processes"]["$map"]["class_type"] = serde_json::json!({"$enum": classes});
    schema["cluster"]["layers"]["backup"] = serde_json::json!({"$map": "any layer status"});
    schema["cluster"]["incompatible_connections"] = serde_json::json!(["10.1.1.1:4501"]);
    schema
}

/// The version whose schema a document of `state` is matched against: the database's
/// protocol, else (no quorum) the newest version a process runs.
pub(super) fn rendering_version(state: &State) -> Option<FdbVersion> {
    state
        .cluster_version()
        .or_else(|| state.processes.values().map(|p| p.launch.version).max())
}

impl SimulatedFdb {
    /// From now on, every `status json` this database renders is matched by `check`.
    pub fn check_statuses(&self, check: StatusCheck) {
        *self
            .status_check
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(check);
    }

    /// Matches a document rendered by a database of `version`, if checks are on.
    pub(super) fn check_status(&self, document: &Value, version: Option<&FdbVersion>) {
        let check = self
            .status_check
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let (Some(check), Some(version)) = (check, version) {
            check.check(document, version);
        }
    }
}
