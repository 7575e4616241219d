//! What UpdatePodConfig remembers between passes about each pod's sidecar, so that a
//! wait for the kubelet costs a few requests instead of the whole protocol against every
//! pod at every poll:
//! - the pod's substitutions once asked (`GET /substitutions`; they come from the
//!   sidecar's environment and its image's version, kept while the image is the one
//!   that answered);
//! - per desired configuration hash, how often the pod answered that its files still
//!   differ after a copy, and whether its cluster file was seen to differ (a pod known
//!   to differ is copied at once instead of checked first).
//!
//! Keyed by cluster and pod UID (a recreated pod starts afresh). Lost on restart, which
//! costs only requests: the annotations in Kubernetes stay the record of what was
//! confirmed.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What is remembered about one pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodMemo {
    /// The desired configuration hash the counters below are about.
    pub hash: String,
    /// How many times the files still differed after a copy for `hash`.
    pub attempts: u32,
    /// The cluster file was seen to differ for `hash` (so the next try copies first).
    pub cluster_file_differs: bool,
    /// The sidecar's own substitutions, once asked.
    pub substitutions: Option<BTreeMap<String, String>>,
    /// The sidecar image that answered them: its version decides `BINARY_DIR`, and an
    /// upgrade changes the image in place (same pod UID), which makes them stale.
    pub substitutions_image: Option<String>,
}

impl PodMemo {
    /// Starts over for a new desired hash (the substitutions stay: same pod).
    fn for_hash(&mut self, hash: &str) {
        if self.hash != hash {
            self.hash = hash.to_owned();
            self.attempts = 0;
            self.cluster_file_differs = false;
        }
    }
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct PodConfigMemo {
    /// By `namespace/cluster`, then pod UID.
    clusters: Mutex<BTreeMap<String, BTreeMap<String, PodMemo>>>,
}

fn cluster_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

impl PodConfigMemo {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, BTreeMap<String, PodMemo>>> {
        // A memo is only an optimisation: a panic elsewhere must not poison it.
        self.clusters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What is remembered about pod `uid` for the desired `hash` (empty when nothing).
    pub fn get(&self, namespace: &str, name: &str, uid: &str, hash: &str) -> PodMemo {
        let mut memo = self
            .lock()
            .get(&cluster_key(namespace, name))
            .and_then(|pods| pods.get(uid))
            .cloned()
            .unwrap_or_default();
        memo.for_hash(hash);
        memo
    }

    /// Stores what a try taught about pod `uid`.
    pub fn put(&self, namespace: &str, name: &str, uid: &str, memo: PodMemo) {
        self.lock()
            .entry(cluster_key(namespace, name))
            .or_default()
            .insert(uid.to_owned(), memo);
    }

    /// Forgets the pods of the cluster that are not in `live` (UIDs).
    pub fn retain(&self, namespace: &str, name: &str, live: &std::collections::BTreeSet<&str>) {
        if let Some(pods) = self.lock().get_mut(&cluster_key(namespace, name)) {
            pods.retain(|uid, _| live.contains(uid.as_str()));
        }
    }

    /// Forgets a cluster (it was deleted).
    pub fn forget(&self, namespace: &str, name: &str) {
        self.lock().remove(&cluster_key(namespace, name));
    }

    /// How many pods are remembered, over all clusters.
    pub fn len(&self) -> usize {
        self.lock().values().map(BTreeMap::len).sum()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_hash_resets_the_counters_but_keeps_the_substitutions() {
        let memo = PodConfigMemo::default();
        let substitutions = BTreeMap::from([("FDB_PUBLIC_IP".to_owned(), "10.0.0.1".to_owned())]);
        memo.put(
            "ns",
            "c",
            "uid-1",
            PodMemo {
                hash: "h1".into(),
                attempts: 3,
                cluster_file_differs: true,
                substitutions: Some(substitutions.clone()),
                substitutions_image: Some("sidecar:7.1.57-1".into()),
            },
        );
        assert_eq!(memo.get("ns", "c", "uid-1", "h1").attempts, 3);
        let fresh = memo.get("ns", "c", "uid-1", "h2");
        assert_eq!(fresh.attempts, 0);
        assert!(!fresh.cluster_file_differs);
        assert_eq!(fresh.substitutions, Some(substitutions));
        assert_eq!(
            memo.get("ns", "other", "uid-1", "h1"),
            PodMemo {
                hash: "h1".into(),
                ..PodMemo::default()
            }
        );
        memo.retain("ns", "c", &std::collections::BTreeSet::new());
        assert!(memo.is_empty());
    }
}
