//! `objects:`: Kubernetes objects a scenario's pods need besides what the operator makes
//! (the Secrets and ConfigMaps a pod template mounts, e.g. the backup credentials of the
//! Go operator's backup sample). Created by the user when the scenario starts, in the
//! cluster's namespace.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use serde_json::Value;

use super::Scenario;
use super::limits::Problem;

/// The kinds `objects:` may hold (all `apiVersion: v1`).
const KINDS: [&str; 2] = ["Secret", "ConfigMap"];

/// The namespace of the scenario's cluster (`default` when unset).
pub(super) fn cluster_namespace(cluster: &Value) -> &str {
    cluster
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default")
}

/// One object's kind (a kind pods mount) and name, and that it is a v1 mapping in the
/// cluster's namespace.
fn kind_and_name<'a>(
    index: usize,
    object: &'a Value,
    namespace: &str,
) -> Result<(&'a str, &'a str), Problem> {
    let field = |name: &str| format!("objects[{index}].{name}");
    if !object.is_object() {
        return Err((
            format!("objects[{index}]"),
            "must be a Kubernetes manifest (a mapping)".into(),
        ));
    }
    let api_version = object.get("apiVersion").and_then(Value::as_str);
    if api_version != Some("v1") {
        return Err((
            field("apiVersion"),
            format!("must be v1, found {api_version:?}"),
        ));
    }
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    if !KINDS.contains(&kind) {
        return Err((
            field("kind"),
            format!(
                "must be one of {} (what pods mount), found {kind:?}",
                KINDS.join(", ")
            ),
        ));
    }
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.is_empty() {
        return Err((field("metadata.name"), "is required".into()));
    }
    if let Some(own) = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        && own != namespace
    {
        return Err((
            field("metadata.namespace"),
            format!(
                "is {own:?}, but the scenario's cluster is in {namespace:?} (the world has one namespace; leave it out)"
            ),
        ));
    }
    Ok((kind, name))
}

/// Checks every object of `objects:`; each problem names its field (`objects[1].kind`).
pub(super) fn check_objects(scenario: &Scenario) -> Result<(), Problem> {
    let namespace = cluster_namespace(&scenario.cluster);
    let cluster_name = scenario
        .cluster
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // Names the run or the operator gives objects of these kinds.
    let mut reserved: BTreeSet<(String, String)> = BTreeSet::new();
    reserved.insert(("ConfigMap".into(), format!("{cluster_name}-config")));
    if let Some(tls) = &scenario.world.tls {
        reserved.insert(("Secret".into(), tls.secret.clone()));
    }
    let mut seen = BTreeSet::new();
    for (index, object) in scenario.objects.iter().enumerate() {
        let field = |name: &str| format!("objects[{index}].{name}");
        let (kind, name) = kind_and_name(index, object, namespace)?;
        let key = (kind.to_owned(), name.to_owned());
        if reserved.contains(&key) {
            return Err((
                field("metadata.name"),
                format!("{kind} {name:?} is made by the run or the operator; choose another name"),
            ));
        }
        if !seen.insert(key) {
            return Err((
                field("metadata.name"),
                format!("a {kind} named {name:?} is already in objects"),
            ));
        }
        let decoded = match kind {
            "Secret" => serde_json::from_value::<Secret>(object.clone()).map(drop),
            _ => serde_json::from_value::<ConfigMap>(object.clone()).map(drop),
        };
        if let Err(error) = decoded {
            return Err((
                format!("objects[{index}]"),
                format!("is not a valid {kind}: {error}"),
            ));
        }
    }
    Ok(())
}

/// `object` in `namespace`, ready to create.
pub(crate) fn in_namespace(object: &Value, namespace: &str) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.insert("namespace".into(), Value::from(namespace));
    }
    object
}
