//! The object validation of the real API server that an operator can trip over, answered
//! as a real server answers it (422 Invalid, a `Status` naming the field and the rule):
//!
//! - names: a DNS-1035 label for Services, a DNS-1123 label for Namespaces, a DNS-1123
//!   subdomain for every other kind; `generateName` the same, a trailing `-` allowed;
//! - label keys (an optional DNS-1123 subdomain prefix and `/`, a 63-character name) and
//!   values (63 characters, alphanumeric at both ends, `-_.` inside);
//! - annotation keys, and the total size of the annotations (256 KiB);
//! - ConfigMaps and Secrets: keys, and the total data size (1 MiB);
//! - pods: container, init container and volume names (DNS-1123 labels), container port
//!   names (IANA service names); Services: port names (DNS-1123 labels).

use fdb_shared::validation::names::{dns1123_label_error, label_value_error, qualified_name_error};
use serde_json::{Map, Value};

use super::errors::ApiError;
use super::identity;
use super::resources::ResourceType;
use super::resources::is_core;

/// Total size of an object's annotations (keys and values), as the real server limits it.
pub const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;
/// Total size of a ConfigMap's or Secret's data, as the real server limits it.
pub const MAX_DATA_BYTES: usize = 1024 * 1024;
/// Longest ConfigMap or Secret key.
const MAX_DATA_KEY_LENGTH: usize = 253;
/// Longest port name of a container (an IANA service name).
const MAX_PORT_NAME_LENGTH: usize = 15;

/// Checks an object being created (`creating`, with its final `name`) or updated; the
/// first problems found are answered as one 422.
pub fn validate_object(
    resource: &ResourceType,
    name: &str,
    object: &Value,
    creating: bool,
) -> Result<(), ApiError> {
    let mut problems = Vec::new();
    if creating {
        check_name(resource, name, object, &mut problems);
    }
    let metadata = object.get("metadata").and_then(Value::as_object);
    if let Some(metadata) = metadata {
        check_labels(metadata, &mut problems);
        check_annotations(metadata, &mut problems);
    }
    if is_core(resource, "configmaps") {
        check_data(
            object,
            &[("data", false), ("binaryData", true)],
            &mut problems,
        );
    } else if is_core(resource, "secrets") {
        check_data(
            object,
            &[("data", true), ("stringData", false)],
            &mut problems,
        );
    } else if is_core(resource, "pods") {
        check_pod(object, &mut problems);
    } else if is_core(resource, "services") {
        check_service_ports(object, &mut problems);
    }
    match problems.len() {
        0 => Ok(()),
        1 => Err(ApiError::invalid(resource, name, &problems[0])),
        _ => Err(ApiError::invalid(
            resource,
            name,
            &format!("[{}]", problems.join(", ")),
        )),
    }
}

fn invalid_value(field: &str, value: &str, problem: &str) -> String {
    format!("{field}: Invalid value: {value:?}: {problem}")
}

/// The name rule of a kind, as the real server's `ValidateObjectMeta` applies it.
fn name_error(resource: &ResourceType, name: &str) -> Option<String> {
    identity::name_error(&resource.kind, resource.group.is_empty(), name)
}

/// Checks the namespace of a namespaced object being stored and, for a restored object,
/// its uid (`kube/identity.rs`): 422 naming the field, as a real server answers an
/// invalid `metadata.namespace`.
pub fn validate_identity(
    resource: &ResourceType,
    name: &str,
    namespace: &str,
    uid: Option<&str>,
) -> Result<(), ApiError> {
    if resource.namespaced
        && let Some(problem) = identity::namespace_error(namespace)
    {
        return Err(ApiError::invalid(
            resource,
            name,
            &invalid_value("metadata.namespace", namespace, &problem),
        ));
    }
    if let Some(uid) = uid
        && let Some(problem) = identity::uid_error(uid)
    {
        return Err(ApiError::invalid(
            resource,
            name,
            &invalid_value("metadata.uid", uid, &problem),
        ));
    }
    Ok(())
}

fn check_name(resource: &ResourceType, name: &str, object: &Value, problems: &mut Vec<String>) {
    let metadata = object.get("metadata");
    if let Some(prefix) = metadata
        .and_then(|m| m.get("generateName"))
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    {
        // A prefix may end in '-' (the real server masks a trailing dash).
        let masked = match prefix.strip_suffix('-') {
            Some(head) if !head.is_empty() => format!("{head}a"),
            _ => prefix.to_owned(),
        };
        if let Some(problem) = name_error(resource, &masked) {
            problems.push(invalid_value("metadata.generateName", prefix, &problem));
            return;
        }
    }
    if let Some(problem) = name_error(resource, name) {
        problems.push(invalid_value("metadata.name", name, &problem));
    }
}

fn check_labels(metadata: &Map<String, Value>, problems: &mut Vec<String>) {
    let Some(labels) = metadata.get("labels").and_then(Value::as_object) else {
        return;
    };
    for (key, value) in labels {
        if let Some(problem) = qualified_name_error(key) {
            problems.push(invalid_value("metadata.labels", key, &problem));
        }
        let value = value.as_str().unwrap_or_default();
        if let Some(problem) = label_value_error(value) {
            problems.push(invalid_value("metadata.labels", value, &problem));
        }
    }
}

fn check_annotations(metadata: &Map<String, Value>, problems: &mut Vec<String>) {
    let Some(annotations) = metadata.get("annotations").and_then(Value::as_object) else {
        return;
    };
    let mut total = 0usize;
    for (key, value) in annotations {
        if let Some(problem) = qualified_name_error(&key.to_lowercase()) {
            problems.push(invalid_value("metadata.annotations", key, &problem));
        }
        total += key.len() + value.as_str().map_or(0, str::len);
    }
    if total > MAX_ANNOTATIONS_BYTES {
        problems.push(format!(
            "metadata.annotations: Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes"
        ));
    }
}

/// Decoded size of a base64 text (Secret `data`, ConfigMap `binaryData`).
fn base64_decoded_len(text: &str) -> usize {
    let padding = text.bytes().rev().take_while(|b| *b == b'=').count();
    (text.len() / 4 * 3).saturating_sub(padding)
}

/// Checks the keys and total size of the data `fields` (each with whether its values are
/// base64, counted decoded).
fn check_data(object: &Value, fields: &[(&str, bool)], problems: &mut Vec<String>) {
    let mut total = 0usize;
    for (field, encoded) in fields {
        let Some(entries) = object.get(*field).and_then(Value::as_object) else {
            continue;
        };
        for (key, value) in entries {
            let key_valid = !key.is_empty()
                && key.len() <= MAX_DATA_KEY_LENGTH
                && key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
            if !key_valid {
                problems.push(invalid_value(
                    &format!("{field}[{key}]"),
                    key,
                    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                ));
            }
            if let Some(problem) = chdir_prefix_error(key) {
                problems.push(invalid_value(&format!("{field}[{key}]"), key, problem));
            }
            let text = value.as_str().unwrap_or_default();
            total += if *encoded {
                base64_decoded_len(text)
            } else {
                text.len()
            };
        }
    }
    if total > MAX_DATA_BYTES {
        problems.push(format!(
            "[]: Too long: must have at most {MAX_DATA_BYTES} bytes"
        ));
    }
}

/// The real server's `hasChDirPrefix`: a key (a file name in a volume) is never `.`,
/// `..` nor starts with `..` (the kubelet's own `..data` links).
fn chdir_prefix_error(key: &str) -> Option<&'static str> {
    match key {
        "." => Some("must not be '.'"),
        ".." => Some("must not be '..'"),
        _ if key.starts_with("..") => Some("must not start with '..'"),
        _ => None,
    }
}

/// The real server's `validateLocalDescendingPath` (a `subPath`, a volume item's
/// `path`): relative, and no `..` element; an item path also never starts with `..`.
fn local_path_error(path: &str, item: bool) -> Option<&'static str> {
    if path.starts_with('/') {
        Some("must be a relative path")
    } else if path.split('/').any(|element| element == "..") {
        Some("must not contain '..'")
    } else if item && path.starts_with("..") {
        Some("must not start with '..'")
    } else {
        None
    }
}

/// The `subPath` of every volume mount and the `path` of every ConfigMap or Secret
/// volume item: the kubelet joins them to host directories.
fn check_pod_paths(spec: &Value, problems: &mut Vec<String>) {
    for list in ["containers", "initContainers"] {
        for (index, container) in named_entries(spec, list) {
            for (mount_index, mount) in named_entries(container, "volumeMounts") {
                if let Some(sub_path) = mount.get("subPath").and_then(Value::as_str)
                    && let Some(problem) = local_path_error(sub_path, false)
                {
                    problems.push(invalid_value(
                        &format!("spec.{list}[{index}].volumeMounts[{mount_index}].subPath"),
                        sub_path,
                        problem,
                    ));
                }
            }
        }
    }
    for (index, volume) in named_entries(spec, "volumes") {
        for source in ["configMap", "secret"] {
            let Some(source_spec) = volume.get(source) else {
                continue;
            };
            for (item_index, item) in named_entries(source_spec, "items") {
                if let Some(path) = item.get("path").and_then(Value::as_str)
                    && let Some(problem) = local_path_error(path, true)
                {
                    problems.push(invalid_value(
                        &format!("spec.volumes[{index}].{source}.items[{item_index}].path"),
                        path,
                        problem,
                    ));
                }
            }
        }
    }
}

fn named_entries<'a>(spec: &'a Value, list: &str) -> impl Iterator<Item = (usize, &'a Value)> {
    spec.get(list)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

/// An IANA service name: at most 15 lowercase letters, digits and single `-`s, with at
/// least one letter, not starting or ending with `-`.
fn port_name_error(name: &str) -> Option<String> {
    let valid = name.len() <= MAX_PORT_NAME_LENGTH
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && name.bytes().any(|b| b.is_ascii_lowercase())
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    (!valid).then(|| {
        "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-), at most 15 characters, at least one letter, and no two adjacent hyphens nor a hyphen at either end"
            .to_owned()
    })
}

fn check_pod(pod: &Value, problems: &mut Vec<String>) {
    let Some(spec) = pod.get("spec") else {
        return;
    };
    check_pod_paths(spec, problems);
    for list in ["containers", "initContainers", "volumes"] {
        for (index, entry) in named_entries(spec, list) {
            let name = entry
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if let Some(problem) = dns1123_label_error(name) {
                problems.push(invalid_value(
                    &format!("spec.{list}[{index}].name"),
                    name,
                    &problem,
                ));
            }
            if list == "volumes" {
                continue;
            }
            for (port_index, port) in named_entries(entry, "ports") {
                if let Some(port_name) = port.get("name").and_then(Value::as_str)
                    && let Some(problem) = port_name_error(port_name)
                {
                    problems.push(invalid_value(
                        &format!("spec.{list}[{index}].ports[{port_index}].name"),
                        port_name,
                        &problem,
                    ));
                }
            }
        }
    }
}

fn check_service_ports(service: &Value, problems: &mut Vec<String>) {
    let Some(spec) = service.get("spec") else {
        return;
    };
    for (index, port) in named_entries(spec, "ports") {
        if let Some(name) = port
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            && let Some(problem) = dns1123_label_error(name)
        {
            problems.push(invalid_value(
                &format!("spec.ports[{index}].name"),
                name,
                &problem,
            ));
        }
    }
}

#[cfg(test)]
#[path = "validation_tests.rs"]
mod tests;
