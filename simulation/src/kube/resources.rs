//! The resource types the simulated API server knows: group, version, plural, kind, scope.
//!
//! Requests for anything not registered answer 404, like a real server without that API.

/// One kind of resource served by the simulated API server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    /// API group; empty for the core group.
    pub group: String,
    /// API version within the group, e.g. `v1`.
    pub version: String,
    /// Plural resource name as it appears in URLs, e.g. `pods`.
    pub plural: String,
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Whether the `/status` subresource exists. Then writes to the main resource ignore
    /// `status` and writes to `/status` ignore everything else.
    pub status_subresource: bool,
}

impl ResourceType {
    /// A resource type description.
    pub fn new(
        group: &str,
        version: &str,
        plural: &str,
        kind: &str,
        namespaced: bool,
        status_subresource: bool,
    ) -> Self {
        Self {
            group: group.to_string(),
            version: version.to_string(),
            plural: plural.to_string(),
            kind: kind.to_string(),
            namespaced,
            status_subresource,
        }
    }

    /// `apiVersion` as written in objects: `v1` or `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural` or `plural.group`, as the real server names resources in messages.
    pub fn qualified_name(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `Kind` or `Kind.group`, as the real server names kinds in `is invalid` messages.
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    /// Whether this is a custom resource (strategic merge patch is refused for those).
    pub fn is_custom(&self) -> bool {
        !BUILTIN_GROUPS.contains(&self.group.as_str())
    }
}

/// Groups built into Kubernetes itself; anything else is a custom resource.
const BUILTIN_GROUPS: &[&str] = &[
    "",
    "apps",
    "batch",
    "coordination.k8s.io",
    "events.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "networking.k8s.io",
];

/// The resource types registered by default: the core kinds the operator touches, leases,
/// Deployments (backup agents), events and the three FoundationDB custom resources.
///
/// Pods, services, persistent volume claims, nodes and namespaces have a status
/// subresource as in real Kubernetes: their status is written through `/status`.
pub fn default_resource_types() -> Vec<ResourceType> {
    let fdb = "apps.foundationdb.org";
    vec![
        ResourceType::new("", "v1", "pods", "Pod", true, true),
        ResourceType::new("", "v1", "services", "Service", true, true),
        ResourceType::new("", "v1", "configmaps", "ConfigMap", true, false),
        ResourceType::new(
            "",
            "v1",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            true,
            true,
        ),
        ResourceType::new("", "v1", "events", "Event", true, false),
        ResourceType::new("", "v1", "secrets", "Secret", true, false),
        ResourceType::new("", "v1", "serviceaccounts", "ServiceAccount", true, false),
        ResourceType::new("", "v1", "nodes", "Node", false, true),
        ResourceType::new("", "v1", "namespaces", "Namespace", false, true),
        ResourceType::new("coordination.k8s.io", "v1", "leases", "Lease", true, false),
        ResourceType::new("apps", "v1", "deployments", "Deployment", true, true),
        ResourceType::new("events.k8s.io", "v1", "events", "Event", true, false),
        ResourceType::new(
            fdb,
            "v1beta2",
            "foundationdbclusters",
            "FoundationDBCluster",
            true,
            true,
        ),
        ResourceType::new(
            fdb,
            "v1beta2",
            "foundationdbbackups",
            "FoundationDBBackup",
            true,
            true,
        ),
        ResourceType::new(
            fdb,
            "v1beta2",
            "foundationdbrestores",
            "FoundationDBRestore",
            true,
            true,
        ),
    ]
}

/// A lookup table of resource types.
#[derive(Debug, Clone)]
pub struct ResourceRegistry {
    types: Vec<ResourceType>,
}

impl Default for ResourceRegistry {
    fn default() -> Self {
        Self {
            types: default_resource_types(),
        }
    }
}

impl ResourceRegistry {
    /// Adds (or replaces, same group/version/plural) a resource type.
    pub fn register(&mut self, resource: ResourceType) {
        self.types.retain(|known| {
            !(known.group == resource.group
                && known.version == resource.version
                && known.plural == resource.plural)
        });
        self.types.push(resource);
    }

    /// Every registered type, in registration order (API discovery lists them).
    pub fn types(&self) -> &[ResourceType] {
        &self.types
    }

    /// The type served at `group/version/plural`.
    pub fn by_plural(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
    }

    /// The type for an object's `apiVersion` and `kind`.
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.api_version() == api_version && t.kind == kind)
    }
}

/// Whether `resource` is the core group's `plural`.
pub(super) fn is_core(resource: &ResourceType, plural: &str) -> bool {
    resource.group.is_empty() && resource.plural == plural
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_and_grouped_types_are_found_by_plural_and_kind() {
        let registry = ResourceRegistry::default();
        let pods = registry.by_plural("", "v1", "pods").unwrap();
        assert_eq!(pods.kind, "Pod");
        assert_eq!(pods.api_version(), "v1");
        assert!(!pods.is_custom());
        let cluster = registry
            .by_kind("apps.foundationdb.org/v1beta2", "FoundationDBCluster")
            .unwrap();
        assert_eq!(cluster.plural, "foundationdbclusters");
        assert!(cluster.is_custom());
        assert!(
            registry
                .by_plural("", "v1", "nodes")
                .is_some_and(|n| !n.namespaced)
        );
        assert!(registry.by_plural("", "v1", "widgets").is_none());
    }
}
