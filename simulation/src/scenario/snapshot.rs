//! `snapshot:` of a scenario: the world starts as a live cluster was captured
//! (`spec/simulation.md`, "Additions (v3): starting from a live cluster's snapshot").
//!
//! Loading reads the files (relative to the scenario file) and checks that the capture
//! holds together before anything runs: every pod on a captured node, every process of
//! the `status json` at a captured pod's IP, every ConfigMap a pod mounts captured, one
//! cluster per name. Each failure names the object and the field.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Component, Path};

use fdb_shared::yaml_input;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::limits::{MAX_NODES, MAX_PROCESSES, check_count};
use crate::kube::identity::identity_problem;

/// Largest snapshot file read (a 1000-pod capture is a few MiB).
pub const MAX_SNAPSHOT_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// `snapshot:` as written: each part a path relative to the scenario file, or inline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SnapshotSpec {
    /// The captured objects: a path to a YAML stream or a `kind: List`, or inline (a
    /// list of objects, or a `kind: List`).
    pub objects: Value,
    /// `status json` of the captured database: a path, or inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
    /// The FoundationDBCluster the run takes over, as `NAMESPACE/NAME`; needed when the
    /// capture holds more than one (`fdb-operator snapshot` always writes it), so a
    /// cluster added to a folder cannot stand in for the captured one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
}

/// A problem: the field (`snapshot.objects[3] Pod default/x: spec.nodeName`) and what is
/// wrong.
pub type Problem = (String, String);

/// A loaded, checked capture.
#[derive(Debug, Clone, PartialEq)]
pub struct Captured {
    /// Every captured object, in the order given.
    pub objects: Vec<Value>,
    /// The captured `status json`, when given.
    pub status: Option<Value>,
    /// The captured FoundationDBCluster the scenario's operator manages (`cluster`, or
    /// the only one).
    pub cluster: Value,
}

impl SnapshotSpec {
    /// Reads the parts given as paths (relative to `base`) and returns the snapshot with
    /// both parts inline.
    pub fn load(&self, base: &Path) -> Result<SnapshotSpec, Problem> {
        let objects = match &self.objects {
            Value::String(path) => {
                let text = read(base, "snapshot.objects", path)?;
                Value::Array(
                    parse_objects(&text)
                        .map_err(|m| ("snapshot.objects".to_owned(), format!("{path}: {m}")))?,
                )
            }
            other => Value::Array(
                list_items(other.clone()).map_err(|m| ("snapshot.objects".to_owned(), m))?,
            ),
        };
        let status = match &self.status {
            Some(Value::String(path)) => {
                let text = read(base, "snapshot.status", path)?;
                Some(
                    parse_status(&text)
                        .map_err(|m| ("snapshot.status".to_owned(), format!("{path}: {m}")))?,
                )
            }
            other => other.clone(),
        };
        Ok(SnapshotSpec {
            objects,
            status,
            cluster: self.cluster.clone(),
        })
    }

    /// Checks that the (loaded) capture holds together.
    pub fn check(&self) -> Result<Captured, Problem> {
        let objects =
            list_items(self.objects.clone()).map_err(|m| ("snapshot.objects".to_owned(), m))?;
        let mut clusters: BTreeMap<String, (String, usize)> = BTreeMap::new();
        let mut nodes = BTreeSet::new();
        let mut config_maps = BTreeSet::new();
        let mut pod_ips = BTreeMap::new();
        for (index, object) in objects.iter().enumerate() {
            let (kind, namespace, name) = identity(object).ok_or_else(|| {
                (
                    format!("snapshot.objects[{index}]"),
                    "needs kind, apiVersion and metadata.name".to_owned(),
                )
            })?;
            check_identity(index, object, &kind)?;
            match kind.as_str() {
                "FoundationDBCluster" => {
                    // Names are unique across namespaces (simulation.md, Additions v3): a
                    // namesake in another namespace is refused, not chosen instead.
                    if let Some((other, _)) = clusters.get(&name) {
                        return Err((
                            object_field(index, object, "metadata.name"),
                            format!("two clusters with the same name (also in namespace {other})"),
                        ));
                    }
                    clusters.insert(name.clone(), (namespace.clone(), index));
                }
                "Node" => {
                    nodes.insert(name);
                }
                "ConfigMap" => {
                    config_maps.insert((namespace, name));
                }
                _ => {}
            }
        }
        check_world_limits(&objects)?;
        for (index, object) in objects.iter().enumerate() {
            let Some((kind, namespace, name)) = identity(object) else {
                continue;
            };
            if kind != "Pod" {
                continue;
            }
            check_pod(index, object, &namespace, &nodes, &config_maps)?;
            if let Some(ip) = object.pointer("/status/podIP").and_then(Value::as_str) {
                pod_ips.insert(ip.to_owned(), format!("{namespace}/{name}"));
            }
        }
        let index = chosen_cluster(&clusters, self.cluster.as_deref())?;
        let cluster = objects[index].clone();
        if let Some(status) = &self.status {
            check_process_addresses(status, &pod_ips)?;
        }
        Ok(Captured {
            objects,
            status: self.status.clone(),
            cluster,
        })
    }
}

/// The index of the cluster the run takes over: the one `snapshot.cluster` names
/// (`NAMESPACE/NAME`), or the only one captured.
fn chosen_cluster(
    clusters: &BTreeMap<String, (String, usize)>,
    wanted: Option<&str>,
) -> Result<usize, Problem> {
    let listed = || {
        clusters
            .iter()
            .map(|(name, (namespace, _))| format!("{namespace}/{name}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if clusters.is_empty() {
        return Err((
            "snapshot.objects".to_owned(),
            "no FoundationDBCluster captured".to_owned(),
        ));
    }
    let Some(wanted) = wanted else {
        return match clusters.values().collect::<Vec<_>>().as_slice() {
            [(_, index)] => Ok(*index),
            _ => Err((
                "snapshot.cluster".to_owned(),
                format!(
                    "the capture holds several FoundationDBClusters ({}); name the one to \
                     take over as NAMESPACE/NAME",
                    listed()
                ),
            )),
        };
    };
    let (namespace, name) = wanted.split_once('/').unwrap_or(("default", wanted));
    match clusters.get(name) {
        Some((found, index)) if found == namespace => Ok(*index),
        _ => Err((
            "snapshot.cluster".to_owned(),
            format!(
                "no FoundationDBCluster {namespace}/{name} in the capture (it holds {})",
                listed()
            ),
        )),
    }
}

/// The world's limits (`scenario/limits.rs`) hold for a capture as for a scenario: at
/// most [`MAX_NODES`] nodes and [`MAX_PROCESSES`] pods.
fn check_world_limits(objects: &[Value]) -> Result<(), Problem> {
    let count = |kind: &str| objects.iter().filter(|o| o["kind"] == kind).count() as u64;
    check_count(
        "snapshot.objects (Nodes)",
        count("Node"),
        MAX_NODES.into(),
        "simulated nodes",
    )?;
    check_count(
        "snapshot.objects (Pods)",
        count("Pod"),
        MAX_PROCESSES.into(),
        "pods",
    )
}

/// The object's name, namespace and uid are what a real API server holds
/// (`kube/identity.rs`): the world makes host paths of them, so a capture naming a
/// namespace or uid with `/` or `..` is refused before anything runs.
fn check_identity(index: usize, object: &Value, kind: &str) -> Result<(), Problem> {
    let field = |name: &str| {
        object
            .pointer(&format!("/metadata/{name}"))
            .and_then(Value::as_str)
    };
    let core = object.get("apiVersion").and_then(Value::as_str) == Some("v1");
    let name = field("name").unwrap_or_default();
    let Some((which, problem)) =
        identity_problem(kind, core, name, field("namespace"), field("uid"))
    else {
        return Ok(());
    };
    let value = field(which.trim_start_matches("metadata.")).unwrap_or_default();
    // Only the valid parts of the identity name the object.
    let object_name = match which {
        "metadata.name" => kind.to_owned(),
        "metadata.namespace" => format!("{kind} {name}"),
        _ => format!("{kind} {}/{name}", field("namespace").unwrap_or("default")),
    };
    Err((
        format!("snapshot.objects[{index}] {object_name}: {which}"),
        format!("invalid value {value:?}: {problem}"),
    ))
}

/// A captured pod runs on a captured node and every ConfigMap it needs is captured.
fn check_pod(
    index: usize,
    object: &Value,
    namespace: &str,
    nodes: &BTreeSet<String>,
    config_maps: &BTreeSet<(String, String)>,
) -> Result<(), Problem> {
    let node = object
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if node.is_empty() {
        return Err((
            object_field(index, object, "spec.nodeName"),
            "the pod runs on no node".to_owned(),
        ));
    }
    if !nodes.contains(node) {
        return Err((
            object_field(index, object, "spec.nodeName"),
            format!("node {node:?} is not among the captured Nodes"),
        ));
    }
    let volumes = object
        .pointer("/spec/volumes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (v, volume) in volumes.iter().enumerate() {
        let Some(config_map) = volume.pointer("/configMap/name").and_then(Value::as_str) else {
            continue;
        };
        let optional = volume
            .pointer("/configMap/optional")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if !optional && !config_maps.contains(&(namespace.to_owned(), config_map.to_owned())) {
            return Err((
                object_field(index, object, &format!("spec.volumes[{v}].configMap.name")),
                format!(
                    "ConfigMap {namespace}/{config_map} (the files the pod holds) is not captured"
                ),
            ));
        }
    }
    Ok(())
}

/// Every process of `status json` is at the address of a captured pod.
fn check_process_addresses(
    status: &Value,
    pod_ips: &BTreeMap<String, String>,
) -> Result<(), Problem> {
    let processes = status
        .pointer("/cluster/processes")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (id, process) in &processes {
        let address = process
            .get("address")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let parsed = fdb_shared::address::ProcessAddress::parse(address).map_err(|e| {
            (
                format!("snapshot.status: cluster.processes.{id}.address"),
                e.to_string(),
            )
        })?;
        if !pod_ips.contains_key(&parsed.host) {
            return Err((
                format!("snapshot.status: cluster.processes.{id}.address"),
                format!("{address} matches no captured pod's status.podIP"),
            ));
        }
    }
    Ok(())
}

/// The manifest a user would apply for a captured cluster: its identity, labels,
/// annotations and spec (what the operator reads as the desired state).
pub fn manifest_of(cluster: &Value) -> Value {
    let mut metadata = serde_json::Map::new();
    for field in ["name", "namespace", "labels", "annotations"] {
        if let Some(value) = cluster.pointer(&format!("/metadata/{field}")) {
            metadata.insert(field.to_owned(), value.clone());
        }
    }
    serde_json::json!({
        "apiVersion": cluster.get("apiVersion").cloned().unwrap_or(Value::Null),
        "kind": "FoundationDBCluster",
        "metadata": metadata,
        "spec": cluster.get("spec").cloned().unwrap_or_else(|| serde_json::json!({})),
    })
}

/// `(kind, namespace, name)` of a captured object.
fn identity(object: &Value) -> Option<(String, String, String)> {
    let kind = object.get("kind")?.as_str()?.to_owned();
    object.get("apiVersion")?.as_str()?;
    let name = object.pointer("/metadata/name")?.as_str()?.to_owned();
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_owned();
    Some((kind, namespace, name))
}

fn object_field(index: usize, object: &Value, field: &str) -> String {
    let (kind, namespace, name) = identity(object).unwrap_or_default();
    format!("snapshot.objects[{index}] {kind} {namespace}/{name}: {field}")
}

/// Reads a file the snapshot names (`field`): a relative path inside the snapshot's
/// folder `base` (no absolute path, no `..`, no symlink leading out: snapshot folders
/// are data people exchange), at most [`MAX_SNAPSHOT_FILE_BYTES`], UTF-8. Errors name
/// the field and the file, never its content.
fn read(base: &Path, field: &str, path: &str) -> Result<String, Problem> {
    let problem = |message: String| (field.to_owned(), format!("{path:?}: {message}"));
    let relative = Path::new(path);
    if path.is_empty()
        || !relative
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(problem(
            "a snapshot file must be a relative path inside the snapshot folder (no absolute \
             path, no '..')"
                .to_owned(),
        ));
    }
    let base = if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base
    };
    let cannot_read = |error: std::io::Error| problem(format!("cannot read: {}", error.kind()));
    let folder = base.canonicalize().map_err(cannot_read)?;
    let resolved = base.join(relative).canonicalize().map_err(cannot_read)?;
    if !resolved.starts_with(&folder) {
        return Err(problem(
            "leads out of the snapshot folder (through a symlink); copy the file into the \
             folder"
                .to_owned(),
        ));
    }
    let file = std::fs::File::open(&resolved).map_err(cannot_read)?;
    let mut bytes = Vec::new();
    file.take(MAX_SNAPSHOT_FILE_BYTES.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(cannot_read)?;
    if bytes.len() as u64 > MAX_SNAPSHOT_FILE_BYTES {
        return Err(problem(format!(
            "more than {MAX_SNAPSHOT_FILE_BYTES} bytes, the largest snapshot file read"
        )));
    }
    String::from_utf8(bytes).map_err(|error| {
        problem(format!(
            "not UTF-8 text (first bad byte at offset {})",
            error.utf8_error().valid_up_to()
        ))
    })
}

/// A YAML stream of objects, any of which may be a `kind: List`, read within the
/// scenario input limits (`fdb_shared::yaml_input`: nesting depth, values, no duplicate
/// keys nor `.nan`).
fn parse_objects(text: &str) -> Result<Vec<Value>, String> {
    let mut objects = Vec::new();
    for value in yaml_input::strict_documents(text).map_err(|e| e.to_string())? {
        if value.is_null() {
            continue;
        }
        objects.extend(list_items(value)?);
    }
    Ok(objects)
}

/// A `status json`, read within the same limits (JSON is YAML).
fn parse_status(text: &str) -> Result<Value, String> {
    let mut documents = yaml_input::strict_documents(text).map_err(|e| e.to_string())?;
    match (documents.pop(), documents.is_empty()) {
        (Some(status @ Value::Object(_)), true) => Ok(status),
        _ => Err("not one JSON object (the output of `status json`)".to_owned()),
    }
}

/// The objects of a list, of a `kind: List`, or the object itself.
fn list_items(value: Value) -> Result<Vec<Value>, String> {
    match value {
        Value::Array(items) => Ok(items
            .into_iter()
            .flat_map(|i| list_items(i).unwrap_or_default())
            .collect()),
        Value::Object(mut map) if map.get("kind").and_then(Value::as_str) == Some("List") => {
            match map.remove("items") {
                Some(items @ Value::Array(_)) => list_items(items),
                _ => Ok(Vec::new()),
            }
        }
        Value::Object(map) => Ok(vec![Value::Object(map)]),
        // The type only: the file may be anything (a key a typo pointed at).
        other => Err(format!(
            "expected objects (mappings with kind, apiVersion and metadata), found {}",
            type_name(&other)
        )),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Replaces every occurrence of a mapped IP in every string of `value` (an IP followed or
/// preceded by a digit or a dot is another IP, left alone).
pub fn remap_ips(value: &mut Value, map: &BTreeMap<String, String>) {
    match value {
        Value::String(text) => {
            if let Some(new) = remap_text(text, map) {
                *text = new;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| remap_ips(i, map)),
        Value::Object(fields) => fields.values_mut().for_each(|v| remap_ips(v, map)),
        _ => {}
    }
}

fn remap_text(text: &str, map: &BTreeMap<String, String>) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut last = 0;
    let mut i = 0;
    let boundary = |b: u8| b.is_ascii_digit() || b == b'.';
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() && (i == 0 || !boundary(bytes[i - 1])) {
            let end = bytes[i..]
                .iter()
                .position(|b| !boundary(*b))
                .map_or(bytes.len(), |p| i + p);
            // A trailing dot ends a sentence, not an IP.
            let ip_end = if bytes[end - 1] == b'.' { end - 1 } else { end };
            if let Some(new) = map.get(&text[i..ip_end]) {
                out.push_str(&text[last..i]);
                out.push_str(new);
                last = ip_end;
            }
            i = end;
        } else {
            i += 1;
        }
    }
    (last > 0).then(|| {
        out.push_str(&text[last..]);
        out
    })
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;
