//! Writes a captured cluster as a ready-to-run scenario folder: `live.yaml` (the objects,
//! one YAML document each), `status.json` and `scenario.yaml`, which boots the world from
//! them and reconciles; with a rehearsed manifest it then applies the change (as a merge
//! patch of the captured spec) and waits for its end.

use std::path::Path;

use serde_json::{Map, Value, json};

pub use super::safe_write::WriteError;

/// Seconds the rehearsal's `expect` waits for the change to be reconciled.
pub const REHEARSAL_SECONDS: u64 = 6 * 3600;

/// The JSON merge patch that turns `old` into `new` (RFC 7386: removed keys become null).
pub fn merge_patch(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = Map::new();
            for (key, value) in new {
                match old.get(key) {
                    Some(previous) if previous == value => {}
                    Some(previous) => {
                        patch.insert(key.clone(), merge_patch(previous, value));
                    }
                    None => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in old.keys() {
                if !new.contains_key(key) {
                    patch.insert(key.clone(), Value::Null);
                }
            }
            Value::Object(patch)
        }
        _ => new.clone(),
    }
}

/// `live.yaml`: every captured object, one YAML document each.
fn render_live(objects: &[Value]) -> Result<String, WriteError> {
    let mut live = String::new();
    for object in objects {
        let text = serde_yaml_ng::to_string(object).map_err(|e| WriteError::Render {
            what: "live.yaml",
            message: e.to_string(),
        })?;
        live.push_str("---\n");
        live.push_str(&text);
    }
    Ok(live)
}

/// Why `manifest` is not a change of the cluster `namespace/name`, if it is not: another
/// name, or another namespace's namesake (checked before a capture too, so the error
/// names the manifest rather than what the capture met).
pub fn rehearsal_identity_error(manifest: &Value, name: &str, namespace: &str) -> Option<String> {
    let given = manifest.pointer("/metadata/name").and_then(Value::as_str);
    if given != Some(name) {
        return Some(format!(
            "the manifest's metadata.name ({}) is not the captured cluster's ({name:?})",
            given.map_or_else(|| "none".to_owned(), |given| format!("{given:?}"))
        ));
    }
    match manifest
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(other) if other != namespace => Some(format!(
            "the manifest's metadata.namespace ({other:?}) is not the captured cluster's \
             ({namespace:?})"
        )),
        _ => None,
    }
}

/// The rehearsal: the changed manifest applied as a merge patch over the captured
/// cluster, then the end it must reach.
fn rehearsal_steps(
    cluster: &Value,
    manifest: &Value,
    name: &str,
    namespace: &str,
) -> Result<Vec<Value>, WriteError> {
    if let Some(message) = rehearsal_identity_error(manifest, name, namespace) {
        return Err(WriteError::Rehearse(message));
    }
    let current = super::snapshot::manifest_of(cluster);
    let mut desired = super::snapshot::manifest_of(manifest);
    desired["metadata"]["namespace"] = json!(namespace);
    let mut patch = merge_patch(&current, &desired);
    if let Some(patch) = patch.as_object_mut() {
        patch.remove("apiVersion");
        patch.remove("kind");
    }
    if patch.as_object().is_some_and(Map::is_empty) {
        return Err(WriteError::Rehearse(
            "the manifest asks for no change to the captured cluster".to_owned(),
        ));
    }
    Ok(vec![
        json!({"apply": patch}),
        json!({"reconcile": {}}),
        json!({"expect": {"within": REHEARSAL_SECONDS, "reconciled": true, "available": true}}),
    ])
}

/// Writes the folder; `rehearse` is the changed cluster manifest, if any. Every file is
/// rendered first (a refused rehearsal writes nothing); the folder must be new or empty
/// unless `force` (then the snapshot's own files in it are replaced, nothing else), and
/// each file is written through a new file and renamed into place
/// ([`super::safe_write`]), so no planted symlink is followed.
pub fn write_dir(
    dir: &Path,
    objects: &[Value],
    status: Option<&Value>,
    rehearse: Option<&Value>,
    force: bool,
) -> Result<(), WriteError> {
    let files = render_files(dir, objects, status, rehearse)?;
    super::safe_write::write_files(dir, &files, force)
}

/// The folder's files, rendered: `live.yaml`, `status.json` (when captured) and
/// `scenario.yaml`.
fn render_files(
    dir: &Path,
    objects: &[Value],
    status: Option<&Value>,
    rehearse: Option<&Value>,
) -> Result<Vec<(&'static str, String)>, WriteError> {
    let cluster = objects
        .iter()
        .find(|o| o.get("kind").and_then(Value::as_str) == Some("FoundationDBCluster"))
        .ok_or_else(|| WriteError::Render {
            what: "live.yaml",
            message: "no FoundationDBCluster captured".to_owned(),
        })?;
    let name = cluster
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let namespace = cluster
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default");
    let mut files = vec![("live.yaml", render_live(objects)?)];
    let mut snapshot = json!({"objects": "live.yaml", "cluster": format!("{namespace}/{name}")});
    if let Some(status) = status {
        let text = serde_json::to_string_pretty(status).map_err(|e| WriteError::Render {
            what: "status.json",
            message: e.to_string(),
        })?;
        files.push(("status.json", text));
        snapshot["status"] = json!("status.json");
    }
    // The take-over first: it must end Reconciled (and the result's events show whether
    // it wrote anything).
    let mut steps = vec![
        json!({"reconcile": {}}),
        json!({"expect": {"reconciled": true, "available": true}}),
    ];
    if let Some(manifest) = rehearse {
        steps.extend(rehearsal_steps(cluster, manifest, name, namespace)?);
    }
    let scenario = json!({
        "name": format!("snapshot of {namespace}/{name}"),
        "snapshot": snapshot,
        "steps": steps,
    });
    let text = serde_yaml_ng::to_string(&scenario).map_err(|e| WriteError::Render {
        what: "scenario.yaml",
        message: e.to_string(),
    })?;
    files.push((
        "scenario.yaml",
        format!(
            "# Captured by `fdb-operator snapshot`; run it with `fdb-operator simulate {}`.\n{text}",
            dir.join("scenario.yaml").display()
        ),
    ));
    Ok(files)
}
