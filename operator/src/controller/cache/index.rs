//! An index of a watch cache's objects by namespace and the values of the cache's
//! selector keys (by default the cluster name label), so that a pass finds its
//! cluster's objects without scanning those of every other cluster the operator
//! watches: with many clusters a scan per pass would grow with the whole fleet.
//!
//! Fed by the same watch events as the store, after the store applied them (see
//! `cache/mod.rs`); a lookup then reads the objects from the store by name, so an
//! object the index names but the store no longer has is simply skipped.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kube::Resource;
use kube::runtime::watcher;

/// Namespace and the values of the selector keys, in key order.
type Bucket = (String, Vec<String>);

/// The names of one bucket, shared with the lookups that read them (a lookup takes the
/// set without copying its names; a change copies it only while a lookup holds it).
type Names = Arc<BTreeSet<String>>;

/// What the index holds: names by bucket, and each object's bucket.
#[derive(Debug, Default)]
struct Entries {
    names: HashMap<Bucket, Names>,
    bucket_of: HashMap<(String, String), Bucket>,
}

impl Entries {
    fn remove(&mut self, namespace: &str, name: &str) {
        let key = (namespace.to_owned(), name.to_owned());
        if let Some(bucket) = self.bucket_of.remove(&key)
            && let Some(names) = self.names.get_mut(&bucket)
        {
            Arc::make_mut(names).remove(name);
            if names.is_empty() {
                self.names.remove(&bucket);
            }
        }
    }

    fn insert(&mut self, namespace: &str, name: &str, bucket: Bucket) {
        self.remove(namespace, name);
        Arc::make_mut(self.names.entry(bucket.clone()).or_default()).insert(name.to_owned());
        self.bucket_of
            .insert((namespace.to_owned(), name.to_owned()), bucket);
    }
}

#[derive(Debug, Default)]
struct State {
    entries: Entries,
    /// Filled between `Init` and `InitDone` (a relist), then swapped in: objects gone
    /// while the watch was down leave the index as they leave the store.
    relisting: Option<Entries>,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct LabelIndex {
    keys: Vec<String>,
    state: Mutex<State>,
}

impl LabelIndex {
    /// An index by these label keys; with none, it indexes nothing and every lookup
    /// says so (`None`).
    pub(crate) fn new(keys: &[String]) -> Self {
        Self {
            keys: keys.to_vec(),
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The bucket of an object with these labels (`None` when a key is missing).
    fn bucket(&self, namespace: &str, labels: &BTreeMap<String, String>) -> Option<Bucket> {
        let values = self
            .keys
            .iter()
            .map(|key| labels.get(key).cloned())
            .collect::<Option<Vec<String>>>()?;
        Some((namespace.to_owned(), values))
    }

    /// Applies one watch event.
    pub(crate) fn observe<K: Resource>(&self, event: &watcher::Event<K>) {
        if self.keys.is_empty() {
            return;
        }
        let place = |object: &K| {
            let meta = object.meta();
            let namespace = meta.namespace.clone().unwrap_or_default();
            let name = meta.name.clone().unwrap_or_default();
            let bucket = meta
                .labels
                .as_ref()
                .and_then(|labels| self.bucket(&namespace, labels));
            (namespace, name, bucket)
        };
        let mut state = self.lock();
        match event {
            watcher::Event::Apply(object) => {
                let (namespace, name, bucket) = place(object);
                match bucket {
                    Some(bucket) => state.entries.insert(&namespace, &name, bucket),
                    None => state.entries.remove(&namespace, &name),
                }
            }
            watcher::Event::Delete(object) => {
                let (namespace, name, _) = place(object);
                state.entries.remove(&namespace, &name);
            }
            watcher::Event::Init => state.relisting = Some(Entries::default()),
            watcher::Event::InitApply(object) => {
                let (namespace, name, bucket) = place(object);
                if let (Some(relisting), Some(bucket)) = (state.relisting.as_mut(), bucket) {
                    relisting.insert(&namespace, &name, bucket);
                }
            }
            watcher::Event::InitDone => {
                if let Some(relisted) = state.relisting.take() {
                    state.entries = relisted;
                }
            }
        }
    }

    /// The names of the objects in `namespace` whose labels include `labels`' values of
    /// the index's keys; `None` when the index cannot answer (no keys, or `labels` lacks
    /// one): the caller then scans.
    pub(crate) fn names(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Option<Names> {
        if self.keys.is_empty() {
            return None;
        }
        let bucket = self.bucket(namespace, labels)?;
        // Shared, not copied: a pass reads its cluster's names every time (issue 37).
        Some(
            self.lock()
                .entries
                .names
                .get(&bucket)
                .map(Arc::clone)
                .unwrap_or_default(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::ObjectMeta;

    const KEY: &str = "foundationdb.org/fdb-cluster-name";

    fn pod(namespace: &str, name: &str, cluster: Option<&str>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: Some(namespace.into()),
                name: Some(name.into()),
                labels: cluster.map(|c| BTreeMap::from([(KEY.to_owned(), c.to_owned())])),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    fn of(cluster: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(KEY.to_owned(), cluster.to_owned())])
    }

    fn names(index: &LabelIndex, namespace: &str, cluster: &str) -> Vec<String> {
        index
            .names(namespace, &of(cluster))
            .map(|names| names.iter().cloned().collect())
            .unwrap_or_default()
    }

    #[test]
    fn objects_are_found_by_namespace_and_cluster_and_follow_their_labels() {
        let index = LabelIndex::new(&[KEY.to_owned()]);
        index.observe(&watcher::Event::Apply(pod("a", "a-1", Some("one"))));
        index.observe(&watcher::Event::Apply(pod("a", "a-2", Some("two"))));
        index.observe(&watcher::Event::Apply(pod("b", "b-1", Some("one"))));
        assert_eq!(names(&index, "a", "one"), ["a-1"]);
        assert_eq!(names(&index, "b", "one"), ["b-1"]);
        // Relabelled, then unlabelled, then deleted.
        index.observe(&watcher::Event::Apply(pod("a", "a-2", Some("one"))));
        assert_eq!(names(&index, "a", "one"), ["a-1", "a-2"]);
        assert!(names(&index, "a", "two").is_empty());
        index.observe(&watcher::Event::Apply(pod("a", "a-1", None)));
        assert_eq!(names(&index, "a", "one"), ["a-2"]);
        index.observe(&watcher::Event::Delete(pod("a", "a-2", Some("one"))));
        assert!(names(&index, "a", "one").is_empty());
        // Labels without the key: the index cannot answer.
        assert_eq!(index.names("a", &BTreeMap::new()), None);
        assert_eq!(LabelIndex::new(&[]).names("a", &of("one")), None);
    }

    #[test]
    fn a_relist_replaces_what_was_indexed() {
        let index = LabelIndex::new(&[KEY.to_owned()]);
        index.observe(&watcher::Event::Apply(pod("a", "gone", Some("one"))));
        index.observe(&watcher::Event::<Pod>::Init);
        index.observe(&watcher::Event::InitApply(pod("a", "kept", Some("one"))));
        // Until the relist is done, lookups see the old entries (as the store does).
        assert_eq!(names(&index, "a", "one"), ["gone"]);
        index.observe(&watcher::Event::<Pod>::InitDone);
        assert_eq!(names(&index, "a", "one"), ["kept"]);
    }
}
