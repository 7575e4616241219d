//! The cached pods passes read whole, kept decoded: [`DecodedPods`] decodes a
//! [`CompactPod`] into the `Pod` it came from and keeps the most recently read ones
//! decoded, up to a number of pods, so that the passes of the clusters being worked on
//! (a rollout, a large cluster) decode only the pods that changed. A steady pass asks
//! for no pod here (issue 20): it reads the pods' heads and [`super::super::snapshot::pod_spec_facts`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::Resource;

use super::pod::{CompactPod, DecodeError};

/// How many decoded pods [`DecodedPods`] keeps by default: a 1000-group cluster's
/// passes that read every pod's spec decode nothing twice; at most about 32 MiB.
pub(crate) const DECODED_PODS: usize = 1024;

/// How long a decoded pod that no pass reads stays decoded: the passes of a cluster
/// being worked on come seconds apart and keep theirs; a cluster at rest is passed every
/// 10 minutes and its steady passes read no pod whole, so the pods decoded while it was
/// created or rolled need not stay (up to 32 MiB held at rest otherwise; issue 37's
/// steady state, docs/operations.md "Sizing").
pub(crate) const IDLE_DECODED: Duration = Duration::from_secs(300);

/// How often [`DecodedPods::drop_idle`] looks for idle pods (it is called every pass).
const TRIM_EVERY: Duration = Duration::from_secs(60);

/// A decoded pod and the compact pod it came from.
#[derive(Debug)]
struct Decoded {
    /// Not kept alive: an entry whose source is gone (the pod changed or left) is
    /// stale. While the entry holds it, the allocation is not reused, so the pointer
    /// names this very object.
    source: Weak<CompactPod>,
    pod: Arc<Pod>,
    used: u64,
    /// When a pass last read it.
    read_at: Instant,
}

#[derive(Debug, Default)]
struct Hot {
    /// By namespace, then name.
    entries: HashMap<String, HashMap<String, Decoded>>,
    len: usize,
    tick: u64,
    /// When idle pods were last dropped.
    trimmed_at: Option<Instant>,
}

impl Hot {
    /// Drops the entries no pass read since `idle_before`, and those whose pod changed
    /// or left since (their source is gone: nothing reads them again).
    fn drop_idle(&mut self, idle_before: Instant) {
        let mut dropped = 0;
        self.entries.retain(|_, names| {
            names.retain(|_, decoded| {
                let keep = decoded.read_at >= idle_before && decoded.source.strong_count() > 0;
                dropped += usize::from(!keep);
                keep
            });
            !names.is_empty()
        });
        self.len -= dropped;
    }

    /// Keeps the `keep` most recently used entries: drops exactly the oldest beyond
    /// them (entries read in the same tick are told apart arbitrarily).
    fn evict(&mut self, keep: usize) {
        let Some(drop) = self.len.checked_sub(keep).filter(|n| *n > 0) else {
            return;
        };
        let mut by_use: Vec<(u64, &str, &str)> = self
            .entries
            .iter()
            .flat_map(|(namespace, names)| {
                names
                    .iter()
                    .map(move |(name, d)| (d.used, namespace.as_str(), name.as_str()))
            })
            .collect();
        if drop < by_use.len() {
            by_use.select_nth_unstable_by_key(drop, |(used, _, _)| *used);
        }
        let oldest: Vec<(String, String)> = by_use
            .iter()
            .take(drop)
            .map(|(_, namespace, name)| ((*namespace).to_owned(), (*name).to_owned()))
            .collect();
        for (namespace, name) in oldest {
            if let Some(names) = self.entries.get_mut(&namespace) {
                if names.remove(&name).is_some() {
                    self.len -= 1;
                }
                if names.is_empty() {
                    self.entries.remove(&namespace);
                }
            }
        }
    }
}

/// See the module documentation.
#[derive(Debug)]
pub struct DecodedPods {
    capacity: usize,
    hot: Mutex<Hot>,
    /// How many pods were asked for (decoded or found decoded).
    reads: AtomicU64,
}

impl Default for DecodedPods {
    fn default() -> Self {
        Self::new(DECODED_PODS)
    }
}

fn key(pod: &CompactPod) -> (&str, &str) {
    let meta = pod.meta();
    (
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    )
}

impl DecodedPods {
    /// Keeping at most `capacity` pods decoded (0: every read decodes).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            hot: Mutex::default(),
            reads: AtomicU64::new(0),
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

    /// How many pods were read whole so far (decoded, or found decoded): a pass with
    /// nothing to change reads none.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// The pod `source` holds, decoded (shared, not copied, when it is kept decoded).
    pub fn decode_one(&self, source: &Arc<CompactPod>) -> Result<Arc<Pod>, DecodeError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let (namespace, name) = key(source);
        {
            let mut hot = self.lock();
            hot.tick += 1;
            let tick = hot.tick;
            let found = hot
                .entries
                .get_mut(namespace)
                .and_then(|names| names.get_mut(name))
                .filter(|d| std::ptr::eq(d.source.as_ptr(), Arc::as_ptr(source)));
            if let Some(decoded) = found {
                decoded.used = tick;
                decoded.read_at = Instant::now();
                return Ok(decoded.pod.clone());
            }
        }
        // Decoded without the lock: other passes read their own pods meanwhile.
        let pod = Arc::new(source.decode()?);
        if self.capacity > 0 {
            let mut hot = self.lock();
            let tick = hot.tick;
            let entry = Decoded {
                source: Arc::downgrade(source),
                pod: pod.clone(),
                used: tick,
                read_at: Instant::now(),
            };
            let names = hot.entries.entry(namespace.to_owned()).or_default();
            if names.insert(name.to_owned(), entry).is_none() {
                hot.len += 1;
            }
            if hot.len > self.capacity {
                // Down to seven eighths, so that eviction (a selection) is not paid
                // per pod.
                hot.evict(self.capacity - self.capacity / 8);
            }
        }
        Ok(pod)
    }

    /// Drops the pods no pass has read for [`IDLE_DECODED`] before `now` (looked for at
    /// most every minute), and those whose pod changed or left since.
    pub(crate) fn drop_idle(&self, now: Instant) {
        let mut hot = self.lock();
        if hot
            .trimmed_at
            .is_some_and(|at| now.saturating_duration_since(at) < TRIM_EVERY)
        {
            return;
        }
        hot.trimmed_at = Some(now);
        if let Some(idle_before) = now.checked_sub(IDLE_DECODED) {
            hot.drop_idle(idle_before);
        }
    }

    /// The pods `compact` holds, decoded ([`DecodedPods::decode_one`] each).
    pub fn decode(&self, compact: &[Arc<CompactPod>]) -> Result<Vec<Arc<Pod>>, DecodeError> {
        compact.iter().map(|pod| self.decode_one(pod)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(used: u64) -> Decoded {
        Decoded {
            source: Weak::new(),
            pod: Arc::default(),
            used,
            read_at: Instant::now(),
        }
    }

    #[test]
    fn eviction_drops_only_the_oldest_beyond_the_kept() {
        let mut hot = Hot::default();
        // One pass read 10 pods (tick 1), the next 10 more (tick 2).
        for (tick, namespace) in [(1, "a"), (2, "b")] {
            let names = hot.entries.entry(namespace.to_owned()).or_default();
            for n in 0..10 {
                names.insert(format!("pod-{n}"), decoded(tick));
            }
        }
        hot.len = 20;
        // Keeping 15: the 5 dropped are of the older pass, the newer pass keeps all.
        hot.evict(15);
        assert_eq!(hot.len, 15);
        assert_eq!(hot.entries.get("b").map(HashMap::len), Some(10));
        assert_eq!(hot.entries.get("a").map(HashMap::len), Some(5));
        // Keeping 4 of one pass's 10 (all read in the same tick): 4 stay, not none.
        hot.evict(4);
        assert_eq!(hot.len, 4);
        assert_eq!(hot.entries.values().map(HashMap::len).sum::<usize>(), 4);
        assert!(hot.entries.contains_key("b") && !hot.entries.contains_key("a"));
        hot.evict(4);
        assert_eq!(hot.len, 4, "nothing beyond the kept: nothing dropped");
    }

    /// Pods a pass read recently stay decoded; those no pass read for
    /// [`IDLE_DECODED`], or whose pod changed since, are dropped.
    #[test]
    fn pods_no_pass_reads_are_dropped_after_the_idle_time() {
        let cache = DecodedPods::new(16);
        let pod = |name: &str| -> Arc<CompactPod> {
            let mut pod = Pod::default();
            pod.metadata.name = Some(name.to_owned());
            pod.metadata.namespace = Some("db".to_owned());
            Arc::new(CompactPod::new(pod))
        };
        let (kept, idle, changed) = (pod("kept"), pod("idle"), pod("changed"));
        for source in [&kept, &idle, &changed] {
            cache.decode_one(source).unwrap();
        }
        drop(changed);
        assert_eq!(cache.len(), 3);
        // A moment ahead of now, so that it can be counted back from on any machine.
        let start = Instant::now() + 2 * IDLE_DECODED;
        let read_at = |name: &str, at: Instant| {
            let mut hot = cache.lock();
            let entry = hot.entries.get_mut("db").unwrap().get_mut(name).unwrap();
            entry.read_at = at;
        };
        read_at("kept", start);
        read_at("idle", start - IDLE_DECODED - Duration::from_secs(1));
        cache.drop_idle(start);
        assert_eq!(cache.len(), 1, "the idle and the changed pod are dropped");
        assert!(cache.lock().entries["db"].contains_key("kept"));
        // A second trim within the minute looks at nothing.
        read_at("kept", start - IDLE_DECODED - Duration::from_secs(1));
        cache.drop_idle(start + Duration::from_secs(30));
        assert_eq!(cache.len(), 1);
        cache.drop_idle(start + TRIM_EVERY);
        assert!(cache.is_empty());
        // A dropped pod is decoded again when a pass asks for it.
        assert_eq!(
            cache.decode_one(&kept).unwrap().metadata.name.as_deref(),
            Some("kept")
        );
        assert_eq!(cache.len(), 1);
    }
}
