//! Schemas of Kubernetes objects embedded in our specs (a ConfigMap, a PVC template), as
//! the Go operator's CRDs give them: `metadata` optional. k8s-openapi's schemas make it
//! required (the Rust field is not an `Option`), so a Go manifest with a
//! `volumeClaimTemplate` of only a `spec` was refused by our CRD; the operator decodes
//! such a template fine (missing metadata is empty).

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;

/// The schema of `T` with `metadata` taken out of its `required` fields (also inside the
/// `anyOf`/`oneOf` branches an `Option` wraps it in).
pub fn metadata_optional<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = generator.subschema_for::<T>();
    if let Some(object) = schema.as_object_mut() {
        strip_required_metadata(object);
    }
    schema
}

fn strip_required_metadata(object: &mut serde_json::Map<String, Value>) {
    if let Some(Value::Array(required)) = object.get_mut("required") {
        required.retain(|field| field != "metadata");
        if required.is_empty() {
            object.remove("required");
        }
    }
    for combinator in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = object.get_mut(combinator) {
            for branch in branches.iter_mut().filter_map(Value::as_object_mut) {
                strip_required_metadata(branch);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::api::cluster::FoundationDBCluster;

    #[test]
    fn a_claim_template_without_metadata_is_in_the_crd_and_decodes() {
        let crd = serde_json::to_value(crate::api::crd::crds()[0].clone()).unwrap();
        let template = crd
            .pointer(
                "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/processes\
                 /additionalProperties/properties/volumeClaimTemplate",
            )
            .unwrap();
        assert!(template.get("required").is_none(), "{template}");
        assert!(template["properties"].get("metadata").is_some());
        let cluster: FoundationDBCluster = serde_json::from_value(json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "c"},
            "spec": {"version": "7.1.57", "processes": {"general": {"volumeClaimTemplate": {
                "spec": {"resources": {"requests": {"storage": "16G"}}}}}}},
        }))
        .unwrap();
        let settings = &cluster.spec.processes["general"];
        assert!(settings.volume_claim_template.is_some());
    }
}
