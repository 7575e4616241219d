//! `spec.buggify` on pods (docs/operator.md, "The steps"): the fault injection a user asks
//! for.
//!
//! - `crashLoop` (process group IDs, `*` for all): the main container's command becomes
//!   `crash-loop`, which does not exist, so the container fails at every start and
//!   Kubernetes keeps it in CrashLoopBackOff: the group's processes are down.
//! - `crashLoopContainers` (`containerName` and `targets`): the same for any container.
//! - `noSchedule`: the pod requires the node label `foundationdb.org/no-schedule-allowed:
//!   true`, which no node has, so it stays Pending.
//!
//! A pod whose buggify state differs from the spec's is deleted and recreated by
//! DeletePodsForBuggification (not by UpdatePods' rolling rules): a user turning a fault
//! on or off wants it now, on exactly those groups.

use std::collections::BTreeSet;

use fdb_shared::api::FoundationDBCluster;
use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec,
};

use super::containers::MAIN_CONTAINER;

/// The command of a crash-looping container (a binary no image has).
pub(crate) const CRASH_LOOP_COMMAND: &str = "crash-loop";

/// The node label a `noSchedule` pod requires (no node has it).
pub(crate) const NO_SCHEDULE_LABEL: &str = "foundationdb.org/no-schedule-allowed";

/// What buggify does to one pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuggifyState {
    /// Containers that crash-loop.
    pub crash_loop_containers: BTreeSet<String>,
    /// Whether the pod may not be scheduled.
    pub no_schedule: bool,
}

impl BuggifyState {
    /// Whether buggify does nothing to the pod.
    pub fn is_clear(&self) -> bool {
        self.crash_loop_containers.is_empty() && !self.no_schedule
    }
}

fn listed(ids: &[String], group: &str) -> bool {
    ids.iter().any(|id| id == group || id == "*")
}

/// What the spec asks buggify to do to the pod of `group`.
pub(crate) fn desired_state(cluster: &FoundationDBCluster, group: &str) -> BuggifyState {
    let buggify = &cluster.spec.buggify;
    let mut containers = BTreeSet::new();
    if listed(&buggify.crash_loop, group) {
        containers.insert(MAIN_CONTAINER.to_owned());
    }
    for target in &buggify.crash_loop_containers {
        if let Some(name) = &target.container_name
            && listed(&target.targets, group)
        {
            containers.insert(name.clone());
        }
    }
    BuggifyState {
        crash_loop_containers: containers,
        no_schedule: listed(&buggify.no_schedule, group),
    }
}

/// What buggify does to a live pod, read from its spec.
pub(crate) fn pod_state(pod: &Pod) -> BuggifyState {
    let Some(spec) = pod.spec.as_ref() else {
        return BuggifyState::default();
    };
    BuggifyState {
        crash_loop_containers: spec
            .containers
            .iter()
            .filter(|c| crash_loops(c.command.as_deref()))
            .map(|c| c.name.clone())
            .collect(),
        no_schedule: spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|n| {
                n.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .is_some_and(|selector| {
                selector.node_selector_terms.iter().any(|term| {
                    term.match_expressions
                        .iter()
                        .flatten()
                        .any(|e| e.key == NO_SCHEDULE_LABEL)
                })
            }),
    }
}

/// Whether a container with this command crash-loops.
pub fn crash_loops(command: Option<&[String]>) -> bool {
    command.is_some_and(|c| c.first().map(String::as_str) == Some(CRASH_LOOP_COMMAND))
}

/// Applies `state` to a pod spec being built.
pub(crate) fn apply(state: &BuggifyState, spec: &mut PodSpec) {
    for container in &mut spec.containers {
        if state.crash_loop_containers.contains(&container.name) {
            container.command = Some(vec![CRASH_LOOP_COMMAND.to_owned()]);
            container.args = None;
        }
    }
    if state.no_schedule {
        let affinity = spec.affinity.get_or_insert_with(Affinity::default);
        let node = affinity
            .node_affinity
            .get_or_insert_with(NodeAffinity::default);
        let required = node
            .required_during_scheduling_ignored_during_execution
            .get_or_insert_with(|| NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm::default()],
            });
        if required.node_selector_terms.is_empty() {
            required
                .node_selector_terms
                .push(NodeSelectorTerm::default());
        }
        // Terms are ORed: the requirement goes into every one.
        for term in &mut required.node_selector_terms {
            term.match_expressions
                .get_or_insert_with(Vec::new)
                .push(NodeSelectorRequirement {
                    key: NO_SCHEDULE_LABEL.to_owned(),
                    operator: "In".to_owned(),
                    values: Some(vec!["true".to_owned()]),
                });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::cluster;

    #[test]
    fn the_spec_state_round_trips_through_the_pod() {
        let cluster = cluster(
            "{version: 7.1.57, buggify: {crashLoop: [storage-1], noSchedule: ['*'], crashLoopContainers: [{containerName: foundationdb-kubernetes-sidecar, targets: [log-1]}]}}",
        );
        let storage = desired_state(&cluster, "storage-1");
        assert_eq!(
            storage.crash_loop_containers,
            BTreeSet::from([MAIN_CONTAINER.to_owned()])
        );
        assert!(storage.no_schedule);
        let log = desired_state(&cluster, "log-1");
        assert_eq!(
            log.crash_loop_containers,
            BTreeSet::from(["foundationdb-kubernetes-sidecar".to_owned()])
        );
        let mut spec = PodSpec {
            containers: vec![
                k8s_openapi::api::core::v1::Container {
                    name: MAIN_CONTAINER.into(),
                    command: Some(vec!["fdbmonitor".into()]),
                    ..Default::default()
                },
                k8s_openapi::api::core::v1::Container {
                    name: "foundationdb-kubernetes-sidecar".into(),
                    ..Default::default()
                },
            ],
            ..PodSpec::default()
        };
        apply(&storage, &mut spec);
        let pod = Pod {
            spec: Some(spec),
            ..Pod::default()
        };
        assert_eq!(pod_state(&pod), storage);
        assert!(pod_state(&Pod::default()).is_clear());
    }
}
