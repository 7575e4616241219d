//! Every field path of `crd-field-paths.tsv` (the v1beta2 schemas users' manifests rely
//! on) must be in the generated CRDs with the same JSON type; a missing field would be
//! silently pruned by the API server.

// Test-only crate: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use fdb_shared::api::crd::crds;
use serde_json::Value;

/// Walks an OpenAPI schema and records `path -> type` for every property, with `{}` for
/// map values and `[]` for array items. Int-or-string fields have the empty type.
fn collect_paths(schema: &Value, path: &str, out: &mut BTreeMap<String, String>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        if let Some(items) = schema.get("items") {
            walk_child(items, &format!("{path}[]"), out);
        }
        if let Some(values) = schema.get("additionalProperties").filter(|v| v.is_object()) {
            walk_child(values, &format!("{path}{{}}"), out);
        }
        return;
    };
    for (name, child) in properties {
        walk_child(child, &format!("{path}.{name}"), out);
    }
}

fn walk_child(schema: &Value, path: &str, out: &mut BTreeMap<String, String>) {
    let json_type = schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    out.insert(path.to_owned(), json_type);
    collect_paths(schema, path, out);
}

fn generated_paths() -> BTreeMap<(String, String), String> {
    let mut all = BTreeMap::new();
    for crd in crds() {
        let kind = crd.spec.names.kind.clone();
        let version = &crd.spec.versions[0];
        let schema = serde_json::to_value(
            version
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .unwrap(),
        )
        .unwrap();
        let mut paths = BTreeMap::new();
        collect_paths(&schema, "", &mut paths);
        for (path, json_type) in paths {
            all.insert((kind.clone(), path), json_type);
        }
    }
    all
}

#[test]
fn every_reference_path_is_in_the_generated_crds_with_its_type() {
    let tsv = include_str!("data/crd-field-paths.tsv");
    let generated = generated_paths();
    let mut problems = Vec::new();
    let mut checked = 0;
    for line in tsv.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let mut columns = line.split('\t');
        let (kind, path) = (columns.next().unwrap(), columns.next().unwrap());
        let expected = columns.next().unwrap_or("").trim();
        checked += 1;
        match generated.get(&(kind.to_owned(), path.to_owned())) {
            None => problems.push(format!("missing   {kind} {path} ({expected})")),
            Some(actual) if actual != expected => problems.push(format!(
                "mismatch  {kind} {path}: expected type {expected:?}, generated {actual:?}"
            )),
            Some(_) => {}
        }
    }
    assert!(checked > 300, "the TSV looks truncated ({checked} paths)");
    assert!(
        problems.is_empty(),
        "{} of {checked} reference paths are missing or have another type:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn crds_have_the_documented_names_and_status_subresource_only() {
    let crds = crds();
    let names: Vec<_> = crds
        .iter()
        .map(|crd| {
            (
                crd.spec.names.kind.as_str(),
                crd.spec.names.short_names.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("FoundationDBCluster", vec!["fdb".to_owned()]),
            ("FoundationDBBackup", vec!["fdbbackup".to_owned()]),
            ("FoundationDBRestore", vec!["fdbrestore".to_owned()]),
        ]
    );
    for crd in &crds {
        assert_eq!(crd.spec.group, "apps.foundationdb.org");
        assert_eq!(crd.spec.scope, "Namespaced");
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1beta2");
        let subresources = version.subresources.as_ref().unwrap();
        assert!(subresources.status.is_some());
        assert!(subresources.scale.is_none());
    }
    let columns: Vec<_> = crds[0].spec.versions[0]
        .additional_printer_columns
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| (c.name.as_str(), c.json_path.as_str()))
        .collect();
    assert_eq!(
        columns,
        [
            ("Generation", ".metadata.generation"),
            ("Reconciled", ".status.generations.reconciled"),
            ("Available", ".status.health.available"),
            ("FullReplication", ".status.health.fullReplication"),
            ("Version", ".status.runningVersion"),
            ("Age", ".metadata.creationTimestamp"),
        ]
    );
}
