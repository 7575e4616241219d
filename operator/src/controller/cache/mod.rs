//! Watch caches of the objects the operator owns: pods, PVCs (metadata and spec: the
//! take-over rule judges another operator's claim by its spec; the status is dropped),
//! services and ConfigMaps, each a
//! kube-runtime reflector store fed by one watch filtered by the operator's label
//! selector, holding what a pass reads of each object ([`self::slim`]: no
//! managed fields, only the pod status a pass reads; pods in their compact form,
//! [`self::pod`], with the facts the steps read from their specs, and decoded
//! only for a step that asks for a pod's spec). A pass reads its cluster's objects from here instead of LISTing them (see
//! `pass::io::PassIo`); in steady state a pass makes no LIST at all. Pods,
//! PVCs and services are also indexed by namespace and selector key values
//! ([`self::index`]), so a pass reads its own cluster's objects without scanning
//! the other clusters'.
//!
//! A cache lags the API server by the watch's latency, and a pass must see its own
//! writes: after a write the pass waits until the cache has applied the write's
//! resourceVersion (or, for an object deleted at once, until the object is gone) before
//! it reads the kind again, as controllers waiting on their "expectations" do. A wait
//! that runs out (a watch down) falls back to a LIST.
//!
//! Production hands the watch streams to the kube-runtime controller, which also
//! reconciles a cluster when one of its objects changes ([`CacheStreams`]); the
//! simulation drives them itself ([`ObjectCache::spawn`]).

pub(crate) mod decoded_pods;
pub(crate) mod index;
pub(crate) mod pod;
pub(crate) mod slim;
mod stream_end;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use tokio::sync::watch;

use self::decoded_pods::DecodedPods;
use self::index::LabelIndex;
use self::pod::{CompactPod, DecodeError, compact_event};
use self::slim::{slim_config_map, slim_pvc, slim_service};
use super::object_kind::ObjectKind;
use super::snapshot::pod::PodSource;

/// How long a pass waits for the cache to show its own write before it LISTs instead.
pub(crate) const OWN_WRITE_WAIT: Duration = Duration::from_secs(10);

/// The label keys every object of the cache carries (an "exists" requirement each);
/// empty: every object of the watched namespaces.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CacheSelector {
    keys: Vec<String>,
}

/// The label every object the operator makes for a cluster carries by default
/// (`spec.labels.matchLabels`): the default selector of the caches.
pub use fdb_shared::api::cluster::settings::CLUSTER_NAME_LABEL;

impl CacheSelector {
    /// Objects carrying each of these label keys.
    pub fn keys<I: IntoIterator<Item = S>, S: Into<String>>(keys: I) -> Self {
        Self {
            keys: keys
                .into_iter()
                .map(Into::into)
                .filter(|k| !k.is_empty())
                .collect(),
        }
    }

    /// Parses `a,b` (label keys); empty selects everything.
    pub fn parse(text: &str) -> Self {
        Self::keys(text.split(',').map(str::trim))
    }

    /// The Kubernetes label selector.
    pub fn selector(&self) -> String {
        self.keys.join(",")
    }

    /// Whether every object with these match labels is in the cache: the cluster's
    /// match labels name each key (a cluster whose objects lack one is LISTed).
    pub fn covers(&self, match_labels: &BTreeMap<String, String>) -> bool {
        self.keys.iter().all(|key| match_labels.contains_key(key))
    }
}

impl Default for ObjectKindProgress {
    fn default() -> Self {
        let (sender, _) = watch::channel(Applied::default());
        Self { sender }
    }
}

/// What one kind's store has applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    /// Whether the first list is in.
    pub ready: bool,
    /// The highest resourceVersion applied.
    pub resource_version: u64,
    /// The watch stream is gone: nothing more will be applied.
    pub ended: bool,
}

/// The progress of one kind's store, as the watch stream applies events to it.
#[derive(Debug)]
struct ObjectKindProgress {
    sender: watch::Sender<Applied>,
}

/// Follows a watch stream's events after the store applied them.
#[derive(Debug, Default)]
struct Tracker {
    pending: u64,
}

fn resource_version<K: Resource>(object: &K) -> u64 {
    object
        .meta()
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

impl Tracker {
    fn observe<K: Resource>(&mut self, progress: &ObjectKindProgress, event: &watcher::Event<K>) {
        match event {
            watcher::Event::Apply(object) | watcher::Event::Delete(object) => {
                let rv = resource_version(object);
                progress.sender.send_modify(|applied| {
                    applied.resource_version = applied.resource_version.max(rv);
                });
            }
            watcher::Event::Init => self.pending = 0,
            watcher::Event::InitApply(object) => {
                self.pending = self.pending.max(resource_version(object));
            }
            watcher::Event::InitDone => {
                let rv = self.pending;
                progress.sender.send_modify(|applied| {
                    applied.ready = true;
                    applied.resource_version = applied.resource_version.max(rv);
                });
            }
        }
    }
}

/// The watch streams behind the caches, each yielding the objects it touched (for the
/// controller's triggers); a stream must be polled for its cache to fill.
pub struct CacheStreams {
    /// Pods (in their compact form).
    pub pods: BoxStream<'static, Result<CompactPod, watcher::Error>>,
    /// PVCs (metadata and spec).
    pub pvcs: BoxStream<'static, Result<PersistentVolumeClaim, watcher::Error>>,
    /// Services.
    pub services: BoxStream<'static, Result<Service, watcher::Error>>,
    /// ConfigMaps.
    pub config_maps: BoxStream<'static, Result<ConfigMap, watcher::Error>>,
}

impl std::fmt::Debug for CacheStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheStreams").finish_non_exhaustive()
    }
}

/// Aborts the tasks driving the streams when the cache is dropped.
#[derive(Debug, Default)]
struct Tasks(Vec<tokio::task::AbortHandle>);

impl Drop for Tasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// What a pass wrote, to be seen in the cache before the kind is read again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expectation {
    /// The object `name` at this resourceVersion or later (or anything later).
    AtLeast {
        /// The object's name.
        name: String,
        /// The write's resourceVersion.
        resource_version: u64,
    },
    /// The object `name` gone.
    Gone {
        /// The object's name.
        name: String,
    },
}

/// See the module documentation.
pub struct ObjectCache {
    selector: CacheSelector,
    /// The pods, PVCs and services by namespace and selector key values.
    pod_index: Arc<LabelIndex>,
    pvc_index: Arc<LabelIndex>,
    service_index: Arc<LabelIndex>,
    /// Pods in their compact form ([`self::pod`]).
    pods: Store<CompactPod>,
    /// The pods passes read recently, decoded (shared with the passes' snapshots).
    decoded_pods: Arc<DecodedPods>,
    /// PVCs as their metadata and spec (no status).
    pvcs: Store<PersistentVolumeClaim>,
    services: Store<Service>,
    config_maps: Store<ConfigMap>,
    progress: BTreeMap<ObjectKind, ObjectKindProgress>,
    tasks: Tasks,
}

impl std::fmt::Debug for ObjectCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectCache")
            .field("selector", &self.selector)
            .field("pods", &self.pods.len())
            .field("pvcs", &self.pvcs.len())
            .field("services", &self.services.len())
            .field("config_maps", &self.config_maps.len())
            .finish_non_exhaustive()
    }
}

fn api<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    }
}

/// The object of `store` named `name` in `namespace`.
fn named<K>(store: &Store<K>, namespace: &str, name: &str) -> Option<Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    store.get(&ObjectRef::new(name).within(namespace))
}

/// The objects of `store` in `namespace` carrying every one of `labels`: through the
/// index when it can answer (no scan of other clusters' objects), else by a scan.
fn lookup<K>(
    store: &Store<K>,
    index: &LabelIndex,
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> Vec<Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    match index.names(namespace, labels) {
        Some(names) => {
            // One key for every name: no copy of the name and namespace per object.
            let mut key = ObjectRef::new("").within(namespace);
            names
                .iter()
                .filter_map(|name| {
                    name.clone_into(&mut key.name);
                    store.get(&key)
                })
                .filter(|o| selected(&**o, namespace, labels))
                .collect()
        }
        None => store
            .state()
            .into_iter()
            .filter(|o| selected(&**o, namespace, labels))
            .collect(),
    }
}

/// Whether `object` is in `namespace` and carries every one of `labels`.
fn selected<K: Resource>(object: &K, namespace: &str, labels: &BTreeMap<String, String>) -> bool {
    let meta = object.meta();
    meta.namespace.as_deref() == Some(namespace)
        && labels.iter().all(|(key, value)| {
            meta.labels
                .as_ref()
                .and_then(|own| own.get(key))
                .is_some_and(|own| own == value)
        })
}

impl ObjectCache {
    /// Caches over `namespace` (all when `None`) of the objects `selector` selects, and
    /// the watch streams that fill them.
    pub fn new(
        client: &kube::Client,
        namespace: Option<&str>,
        selector: CacheSelector,
    ) -> (Self, CacheStreams) {
        let config = watcher::Config::default().labels(&selector.selector());
        let progress: BTreeMap<ObjectKind, ObjectKindProgress> = [
            ObjectKind::Pods,
            ObjectKind::Pvcs,
            ObjectKind::Services,
            ObjectKind::ConfigMap,
        ]
        .into_iter()
        .map(|kind| (kind, ObjectKindProgress::default()))
        .collect();
        let sender = |kind: ObjectKind| progress.get(&kind).map(|p| p.sender.clone());
        let (pods, pods_writer) = reflector::store();
        let (pvcs, pvcs_writer) = reflector::store();
        let (services, services_writer) = reflector::store();
        let (config_maps, config_maps_writer) = reflector::store();
        let pod_index = Arc::new(LabelIndex::new(&selector.keys));
        let pvc_index = Arc::new(LabelIndex::new(&selector.keys));
        let service_index = Arc::new(LabelIndex::new(&selector.keys));
        let streams = CacheStreams {
            pods: tracked(
                watcher(api::<Pod>(client, namespace), config.clone())
                    .default_backoff()
                    .map_ok(compact_event)
                    .reflect(pods_writer),
                sender(ObjectKind::Pods),
                Some(pod_index.clone()),
            ),
            pvcs: tracked(
                // Full objects, the status dropped before the store: the spec is what
                // tells whether another operator's claim has what ours asks for.
                watcher(
                    api::<PersistentVolumeClaim>(client, namespace),
                    config.clone(),
                )
                .default_backoff()
                .map_ok(|event| event.modify(slim_pvc))
                .reflect(pvcs_writer),
                sender(ObjectKind::Pvcs),
                Some(pvc_index.clone()),
            ),
            services: tracked(
                watcher(api::<Service>(client, namespace), config.clone())
                    .default_backoff()
                    .map_ok(|event| event.modify(slim_service))
                    .reflect(services_writer),
                sender(ObjectKind::Services),
                Some(service_index.clone()),
            ),
            config_maps: tracked(
                watcher(api::<ConfigMap>(client, namespace), config)
                    .default_backoff()
                    .map_ok(|event| event.modify(slim_config_map))
                    .reflect(config_maps_writer),
                sender(ObjectKind::ConfigMap),
                None,
            ),
        };
        let cache = Self {
            selector,
            pod_index,
            pvc_index,
            service_index,
            pods,
            decoded_pods: Arc::default(),
            pvcs,
            services,
            config_maps,
            progress,
            tasks: Tasks::default(),
        };
        (cache, streams)
    }

    /// Caches whose streams run as tasks of this runtime (stopped when the cache is
    /// dropped): for running passes without the kube-runtime controller.
    pub fn spawn(client: &kube::Client, namespace: Option<&str>, selector: CacheSelector) -> Self {
        let (mut cache, streams) = Self::new(client, namespace, selector);
        let drive = |stream: BoxStream<'static, Result<(), watcher::Error>>| {
            tokio::spawn(stream.for_each(|_| std::future::ready(()))).abort_handle()
        };
        cache.tasks = Tasks(vec![
            drive(streams.pods.map_ok(drop).boxed()),
            drive(streams.pvcs.map_ok(drop).boxed()),
            drive(streams.services.map_ok(drop).boxed()),
            drive(streams.config_maps.map_ok(drop).boxed()),
        ]);
        cache
    }

    /// The selector the caches were made with.
    pub fn selector(&self) -> &CacheSelector {
        &self.selector
    }

    /// What the store of `kind` has applied.
    pub fn applied(&self, kind: ObjectKind) -> Applied {
        self.progress
            .get(&kind)
            .map(|p| *p.sender.borrow())
            .unwrap_or_default()
    }

    /// Whether every store has its first list.
    pub fn is_ready(&self) -> bool {
        self.progress.values().all(|p| p.sender.borrow().ready)
    }

    /// Waits until `check` holds for what `kind`'s store applied, at most `limit`.
    /// Returns whether it held.
    pub async fn wait_for(
        &self,
        kind: ObjectKind,
        limit: Duration,
        mut check: impl FnMut(&Self, Applied) -> bool,
    ) -> bool {
        let Some(progress) = self.progress.get(&kind) else {
            return false;
        };
        let mut receiver = progress.sender.subscribe();
        let wait = async {
            loop {
                let applied = *receiver.borrow_and_update();
                if check(self, applied) {
                    return true;
                }
                if applied.ended || receiver.changed().await.is_err() {
                    return false;
                }
            }
        };
        tokio::time::timeout(limit, wait).await.unwrap_or(false)
    }

    /// Waits until every store has its first list, at most `limit`.
    pub async fn wait_ready(&self, limit: Duration) -> bool {
        for kind in self.progress.keys() {
            if !self
                .wait_for(*kind, limit, |_, applied| applied.ready)
                .await
            {
                return false;
            }
        }
        true
    }

    /// Whether the store of `kind` shows `expectation` in `namespace`.
    fn shows(&self, kind: ObjectKind, namespace: &str, expectation: &Expectation) -> bool {
        let (name, wanted) = match expectation {
            Expectation::AtLeast {
                name,
                resource_version,
            } => (name, Some(*resource_version)),
            Expectation::Gone { name } => (name, None),
        };
        let current = match kind {
            ObjectKind::Pods => named(&self.pods, namespace, name).map(|o| resource_version(&*o)),
            ObjectKind::Pvcs => named(&self.pvcs, namespace, name).map(|o| resource_version(&*o)),
            ObjectKind::Services => {
                named(&self.services, namespace, name).map(|o| resource_version(&*o))
            }
            ObjectKind::ConfigMap => {
                named(&self.config_maps, namespace, name).map(|o| resource_version(&*o))
            }
        };
        match (wanted, current) {
            (None, current) => current.is_none(),
            // Anything applied at or after the write shows it (the object may have
            // changed again, or left the selector, since).
            (Some(wanted), current) => {
                current.is_some_and(|rv| rv >= wanted)
                    || self.applied(kind).resource_version >= wanted
            }
        }
    }

    /// Waits until the store of `kind` shows every one of `expectations` (in
    /// `namespace`), at most `limit`. Returns whether it does.
    pub async fn wait_for_writes(
        &self,
        kind: ObjectKind,
        namespace: &str,
        expectations: &[Expectation],
        limit: Duration,
    ) -> bool {
        self.wait_for(kind, limit, |cache, applied| {
            applied.ready
                && expectations
                    .iter()
                    .all(|expectation| cache.shows(kind, namespace, expectation))
        })
        .await
    }

    /// The cached pods in `namespace` carrying `labels`, decoded (those read recently
    /// shared, not copied).
    pub fn pods(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<Vec<Arc<Pod>>, DecodeError> {
        self.decoded_pods
            .decode(&self.compact_pods(namespace, labels))
    }

    /// The cached pods in `namespace` carrying `labels` as a snapshot takes them
    /// (nothing decoded: a step that asks for a pod's spec has it decoded then).
    pub fn pod_sources(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<PodSource> {
        self.decoded_pods.drop_idle(std::time::Instant::now());
        self.compact_pods(namespace, labels)
            .into_iter()
            .map(|pod| PodSource::Cached {
                pod,
                decoder: self.decoded_pods.clone(),
            })
            .collect()
    }

    /// How many cached pods were read whole (decoded, or found decoded) so far: a pass
    /// with nothing to change reads none.
    pub fn pods_read_whole(&self) -> u64 {
        self.decoded_pods.reads()
    }

    /// The cached pods in `namespace` carrying `labels` as the cache keeps them.
    pub fn compact_pods(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<Arc<CompactPod>> {
        lookup(&self.pods, &self.pod_index, namespace, labels)
    }

    /// How many pods are kept decoded.
    pub fn decoded_pods(&self) -> usize {
        self.decoded_pods.len()
    }

    /// The cached PVCs in `namespace` carrying `labels` (metadata and spec, no status;
    /// shared, not copied).
    pub fn pvcs(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<Arc<PersistentVolumeClaim>> {
        lookup(&self.pvcs, &self.pvc_index, namespace, labels)
    }

    /// The cached services in `namespace` carrying `labels` (shared, not copied).
    pub fn services(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<Arc<Service>> {
        lookup(&self.services, &self.service_index, namespace, labels)
    }

    /// The cached ConfigMap `namespace/name`.
    pub fn config_map(&self, namespace: &str, name: &str) -> Option<ConfigMap> {
        named(&self.config_maps, namespace, name).map(|o| ConfigMap::clone(&o))
    }
}

/// `stream` with each event reported to `index` and `progress` after the store applied
/// it, as the objects it touched.
fn tracked<K>(
    stream: impl futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    progress: Option<watch::Sender<Applied>>,
    index: Option<Arc<LabelIndex>>,
) -> BoxStream<'static, Result<K, watcher::Error>>
where
    K: Resource + Clone + Send + 'static,
{
    let mut tracker = Tracker::default();
    let ended = progress.clone().map(stream_end::EndOnDrop);
    let progress = progress.map(|sender| ObjectKindProgress { sender });
    stream
        .inspect_ok(move |event| {
            let _ = &ended; // moved in: dropped with the stream
            // The index before the progress: a pass that waited for its write finds it.
            if let Some(index) = &index {
                index.observe(event);
            }
            if let Some(progress) = &progress {
                tracker.observe(progress, event);
            }
        })
        .touched_objects()
        .boxed()
}

#[cfg(test)]
mod tests;
