//! The object store: objects as JSON, the global resourceVersion, uids, generations,
//! timestamps, and the create / update / patch rules of the real API server.

use std::collections::BTreeMap;

use jiff::Timestamp;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::admission::{self, ServiceIps};
use super::core_defaults;
use super::errors::ApiError;
use super::generated_names::NAME_ALPHABET;
use super::patch::{PatchType, apply_patch};
use super::resources::{ResourceRegistry, ResourceType, is_core};
use super::schema::CrdSchemas;
use super::update_rules::{
    admit_update, check_version, keep_server_metadata, split_status, stamp_created,
};
pub(super) use super::update_rules::{finalizers, meta_str, metadata_mut, rfc3339};
use super::validation::{validate_identity, validate_object};
use super::watch::{EventType, WatchHub};

/// Where an object is stored: group, version, plural, namespace ("" when cluster-scoped)
/// and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceKey {
    /// API group ("" for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource name.
    pub plural: String,
    /// Namespace; empty for cluster-scoped objects.
    pub namespace: String,
    /// Object name.
    pub name: String,
}

impl ResourceKey {
    /// A key from its parts; `namespace` is `""` for cluster-scoped objects.
    pub fn new(group: &str, version: &str, plural: &str, namespace: &str, name: &str) -> Self {
        Self {
            group: group.to_string(),
            version: version.to_string(),
            plural: plural.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The key of a `K` object (a k8s-openapi type or a `kube::CustomResource`).
    pub fn of<K: kube::Resource<DynamicType = ()>>(namespace: Option<&str>, name: &str) -> Self {
        Self::new(
            &K::group(&()),
            &K::version(&()),
            &K::plural(&()),
            namespace.unwrap_or_default(),
            name,
        )
    }

    pub(super) fn for_type(resource: &ResourceType, namespace: &str, name: &str) -> Self {
        Self::new(
            &resource.group,
            &resource.version,
            &resource.plural,
            namespace,
            name,
        )
    }
}

/// What a dry run may change and must give back: the objects and the counters.
#[derive(Debug)]
pub(super) struct DryRunSnapshot {
    objects: BTreeMap<ResourceKey, Value>,
    resource_version: u64,
    uid_counter: u64,
    name_rng: ChaCha8Rng,
    service_ips: ServiceIps,
}

/// Everything behind the server's lock.
#[derive(Debug)]
pub struct State {
    pub(super) registry: ResourceRegistry,
    pub(super) objects: BTreeMap<ResourceKey, Value>,
    pub(super) resource_version: u64,
    uid_counter: u64,
    name_rng: ChaCha8Rng,
    service_ips: ServiceIps,
    pub(super) watches: WatchHub,
    /// The schemas writes of custom resources are pruned, defaulted and validated by.
    schemas: std::sync::Arc<CrdSchemas>,
    /// The storage class a created claim that names none gets: the world's default
    /// class, as the DefaultStorageClass admission plugin assigns a cluster's
    /// (kubernetes/kubernetes `plugin/pkg/admission/storage/storageclass/setdefault`);
    /// none when the cluster has no default class.
    pub(super) default_storage_class: Option<String>,
}

impl State {
    /// An empty store whose generated names derive from `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            registry: ResourceRegistry::default(),
            objects: BTreeMap::new(),
            resource_version: 0,
            uid_counter: 0,
            name_rng: ChaCha8Rng::seed_from_u64(seed),
            service_ips: ServiceIps::default(),
            watches: WatchHub::default(),
            schemas: CrdSchemas::served(),
            default_storage_class: Some(core_defaults::DEFAULT_STORAGE_CLASS.to_owned()),
        }
    }

    pub(super) fn next_resource_version(&mut self) -> u64 {
        self.resource_version += 1;
        self.resource_version
    }

    fn generated_name(&mut self, prefix: &str) -> String {
        let suffix: String = (0..5)
            .map(|_| {
                let index = self.name_rng.random_range(0..NAME_ALPHABET.len());
                char::from(NAME_ALPHABET[index])
            })
            .collect();
        format!("{prefix}{suffix}")
    }

    /// The CRD schemas writes are checked against.
    pub(super) fn schemas(&self) -> &CrdSchemas {
        &self.schemas
    }

    /// Starts a dry run: watches are muted and the state is kept for [`Self::end_dry_run`].
    pub(super) fn begin_dry_run(&mut self) -> DryRunSnapshot {
        self.watches.set_muted(true);
        DryRunSnapshot {
            objects: self.objects.clone(),
            resource_version: self.resource_version,
            uid_counter: self.uid_counter,
            name_rng: self.name_rng.clone(),
            service_ips: self.service_ips.clone(),
        }
    }

    /// Ends a dry run: everything it changed is put back.
    pub(super) fn end_dry_run(&mut self, snapshot: DryRunSnapshot) {
        self.objects = snapshot.objects;
        self.resource_version = snapshot.resource_version;
        self.uid_counter = snapshot.uid_counter;
        self.name_rng = snapshot.name_rng;
        self.service_ips = snapshot.service_ips;
        self.watches.set_muted(false);
    }

    /// Resolves the namespace a request works in.
    pub(super) fn namespace_for(
        resource: &ResourceType,
        url_namespace: Option<&str>,
        body: Option<&Value>,
    ) -> Result<String, ApiError> {
        if !resource.namespaced {
            return Ok(String::new());
        }
        let body_namespace = body
            .and_then(|b| meta_str(b, "namespace"))
            .filter(|ns| !ns.is_empty());
        match (url_namespace, body_namespace) {
            (Some(url), Some(body)) if url != body => Err(ApiError::bad_request(format!(
                "the namespace of the provided object ({body}) does not match the namespace \
                 sent on the request ({url})"
            ))),
            (Some(url), _) => Ok(url.to_string()),
            (None, Some(body)) => Ok(body.to_string()),
            (None, None) => Err(ApiError::bad_request(format!(
                "a namespace is required for {}",
                resource.qualified_name()
            ))),
        }
    }

    /// Reads one object.
    pub fn get(
        &self,
        resource: &ResourceType,
        namespace: &str,
        name: &str,
    ) -> Result<Value, ApiError> {
        self.objects
            .get(&ResourceKey::for_type(resource, namespace, name))
            .cloned()
            .ok_or_else(|| ApiError::not_found(resource, name))
    }

    /// The objects of a type, in one namespace or all, ordered by namespace and name.
    pub fn objects_of<'a>(
        &'a self,
        resource: &'a ResourceType,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a ResourceKey, &'a Value)> + 'a {
        self.objects.iter().filter(move |(key, _)| {
            key.group == resource.group
                && key.version == resource.version
                && key.plural == resource.plural
                && namespace.is_none_or(|ns| key.namespace == ns)
        })
    }

    /// POST: stores a new object with server-set metadata.
    pub fn create(
        &mut self,
        resource: &ResourceType,
        url_namespace: Option<&str>,
        mut object: Value,
        now: Timestamp,
    ) -> Result<Value, ApiError> {
        if !object.is_object() {
            return Err(ApiError::bad_request(
                "the request body must be a JSON object",
            ));
        }
        let namespace = Self::namespace_for(resource, url_namespace, Some(&object))?;
        let mut name = meta_str(&object, "name").unwrap_or_default().to_string();
        if name.is_empty() {
            let prefix = meta_str(&object, "generateName")
                .unwrap_or_default()
                .to_string();
            if prefix.is_empty() {
                return Err(ApiError::invalid(
                    resource,
                    "",
                    "metadata.name: Required value: name or generateName is required",
                ));
            }
            // A few attempts at a free name, like the real server's retries.
            name = self.generated_name(&prefix);
            for _ in 0..8 {
                if !self
                    .objects
                    .contains_key(&ResourceKey::for_type(resource, &namespace, &name))
                {
                    break;
                }
                name = self.generated_name(&prefix);
            }
        }
        validate_object(resource, &name, &object, true)?;
        self.schemas.admit(resource, &name, &mut object, None)?;
        // The server sets the uid; the namespace is the client's and must be a label.
        validate_identity(resource, &name, &namespace, None)?;
        let key = ResourceKey::for_type(resource, &namespace, &name);
        if self.objects.contains_key(&key) {
            return Err(ApiError::already_exists(resource, &name));
        }
        if is_core(resource, "pods") {
            let token_suffix = super::service_account::token_volume_suffix(self.uid_counter + 1);
            admission::admit_pod(&mut object, &token_suffix);
        } else if is_core(resource, "persistentvolumeclaims") {
            let class = self.default_storage_class.clone();
            core_defaults::default_claim(&mut object, class.as_deref());
        } else if is_core(resource, "services") {
            core_defaults::default_service(&mut object);
            let in_use = self.cluster_ips_in_use(resource);
            self.service_ips
                .admit_service(resource, &name, &mut object, &in_use)?;
        }
        self.uid_counter += 1;
        let uid = format!("00000000-0000-4000-8000-{:012x}", self.uid_counter);
        let resource_version = self.next_resource_version();
        stamp_created(
            resource,
            &mut object,
            &name,
            &namespace,
            &uid,
            now,
            resource_version,
        );
        self.watches.publish(
            resource_version,
            EventType::Added,
            resource,
            &namespace,
            &object,
            None,
        );
        self.objects.insert(key, object.clone());
        Ok(object)
    }

    /// Puts a captured object back as it was (a snapshot's boot): metadata, spec and
    /// status as given, uid and creation time kept; only the resource version is the
    /// store's own (a watch resumes from the store's versions, not another server's).
    pub fn restore(
        &mut self,
        resource: &ResourceType,
        mut object: Value,
        now: Timestamp,
    ) -> Result<Value, ApiError> {
        let namespace = Self::namespace_for(resource, None, Some(&object))?;
        let name = meta_str(&object, "name").unwrap_or_default().to_string();
        validate_object(resource, &name, &object, true)?;
        // A restored uid is another server's: it must look like one (it becomes part of
        // host paths of the world, `world/kubelet.rs`).
        let captured_uid = meta_str(&object, "uid").filter(|uid| !uid.is_empty());
        validate_identity(resource, &name, &namespace, captured_uid)?;
        let key = ResourceKey::for_type(resource, &namespace, &name);
        if self.objects.contains_key(&key) {
            return Err(ApiError::already_exists(resource, &name));
        }
        if is_core(resource, "services") {
            let in_use = self.cluster_ips_in_use(resource);
            self.service_ips
                .admit_service(resource, &name, &mut object, &in_use)?;
        }
        let uid = match meta_str(&object, "uid") {
            Some(uid) if !uid.is_empty() => {
                // Our own uids carry a counter: keep generating past the restored ones.
                if let Some(n) = uid
                    .strip_prefix("00000000-0000-4000-8000-")
                    .and_then(|hex| u64::from_str_radix(hex, 16).ok())
                {
                    self.uid_counter = self.uid_counter.max(n);
                }
                uid.to_owned()
            }
            _ => {
                self.uid_counter += 1;
                format!("00000000-0000-4000-8000-{:012x}", self.uid_counter)
            }
        };
        let resource_version = self.next_resource_version();
        object["apiVersion"] = json!(resource.api_version());
        object["kind"] = json!(resource.kind);
        let created = meta_str(&object, "creationTimestamp").map(str::to_owned);
        let metadata = metadata_mut(&mut object);
        if resource.namespaced {
            metadata.insert("namespace".into(), json!(namespace));
        }
        metadata.insert("uid".into(), json!(uid));
        metadata.insert(
            "creationTimestamp".into(),
            json!(created.unwrap_or_else(|| rfc3339(now))),
        );
        metadata.insert(
            "resourceVersion".into(),
            json!(resource_version.to_string()),
        );
        metadata.entry("generation").or_insert(json!(1));
        self.watches.publish(
            resource_version,
            EventType::Added,
            resource,
            &namespace,
            &object,
            None,
        );
        self.objects.insert(key, object.clone());
        Ok(object)
    }

    /// PUT of the object (or of its status when `status_only`).
    pub fn replace(
        &mut self,
        resource: &ResourceType,
        url_namespace: Option<&str>,
        name: &str,
        object: Value,
        status_only: bool,
    ) -> Result<Value, ApiError> {
        if !object.is_object() {
            return Err(ApiError::bad_request(
                "the request body must be a JSON object",
            ));
        }
        let namespace = Self::namespace_for(resource, url_namespace, Some(&object))?;
        if let Some(body_name) = meta_str(&object, "name")
            && body_name != name
        {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let current = self.get(resource, &namespace, name)?;
        self.commit_update(resource, &namespace, name, current, object, status_only)
    }

    /// PATCH of the object (or of its status when `status_only`).
    pub fn patch(
        &mut self,
        resource: &ResourceType,
        url_namespace: Option<&str>,
        name: &str,
        patch_type: PatchType,
        body: &[u8],
        status_only: bool,
    ) -> Result<Value, ApiError> {
        let namespace = Self::namespace_for(resource, url_namespace, None)?;
        if patch_type == PatchType::Apply {
            // Refused before the object is looked up: a server without server-side apply
            // does not know the request kind at all (an apply would create a missing object).
            return Err(ApiError::unsupported_media_type(
                "server-side apply is not supported by the simulated API server",
            ));
        }
        let current = self.get(resource, &namespace, name)?;
        let patched = apply_patch(resource, name, &current, patch_type, body)?;
        if meta_str(&patched, "name") != Some(name) {
            return Err(ApiError::bad_request(format!(
                "a patch may not change metadata.name of {name}"
            )));
        }
        self.commit_update(resource, &namespace, name, current, patched, status_only)
    }

    /// The cluster IPs of the stored services.
    fn cluster_ips_in_use(&self, resource: &ResourceType) -> std::collections::BTreeSet<String> {
        self.objects_of(resource, None)
            .filter_map(|(_, service)| service.pointer("/spec/clusterIP")?.as_str())
            .filter(|ip| *ip != "None" && !ip.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// The shared update rules of PUT and PATCH: optimistic concurrency, server-owned
    /// metadata, status subresource split, what a pod or service update may change,
    /// generation, finalizers, no-op detection.
    fn commit_update(
        &mut self,
        resource: &ResourceType,
        namespace: &str,
        name: &str,
        current: Value,
        requested: Value,
        status_only: bool,
    ) -> Result<Value, ApiError> {
        if !requested.is_object() {
            return Err(ApiError::bad_request(format!(
                "the new {name} must be a JSON object"
            )));
        }
        check_version(resource, name, &current, &requested)?;
        let mut next = split_status(resource, &current, requested, status_only);
        if !status_only {
            admit_update(resource, name, &current, &mut next)?;
        }
        // The whole object, `/status` writes included, as `status_strategy.go` validates
        // it; ratcheted against the stored object.
        self.schemas
            .admit(resource, name, &mut next, Some(&current))?;
        keep_server_metadata(resource, &current, &mut next);
        if next == current {
            // Nothing changed: the real server keeps the resourceVersion and sends no event.
            return Ok(current);
        }
        let resource_version = self.next_resource_version();
        metadata_mut(&mut next).insert(
            "resourceVersion".into(),
            json!(resource_version.to_string()),
        );
        let key = ResourceKey::for_type(resource, namespace, name);
        if self.deletion_complete(resource, &next) {
            self.objects.remove(&key);
            self.watches.publish(
                resource_version,
                EventType::Deleted,
                resource,
                namespace,
                &next,
                None,
            );
        } else {
            self.watches.publish(
                resource_version,
                EventType::Modified,
                resource,
                namespace,
                &next,
                Some(&current),
            );
            self.objects.insert(key, next.clone());
        }
        Ok(next)
    }

    /// Whether an object marked for deletion may now go: no finalizers left and no
    /// pending graceful termination.
    pub(super) fn deletion_complete(&self, _resource: &ResourceType, object: &Value) -> bool {
        meta_str(object, "deletionTimestamp").is_some()
            && finalizers(object).is_empty()
            && object
                .pointer("/metadata/deletionGracePeriodSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                == 0
    }
}
