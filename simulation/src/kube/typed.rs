//! A typed Kubernetes object as the JSON the fake API server takes: k8s-openapi's
//! structs serialize without their `apiVersion` and `kind`, which the store needs.

use serde::Serialize;
use serde_json::Value;

/// `object` serialized, with its type's `apiVersion` and `kind` set.
pub fn typed_json<K: k8s_openapi::Resource + Serialize>(
    object: &K,
) -> Result<Value, serde_json::Error> {
    let mut value = serde_json::to_value(object)?;
    if let Some(fields) = value.as_object_mut() {
        fields.insert("apiVersion".into(), Value::from(K::API_VERSION));
        fields.insert("kind".into(), Value::from(K::KIND));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Secret};

    #[test]
    fn sets_the_core_types_version_and_kind() {
        let pod = typed_json(&Pod::default()).unwrap();
        assert_eq!(
            (&pod["apiVersion"], &pod["kind"]),
            (&"v1".into(), &"Pod".into())
        );
        let map = typed_json(&ConfigMap::default()).unwrap();
        assert_eq!(map["kind"], "ConfigMap");
        let pvc = typed_json(&PersistentVolumeClaim::default()).unwrap();
        assert_eq!(pvc["kind"], "PersistentVolumeClaim");
        let secret = typed_json(&Secret::default()).unwrap();
        assert_eq!(
            (&secret["apiVersion"], &secret["kind"]),
            (&"v1".into(), &"Secret".into())
        );
    }
}
