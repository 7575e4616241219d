//! The rules an update (PUT or PATCH) of a stored object must pass before it is
//! committed: optimistic concurrency, the status subresource split, admission of pods,
//! services and finalizers, and the metadata the server owns (on creation too).

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::admission;
use super::core_defaults;
use super::errors::ApiError;
use super::pod_updates::validate_pod_update;
use super::resources::{ResourceType, is_core};
use super::validation::validate_object;

/// `metadata.<field>` as a string.
pub(super) fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.get("metadata")?.get(field)?.as_str()
}

/// `metadata.finalizers`, empty when absent.
pub(super) fn finalizers(object: &Value) -> Vec<String> {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.is_object() {
        *object = json!({});
    }
    if !object.get("metadata").is_some_and(Value::is_object) {
        object["metadata"] = json!({});
    }
    match object.get_mut("metadata") {
        Some(Value::Object(map)) => map,
        _ => unreachable!("metadata was set to an object just above"),
    }
}

/// The object without `metadata` and `status`: what bumps `generation` when it changes.
fn spec_like(object: &Value) -> Value {
    match object {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| {
                    !matches!(key.as_str(), "metadata" | "status" | "apiVersion" | "kind")
                })
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Optimistic concurrency: a requested resourceVersion must be the current one.
pub(super) fn check_version(
    resource: &ResourceType,
    name: &str,
    current: &Value,
    requested: &Value,
) -> Result<(), ApiError> {
    let current_version = meta_str(current, "resourceVersion").unwrap_or_default();
    if let Some(requested_version) = meta_str(requested, "resourceVersion")
        && !requested_version.is_empty()
        && requested_version != current_version
    {
        return Err(ApiError::conflict(
            resource,
            name,
            "the object has been modified; please apply your changes to the latest \
             version and try again",
        ));
    }
    Ok(())
}

/// The status subresource split: a status write changes only the status, an object
/// write everything but the status (for kinds with the subresource).
pub(super) fn split_status(
    resource: &ResourceType,
    current: &Value,
    requested: Value,
    status_only: bool,
) -> Value {
    let source = if status_only {
        requested.get("status").cloned()
    } else {
        current.get("status").cloned()
    };
    let mut next = if status_only {
        current.clone()
    } else {
        requested
    };
    if status_only || resource.status_subresource {
        match source {
            Some(status) => next["status"] = status,
            None => {
                next.as_object_mut().map(|map| map.remove("status"));
            }
        }
    }
    next
}

/// What an object update may change: pods and services by their own rules, every object
/// valid, no finalizer added once deletion started.
pub(super) fn admit_update(
    resource: &ResourceType,
    name: &str,
    current: &Value,
    next: &mut Value,
) -> Result<(), ApiError> {
    // Defaults are applied when any body is decoded, updates included
    // (`core_defaults`); admission plugins such as the service account's run on create.
    if is_core(resource, "pods") {
        core_defaults::default_pod(next);
        validate_pod_update(resource, name, current, next)?;
    }
    if is_core(resource, "persistentvolumeclaims") {
        core_defaults::default_claim(next, None);
    }
    if is_core(resource, "services") {
        core_defaults::default_service(next);
        admission::update_service(resource, name, current, next)?;
    }
    validate_object(resource, name, next, false)?;
    if meta_str(current, "deletionTimestamp").is_some()
        && finalizers(next)
            .iter()
            .any(|f| !finalizers(current).contains(f))
    {
        return Err(ApiError::invalid(
            resource,
            name,
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object \
             is being deleted",
        ));
    }
    Ok(())
}

/// The server owns the type, identity, deletion and version metadata; the generation
/// moves when the spec does.
pub(super) fn keep_server_metadata(resource: &ResourceType, current: &Value, next: &mut Value) {
    next["apiVersion"] = json!(resource.api_version());
    next["kind"] = json!(resource.kind);
    let current_meta = current
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let metadata = metadata_mut(next);
    for field in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "resourceVersion",
    ] {
        match current_meta.get(field) {
            Some(value) => metadata.insert(field.to_string(), value.clone()),
            None => metadata.remove(field),
        };
    }
    if spec_like(current) != spec_like(next) {
        let generation = current
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        metadata_mut(next).insert("generation".into(), json!(generation + 1));
    }
}

/// RFC 3339 with whole seconds, as Kubernetes writes timestamps.
pub(super) fn rfc3339(time: Timestamp) -> String {
    time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A created object's server-owned fields: type, initial status, name, namespace (for
/// namespaced kinds), uid, creation time, version and generation 1, no deletion marks.
pub(super) fn stamp_created(
    resource: &ResourceType,
    object: &mut Value,
    name: &str,
    namespace: &str,
    uid: &str,
    now: Timestamp,
    resource_version: u64,
) {
    object["apiVersion"] = json!(resource.api_version());
    object["kind"] = json!(resource.kind);
    let status = object.as_object_mut().and_then(|map| map.remove("status"));
    if let Some(status) = initial_status(resource, status) {
        object["status"] = status;
    }
    let metadata = metadata_mut(object);
    metadata.insert("name".into(), json!(name));
    if resource.namespaced {
        metadata.insert("namespace".into(), json!(namespace));
    } else {
        metadata.remove("namespace");
    }
    metadata.insert("uid".into(), json!(uid));
    metadata.insert("creationTimestamp".into(), json!(rfc3339(now)));
    metadata.insert(
        "resourceVersion".into(),
        json!(resource_version.to_string()),
    );
    metadata.insert("generation".into(), json!(1));
    metadata.remove("deletionTimestamp");
    metadata.remove("deletionGracePeriodSeconds");
}

/// The status an object starts with, as the real server's create strategies set it.
fn initial_status(resource: &ResourceType, requested: Option<Value>) -> Option<Value> {
    if !resource.status_subresource {
        return requested;
    }
    match (resource.group.as_str(), resource.plural.as_str()) {
        // Nodes may be created with their status (the kubelet registers them so).
        ("", "nodes") => requested,
        ("", "pods") | ("", "persistentvolumeclaims") => Some(json!({"phase": "Pending"})),
        ("", "namespaces") => Some(json!({"phase": "Active"})),
        _ => None,
    }
}
