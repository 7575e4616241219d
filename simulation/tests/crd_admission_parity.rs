//! Admission parity with the Go operator's CRDs (v2.33.0,
//! `../shared/reference/go-operator-crds/`): every check the Go CRDs make on a spec at
//! admission (lengths, list sizes, patterns, bounds, validation rules) is in ours
//! (`crds/foundationdb-crds.yaml`, generated), so a Go user's `kubectl apply` refuses at
//! once here what it refused there. Where ours has an `enum` the length check is moot
//! (the enum is stricter); `minItems: 0` checks nothing. Status fields are the
//! operator's own writes and are left out.

// Test-only: helpers fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod reference;

use std::collections::BTreeMap;
use std::path::Path;

use reference::{documents, reference_dir, yaml_files};
use serde_json::Value;

const CHECKS: [&str; 7] = [
    "maxLength",
    "minLength",
    "maxItems",
    "pattern",
    "minimum",
    "maximum",
    "x-kubernetes-validations",
];

/// The v1beta2 `spec` schema of each kind in `crds`.
fn spec_schemas(crds: &[Value]) -> BTreeMap<String, Value> {
    crds.iter()
        .filter(|crd| crd["kind"] == "CustomResourceDefinition")
        .filter_map(|crd| {
            let kind = crd["spec"]["names"]["kind"].as_str()?.to_owned();
            let version = crd["spec"]["versions"]
                .as_array()?
                .iter()
                .find(|v| v["name"] == "v1beta2")?;
            let spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"].clone();
            Some((kind, spec))
        })
        .collect()
}

/// Every node of `schema` by path (`spec.a[].b{}`), templates of Kubernetes types left
/// out (their checks are Kubernetes' own, the same on both sides).
fn nodes(schema: &Value, path: &str, out: &mut BTreeMap<String, Value>) {
    if path.contains("Template") {
        return;
    }
    out.insert(path.to_owned(), schema.clone());
    if let Some(properties) = schema["properties"].as_object() {
        for (name, child) in properties {
            nodes(child, &format!("{path}.{name}"), out);
        }
    }
    if schema["items"].is_object() {
        nodes(&schema["items"], &format!("{path}[]"), out);
    }
    if schema["additionalProperties"].is_object() {
        nodes(&schema["additionalProperties"], &format!("{path}{{}}"), out);
    }
}

#[test]
fn every_admission_check_of_the_go_crds_on_a_spec_is_in_ours() {
    let go_crds: Vec<Value> = yaml_files(&reference_dir().join("go-operator-crds"))
        .iter()
        .flat_map(|path| documents(path))
        .collect();
    let ours =
        documents(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../crds/foundationdb-crds.yaml"));
    let (go, ours) = (spec_schemas(&go_crds), spec_schemas(&ours));
    assert_eq!(go.len(), 3, "{:?}", go.keys());
    let mut missing = Vec::new();
    for (kind, go_spec) in &go {
        let (mut go_nodes, mut our_nodes) = (BTreeMap::new(), BTreeMap::new());
        nodes(go_spec, "spec", &mut go_nodes);
        nodes(&ours[kind], "spec", &mut our_nodes);
        for (path, node) in &go_nodes {
            let Some(our) = our_nodes.get(path) else {
                continue;
            };
            for check in CHECKS {
                if node.get(check).is_none() || our.get(check).is_some() {
                    continue;
                }
                if check.ends_with("Length") && our.get("enum").is_some() {
                    continue;
                }
                missing.push(format!("{kind} {path}: {check} {}", node[check]));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "checks of the Go CRDs ours lacks:\n{}",
        missing.join("\n")
    );
}
