//! What an update may change in a pod's spec, as the real API server's `ValidatePodUpdate`
//! decides: only `spec.containers[*].image`, `spec.initContainers[*].image`,
//! `spec.activeDeadlineSeconds` (set, or lowered), additions to `spec.tolerations`,
//! `spec.terminationGracePeriodSeconds` (only from a negative value to 1), and removals
//! from `spec.schedulingGates`. Anything else is `422 Invalid` with the server's message.
//! Metadata and status changes are not judged here. Binding a pod to a node goes
//! through the `binding` subresource, not an update.
//!
//! Like the server's semantic equality, an absent field, `null`, an empty list and an
//! empty map are the same.

use serde_json::{Map, Value};

use super::accounting::changed_paths;
use super::errors::ApiError;
use super::resources::ResourceType;

/// The server's message for a forbidden pod spec change (Kubernetes 1.27 and later).
pub const FORBIDDEN_MESSAGE: &str = "spec: Forbidden: pod updates may not change fields other \
    than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,\
    `spec.tolerations` (only additions to existing tolerations),\
    `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// Checks that updating a pod from `current` to `next` changes its spec only where the
/// real server allows it.
pub fn validate_pod_update(
    resource: &ResourceType,
    name: &str,
    current: &Value,
    next: &Value,
) -> Result<(), ApiError> {
    let old = normalized(current.get("spec").unwrap_or(&Value::Null));
    let new = normalized(next.get("spec").unwrap_or(&Value::Null));
    if old == new {
        return Ok(());
    }
    let invalid = |why: String| Err(ApiError::invalid(resource, name, &why));
    let mut munged = new.clone();
    for field in ["containers", "initContainers"] {
        let old_list = list(&old, field);
        let new_list = list(&new, field);
        if old_list.len() != new_list.len() {
            return invalid(format!(
                "spec.{field}: Forbidden: pod updates may not add or remove containers"
            ));
        }
        for (index, (old_container, new_container)) in old_list.iter().zip(&new_list).enumerate() {
            let image = new_container.get("image").and_then(Value::as_str);
            if image.is_none_or(|i| i.trim().is_empty()) {
                return invalid(format!("spec.{field}[{index}].image: Required value"));
            }
            if let Some(Value::Array(items)) = munged.get_mut(field)
                && let Some(item) = items.get_mut(index)
            {
                set_or_remove(item, "image", old_container.get("image"));
            }
        }
    }
    munge_active_deadline(&old, &mut munged).or_else(invalid)?;
    munge_tolerations(&old, &mut munged).or_else(invalid)?;
    if old
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|seconds| seconds < 0)
        && munged
            .get("terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
            == Some(1)
    {
        set_or_remove(
            &mut munged,
            "terminationGracePeriodSeconds",
            old.get("terminationGracePeriodSeconds"),
        );
    }
    let old_gates = list(&old, "schedulingGates");
    if list(&munged, "schedulingGates")
        .iter()
        .all(|g| old_gates.contains(g))
    {
        set_or_remove(&mut munged, "schedulingGates", old.get("schedulingGates"));
    }
    let munged = normalized(&munged);
    if munged == old {
        return Ok(());
    }
    let changed = changed_paths(&old, &munged, 8)
        .into_iter()
        .map(|path| format!("spec.{path}"))
        .collect::<Vec<_>>()
        .join(", ");
    invalid(format!("{FORBIDDEN_MESSAGE}\n  changed: {changed}"))
}

/// `activeDeadlineSeconds` may be set, or lowered, never unset or raised.
fn munge_active_deadline(old: &Value, munged: &mut Value) -> Result<(), String> {
    let key = "activeDeadlineSeconds";
    let before = old.get(key).and_then(Value::as_i64);
    let after = munged.get(key).and_then(Value::as_i64);
    match (before, after) {
        (_, Some(value)) if value <= 0 => Err(format!(
            "spec.{key}: Invalid value: {value}: must be between 1 and 2147483647, inclusive"
        )),
        (Some(b), Some(a)) if a > b => Err(format!(
            "spec.{key}: Invalid value: {a}: must be less than or equal to previous value"
        )),
        (Some(_), None) => Err(format!(
            "spec.{key}: Invalid value: \"null\": must not update from a positive integer to nil \
             value"
        )),
        _ => {
            set_or_remove(munged, key, old.get(key));
            Ok(())
        }
    }
}

/// Existing tolerations must stay (a `NoExecute` one may only shorten its
/// `tolerationSeconds`); new ones may be added.
fn munge_tolerations(old: &Value, munged: &mut Value) -> Result<(), String> {
    let before = list(old, "tolerations");
    let after = list(munged, "tolerations");
    for existing in &before {
        let kept = after.iter().any(|t| {
            t == existing || same_toleration_shorter_seconds(existing, t).unwrap_or(false)
        });
        if !kept {
            return Err(format!(
                "spec.tolerations: Forbidden: existing toleration can not be modified except its \
                 tolerationSeconds: {existing}"
            ));
        }
    }
    set_or_remove(munged, "tolerations", old.get("tolerations"));
    Ok(())
}

fn same_toleration_shorter_seconds(old: &Value, new: &Value) -> Option<bool> {
    let strip = |t: &Value| {
        let mut t = t.clone();
        t.as_object_mut()?.remove("tolerationSeconds");
        Some(t)
    };
    let (old_seconds, new_seconds) = (
        old.get("tolerationSeconds").and_then(Value::as_i64),
        new.get("tolerationSeconds").and_then(Value::as_i64),
    );
    Some(
        strip(old)? == strip(new)?
            && old.get("effect").and_then(Value::as_str) == Some("NoExecute")
            && match (old_seconds, new_seconds) {
                (Some(o), Some(n)) => n <= o,
                (None, Some(_)) => true,
                _ => false,
            },
    )
}

fn list(spec: &Value, field: &str) -> Vec<Value> {
    spec.get(field)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn set_or_remove(object: &mut Value, key: &str, value: Option<&Value>) {
    if let Some(map) = object.as_object_mut() {
        match value {
            Some(value) => map.insert(key.to_owned(), value.clone()),
            None => map.remove(key),
        };
    }
}

/// The value without `null`s, empty lists and empty maps in maps (semantic equality).
pub fn normalized(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), normalized(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pods() -> ResourceType {
        ResourceType::new("", "v1", "pods", "Pod", true, true)
    }

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    fn base() -> Value {
        json!({"nodeName": "node-1",
               "initContainers": [{"name": "init", "image": "sc:1"}],
               "containers": [{"name": "main", "image": "fdb:1", "args": ["a"]},
                              {"name": "sidecar", "image": "sc:1"}],
               "tolerations": [{"key": "a", "operator": "Exists"}],
               "activeDeadlineSeconds": 100})
    }

    fn check(change: impl FnOnce(&mut Value)) -> Result<(), ApiError> {
        let mut next = base();
        change(&mut next);
        validate_pod_update(&pods(), "p", &pod(base()), &pod(next))
    }

    #[test]
    fn images_tolerations_additions_and_deadlines_may_change() {
        assert!(check(|s| s["containers"][1]["image"] = json!("sc:2")).is_ok());
        assert!(check(|s| s["initContainers"][0]["image"] = json!("sc:2")).is_ok());
        assert!(
            check(|s| s["tolerations"]
                .as_array_mut()
                .unwrap()
                .push(json!({"key": "b", "operator": "Exists"})))
            .is_ok()
        );
        assert!(check(|s| s["activeDeadlineSeconds"] = json!(50)).is_ok());
        assert!(
            check(|s| s["schedulingGates"] = json!([])).is_ok(),
            "an empty list is no list"
        );
    }

    #[test]
    fn other_spec_changes_are_forbidden_with_the_real_message() {
        let error = check(|s| s["containers"][0]["args"] = json!(["b"])).unwrap_err();
        assert_eq!((error.code, error.reason.as_str()), (422, "Invalid"));
        assert!(
            error.message.starts_with(
                "Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other \
                 than `spec.containers[*].image`"
            ),
            "{}",
            error.message
        );
        assert!(
            error.message.contains("spec.containers"),
            "{}",
            error.message
        );
        assert_eq!(
            check(|s| s["nodeName"] = json!("node-2")).unwrap_err().code,
            422
        );
        let added = check(|s| {
            s["containers"]
                .as_array_mut()
                .unwrap()
                .push(json!({"name": "x", "image": "x:1"}))
        })
        .unwrap_err();
        assert!(
            added.message.contains("may not add or remove containers"),
            "{}",
            added.message
        );
        assert!(check(|s| s["tolerations"] = json!([])).is_err());
        assert!(check(|s| s["activeDeadlineSeconds"] = json!(200)).is_err());
        assert!(check(|s| s["terminationGracePeriodSeconds"] = json!(5)).is_err());
        assert!(check(|s| s["containers"][0]["image"] = json!("")).is_err());
    }
}
