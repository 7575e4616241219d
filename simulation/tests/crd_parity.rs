//! CRD parity with the Go operator: every FoundationDB object among the Go operator's
//! samples and docs (v2.33.0, `../shared/reference/go-operator-samples/`) that the Go
//! CRDs (`../shared/reference/go-operator-crds/`) accept must be accepted by ours, both
//! judged by the simulated API server's own schema check (prune, default, validate), so
//! a Go user's `kubectl apply` works here as it did there. Our own examples
//! (`docs/examples/`) must be accepted by our CRDs too.

// Test-only: helpers fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

mod reference;

use fdb_simulation::kube::schema::{CrdSchemas, check};
use reference::{documents, reference_dir, yaml_files};
use serde_json::Value;

const FDB_API_VERSION: &str = "apps.foundationdb.org/v1beta2";

fn go_schemas() -> CrdSchemas {
    let crds: Vec<Value> = yaml_files(&reference_dir().join("go-operator-crds"))
        .iter()
        .flat_map(|path| documents(path))
        .collect();
    CrdSchemas::from_crds(&crds).unwrap()
}

/// The FoundationDB objects of `files`, each named `file#index kind/name`.
fn fdb_objects(files: &[PathBuf]) -> Vec<(String, Value)> {
    let mut objects = Vec::new();
    for path in files {
        for (index, document) in documents(path).into_iter().enumerate() {
            let kind = document
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if document.get("apiVersion").and_then(Value::as_str) != Some(FDB_API_VERSION)
                || !kind.starts_with("FoundationDB")
            {
                continue;
            }
            let name = document
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let file = path.file_name().unwrap().to_string_lossy();
            objects.push((format!("{file}#{index} {kind}/{name}"), document));
        }
    }
    objects
}

/// The errors `schemas` gives `object` (empty: accepted).
fn refusals(schemas: &CrdSchemas, object: &Value) -> Vec<String> {
    let kind = object["kind"].as_str().unwrap();
    let schema = &schemas
        .for_kind(FDB_API_VERSION, kind)
        .unwrap_or_else(|| panic!("no schema for {kind}"))
        .schema;
    let mut copy = object.clone();
    check(schema, &mut copy, None)
        .iter()
        .map(|error| error.message())
        .collect()
}

#[test]
fn every_go_sample_the_go_crds_accept_is_accepted_by_ours() {
    let go = go_schemas();
    let ours = CrdSchemas::served();
    let objects = fdb_objects(&yaml_files(&reference_dir().join("go-operator-samples")));
    assert!(objects.len() > 40, "only {} objects found", objects.len());
    let mut judged = 0;
    let mut refused = Vec::new();
    for (name, object) in &objects {
        if !refusals(&go, object).is_empty() {
            continue;
        }
        judged += 1;
        let errors = refusals(&ours, object);
        if !errors.is_empty() {
            refused.push(format!("{name}:\n    {}", errors.join("\n    ")));
        }
    }
    assert!(judged > 40, "the Go CRDs accept only {judged} objects");
    assert!(
        refused.is_empty(),
        "{} of {judged} objects the Go CRDs accept are refused by ours:\n{}",
        refused.len(),
        refused.join("\n")
    );
}

#[test]
fn our_examples_are_accepted_by_our_crds() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples");
    let ours = CrdSchemas::served();
    let objects = fdb_objects(&yaml_files(&examples));
    assert!(!objects.is_empty());
    let refused: Vec<String> = objects
        .iter()
        .filter_map(|(name, object)| {
            let errors = refusals(&ours, object);
            (!errors.is_empty()).then(|| format!("{name}: {errors:?}"))
        })
        .collect();
    assert!(refused.is_empty(), "{}", refused.join("\n"));
}

/// A status the operator builds from each real `status json` (FoundationDB 7.1) is
/// accepted by the served CRD's schema: a real API server would otherwise refuse every
/// status write of that cluster (422) and its status would freeze.
///
/// Fails today on `status-unreachable-processes.json` (7.1.43) for one reason only: our
/// CRD's `perpetual_storage_wiggle_engine` enum lacks the `none` real FoundationDB
/// reports; that enum is being fixed separately (issue 35, item 5).
#[test]
fn a_status_built_from_each_real_status_json_is_accepted() {
    use std::collections::BTreeMap;

    use fdb_operator::controller::{DatabaseView, StatusInputs, build_status};
    use fdb_shared::api::cluster::{FoundationDBCluster, FoundationDBClusterStatus};
    use fdb_shared::status_json::DatabaseStatus;

    let fixtures: Vec<PathBuf> = std::fs::read_dir(reference_dir().join("fixtures"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("status-"))
        })
        .collect();
    assert!(!fixtures.is_empty());
    let ours = CrdSchemas::served();
    let schema = &ours
        .for_kind(FDB_API_VERSION, "FoundationDBCluster")
        .unwrap()
        .schema;
    let mut refused = Vec::new();
    for path in &fixtures {
        let text = std::fs::read_to_string(path).unwrap();
        let database = DatabaseStatus::parse_fdbcli_output(&text).unwrap();
        let cluster: FoundationDBCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": FDB_API_VERSION, "kind": "FoundationDBCluster",
            "metadata": {"name": "sample", "namespace": "db", "generation": 1},
            "spec": {"version": "7.1.43"},
        }))
        .unwrap();
        let status = build_status(&StatusInputs {
            cluster: &cluster,
            previous: &FoundationDBClusterStatus::default(),
            observations: &BTreeMap::new(),
            database: DatabaseView::Status(&database),
            config_map_in_sync: true,
            now_unix: 1_700_000_000,
        });
        assert!(
            status.database_configuration.is_some(),
            "{}",
            path.display()
        );
        let mut object = serde_json::to_value(&cluster).unwrap();
        object["status"] = serde_json::to_value(&status).unwrap();
        let errors: Vec<String> = check(schema, &mut object, None)
            .iter()
            .map(|error| error.message())
            .collect();
        if !errors.is_empty() {
            refused.push(format!(
                "{}: {}",
                path.file_name().unwrap().to_string_lossy(),
                errors.join("; ")
            ));
        }
    }
    assert!(refused.is_empty(), "{}", refused.join("\n"));
}

/// Why the served CRD refuses the status the operator builds from `status_json` for a
/// cluster at `version` (empty: accepted).
fn status_refusals(status_json: &Value, version: &str) -> Vec<String> {
    use std::collections::BTreeMap;

    use fdb_operator::controller::{DatabaseView, StatusInputs, build_status};
    use fdb_shared::api::cluster::{FoundationDBCluster, FoundationDBClusterStatus};
    use fdb_shared::status_json::DatabaseStatus;

    let database = DatabaseStatus::parse_fdbcli_output(&status_json.to_string()).unwrap();
    let cluster: FoundationDBCluster = serde_json::from_value(serde_json::json!({
        "apiVersion": FDB_API_VERSION, "kind": "FoundationDBCluster",
        "metadata": {"name": "sample", "namespace": "db", "generation": 1},
        "spec": {"version": version},
    }))
    .unwrap();
    let status = build_status(&StatusInputs {
        cluster: &cluster,
        previous: &FoundationDBClusterStatus::default(),
        observations: &BTreeMap::new(),
        database: DatabaseView::Status(&database),
        config_map_in_sync: true,
        now_unix: 1_700_000_000,
    });
    assert!(status.database_configuration.is_some());
    let ours = CrdSchemas::served();
    let schema = &ours
        .for_kind(FDB_API_VERSION, "FoundationDBCluster")
        .unwrap()
        .schema;
    let mut object = serde_json::to_value(&cluster).unwrap();
    object["status"] = serde_json::to_value(&status).unwrap();
    check(schema, &mut object, None)
        .iter()
        .map(|error| error.message())
        .collect()
}

/// FoundationDB 7.3: a capture derived from `fdbclient/Schemas.cpp` of apple/foundationdb
/// release-7.3 (every `$enum` resolved, every `$map` one entry; see
/// `tests/fixtures/status-7.3-from-schemas.json`), and the same capture with each value
/// 7.3 may report in each enum field of `cluster.configuration`
/// (`tests/fixtures/status-7.3-configuration-enums.json`, from the same file): the status
/// built from each is accepted by the served CRD, so a 7.3 cluster's status writes are
/// never refused.
#[test]
fn a_status_built_from_a_7_3_status_json_is_accepted() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(fixtures.join(name)).unwrap()).unwrap()
    };
    let capture = read("status-7.3-from-schemas.json");
    let enums = read("status-7.3-configuration-enums.json");
    let mut refused = Vec::new();
    let mut checked = 0;
    let mut variants = vec![("as captured".to_owned(), capture.clone())];
    for (field, values) in enums.as_object().unwrap() {
        for value in values.as_array().unwrap() {
            let mut variant = capture.clone();
            variant["cluster"]["configuration"][field] = value.clone();
            variants.push((format!("{field}={value}"), variant));
        }
    }
    for (name, variant) in &variants {
        checked += 1;
        let errors = status_refusals(variant, "7.3.43");
        if !errors.is_empty() {
            refused.push(format!("{name}: {}", errors.join("; ")));
        }
    }
    assert!(checked > 40, "{checked}");
    assert!(refused.is_empty(), "{}", refused.join("\n"));
}

/// The checks the Go operator's CRDs (v2.33.0) make at admission are in ours, so
/// `kubectl apply` refuses at once, here as on a real API server: a backup's tag is
/// immutable (`BackupTag is immutable`) and at most 64 characters; custom parameters
/// are at most 100 of at most 100 characters; buggify lists hold process group IDs.
#[test]
fn our_crds_make_the_admission_checks_of_the_go_crds() {
    let ours = CrdSchemas::served();
    let messages = |kind: &str, object: &Value, old: Option<&Value>| -> Vec<String> {
        let schema = &ours.for_kind(FDB_API_VERSION, kind).unwrap().schema;
        let mut object = object.clone();
        check(schema, &mut object, old)
            .iter()
            .map(|error| error.message())
            .collect()
    };
    let backup = |spec: Value| {
        serde_json::json!({"apiVersion": FDB_API_VERSION, "kind": "FoundationDBBackup",
            "metadata": {"name": "b", "namespace": "db"},
            "spec": spec})
    };
    let tagged = |tag: &str| {
        backup(
            serde_json::json!({"clusterName": "sample", "version": "7.1.57", "tag": tag,
            "blobStoreConfiguration": {"accountName": "account@host"}}),
        )
    };
    assert!(messages("FoundationDBBackup", &tagged("a"), None).is_empty());
    assert_eq!(
        messages("FoundationDBBackup", &tagged("b"), Some(&tagged("a"))),
        ["spec.tag: Invalid value: \"string\": BackupTag is immutable"]
    );
    let long = "t".repeat(65);
    let found = messages("FoundationDBBackup", &tagged(&long), None);
    assert!(
        found.iter().any(|m| m.starts_with("spec.tag: Too long")),
        "{found:?}"
    );
    let cluster = |spec: Value| {
        serde_json::json!({"apiVersion": FDB_API_VERSION, "kind": "FoundationDBCluster",
            "metadata": {"name": "sample", "namespace": "db"}, "spec": spec})
    };
    let many: Vec<String> = (0..101).map(|i| format!("knob_k{i}=1")).collect();
    let found = messages(
        "FoundationDBCluster",
        &cluster(serde_json::json!({"version": "7.1.57",
            "processes": {"general": {"customParameters": many}}})),
        None,
    );
    assert!(
        found
            .iter()
            .any(|m| m.starts_with("spec.processes.general.customParameters: Too many: 101")),
        "{found:?}"
    );
    let found = messages(
        "FoundationDBCluster",
        &cluster(serde_json::json!({"version": "7.1.57",
            "buggify": {"crashLoop": ["storage-1", "*", "not an id"]}})),
        None,
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("spec.buggify.crashLoop[2]"),
        "{found:?}"
    );
}
