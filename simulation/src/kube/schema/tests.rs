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
