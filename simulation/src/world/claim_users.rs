//! Which pods use which claims, read once from a list of the pods: binding and the
//! protection finalizer ask it for every claim, and asking the whole list for each
//! claim was quadratic (a served world of 30 clusters spent a twentieth of its time
//! there while claims waited for their first consumer). The list is read only when a
//! claim asks: in the steady state none does.

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

/// Whether a pod has ended (`Failed` or `Succeeded`): it no longer holds its claims.
pub(super) fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Failed" | "Succeeded")
    )
}

/// The claims `pod` uses, by name.
pub(super) fn claim_names(pod: &Pod) -> impl Iterator<Item = &str> {
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .map(|c| c.claim_name.as_str())
}

/// The users of each claim (by namespace and claim name), from one list of the pods,
/// read at the first question: a round whose claims are all bound and none deleted
/// (the steady state) asks none, and reads nothing.
#[derive(Debug)]
pub(super) struct ClaimUsers<'a> {
    pods: &'a [Arc<Pod>],
    index: OnceCell<Index<'a>>,
}

/// What [`ClaimUsers`] reads from the pods.
#[derive(Debug, Default)]
struct Index<'a> {
    /// The first pod in the list's order, not being deleted, that names the claim.
    first_consumer: HashMap<(&'a str, &'a str), &'a Pod>,
    /// The claims a pod that has not ended names.
    in_use: HashSet<(&'a str, &'a str)>,
}

impl<'a> ClaimUsers<'a> {
    /// The users of the claims `pods` name (read once, when first asked).
    pub(super) fn of(pods: &'a [Arc<Pod>]) -> Self {
        Self {
            pods,
            index: OnceCell::new(),
        }
    }

    fn index(&self) -> &Index<'a> {
        self.index.get_or_init(|| Index::of(self.pods))
    }

    /// The first pod (in the list's order) not being deleted that uses the claim.
    pub(super) fn first_consumer(&self, namespace: &str, claim: &str) -> Option<&'a Pod> {
        self.index()
            .first_consumer
            .get(&(namespace, claim))
            .copied()
    }

    /// Whether a pod that has not ended uses the claim.
    pub(super) fn in_use(&self, namespace: &str, claim: &str) -> bool {
        self.index().in_use.contains(&(namespace, claim))
    }
}

impl<'a> Index<'a> {
    fn of(pods: &'a [Arc<Pod>]) -> Self {
        let mut users = Self::default();
        for pod in pods {
            let Some(namespace) = pod.metadata.namespace.as_deref() else {
                continue;
            };
            let deleting = pod.metadata.deletion_timestamp.is_some();
            let ended = is_terminal(pod);
            for claim in claim_names(pod) {
                if !deleting {
                    users
                        .first_consumer
                        .entry((namespace, claim))
                        .or_insert(pod);
                }
                if !ended {
                    users.in_use.insert((namespace, claim));
                }
            }
        }
        users
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, claim: &str, deleting: bool, phase: &str) -> Arc<Pod> {
        let mut value = json!({
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"containers": [], "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": claim}}
            ]},
            "status": {"phase": phase},
        });
        if deleting {
            value["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        Arc::new(serde_json::from_value(value).unwrap())
    }

    /// The index answers as the scans it replaced: the first pod in order not being
    /// deleted, and any pod not ended.
    #[test]
    fn answers_as_a_scan_of_the_pods_would() {
        let pods = vec![
            pod("a", "c1", true, "Running"),
            pod("b", "c1", false, "Running"),
            pod("c", "c1", false, "Running"),
            pod("d", "c2", false, "Failed"),
            pod("e", "c3", true, "Running"),
            pod("f", "c4", false, "Succeeded"),
        ];
        let users = ClaimUsers::of(&pods);
        assert!(
            users.index.get().is_none(),
            "nothing read before a question"
        );
        for (namespace, claim) in [
            ("ns", "c1"),
            ("ns", "c2"),
            ("ns", "c3"),
            ("ns", "c4"),
            ("ns", "c5"),
            ("x", "c1"),
        ] {
            let scanned = pods.iter().find(|p| {
                p.metadata.namespace.as_deref() == Some(namespace)
                    && p.metadata.deletion_timestamp.is_none()
                    && claim_names(p).any(|c| c == claim)
            });
            assert_eq!(
                users
                    .first_consumer(namespace, claim)
                    .map(|p| &p.metadata.name),
                scanned.map(|p| &p.metadata.name),
                "{namespace}/{claim}"
            );
            let used = pods.iter().filter(|p| !is_terminal(p)).any(|p| {
                p.metadata.namespace.as_deref() == Some(namespace)
                    && claim_names(p).any(|c| c == claim)
            });
            assert_eq!(users.in_use(namespace, claim), used, "{namespace}/{claim}");
        }
        assert_eq!(
            users
                .first_consumer("ns", "c1")
                .unwrap()
                .metadata
                .name
                .as_deref(),
            Some("b")
        );
        // Being deleted, still running: in use, but no consumer to bind to.
        assert!(users.in_use("ns", "c3"));
        assert!(users.first_consumer("ns", "c3").is_none());
        // Ended pods hold nothing, but may still be a claim's first consumer.
        assert!(!users.in_use("ns", "c2"));
        assert!(!users.in_use("ns", "c4"));
        assert!(users.first_consumer("ns", "c4").is_some());
    }
}
