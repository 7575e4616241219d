//! Server-side printing: the `meta.k8s.io` `Table` that `kubectl get` asks for
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), with the columns a real API
//! server prints for pods, PVCs, services, nodes and config maps, and the CRDs'
//! `additionalPrinterColumns` for the FoundationDB resources. Ages are measured on the
//! simulated clock.

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::kube::ResourceType;

/// The `Table` version a request accepts (`v1` or `v1beta1`), if it asks for one.
pub fn requested_version(accept: &str) -> Option<&'static str> {
    let wants = |version: &str| {
        accept.split(',').any(|media| {
            let parameters: Vec<&str> = media.split(';').map(str::trim).collect();
            parameters.contains(&"as=Table")
                && parameters.contains(&"g=meta.k8s.io")
                && parameters.contains(&format!("v={version}").as_str())
        })
    };
    if wants("v1") {
        Some("v1")
    } else if wants("v1beta1") {
        Some("v1beta1")
    } else {
        None
    }
}

/// One column: name, type, and priority (1 = shown only with `-o wide`).
struct Column {
    name: String,
    kind: &'static str,
    priority: u8,
    cell: Cell,
}

/// How a cell is computed from an object.
enum Cell {
    Name,
    Age,
    /// A simple JSONPath (`.a.b.c`) of a CRD printer column.
    Path(String),
    /// A built-in column computed in code.
    Computed(fn(&Value) -> Value),
}

/// Turns a list (or one object) of `resource` into a `Table` of `version`.
/// `include_object` follows the request's `includeObject` (`Object`, `None`, default
/// `Metadata`).
pub fn to_table(
    resource: &ResourceType,
    body: &Value,
    now: Timestamp,
    version: &str,
    include_object: Option<&str>,
    crd_columns: &[Value],
) -> Value {
    let columns = columns_of(resource, crd_columns);
    let (items, metadata) = match body.get("items").and_then(Value::as_array) {
        Some(items) => (items.clone(), body.get("metadata").cloned()),
        None => (vec![body.clone()], None),
    };
    let rows: Vec<Value> = items
        .iter()
        .map(|object| row(&columns, object, now, include_object))
        .collect();
    let definitions: Vec<Value> = columns
        .iter()
        .map(|c| {
            json!({"name": c.name, "type": c.kind, "format": if matches!(c.cell, Cell::Name) {"name"} else {""},
                   "description": "", "priority": c.priority})
        })
        .collect();
    let mut table = json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": metadata.unwrap_or_else(|| json!({})),
        "columnDefinitions": definitions,
        "rows": rows,
    });
    if body.get("items").is_none()
        && let Some(rv) = body.pointer("/metadata/resourceVersion")
        && let Some(meta) = table.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.insert("resourceVersion".into(), rv.clone());
    }
    table
}

fn row(columns: &[Column], object: &Value, now: Timestamp, include_object: Option<&str>) -> Value {
    let cells: Vec<Value> = columns.iter().map(|c| cell(&c.cell, object, now)).collect();
    let embedded = match include_object {
        Some("None") => Value::Null,
        Some("Object") => object.clone(),
        _ => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
        }),
    };
    json!({"cells": cells, "object": embedded})
}

fn cell(cell: &Cell, object: &Value, now: Timestamp) -> Value {
    match cell {
        Cell::Name => object
            .pointer("/metadata/name")
            .cloned()
            .unwrap_or(Value::Null),
        Cell::Age => Value::from(age(object.pointer("/metadata/creationTimestamp"), now)),
        Cell::Path(path) => {
            let pointer = path.replace('.', "/");
            match object.pointer(&pointer) {
                Some(Value::String(text)) if path.ends_with("creationTimestamp") => {
                    Value::from(age(Some(&Value::from(text.clone())), now))
                }
                Some(value) => value.clone(),
                None => Value::Null,
            }
        }
        Cell::Computed(compute) => compute(object),
    }
}

/// The columns of `resource`: built in for core kinds, the CRD's printer columns for
/// custom resources, `Name` and `Age` otherwise.
fn columns_of(resource: &ResourceType, crd_columns: &[Value]) -> Vec<Column> {
    let col = |name: &str, kind: &'static str, priority: u8, cell: Cell| Column {
        name: name.to_owned(),
        kind,
        priority,
        cell,
    };
    let mut columns = vec![col("Name", "string", 0, Cell::Name)];
    match (resource.group.as_str(), resource.plural.as_str()) {
        ("", "pods") => {
            columns.push(col("Ready", "string", 0, Cell::Computed(pod_ready)));
            columns.push(col("Status", "string", 0, Cell::Computed(pod_status)));
            columns.push(col("Restarts", "string", 0, Cell::Computed(pod_restarts)));
            columns.push(col("Age", "string", 0, Cell::Age));
            columns.push(col("IP", "string", 1, Cell::Path(".status.podIP".into())));
            columns.push(col(
                "Node",
                "string",
                1,
                Cell::Path(".spec.nodeName".into()),
            ));
        }
        ("", "persistentvolumeclaims") => {
            columns.push(col("Status", "string", 0, Cell::Computed(pvc_status)));
            columns.push(col(
                "Volume",
                "string",
                0,
                Cell::Path(".spec.volumeName".into()),
            ));
            columns.push(col("Capacity", "string", 0, Cell::Computed(pvc_capacity)));
            columns.push(col("Age", "string", 0, Cell::Age));
        }
        ("", "services") => {
            columns.push(col("Type", "string", 0, Cell::Path(".spec.type".into())));
            columns.push(col(
                "Cluster-IP",
                "string",
                0,
                Cell::Path(".spec.clusterIP".into()),
            ));
            columns.push(col("Port(s)", "string", 0, Cell::Computed(service_ports)));
            columns.push(col("Age", "string", 0, Cell::Age));
        }
        ("", "nodes") => {
            columns.push(col("Status", "string", 0, Cell::Computed(node_status)));
            columns.push(col("Age", "string", 0, Cell::Age));
        }
        ("", "configmaps") | ("", "secrets") => {
            columns.push(col("Data", "integer", 0, Cell::Computed(data_count)));
            columns.push(col("Age", "string", 0, Cell::Age));
        }
        _ if !crd_columns.is_empty() => {
            columns.extend(crd_columns.iter().map(printer_column));
            if !columns.iter().any(|c| c.name == "Age") {
                columns.push(col("Age", "string", 0, Cell::Age));
            }
        }
        _ => columns.push(col("Age", "string", 0, Cell::Age)),
    }
    columns
}

/// One of a CRD's `additionalPrinterColumns`, as the API server prints it.
fn printer_column(definition: &Value) -> Column {
    let text = |key: &str| definition.get(key).and_then(Value::as_str);
    let kind = match text("type") {
        Some("integer") => "integer",
        Some("boolean") => "boolean",
        Some("number") => "number",
        _ => "string",
    };
    let priority = definition
        .get("priority")
        .and_then(Value::as_u64)
        .map_or(0, |p| u8::try_from(p).unwrap_or(1));
    Column {
        name: text("name").unwrap_or_default().to_owned(),
        kind,
        priority,
        cell: Cell::Path(text("jsonPath").unwrap_or_default().to_owned()),
    }
}

fn statuses(pod: &Value) -> Vec<&Value> {
    pod.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map(|s| s.iter().collect())
        .unwrap_or_default()
}

fn pod_ready(pod: &Value) -> Value {
    let total = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let ready = statuses(pod)
        .iter()
        .filter(|s| s.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    Value::from(format!("{ready}/{total}"))
}

fn pod_status(pod: &Value) -> Value {
    if pod.pointer("/metadata/deletionTimestamp").is_some() {
        return Value::from("Terminating");
    }
    let waiting = statuses(pod).into_iter().find_map(|s| {
        s.pointer("/state/waiting/reason")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending");
    Value::from(waiting.unwrap_or_else(|| phase.to_owned()))
}

fn pod_restarts(pod: &Value) -> Value {
    let restarts: u64 = statuses(pod)
        .iter()
        .filter_map(|s| s.get("restartCount").and_then(Value::as_u64))
        .sum();
    Value::from(restarts.to_string())
}

fn pvc_status(pvc: &Value) -> Value {
    if pvc.pointer("/metadata/deletionTimestamp").is_some() {
        return Value::from("Terminating");
    }
    Value::from(
        pvc.pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("Bound"),
    )
}

fn pvc_capacity(pvc: &Value) -> Value {
    pvc.pointer("/status/capacity/storage")
        .or_else(|| pvc.pointer("/spec/resources/requests/storage"))
        .cloned()
        .unwrap_or(Value::Null)
}

fn service_ports(service: &Value) -> Value {
    let ports: Vec<String> = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_u64).unwrap_or_default();
            let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            format!("{port}/{protocol}")
        })
        .collect();
    Value::from(if ports.is_empty() {
        "<none>".to_owned()
    } else {
        ports.join(",")
    })
}

fn node_status(node: &Value) -> Value {
    let ready = node
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        .and_then(|c| c.get("status").and_then(Value::as_str))
        == Some("True");
    let mut status = if ready { "Ready" } else { "NotReady" }.to_owned();
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    Value::from(status)
}

fn data_count(object: &Value) -> Value {
    let count = ["data", "binaryData"]
        .iter()
        .filter_map(|key| object.get(*key).and_then(Value::as_object))
        .map(serde_json::Map::len)
        .sum::<usize>();
    Value::from(count)
}

/// A duration as `kubectl` prints ages (`45s`, `3m20s`, `5h`, `2d3h`, ...).
fn age(created: Option<&Value>, now: Timestamp) -> String {
    let Some(created) = created
        .and_then(Value::as_str)
        .and_then(|text| text.parse::<Timestamp>().ok())
    else {
        return "<unknown>".to_owned();
    };
    let seconds = (now.as_second() - created.as_second()).max(0);
    human_duration(seconds)
}

fn human_duration(seconds: i64) -> String {
    let (minutes, hours, days) = (seconds / 60, seconds / 3600, seconds / 86_400);
    if seconds < 120 {
        format!("{seconds}s")
    } else if minutes < 10 {
        format!("{minutes}m{}s", seconds % 60)
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        format!("{hours}h{}m", minutes % 60)
    } else if hours < 48 {
        format!("{hours}h")
    } else if days < 8 {
        format!("{days}d{}h", hours % 24)
    } else {
        format!("{days}d")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::resources::default_resource_types;

    #[test]
    fn kubectl_table_requests_are_recognised() {
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(requested_version(accept), Some("v1"));
        assert_eq!(
            requested_version("application/json;as=Table;v=v1beta1;g=meta.k8s.io"),
            Some("v1beta1")
        );
        assert_eq!(requested_version("application/json"), None);
    }

    #[test]
    fn pods_print_ready_status_restarts_and_age() {
        let pods = default_resource_types()
            .into_iter()
            .find(|t| t.plural == "pods")
            .unwrap();
        let now: Timestamp = "2026-01-01T01:00:00Z".parse().unwrap();
        let list = json!({"metadata": {"resourceVersion": "9"}, "items": [{
            "metadata": {"name": "sample-storage-1", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "node-1"},
            "status": {"phase": "Running", "containerStatuses": [
                {"ready": true, "restartCount": 2}, {"ready": false, "restartCount": 1}]}
        }]});
        let table = to_table(&pods, &list, now, "v1", None, &[]);
        assert_eq!(table["kind"], "Table");
        assert_eq!(
            table["rows"][0]["cells"],
            json!([
                "sample-storage-1",
                "1/2",
                "Running",
                "3",
                "60m",
                null,
                "node-1"
            ])
        );
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(table["metadata"]["resourceVersion"], "9");
    }

    #[test]
    fn custom_resources_print_their_crd_columns() {
        let clusters = default_resource_types()
            .into_iter()
            .find(|t| t.plural == "foundationdbclusters")
            .unwrap();
        let columns = vec![
            json!({"name": "Generation", "jsonPath": ".metadata.generation", "type": "integer"}),
            json!({"name": "Age", "jsonPath": ".metadata.creationTimestamp", "type": "date"}),
        ];
        let object = json!({"metadata": {"name": "sample", "generation": 3,
                                          "creationTimestamp": "2026-01-01T00:00:00Z"}});
        let now: Timestamp = "2026-01-01T00:00:30Z".parse().unwrap();
        let table = to_table(&clusters, &object, now, "v1", Some("Object"), &columns);
        assert_eq!(table["rows"][0]["cells"], json!(["sample", 3, "30s"]));
        assert_eq!(table["rows"][0]["object"], object);
    }

    #[test]
    fn ages_read_like_kubectl() {
        assert_eq!(human_duration(59), "59s");
        assert_eq!(human_duration(200), "3m20s");
        assert_eq!(human_duration(3 * 3600 + 120), "3h2m");
        assert_eq!(human_duration(30 * 3600), "30h");
        assert_eq!(human_duration(3 * 86_400 + 7200), "3d2h");
    }
}
