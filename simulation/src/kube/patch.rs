//! Patches: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and the subset of
//! Kubernetes' strategic merge patch that the operator's objects need.
//!
//! Strategic merge here: maps merge recursively and `null` deletes; lists of objects
//! merge item by item on their merge key (`name` for `containers`, `initContainers`,
//! `ephemeralContainers`, `volumes`, `env`, `imagePullSecrets`; `containerPort` (or
//! `port` for services) for `ports`; `mountPath` for `volumeMounts`; `type` for
//! `conditions`; `uid` for `ownerReferences`), `$patch: delete` removes an item,
//! `$patch: replace` replaces a map or list, `finalizers` merge as a set, and every other
//! list is replaced. Like the real server, custom resources refuse strategic merge (415).
//! Server-side apply is not supported (415).

use serde_json::{Map, Value};

use super::errors::ApiError;
use super::resources::ResourceType;

/// The patch flavours, from the request's content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`.
    Json,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply; refused).
    Apply,
}

impl PatchType {
    /// The patch type named by a `Content-Type` header.
    pub fn from_content_type(content_type: &str) -> Result<Self, ApiError> {
        let media = content_type.split(';').next().unwrap_or_default().trim();
        match media {
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/json-patch+json" => Ok(Self::Json),
            "application/strategic-merge-patch+json" => Ok(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Ok(Self::Apply),
            other => Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types \
                 include: application/json-patch+json, application/merge-patch+json, \
                 application/strategic-merge-patch+json (got \"{other}\")"
            ))),
        }
    }

    /// Short name for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Merge => "merge",
            Self::Json => "json",
            Self::Strategic => "strategic",
            Self::Apply => "apply",
        }
    }
}

/// Applies a patch body to a copy of `current`.
pub fn apply_patch(
    resource: &ResourceType,
    name: &str,
    current: &Value,
    patch_type: PatchType,
    body: &[u8],
) -> Result<Value, ApiError> {
    let mut patched = current.clone();
    match patch_type {
        PatchType::Apply => {
            return Err(ApiError::unsupported_media_type(
                "server-side apply is not supported by the simulated API server",
            ));
        }
        PatchType::Merge => {
            let patch = parse_body(body)?;
            json_patch::merge(&mut patched, &patch);
        }
        PatchType::Json => {
            let patch: json_patch::Patch = serde_json::from_slice(body).map_err(|error| {
                ApiError::bad_request(format!("invalid JSON patch for {name}: {error}"))
            })?;
            json_patch::patch(&mut patched, &patch.0).map_err(|error| {
                ApiError::invalid(resource, name, &format!("JSON patch failed: {error}"))
            })?;
        }
        PatchType::Strategic => {
            if resource.is_custom() {
                return Err(ApiError::unsupported_media_type(format!(
                    "strategic merge patch is not supported for custom resource {}; \
                     use a merge or JSON patch",
                    resource.qualified_name()
                )));
            }
            let patch = parse_body(body)?;
            strategic_merge(&mut patched, &patch);
        }
    }
    Ok(patched)
}

fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|error| ApiError::bad_request(format!("patch body is not valid JSON: {error}")))
}

const DIRECTIVE: &str = "$patch";

/// Strategic merge of `patch` into `target`.
pub fn strategic_merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return;
    };
    if patch_map.get(DIRECTIVE).and_then(Value::as_str) == Some("replace") {
        *target = Value::Object(without_directives(patch_map));
        return;
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target_map) = target else {
        return;
    };
    for (key, value) in patch_map {
        if let Some(list_field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(items)), Value::Array(remove)) =
                (target_map.get_mut(list_field), value)
            {
                items.retain(|item| !remove.contains(item));
            }
            continue;
        }
        if key.starts_with('$') {
            // `$setElementOrder/...`, `$retainKeys`: ordering and pruning hints we ignore.
            continue;
        }
        match value {
            Value::Null => {
                target_map.remove(key);
            }
            Value::Array(patch_items) => {
                let merged = match target_map.get(key) {
                    Some(Value::Array(current)) => merge_list(key, current, patch_items),
                    _ => strip_list_directives(patch_items),
                };
                target_map.insert(key.clone(), Value::Array(merged));
            }
            Value::Object(_) => {
                let entry = target_map.entry(key.clone()).or_insert(Value::Null);
                strategic_merge(entry, value);
            }
            scalar => {
                target_map.insert(key.clone(), scalar.clone());
            }
        }
    }
}

/// The merge key of a list field, when the items carry it.
fn merge_key(field: &str, items: &[&Value]) -> Option<&'static str> {
    let candidates: &[&'static str] = match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets" => &["name"],
        "ports" => &["containerPort", "port"],
        "volumeMounts" => &["mountPath"],
        "conditions" => &["type"],
        "ownerReferences" => &["uid"],
        _ => &[],
    };
    candidates
        .iter()
        .copied()
        .find(|key| items.iter().all(|item| item.get(key).is_some()))
}

fn merge_list(field: &str, current: &[Value], patch: &[Value]) -> Vec<Value> {
    if patch
        .iter()
        .any(|item| item.get(DIRECTIVE).and_then(Value::as_str) == Some("replace"))
    {
        return strip_list_directives(patch);
    }
    if field == "finalizers" && patch.iter().all(Value::is_string) {
        let mut merged = current.to_vec();
        for item in patch {
            if !merged.contains(item) {
                merged.push(item.clone());
            }
        }
        return merged;
    }
    let all: Vec<&Value> = current.iter().chain(patch.iter()).collect();
    let Some(key) = merge_key(field, &all).filter(|_| all.iter().all(|v| v.is_object())) else {
        return strip_list_directives(patch);
    };
    let mut merged = current.to_vec();
    for item in patch {
        let id = item.get(key);
        let position = merged.iter().position(|existing| existing.get(key) == id);
        let delete = item.get(DIRECTIVE).and_then(Value::as_str) == Some("delete");
        match (position, delete) {
            (Some(index), true) => {
                merged.remove(index);
            }
            (None, true) => {}
            (Some(index), false) => strategic_merge(&mut merged[index], item),
            (None, false) => {
                let mut fresh = Value::Null;
                strategic_merge(&mut fresh, item);
                merged.push(fresh);
            }
        }
    }
    merged
}

fn strip_list_directives(items: &[Value]) -> Vec<Value> {
    items
        .iter()
        .filter(|item| {
            item.get(DIRECTIVE).is_none() || item.as_object().is_some_and(|m| m.len() > 1)
        })
        .filter(|item| item.get(DIRECTIVE).and_then(Value::as_str) != Some("delete"))
        .map(|item| match item {
            Value::Object(map) => Value::Object(without_directives(map)),
            other => other.clone(),
        })
        .collect()
}

fn without_directives(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .filter(|(key, _)| !key.starts_with('$'))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::kube::resources::ResourceRegistry;

    fn pods() -> ResourceType {
        ResourceRegistry::default()
            .by_plural("", "v1", "pods")
            .unwrap()
            .clone()
    }

    #[test]
    fn strategic_merge_merges_containers_env_and_ports_by_key() {
        let mut pod = json!({"spec": {"containers": [
            {"name": "fdb", "image": "fdb:7.1", "env": [{"name": "A", "value": "1"}],
             "ports": [{"containerPort": 4501, "name": "tls"}]},
            {"name": "sidecar", "image": "sc:1"}
        ], "nodeSelector": {"a": "b"}}});
        strategic_merge(
            &mut pod,
            &json!({"spec": {"containers": [
                {"name": "fdb", "image": "fdb:7.3", "env": [{"name": "B", "value": "2"}],
                 "ports": [{"containerPort": 4501, "protocol": "TCP"}]},
                {"name": "sidecar", "$patch": "delete"},
                {"name": "extra", "image": "x"}
            ], "nodeSelector": {"a": null, "c": "d"}}}),
        );
        assert_eq!(
            pod,
            json!({"spec": {"containers": [
                {"name": "fdb", "image": "fdb:7.3",
                 "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                 "ports": [{"containerPort": 4501, "name": "tls", "protocol": "TCP"}]},
                {"name": "extra", "image": "x"}
            ], "nodeSelector": {"c": "d"}}})
        );
    }

    #[test]
    fn strategic_merge_replaces_plain_lists_and_unions_finalizers() {
        let mut object = json!({"metadata": {"finalizers": ["a"]}, "spec": {"args": ["x", "y"]}});
        strategic_merge(
            &mut object,
            &json!({"metadata": {"finalizers": ["b", "a"]}, "spec": {"args": ["z"]}}),
        );
        assert_eq!(
            object,
            json!({"metadata": {"finalizers": ["a", "b"]}, "spec": {"args": ["z"]}})
        );
    }

    #[test]
    fn custom_resources_refuse_strategic_merge_and_apply_is_refused() {
        let cluster = ResourceRegistry::default()
            .by_plural("apps.foundationdb.org", "v1beta2", "foundationdbclusters")
            .unwrap()
            .clone();
        let error =
            apply_patch(&cluster, "c", &json!({}), PatchType::Strategic, b"{}").unwrap_err();
        assert_eq!(error.code, 415);
        let error = apply_patch(&pods(), "p", &json!({}), PatchType::Apply, b"{}").unwrap_err();
        assert_eq!(error.code, 415);
        assert!(
            error
                .message
                .contains("not supported by the simulated API server")
        );
    }

    #[test]
    fn merge_and_json_patches() {
        let current = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        let merged = apply_patch(
            &pods(),
            "p",
            &current,
            PatchType::Merge,
            br#"{"metadata":{"labels":{"a":null,"c":"3"}}}"#,
        )
        .unwrap();
        assert_eq!(
            merged,
            json!({"metadata": {"labels": {"b": "2", "c": "3"}}})
        );
        let patched = apply_patch(
            &pods(),
            "p",
            &current,
            PatchType::Json,
            br#"[{"op":"replace","path":"/metadata/labels/a","value":"9"}]"#,
        )
        .unwrap();
        assert_eq!(
            patched,
            json!({"metadata": {"labels": {"a": "9", "b": "2"}}})
        );
        let failed = apply_patch(
            &pods(),
            "p",
            &current,
            PatchType::Json,
            br#"[{"op":"test","path":"/metadata/labels/a","value":"0"}]"#,
        )
        .unwrap_err();
        assert_eq!(failed.code, 422);
        assert_eq!(
            PatchType::from_content_type("text/plain").unwrap_err().code,
            415
        );
    }
}
