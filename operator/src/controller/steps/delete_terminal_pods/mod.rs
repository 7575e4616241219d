//! DeleteTerminalPods: deletes the cluster's pods that ended in a terminal phase
//! (`Failed`, which includes `Evicted`, or `Succeeded`) so that AddPods recreates them.
//! A pod in such a phase never runs again on its own, and its processes are already
//! down, so deleting it takes nothing more out of service; its PVC stays.
//!
//! A group whose pods keep failing is not recreated in a tight loop (every recreation
//! schedules, pulls and starts a pod that fails again, and floods the API and the
//! events): the first terminal pod is deleted at once, but a pod created while its group
//! was already failing (MissingProcesses or PodFailing, whose first-seen timestamps
//! survive the recreations) is deleted only once it has existed as long as the group
//! had been failing when it was created, at least [`MIN_BACKOFF_SECONDS`] and at most
//! [`MAX_BACKOFF_SECONDS`]: 10 s, 20 s, 40 s, ... 5 min, like the kubelet's own
//! crash-loop back-off. Everything it needs is in the pod and the status, so the back-off
//! survives operator restarts. A group that keeps failing is left to ReplaceFailedPods
//! once `failureDetectionTimeSeconds` have passed.

use fdb_shared::api::cluster::ProcessGroupConditionType;
use kube::ResourceExt;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::objects::{group_of, is_terminal, pod_phase};
use crate::controller::pass::plan::{
    Action, Barrier, PassFacts, Plan, Planned, Verdict, Wait, WaitOn,
};
use crate::controller::pass::requeue::UNRECONCILED_INTERVAL;
use crate::controller::snapshot::{ClusterSnapshot, GroupView};

/// The shortest wait before a pod of a group that keeps failing is recreated again.
pub(crate) const MIN_BACKOFF_SECONDS: i64 = 10;

/// The longest wait before a pod of a group that keeps failing is recreated again.
pub(crate) const MAX_BACKOFF_SECONDS: i64 = 300;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct DeleteTerminalPods;

/// A terminal pod to delete now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TerminalPod {
    /// The pod's name.
    pub name: String,
    /// Its phase.
    pub phase: String,
    /// Its process group, when it has one.
    pub group: Option<String>,
}

/// A terminal pod whose deletion backs off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BackingOff {
    /// The pod's name.
    pub name: String,
    /// Its process group.
    pub group: String,
    /// Seconds since the group started failing.
    pub failing_for: i64,
    /// Seconds until the pod is deleted.
    pub due_in: i64,
}

/// What DeleteTerminalPods does this pass.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct TerminalDecision {
    /// Pods to delete now.
    pub delete: Vec<TerminalPod>,
    /// Pods whose deletion waits.
    pub backing_off: Vec<BackingOff>,
}

/// When the group started failing: the earliest first-seen time of MissingProcesses and
/// PodFailing (MissingProcesses stays through the recreations of its pod).
fn failing_since(group: &GroupView<'_>) -> Option<i64> {
    [
        ProcessGroupConditionType::MissingProcesses,
        ProcessGroupConditionType::PodFailing,
    ]
    .iter()
    .filter_map(|condition| group.status.condition_since(condition))
    .min()
}

/// How long a terminal pod created at `created` waits before it is deleted, for a
/// group failing since `since`: nothing when the group failed after the pod was created
/// (the pod ran, then failed), else as long as the group had already been failing.
pub(crate) fn backoff_seconds(created: Option<i64>, since: Option<i64>) -> i64 {
    match (created, since) {
        (Some(created), Some(since)) if since <= created => created
            .saturating_sub(since)
            .clamp(MIN_BACKOFF_SECONDS, MAX_BACKOFF_SECONDS),
        _ => 0,
    }
}

/// Decides from the snapshot.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> TerminalDecision {
    let now = snapshot.now_unix();
    let mut decision = TerminalDecision::default();
    for pod in snapshot.pod_heads().filter(|pod| is_terminal(*pod)) {
        let name = pod.name_any();
        let group_id = group_of(snapshot.cluster(), pod);
        let group = group_id.as_deref().and_then(|id| snapshot.group(id));
        let since = group.as_ref().and_then(failing_since);
        let created = pod
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.as_second());
        let due = created.map_or(now, |created| {
            created.saturating_add(backoff_seconds(Some(created), since))
        });
        match (group_id, since) {
            (Some(group), Some(since)) if due > now => {
                decision.backing_off.push(BackingOff {
                    name,
                    group,
                    failing_for: now.saturating_sub(since),
                    due_in: due - now,
                });
            }
            (group, _) => decision.delete.push(TerminalPod {
                name,
                phase: pod_phase(pod).to_owned(),
                group,
            }),
        }
    }
    decision
}

impl Subreconciler for DeleteTerminalPods {
    fn name(&self) -> &'static str {
        "DeleteTerminalPods"
    }

    fn barrier(&self) -> Barrier {
        Barrier::GoesOn
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        let decision = decide(snapshot);
        let mut actions = Vec::new();
        for pod in &decision.delete {
            let (name, phase) = (&pod.name, &pod.phase);
            tracing::info!(step = self.name(), pod = %name, %phase, "deleting a pod in a terminal phase");
            // Its processes are gone already: deleting it takes nothing down (no
            // disruption, no recovery), and needs no lock, as before plans.
            actions.push(Planned::plain(Action::DeletePod(name.clone())));
            actions.push(Planned::plain(Action::Event {
                reason: EventReason::TerminalPodDeleted,
                action: self.name().to_owned(),
                note: format!("pod {name} was {phase}; deleted so it is recreated"),
            }));
        }
        let wait = decision
            .backing_off
            .iter()
            .min_by_key(|b| b.due_in)
            .map(|first| {
                let waiting: Vec<String> = decision
                    .backing_off
                    .iter()
                    .map(|b| {
                        format!(
                            "pod {} of {} (failing for {}s) is recreated in {}s",
                            b.name, b.group, b.failing_for, b.due_in
                        )
                    })
                    .collect();
                tracing::info!(step = self.name(), waiting = ?waiting, "terminal pods back off");
                // Nothing else waits for these pods. No later than an unreconciled cluster
                // is looked at again anyway: the database may recover.
                let delay = std::time::Duration::from_secs(first.due_in.unsigned_abs().max(1))
                    .min(UNRECONCILED_INTERVAL);
                Wait::new(
                    WaitOn::After(delay),
                    format!("process groups keep failing: {}", waiting.join("; ")),
                )
            });
        Ok(match (actions.is_empty(), wait) {
            (true, None) => Verdict::Continue,
            (true, Some(wait)) => Verdict::Wait(wait),
            (false, wait) => {
                let plan = Plan::new(actions, "");
                Verdict::Act(match wait {
                    Some(wait) => plan.then(wait),
                    None => plan,
                })
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use fdb_shared::api::cluster::ProcessGroupCondition;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::controller::fixtures::{Fixture, group, pod};
    use k8s_openapi::api::core::v1::Pod;

    fn at(seconds: i64) -> Time {
        Time(jiff::Timestamp::from_second(seconds).unwrap())
    }

    fn failed(name: &str, id: &str, created: i64) -> Pod {
        let mut failed = pod(name, id, "node-1", "10.0.0.1");
        failed.status.as_mut().unwrap().phase = Some("Failed".into());
        failed.metadata.creation_timestamp = Some(at(created));
        failed
    }

    fn failing_since(id: &str, since: i64) -> fdb_shared::api::cluster::ProcessGroupStatus {
        let mut g = group(id);
        g.process_group_conditions = vec![
            ProcessGroupCondition {
                condition_type: ProcessGroupConditionType::MissingProcesses,
                timestamp: since,
            },
            ProcessGroupCondition {
                condition_type: ProcessGroupConditionType::PodFailing,
                timestamp: since + 30,
            },
        ];
        g
    }

    #[test]
    fn failed_and_evicted_pods_are_deleted_running_ones_are_not() {
        let mut failed = pod("sample-log-1", "log-1", "node-1", "10.0.0.1");
        failed.status.as_mut().unwrap().phase = Some("Failed".into());
        let mut evicted = pod("sample-log-2", "log-2", "node-2", "10.0.0.2");
        evicted.status.as_mut().unwrap().reason = Some("Evicted".into());
        let mut gone = failed.clone();
        gone.metadata.name = Some("sample-log-4".into());
        gone.metadata.deletion_timestamp = Some(at(0));
        let snapshot = Fixture::new("version: 7.1.57")
            .groups(["log-1", "log-2", "log-3", "log-4"].map(group))
            .pods([
                failed,
                evicted,
                pod("sample-log-3", "log-3", "node-3", "10.0.0.3"),
                gone,
            ])
            .build();
        let decision = decide(&snapshot);
        let deleted: Vec<(&str, &str)> = decision
            .delete
            .iter()
            .map(|p| (p.name.as_str(), p.phase.as_str()))
            .collect();
        assert_eq!(
            deleted,
            [("sample-log-1", "Failed"), ("sample-log-2", "Running")]
        );
        assert!(decision.backing_off.is_empty());
    }

    #[test]
    fn a_pod_that_ran_before_its_group_failed_is_deleted_at_once() {
        // Created at 1000, the group failing since 9000: the pod ran, then failed.
        let snapshot = Fixture::new("version: 7.1.57")
            .groups([failing_since("log-1", 9_000)])
            .pods([failed("sample-log-1", "log-1", 1_000)])
            .build();
        let decision = decide(&snapshot);
        assert_eq!(decision.delete.len(), 1);
        assert_eq!(decision.delete[0].group.as_deref(), Some("log-1"));
    }

    #[test]
    fn a_pod_recreated_while_its_group_fails_backs_off_as_long_as_the_failure_lasted() {
        // The group has failed since 9950; its pod was recreated at 9990, 40 s into the
        // failure, so it waits 40 s: until 10030, 30 s after now (10000).
        let snapshot = Fixture::new("version: 7.1.57")
            .groups([failing_since("log-1", 9_950)])
            .pods([failed("sample-log-1", "log-1", 9_990)])
            .build();
        assert_eq!(
            decide(&snapshot).backing_off,
            [BackingOff {
                name: "sample-log-1".into(),
                group: "log-1".into(),
                failing_for: 50,
                due_in: 30,
            }]
        );
        // Long past its back-off, it is deleted.
        let snapshot = Fixture::new("version: 7.1.57")
            .groups([failing_since("log-1", 9_000)])
            .pods([failed("sample-log-1", "log-1", 9_040)])
            .build();
        assert_eq!(decide(&snapshot).delete.len(), 1);
    }

    #[test]
    fn the_back_off_grows_from_ten_seconds_to_five_minutes() {
        assert_eq!(backoff_seconds(Some(100), Some(200)), 0, "ran, then failed");
        assert_eq!(backoff_seconds(Some(100), None), 0);
        assert_eq!(backoff_seconds(None, Some(100)), 0);
        assert_eq!(backoff_seconds(Some(100), Some(100)), MIN_BACKOFF_SECONDS);
        assert_eq!(backoff_seconds(Some(180), Some(100)), 80);
        assert_eq!(backoff_seconds(Some(5_000), Some(100)), MAX_BACKOFF_SECONDS);
        // Recreating each pod as soon as its back-off ends doubles the wait each time.
        let mut created = 0;
        let mut waits = Vec::new();
        for _ in 0..7 {
            let wait = backoff_seconds(Some(created), Some(0));
            waits.push(wait);
            created += wait;
        }
        assert_eq!(waits, [10, 10, 20, 40, 80, 160, 300]);
    }
}
