//! URL parsing: `/api/v1/...` and `/apis/{group}/{version}/...`, namespaced and
//! cluster-scoped, objects, collections and the `status` subresource, and query parameters.

use percent_encoding::percent_decode_str;
use std::collections::BTreeMap;

use super::errors::ApiError;
use super::resources::{ResourceRegistry, ResourceType};

/// What a request path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The resource type.
    pub resource: ResourceType,
    /// The namespace in the path; `None` for cluster-scoped resources or all-namespace lists.
    pub namespace: Option<String>,
    /// The object name; `None` for collections.
    pub name: Option<String>,
    /// The subresource, e.g. `status`.
    pub subresource: Option<String>,
}

/// Parses a request path against the registry.
pub fn parse_path(registry: &ResourceRegistry, path: &str) -> Result<Route, ApiError> {
    let segments: Vec<String> = path
        .split('/')
        .filter(|segment| !segment.is_empty())
        .map(|segment| percent_decode_str(segment).decode_utf8_lossy().into_owned())
        .collect();
    let (group, version, rest) = match segments.as_slice() {
        [api, version, rest @ ..] if api == "api" => ("", version.as_str(), rest),
        [apis, group, version, rest @ ..] if apis == "apis" => {
            (group.as_str(), version.as_str(), rest)
        }
        _ => return Err(ApiError::unknown_path(path)),
    };
    // `/namespaces/{ns}/{plural}...` addresses namespaced objects, while
    // `/namespaces/{ns}` and `/namespaces/{ns}/status` address Namespace objects.
    let (namespace, rest) = match rest {
        [namespaces, namespace, plural, ..]
            if namespaces == "namespaces" && plural != "status" && plural != "finalize" =>
        {
            (Some(namespace.clone()), &rest[2..])
        }
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (plural, None, None),
        [plural, name] => (plural, Some(name.clone()), None),
        [plural, name, sub] => (plural, Some(name.clone()), Some(sub.clone())),
        _ => return Err(ApiError::unknown_path(path)),
    };
    let resource = registry
        .by_plural(group, version, plural)
        .ok_or_else(|| ApiError::unknown_path(path))?
        .clone();
    if namespace.is_some() && !resource.namespaced {
        return Err(ApiError::unknown_path(path));
    }
    if let Some(sub) = &subresource {
        let status = sub == "status" && resource.status_subresource;
        let pod_post = resource.group.is_empty()
            && resource.plural == "pods"
            && super::subresources::POD_POST_SUBRESOURCES.contains(&sub.as_str());
        if !(status || pod_post) {
            return Err(ApiError::unknown_path(path));
        }
    }
    Ok(Route {
        resource,
        namespace,
        name,
        subresource,
    })
}

/// Query parameters of a request, decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    params: BTreeMap<String, String>,
}

impl Query {
    /// Parses `a=b&c=d` (form-urlencoded, `+` is a space).
    pub fn parse(query: Option<&str>) -> Self {
        let params = query
            .unwrap_or_default()
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                (form_decode(key), form_decode(value))
            })
            .collect();
        Self { params }
    }

    /// A query of the given parameters (already decoded).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self {
            params: pairs
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        }
    }

    /// A parameter's value, if present and non-empty.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.params
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Whether a boolean parameter is `true`.
    pub fn flag(&self, key: &str) -> bool {
        self.get(key) == Some("true") || self.get(key) == Some("1")
    }
}

/// A query value as `application/x-www-form-urlencoded` writes it: `+` is a space,
/// `%XX` a byte; an invalid escape stays as written.
fn form_decode(text: &str) -> String {
    percent_decode_str(&text.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(path: &str) -> Result<Route, ApiError> {
        parse_path(&ResourceRegistry::default(), path)
    }

    #[test]
    fn parses_core_namespaced_and_cluster_paths() {
        let list = route("/api/v1/namespaces/ns1/pods").unwrap();
        assert_eq!(list.resource.plural, "pods");
        assert_eq!(list.namespace.as_deref(), Some("ns1"));
        assert_eq!(list.name, None);
        let status = route("/api/v1/namespaces/ns1/pods/p-1/status").unwrap();
        assert_eq!(status.name.as_deref(), Some("p-1"));
        assert_eq!(status.subresource.as_deref(), Some("status"));
        let all = route("/api/v1/pods").unwrap();
        assert_eq!(all.namespace, None);
        let node = route("/api/v1/nodes/node-1").unwrap();
        assert_eq!(node.name.as_deref(), Some("node-1"));
        let namespace = route("/api/v1/namespaces/ns1").unwrap();
        assert_eq!(namespace.resource.plural, "namespaces");
        assert_eq!(namespace.name.as_deref(), Some("ns1"));
        let namespace_status = route("/api/v1/namespaces/ns1/status").unwrap();
        assert_eq!(namespace_status.resource.plural, "namespaces");
        assert_eq!(namespace_status.subresource.as_deref(), Some("status"));
    }

    #[test]
    fn parses_group_paths_and_rejects_unknown_ones() {
        let cluster = route(
            "/apis/apps.foundationdb.org/v1beta2/namespaces/db/foundationdbclusters/sample/status",
        )
        .unwrap();
        assert_eq!(cluster.resource.kind, "FoundationDBCluster");
        assert_eq!(cluster.namespace.as_deref(), Some("db"));
        assert_eq!(
            route("/api/v1/namespaces/ns1/widgets").unwrap_err().code,
            404
        );
        assert_eq!(
            route("/api/v1/namespaces/ns1/configmaps/c/status")
                .unwrap_err()
                .code,
            404
        );
        assert_eq!(
            route("/api/v1/namespaces/ns1/pods/p/x/y").unwrap_err().code,
            404
        );
        let eviction = route("/api/v1/namespaces/ns1/pods/p/eviction").unwrap();
        assert_eq!(eviction.subresource.as_deref(), Some("eviction"));
        assert_eq!(
            route("/api/v1/namespaces/ns1/services/s/eviction")
                .unwrap_err()
                .code,
            404
        );
        assert_eq!(route("/healthz").unwrap_err().code, 404);
    }

    #[test]
    fn decodes_query_parameters() {
        let query = Query::parse(Some(
            "labelSelector=app%3Dfdb%2Ctier+in+%28a%2Cb%29&watch=true&x=",
        ));
        assert_eq!(query.get("labelSelector"), Some("app=fdb,tier in (a,b)"));
        assert!(query.flag("watch"));
        assert_eq!(query.get("x"), None);
    }

    #[test]
    fn keeps_invalid_escapes_and_decodes_utf8() {
        let query = Query::parse(Some("a=%zz%2&b=caf%C3%A9&c=%FF"));
        assert_eq!(query.get("a"), Some("%zz%2"));
        assert_eq!(query.get("b"), Some("café"));
        assert_eq!(query.get("c"), Some("\u{FFFD}"));
    }
}
