use serde_json::json;

use super::*;
use crate::kube::resources::ResourceRegistry;

fn cluster_type() -> ResourceType {
    ResourceRegistry::default()
        .by_kind("apps.foundationdb.org/v1beta2", "FoundationDBCluster")
        .cloned()
        .unwrap()
}

#[test]
fn the_served_crds_have_usable_schemas_for_the_three_kinds() {
    let schemas = CrdSchemas::served();
    for kind in [
        "FoundationDBCluster",
        "FoundationDBBackup",
        "FoundationDBRestore",
    ] {
        assert!(
            schemas
                .for_kind("apps.foundationdb.org/v1beta2", kind)
                .is_some(),
            "{kind}"
        );
    }
}

#[test]
fn a_refusal_is_a_422_naming_the_field_with_its_causes() {
    let mut cluster = json!({
        "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
        "metadata": {"name": "sample"},
        "spec": {"version": "7.1.26", "processCounts": {"storage": "three"}},
    });
    let error = CrdSchemas::served()
        .admit(&cluster_type(), "sample", &mut cluster, None)
        .unwrap_err();
    assert_eq!(error.code, 422);
    assert_eq!(
        error.message,
        "FoundationDBCluster.apps.foundationdb.org \"sample\" is invalid: \
         spec.processCounts.storage: Invalid value: \"string\": spec.processCounts.storage \
         in body must be of type integer: \"string\""
    );
    let status = error.to_status();
    assert_eq!(status["details"]["kind"], "FoundationDBCluster");
    assert_eq!(status["details"]["group"], "apps.foundationdb.org");
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldValueTypeInvalid", "field": "spec.processCounts.storage",
                "message": "Invalid value: \"string\": spec.processCounts.storage in body must be of type integer: \"string\""}])
    );
}

#[test]
fn list_sets_and_maps_hold_each_element_once_unless_the_old_object_did_not() {
    let schema = Schema::from_json(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {
                          "name": {"type": "string"}, "port": {"type": "integer"}}}},
        }}}}),
        "",
    )
    .unwrap();
    let mut object = json!({"spec": {"tags": ["a", "b", "a"],
        "ports": [{"name": "x", "port": 1}, {"name": "x", "port": 2}]}});
    let messages: Vec<String> = check(&schema, &mut object.clone(), None)
        .iter()
        .map(FieldError::message)
        .collect();
    assert_eq!(
        messages,
        vec![
            "spec.ports[1]: Duplicate value: map[string]interface {}{\"name\":\"x\"}",
            "spec.tags[2]: Duplicate value: \"a\"",
        ]
    );
    let old = object.clone();
    object["spec"]["tags"] = json!(["a", "a", "c"]);
    assert!(
        check(&schema, &mut object, Some(&old)).is_empty(),
        "the old object already had duplicates: ratcheted"
    );
}
