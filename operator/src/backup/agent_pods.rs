//! Backup agent pods stuck in a terminal phase (`Failed`, `Evicted`, `Succeeded`): part of
//! UpdateBackupAgents. Such a pod never runs again; its Deployment's ReplicaSet already
//! counts only active pods, so deleting it takes no agent out of service, and it no longer
//! lingers (until the cluster's terminated-pod garbage collection) in `kubectl get pods`,
//! in alerts on failed pods and in anything counting the backup's pods. The Go operator
//! does the same since FoundationDB/fdb-kubernetes-operator PR 2508
//! (`controllers/update_backup_agents.go`): a terminal pod at least
//! `--minimum-age-for-terminal-pod-deletion` old (30 s) is deleted, a younger one is
//! looked at again once it is old enough. Go looks only while the Deployment has fewer
//! ready replicas than replicas; here every pass looks, so a pod the ReplicaSet replaced
//! before the operator saw it goes too. [`decide`] is pure.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;

use crate::controller::objects::{is_terminal, pod_phase};

/// How old a terminal agent pod must be before it is deleted (the Go operator's default
/// `--minimum-age-for-terminal-pod-deletion`), so its final status can still be read.
pub(crate) const MINIMUM_AGE_SECONDS: i64 = 30;

/// A terminal agent pod to delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TerminalAgent {
    /// The pod's name.
    pub name: String,
    /// Its phase, with the reason when there is one (`Failed (Evicted)`).
    pub state: String,
}

/// What UpdateBackupAgents does with the terminal agent pods this pass.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct TerminalAgents {
    /// Pods to delete now.
    pub delete: Vec<TerminalAgent>,
    /// Seconds until the youngest-but-due terminal pod is old enough, if one waits.
    pub next_in: Option<i64>,
}

/// Decides for the agent `pods` at `now` (unix seconds).
pub(crate) fn decide(pods: &[Pod], now: i64) -> TerminalAgents {
    let mut decision = TerminalAgents::default();
    for pod in pods.iter().filter(|pod| is_terminal(*pod)) {
        let created = pod
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.as_second());
        let left = created.map_or(0, |created| {
            created
                .saturating_add(MINIMUM_AGE_SECONDS)
                .saturating_sub(now)
        });
        if left > 0 {
            decision.next_in = Some(decision.next_in.map_or(left, |next| next.min(left)));
            continue;
        }
        let reason = pod.status.as_ref().and_then(|s| s.reason.as_deref());
        let phase = pod_phase(pod);
        decision.delete.push(TerminalAgent {
            name: pod.name_any(),
            state: reason.map_or_else(|| phase.to_owned(), |r| format!("{phase} ({r})")),
        });
    }
    decision
}

/// The label selector (`key=value,...`) of the Deployment's `matchLabels`, or `None`
/// when it has none or a key or value is not a label's (so nothing else is spliced into
/// the query).
pub(crate) fn selector_of(selector: &LabelSelector) -> Option<String> {
    let labels = selector.match_labels.as_ref().filter(|l| !l.is_empty())?;
    let plain = |text: &str| {
        text.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
    };
    labels
        .iter()
        .map(|(key, value)| {
            (!key.is_empty() && plain(key) && plain(value)).then(|| format!("{key}={value}"))
        })
        .collect::<Option<Vec<_>>>()
        .map(|parts| parts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, phase: &str, reason: Option<&str>, created: i64) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": name,
                "creationTimestamp": jiff::Timestamp::from_second(created).unwrap().to_string()
            },
            "status": {"phase": phase, "reason": reason}
        }))
        .unwrap()
    }

    #[test]
    fn terminal_pods_old_enough_are_deleted_the_others_wait() {
        let pods = [
            pod("a-evicted", "Failed", Some("Evicted"), 1_000),
            pod("a-done", "Succeeded", None, 1_000),
            pod("a-running", "Running", None, 1_000),
            pod("a-pending", "Pending", None, 1_000),
            pod("a-young", "Failed", None, 1_090),
        ];
        let decision = decide(&pods, 1_100);
        assert_eq!(
            decision.delete,
            [
                TerminalAgent {
                    name: "a-evicted".into(),
                    state: "Failed (Evicted)".into()
                },
                TerminalAgent {
                    name: "a-done".into(),
                    state: "Succeeded".into()
                },
            ]
        );
        assert_eq!(decision.next_in, Some(20));
        // Nothing terminal: nothing to do, nothing to wait for.
        assert_eq!(decide(&pods[2..4], 1_100), TerminalAgents::default());
    }

    #[test]
    fn a_pod_already_being_deleted_is_left_alone() {
        let mut deleting = pod("a", "Failed", Some("Evicted"), 0);
        deleting.metadata.deletion_timestamp = deleting.metadata.creation_timestamp.clone();
        assert!(decide(&[deleting], 1_000).delete.is_empty());
    }

    #[test]
    fn only_label_shaped_selectors_are_built() {
        let selector = |pairs: &[(&str, &str)]| LabelSelector {
            match_labels: Some(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..LabelSelector::default()
        };
        assert_eq!(
            selector_of(&selector(&[(
                "foundationdb.org/deployment-name",
                "b-backup-agents"
            )]))
            .as_deref(),
            Some("foundationdb.org/deployment-name=b-backup-agents")
        );
        assert_eq!(selector_of(&selector(&[("a", "x,b=y")])), None);
        assert_eq!(selector_of(&selector(&[])), None);
        assert_eq!(selector_of(&LabelSelector::default()), None);
    }
}
