//! API discovery for clients of the served world: `/version`, `/api`, `/apis` and one
//! `APIResourceList` per group version, built from the resource types the simulated API
//! server knows, so `kubectl` maps `pods`, `fdb` or `foundationdbclusters` to URLs.
//!
//! Aggregated discovery (`apidiscovery.k8s.io/v2`) is not offered: the replies are the
//! legacy documents with `Content-Type: application/json`, which clients fall back to.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::kube::ResourceType;

/// The Kubernetes version the served world claims (the `k8s-openapi` feature it is built
/// against).
pub const SERVED_KUBERNETES_MINOR: &str = "33";

/// What a discovery path asks for, or `None` when the path is not a discovery document.
pub fn document(path: &str, types: &[ResourceType]) -> Option<Value> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["version"] => Some(version()),
        ["api"] => Some(json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [],
        })),
        ["apis"] => Some(group_list(types)),
        ["api", version] => resource_list("", version, types),
        ["apis", group] => group_list(types)
            .get("groups")
            .and_then(Value::as_array)
            .and_then(|groups| {
                groups
                    .iter()
                    .find(|g| g.get("name").and_then(Value::as_str) == Some(group))
                    .cloned()
            })
            .map(|mut group| {
                if let Some(object) = group.as_object_mut() {
                    object.insert("kind".into(), json!("APIGroup"));
                    object.insert("apiVersion".into(), json!("v1"));
                }
                group
            }),
        ["apis", group, version] => resource_list(group, version, types),
        _ => None,
    }
}

/// `/version`.
fn version() -> Value {
    json!({
        "major": "1",
        "minor": SERVED_KUBERNETES_MINOR,
        "gitVersion": format!("v1.{SERVED_KUBERNETES_MINOR}.0-fdb-simulation"),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "none (simulated)",
        "compiler": "rustc",
        "platform": "linux/amd64",
    })
}

/// `/apis`: every named group with its versions.
fn group_list(types: &[ResourceType]) -> Value {
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for resource in types.iter().filter(|t| !t.group.is_empty()) {
        let versions = groups.entry(&resource.group).or_default();
        if !versions.contains(&resource.version.as_str()) {
            versions.push(&resource.version);
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(name, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
                .collect();
            let preferred = versions.first().cloned().unwrap_or(Value::Null);
            json!({"name": name, "versions": versions, "preferredVersion": preferred})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/api/v1` or `/apis/{group}/{version}`: the resources of one group version, with
/// their subresources.
fn resource_list(group: &str, version: &str, types: &[ResourceType]) -> Option<Value> {
    let served: Vec<&ResourceType> = types
        .iter()
        .filter(|t| t.group == group && t.version == version)
        .collect();
    if served.is_empty() {
        return None;
    }
    let verbs = [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ];
    let mut resources = Vec::new();
    for resource in served {
        let mut entry = json!({
            "name": resource.plural,
            "singularName": resource.kind.to_lowercase(),
            "namespaced": resource.namespaced,
            "kind": resource.kind,
            "verbs": verbs,
        });
        let (short_names, categories) = names_of(resource);
        if let Some(object) = entry.as_object_mut() {
            if !short_names.is_empty() {
                object.insert("shortNames".into(), json!(short_names));
            }
            if !categories.is_empty() {
                object.insert("categories".into(), json!(categories));
            }
        }
        resources.push(entry);
        if resource.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", resource.plural),
                "singularName": "",
                "namespaced": resource.namespaced,
                "kind": resource.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        if group.is_empty() && resource.plural == "pods" {
            resources.push(json!({
                "name": "pods/eviction", "singularName": "", "namespaced": true,
                "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"],
            }));
            resources.push(json!({
                "name": "pods/binding", "singularName": "", "namespaced": true,
                "kind": "Binding", "verbs": ["create"],
            }));
        }
    }
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

/// The short names and categories `kubectl` knows a resource by.
fn names_of(resource: &ResourceType) -> (Vec<&'static str>, Vec<&'static str>) {
    match (resource.group.as_str(), resource.plural.as_str()) {
        ("", "pods") => (vec!["po"], vec!["all"]),
        ("", "services") => (vec!["svc"], vec!["all"]),
        ("", "configmaps") => (vec!["cm"], vec![]),
        ("", "persistentvolumeclaims") => (vec!["pvc"], vec![]),
        ("", "events") => (vec!["ev"], vec![]),
        ("", "serviceaccounts") => (vec!["sa"], vec![]),
        ("", "nodes") => (vec!["no"], vec![]),
        ("", "namespaces") => (vec!["ns"], vec![]),
        ("apps", "deployments") => (vec!["deploy"], vec!["all"]),
        ("apps.foundationdb.org", "foundationdbclusters") => (vec!["fdb"], vec![]),
        ("apps.foundationdb.org", "foundationdbbackups") => (vec!["fdbbackup"], vec![]),
        ("apps.foundationdb.org", "foundationdbrestores") => (vec!["fdbrestore"], vec![]),
        ("apiextensions.k8s.io", "customresourcedefinitions") => (vec!["crd", "crds"], vec![]),
        _ => (vec![], vec![]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::resources::default_resource_types;

    #[test]
    fn discovery_lists_core_and_fdb_resources() {
        let types = default_resource_types();
        let core = document("/api/v1", &types).unwrap();
        let names: Vec<&str> = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert!(names.contains(&"pods") && names.contains(&"pods/status"));
        assert!(names.contains(&"persistentvolumeclaims"));
        let groups = document("/apis", &types).unwrap();
        assert!(
            groups["groups"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["name"] == "apps.foundationdb.org"
                    && g["preferredVersion"]["version"] == "v1beta2")
        );
        let fdb = document("/apis/apps.foundationdb.org/v1beta2", &types).unwrap();
        let cluster = fdb["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "foundationdbclusters")
            .unwrap();
        assert_eq!(cluster["shortNames"], json!(["fdb"]));
        assert_eq!(cluster["kind"], "FoundationDBCluster");
        assert!(document("/apis/example.com/v1", &types).is_none());
        assert!(document("/api/v1/pods", &types).is_none());
        assert_eq!(document("/version", &types).unwrap()["major"], "1");
    }
}
