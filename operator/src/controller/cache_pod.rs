//! The compact form in which the pods' cache keeps a pod, and the pods it keeps decoded.
//!
//! A typed `PodSpec` holds every optional field inline (a `Volume` is over 3 KB, a
//! `Container` over 2 KB, most of it `None`): a pod's spec of 3.8 KB of JSON takes
//! about 30 KiB typed, three quarters of what the operator holds per process group
//! (issue 20: 100 clusters of 100 process groups within 256 MiB). The cache keeps each
//! pod as a [`CompactPod`]: metadata and the slimmed status typed (the cache's index and
//! its own-write waits read them), the spec as its JSON bytes.
//!
//! Passes read whole `Pod`s, as before: [`DecodedPods`] decodes a compact pod into the
//! `Pod` it came from (the same value: the steps decide the same) and keeps the most
//! recently read ones decoded, up to a number of pods, so that the passes of the
//! clusters being worked on (a rollout, a large cluster) decode only the pods that
//! changed. A pass over a cluster whose pods were not read recently decodes them
//! (about 10 µs per pod in a release build).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus};
use kube::api::ObjectMeta;
use kube::runtime::watcher;

use super::cache_slim::slim_pod;

/// How many decoded pods [`DecodedPods`] keeps by default: a 1000-group cluster's
/// steady passes decode nothing; at most about 32 MiB.
pub const DECODED_PODS: usize = 1024;

/// A pod's spec as the cache keeps it.
#[derive(Debug, Clone)]
enum CompactSpec {
    /// Its JSON.
    Json(Box<[u8]>),
    /// Typed, for a spec that could not be written as JSON (not expected: kept whole
    /// rather than lost).
    Typed(Box<PodSpec>),
}

/// A pod as the pods' cache keeps it: see the module documentation.
#[derive(Debug, Clone)]
pub struct CompactPod {
    metadata: ObjectMeta,
    spec: Option<CompactSpec>,
    status: Option<PodStatus>,
}

/// A compact pod whose spec does not decode.
#[derive(Debug, thiserror::Error)]
#[error("the cached pod {namespace}/{name} does not decode: {source}")]
pub struct DecodeError {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// Why.
    #[source]
    pub source: serde_json::Error,
}

impl CompactPod {
    /// `pod` slimmed ([`slim_pod`]) and compacted.
    pub fn new(mut pod: Pod) -> Self {
        slim_pod(&mut pod);
        let spec = pod.spec.map(|spec| match serde_json::to_vec(&spec) {
            Ok(json) => CompactSpec::Json(json.into_boxed_slice()),
            Err(_) => CompactSpec::Typed(Box::new(spec)),
        });
        Self {
            metadata: pod.metadata,
            spec,
            status: pod.status,
        }
    }

    /// The pod, as [`slim_pod`] left it.
    pub fn decode(&self) -> Result<Pod, DecodeError> {
        let spec = match &self.spec {
            None => None,
            Some(CompactSpec::Typed(spec)) => Some(PodSpec::clone(spec)),
            Some(CompactSpec::Json(json)) => {
                Some(serde_json::from_slice(json).map_err(|source| DecodeError {
                    namespace: self.metadata.namespace.clone().unwrap_or_default(),
                    name: self.metadata.name.clone().unwrap_or_default(),
                    source,
                })?)
            }
        };
        Ok(Pod {
            metadata: self.metadata.clone(),
            spec,
            status: self.status.clone(),
        })
    }
}

impl kube::Resource for CompactPod {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(dt: &()) -> std::borrow::Cow<'_, str> {
        Pod::kind(dt)
    }

    fn group(dt: &()) -> std::borrow::Cow<'_, str> {
        Pod::group(dt)
    }

    fn version(dt: &()) -> std::borrow::Cow<'_, str> {
        Pod::version(dt)
    }

    fn plural(dt: &()) -> std::borrow::Cow<'_, str> {
        Pod::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// A pods' watch event with its pod compacted.
pub fn compact_event(event: watcher::Event<Pod>) -> watcher::Event<CompactPod> {
    match event {
        watcher::Event::Apply(pod) => watcher::Event::Apply(CompactPod::new(pod)),
        watcher::Event::Delete(pod) => watcher::Event::Delete(CompactPod::new(pod)),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitApply(pod) => watcher::Event::InitApply(CompactPod::new(pod)),
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

/// A decoded pod and the compact pod it came from.
#[derive(Debug)]
struct Decoded {
    /// Not kept alive: an entry whose source is gone (the pod changed or left) is
    /// stale. While the entry holds it, the allocation is not reused, so the pointer
    /// names this very object.
    source: Weak<CompactPod>,
    pod: Arc<Pod>,
    used: u64,
}

#[derive(Debug, Default)]
struct Hot {
    /// By namespace, then name.
    entries: HashMap<String, HashMap<String, Decoded>>,
    len: usize,
    tick: u64,
}

impl Hot {
    /// Keeps the `keep` most recently used entries.
    fn evict(&mut self, keep: usize) {
        let mut used: Vec<u64> = self
            .entries
            .values()
            .flat_map(HashMap::values)
            .map(|d| d.used)
            .collect();
        let Some(drop) = used.len().checked_sub(keep).filter(|n| *n > 0) else {
            return;
        };
        used.sort_unstable();
        let threshold = used.get(drop - 1).copied().unwrap_or(0);
        for names in self.entries.values_mut() {
            names.retain(|_, d| d.used > threshold);
        }
        self.entries.retain(|_, names| !names.is_empty());
        self.len = self.entries.values().map(HashMap::len).sum();
    }
}

/// See the module documentation.
#[derive(Debug)]
pub struct DecodedPods {
    capacity: usize,
    hot: Mutex<Hot>,
}

impl Default for DecodedPods {
    fn default() -> Self {
        Self::new(DECODED_PODS)
    }
}

impl DecodedPods {
    /// Keeping at most `capacity` pods decoded (0: every read decodes).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            hot: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Hot> {
        self.hot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many pods are kept decoded.
    pub fn len(&self) -> usize {
        self.lock().len
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pods `compact` holds, decoded (the ones kept decoded shared, not copied).
    pub fn decode(&self, compact: &[Arc<CompactPod>]) -> Result<Vec<Arc<Pod>>, DecodeError> {
        let mut pods = Vec::with_capacity(compact.len());
        let mut missing = Vec::new();
        {
            let mut hot = self.lock();
            hot.tick += 1;
            let tick = hot.tick;
            for (index, source) in compact.iter().enumerate() {
                let meta = &source.metadata;
                let found = hot
                    .entries
                    .get_mut(meta.namespace.as_deref().unwrap_or_default())
                    .and_then(|names| names.get_mut(meta.name.as_deref().unwrap_or_default()))
                    .filter(|d| std::ptr::eq(d.source.as_ptr(), Arc::as_ptr(source)));
                match found {
                    Some(decoded) => {
                        decoded.used = tick;
                        pods.push(Some(decoded.pod.clone()));
                    }
                    None => {
                        pods.push(None);
                        missing.push(index);
                    }
                }
            }
        }
        // Decoded without the lock: other passes read their own pods meanwhile.
        let mut fresh = Vec::with_capacity(missing.len());
        for index in missing {
            let Some(source) = compact.get(index) else {
                continue;
            };
            let pod = Arc::new(source.decode()?);
            if let Some(slot) = pods.get_mut(index) {
                *slot = Some(pod.clone());
            }
            fresh.push((source, pod));
        }
        if self.capacity > 0 && !fresh.is_empty() {
            let mut hot = self.lock();
            let tick = hot.tick;
            for (source, pod) in fresh {
                let meta = &source.metadata;
                let names = hot
                    .entries
                    .entry(meta.namespace.clone().unwrap_or_default())
                    .or_default();
                let previous = names.insert(
                    meta.name.clone().unwrap_or_default(),
                    Decoded {
                        source: Arc::downgrade(source),
                        pod,
                        used: tick,
                    },
                );
                if previous.is_none() {
                    hot.len += 1;
                }
            }
            if hot.len > self.capacity {
                // Down to seven eighths, so that eviction (a sort) is not paid per pod.
                hot.evict(self.capacity - self.capacity / 8);
            }
        }
        Ok(pods.into_iter().flatten().collect())
    }
}

#[cfg(test)]
#[path = "cache_pod_tests.rs"]
mod tests;
