//! The simulated world's Kubernetes: an in-memory API server reached through a real
//! `kube::Client`, so the operator runs the same client code path as in production.
//!
//! [`FakeApiServer`] serves any registered resource type (see [`resources`]) stored as
//! JSON, with the real API's semantics: one global resourceVersion, optimistic
//! concurrency (409 on stale writes), `generation` bumped only by spec-like changes, the
//! status subresource, label and field selectors, merge / JSON / strategic merge patches,
//! watches that `kube::runtime::watcher` follows, finalizers and graceful pod deletion.
//! Pods and services get the rules an operator can trip over: a pod update may change
//! only what the real server allows (images, ...; 422 otherwise, see [`pod_updates`]),
//! `spec.nodeName` is set through the `binding` subresource, `pods/<name>/eviction`
//! evicts (see [`subresources`]), pods get the default `NoExecute` tolerations and
//! ClusterIP services a stable cluster IP (see [`admission`]).
//! Each client is tagged with an actor name; requests are counted per actor and verb and
//! writes are logged in order for the simulation's events log. A seeded share of an
//! actor's writes can be made to fail with 409 Conflict.
//!
//! The FoundationDB custom resources are pruned, defaulted and validated against the
//! served CRDs (see [`schema`]). `dryRun=All` runs a write's checks and persists nothing;
//! bodies are JSON or YAML (other media types: 415).
//!
//! Not simulated: PodDisruptionBudgets (no `policy` resources; evictions always
//! proceed), server-side apply (415), garbage collection of owned objects in scenario
//! steps (the served phase runs the collector of `kube/garbage.rs`; `propagationPolicy` is accepted
//! and ignored), namespace existence checks,
//! list snapshots at an older resourceVersion (lists always show the latest state),
//! watch timeouts and periodic bookmarks (the served HTTP layer adds them on the wall
//! clock: `serve/watch_timing.rs`), managedFields, protobuf.

pub mod accounting;
pub mod admission;
pub mod core_defaults;
pub mod deletion;
pub mod errors;
pub mod faults;
pub mod garbage;
pub mod generated_names;
pub mod identity;
pub mod interleave;
pub mod operations;
pub mod patch;
pub mod pod_updates;
pub mod quantity;
pub mod resources;
pub mod routes;
pub mod schema;
pub mod selectors;
pub mod service;
pub mod service_account;
pub mod store;
pub mod subresources;
pub mod typed;
pub mod update_rules;
pub mod validation;
pub mod watch;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::de::DeserializeOwned;
use serde_json::Value;

use fdb_operator::clock::Clock;

pub use accounting::{Verb, VerbCounts, WriteObserver, WriteRecord};
pub use deletion::DeleteOptions;
pub use errors::{ApiError, DirectAccessError};
pub use patch::PatchType;
pub use resources::ResourceType;
pub use service::ActorService;
pub use store::ResourceKey;
pub use typed::typed_json;

use operations::{Core, Operation};
use routes::{Query, Route};

/// The actor name `finish_pod_deletion` writes as.
pub const KUBELET_ACTOR: &str = "kubelet";

struct Inner {
    core: Mutex<Core>,
    clock: Arc<dyn Clock>,
    /// Users' writes waiting for the operator's next request (`kube/interleave.rs`).
    interleaved: interleave::Interleaved,
}

/// The in-memory Kubernetes API server. Cheap to clone; clones share the same world.
#[derive(Clone)]
pub struct FakeApiServer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for FakeApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeApiServer").finish_non_exhaustive()
    }
}

impl FakeApiServer {
    /// An empty server reading time from `clock`; generated names and injected faults
    /// derive from `seed`, so the same seed and request sequence give the same run.
    pub fn new(clock: Arc<dyn Clock>, seed: u64) -> Self {
        Self {
            inner: Arc::new(Inner {
                core: Mutex::new(Core::new(seed)),
                clock,
                interleaved: interleave::Interleaved::default(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Core> {
        // A panic elsewhere must not take the simulated API down with it.
        self.inner
            .core
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A `kube::Client` whose requests are served here and tagged with `actor`
    /// (e.g. `"operator"`, `"kubelet"`). Must be called inside a Tokio runtime.
    pub fn client(&self, actor: &str) -> kube::Client {
        kube::Client::new(self.service(actor), "default")
    }

    /// The tower service behind [`FakeApiServer::client`].
    pub fn service(&self, actor: &str) -> ActorService {
        ActorService {
            server: self.clone(),
            actor: Arc::from(actor),
        }
    }

    /// Serves another resource type (e.g. a further custom resource).
    pub fn register_resource(&self, resource: ResourceType) {
        self.lock().store.registry.register(resource);
    }

    /// Every resource type served (for API discovery).
    pub fn resource_types(&self) -> Vec<ResourceType> {
        self.lock().store.registry.types().to_vec()
    }

    /// Makes that share (0..=1) of `actor`'s writes answer 409 Conflict; 0 turns it off.
    pub fn set_write_conflict_rate(&self, actor: &str, rate: f64) {
        self.lock().faults.set_rate(actor, rate);
    }

    /// Turns every injected fault off.
    pub fn clear_faults(&self) {
        self.lock().faults.clear();
    }

    /// Request counts per actor and verb since the start.
    pub fn request_counts(&self) -> BTreeMap<String, VerbCounts> {
        self.lock().accounting.counts()
    }

    /// Calls `observer` with every write as it happens, in order (so a harness can
    /// interleave Kubernetes writes with its other events). It runs under the server's
    /// lock and must not call back into the server.
    pub fn set_write_observer(&self, observer: Option<WriteObserver>) {
        self.lock().accounting.set_observer(observer);
    }

    /// The writes logged since the last call, in order.
    pub fn take_write_log(&self) -> Vec<WriteRecord> {
        self.lock().accounting.take_writes()
    }

    /// Sets the storage class created claims that name none get (the cluster's default
    /// class; `None`: the cluster has none).
    pub fn set_default_storage_class(&self, class: Option<String>) {
        self.lock().store.default_storage_class = class;
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.lock().store.resource_version
    }

    /// Ends every open watch stream (clients see the end and re-watch).
    pub fn close_watches(&self) {
        self.lock().store.watches.close_all();
    }

    /// Compacts the watch history as etcd's compaction does after many writes
    /// elsewhere: the resourceVersion moves on by one (a write no watched resource
    /// sees), every retained event is dropped and every open watch ends, so a client
    /// resuming from any resourceVersion it saw gets `410 Gone` and has to list again.
    /// Returns the resourceVersion compacted up to.
    pub fn compact_watch_history(&self) -> u64 {
        let mut server = self.lock();
        let up_to = server.store.next_resource_version();
        server.store.watches.compact(up_to);
        up_to
    }

    /// The resourceVersion of the last event sent on the open watches of
    /// `group`/`plural` (0 when none was sent), `None` when none is open.
    pub fn watch_position(&self, group: &str, plural: &str) -> Option<u64> {
        self.lock().store.watches.position(group, plural)
    }

    /// Number of watch streams still open.
    pub fn open_watches(&self) -> usize {
        self.lock().store.watches.open_watches()
    }

    /// One stored object.
    pub fn get(&self, key: &ResourceKey) -> Option<Value> {
        self.lock().store.objects.get(key).cloned()
    }

    /// The objects of `group`/`plural` (any version) in `namespace`, or in all namespaces
    /// when `None`, ordered by namespace and name.
    pub fn list(&self, group: &str, plural: &str, namespace: Option<&str>) -> Vec<Value> {
        self.lock()
            .store
            .objects
            .iter()
            .filter(|(key, _)| {
                key.group == group
                    && key.plural == plural
                    && namespace.is_none_or(|ns| key.namespace == ns)
            })
            .map(|(_, object)| object.clone())
            .collect()
    }

    /// One stored object as `K` (`namespace` is `None` for cluster-scoped kinds).
    pub fn get_typed<K>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<K>, DirectAccessError>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        let key = ResourceKey::of::<K>(namespace, name);
        let core = self.lock();
        core.store
            .objects
            .get(&key)
            .map(|object| typed(&key, object))
            .transpose()
    }

    /// The stored objects of kind `K` in `namespace` (all namespaces when `None`).
    pub fn list_typed<K>(&self, namespace: Option<&str>) -> Result<Vec<K>, DirectAccessError>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        let (group, plural) = (K::group(&()), K::plural(&()));
        // Deserialized from the stored objects in place: the world lists every kind each
        // tick, and a deep copy of each object first was a large share of a run's CPU.
        let core = self.lock();
        core.store
            .objects
            .iter()
            .filter(|(key, _)| {
                key.group == group
                    && key.plural == plural
                    && namespace.is_none_or(|ns| key.namespace == ns)
            })
            .map(|(key, object)| typed(key, object))
            .collect()
    }

    /// The stored objects of kind `K` in every namespace, as [`Self::list_typed`], but an
    /// object whose resourceVersion is the one `decoded` holds for it is not decoded
    /// again: `decoded` is brought up to date (gone objects dropped) and the list shares
    /// its entries. The world lists the pods several times a tick and most of them are
    /// unchanged between two lists, so decoding only the changed ones saves most of it.
    pub fn list_typed_decoded<K>(
        &self,
        decoded: &mut BTreeMap<(String, String), (String, Arc<K>)>,
    ) -> Result<Vec<Arc<K>>, DirectAccessError>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        let (group, plural) = (K::group(&()), K::plural(&()));
        let core = self.lock();
        let mut listed = Vec::new();
        let mut kept = BTreeMap::new();
        for (key, object) in core.store.objects.iter() {
            if key.group != group || key.plural != plural {
                continue;
            }
            let version = object
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let name = (key.namespace.clone(), key.name.clone());
            let entry = match decoded.remove(&name) {
                Some((at, typed_object)) if !version.is_empty() && at == version => {
                    (at, typed_object)
                }
                _ => (version.to_owned(), Arc::new(typed(key, object)?)),
            };
            listed.push(Arc::clone(&entry.1));
            kept.insert(name, entry);
        }
        *decoded = kept;
        Ok(listed)
    }

    /// Creates `object` as `actor`, without HTTP (same rules, counting and log).
    /// The resource type comes from the object's `apiVersion` and `kind`.
    pub fn create_as(&self, actor: &str, object: Value) -> Result<Value, ApiError> {
        let route = self.route_for_body(&object, false, false)?;
        self.execute(actor, &route, Operation::Create(object))
    }

    /// Puts a captured object back as it was ([`store::State::restore`]): the boot of a
    /// snapshot, before anyone acts. Not an API request: nothing is counted or logged.
    pub fn restore(&self, object: Value) -> Result<Value, ApiError> {
        let route = self.route_for_body(&object, false, false)?;
        let now = self.inner.clock.now();
        self.lock().store.restore(&route.resource, object, now)
    }

    /// Replaces `object` (or only its status when `status_only`) as `actor`.
    pub fn replace_as(
        &self,
        actor: &str,
        object: Value,
        status_only: bool,
    ) -> Result<Value, ApiError> {
        let route = self.route_for_body(&object, true, status_only)?;
        self.execute(actor, &route, Operation::Update(object))
    }

    /// Patches the object at `key` (or only its status when `status_only`) as `actor`.
    pub fn patch_as(
        &self,
        actor: &str,
        key: &ResourceKey,
        patch_type: PatchType,
        patch: &Value,
        status_only: bool,
    ) -> Result<Value, ApiError> {
        let route = self.route_for_key(key, status_only)?;
        let body = patch.to_string().into_bytes();
        self.execute(actor, &route, Operation::Patch(patch_type, body))
    }

    /// Deletes the object at `key` as `actor`. Returns the object when it still exists
    /// (terminating), `None` when it is gone.
    pub fn delete_as(
        &self,
        actor: &str,
        key: &ResourceKey,
        options: DeleteOptions,
    ) -> Result<Option<Value>, ApiError> {
        let route = self.route_for_key(key, false)?;
        self.execute(actor, &route, Operation::Delete(options))?;
        Ok(self.get(key))
    }

    /// Deletes, in one request (like `kubectl delete --selector`, a `deletecollection`),
    /// every object of the core resource `plural` (`pods`, `persistentvolumeclaims`,
    /// `services`, ...) in `namespace` matching `label_selector` (Kubernetes syntax; empty
    /// selects all), as `actor`. Each object is deleted as by a single delete: pods
    /// gracefully, objects with finalizers marked. Returns the names of the objects
    /// deleted or marked for deletion, in name order.
    pub fn delete_collection_as(
        &self,
        actor: &str,
        plural: &str,
        namespace: &str,
        label_selector: &str,
    ) -> Result<Vec<String>, ApiError> {
        let key = ResourceKey::new("", "v1", plural, namespace, "");
        let mut route = self.route_for_key(&key, false)?;
        route.name = None;
        let query = Query::from_pairs([("labelSelector", label_selector)]);
        let reply = self.execute(
            actor,
            &route,
            Operation::DeleteCollection(query, DeleteOptions::default()),
        )?;
        Ok(reply
            .get("items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|item| store::meta_str(item, "name").map(str::to_owned))
            .collect())
    }

    /// Evicts a pod as `actor` through its `eviction` subresource (a `POST` of an
    /// `Eviction`, as `kubectl drain` sends): a graceful delete. No PodDisruptionBudget
    /// is consulted (none can exist in the simulated API). 404 when the pod is gone.
    pub fn evict_as(&self, actor: &str, namespace: &str, name: &str) -> Result<(), ApiError> {
        let key = ResourceKey::new("", "v1", "pods", namespace, name);
        let mut route = self.route_for_key(&key, false)?;
        route.subresource = Some("eviction".to_owned());
        let eviction = serde_json::json!({
            "apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        });
        self.execute(actor, &route, Operation::Evict(eviction))?;
        Ok(())
    }

    /// Binds a pod to a node as `actor` through its `binding` subresource (what the
    /// scheduler does; no update may set `spec.nodeName`). 409 when the pod already has a
    /// node.
    pub fn bind_pod_as(
        &self,
        actor: &str,
        namespace: &str,
        name: &str,
        node: &str,
    ) -> Result<(), ApiError> {
        let key = ResourceKey::new("", "v1", "pods", namespace, name);
        let mut route = self.route_for_key(&key, false)?;
        route.subresource = Some("binding".to_owned());
        let binding = serde_json::json!({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        self.execute(actor, &route, Operation::Bind(binding))?;
        Ok(())
    }

    /// The kubelet's confirmation that a terminating pod's containers are gone: removes the
    /// pod (as actor [`KUBELET_ACTOR`], a delete with grace period 0), or leaves it until
    /// its finalizers are removed. Returns whether the pod is gone; 404 if it does not
    /// exist; a pod not being deleted is left alone (`Ok(false)`).
    pub fn finish_pod_deletion(&self, namespace: &str, name: &str) -> Result<bool, ApiError> {
        let key = ResourceKey::new("", "v1", "pods", namespace, name);
        let Some(pod) = self.get(&key) else {
            let route = self.route_for_key(&key, false)?;
            return Err(ApiError::not_found(&route.resource, name));
        };
        if store::meta_str(&pod, "deletionTimestamp").is_none() {
            return Ok(false);
        }
        let options = DeleteOptions {
            grace_period_seconds: Some(0),
            ..DeleteOptions::default()
        };
        Ok(self.delete_as(KUBELET_ACTOR, &key, options)?.is_none())
    }

    fn execute(&self, actor: &str, route: &Route, operation: Operation) -> Result<Value, ApiError> {
        let now = self.inner.clock.now();
        self.lock()
            .execute(actor, route, operation, now, false)
            .map(|(_, body)| body)
    }

    fn route_for_key(&self, key: &ResourceKey, status_only: bool) -> Result<Route, ApiError> {
        let core = self.lock();
        let resource = core
            .store
            .registry
            .by_plural(&key.group, &key.version, &key.plural)
            .cloned()
            .ok_or_else(|| {
                ApiError::unknown_path(&format!("{}/{}/{}", key.group, key.version, key.plural))
            })?;
        Ok(Route {
            namespace: resource.namespaced.then(|| key.namespace.clone()),
            resource,
            name: Some(key.name.clone()),
            subresource: status_only.then(|| "status".to_string()),
        })
    }

    fn route_for_body(
        &self,
        object: &Value,
        with_name: bool,
        status_only: bool,
    ) -> Result<Route, ApiError> {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let core = self.lock();
        let resource = core
            .store
            .registry
            .by_kind(api_version, kind)
            .cloned()
            .ok_or_else(|| ApiError::unknown_path(&format!("{api_version} {kind}")))?;
        let (namespace, name) = service::body_address(object);
        Ok(Route {
            namespace: if resource.namespaced { namespace } else { None },
            name: if with_name { name } else { None },
            subresource: status_only.then(|| "status".to_string()),
            resource,
        })
    }
}

fn typed<K: DeserializeOwned>(key: &ResourceKey, object: &Value) -> Result<K, DirectAccessError> {
    K::deserialize(object).map_err(|source| DirectAccessError::Deserialize {
        resource: format!("{}.{}", key.plural, key.group),
        namespace: key.namespace.clone(),
        name: key.name.clone(),
        source,
    })
}
