//! Which conditions a process group has, from what was observed, and keeping the
//! first-seen timestamp of conditions that persist.

use fdb_shared::api::cluster::{ProcessGroupCondition, ProcessGroupConditionType as C};

use super::taints::TaintFacts;

/// Whether an object exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Not needed for this group.
    NotNeeded,
    /// Needed and missing.
    Missing,
    /// Exists.
    Present,
    /// Exists and is being deleted.
    Terminating,
}

/// What was seen of a group's pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodFacts {
    /// The pod has a deletionTimestamp.
    pub terminating: bool,
    /// Phase `Pending` (not scheduled or not started).
    pub pending: bool,
    /// Phase `Failed` or a container crash-looping / failing to pull.
    pub failing: bool,
    /// The `last-applied-spec` annotation equals the hash of the desired pod.
    pub spec_matches: bool,
    /// The operator's labels are on the pod.
    pub labels_match: bool,
    /// The `last-applied-config-map` annotation equals the desired configuration hash.
    pub config_confirmed: bool,
    /// The sidecar container runs the image the pod must have now (during an
    /// incompatible upgrade: the target's, see [`crate::controller::upgrade`]).
    pub sidecar_image_matches: bool,
}

/// What the database says about a group's processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessFacts {
    /// The database status could not be read (or there is no database yet).
    Unknown,
    /// `reporting` of the expected processes report; `excluded` when any is excluded.
    Reported {
        /// Processes reporting with the group's instance ID.
        reporting: usize,
        /// Whether any of them is excluded.
        excluded: bool,
    },
}

/// Everything observed about one process group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupFacts {
    /// The group is marked for removal.
    pub marked_for_removal: bool,
    /// The pod, if any.
    pub pod: Option<PodFacts>,
    /// The data PVC.
    pub pvc: Presence,
    /// The per-group Service.
    pub service: Presence,
    /// The processes.
    pub processes: ProcessFacts,
    /// Processes the group's pod runs (servers per pod).
    pub expected_processes: usize,
    /// Whether every reporting process runs the command line the pod's current conf asks
    /// for (`None`: unknown, e.g. no conf confirmed yet or no status).
    pub command_lines_match: Option<bool>,
    /// Whether a process of the group reports an `io_error` or `io_timeout` message.
    pub io_error: bool,
    /// The taints of the group's node.
    pub taints: TaintFacts,
}

/// The order conditions are listed in, so that unchanged conditions give an unchanged
/// status.
const ORDER: [C; 19] = [
    C::MissingProcesses,
    C::MissingPod,
    C::MissingPvc,
    C::MissingService,
    C::PodPending,
    C::PodFailing,
    C::ResourcesTerminating,
    C::IncorrectPodSpec,
    C::IncorrectPodMetadata,
    C::IncorrectConfigMap,
    C::IncorrectCommandLine,
    C::IncorrectSidecarImage,
    C::SidecarUnreachable,
    C::NodeTaintDetected,
    C::NodeTaintReplacing,
    C::ProcessIsMarkedAsExcluded,
    C::ProcessHasIoError,
    C::ProcessHasHighRunLoopBusy,
    C::Ready,
];

/// The position of `condition` in the canonical order (unknown conditions last).
pub(crate) fn condition_rank(condition: &C) -> usize {
    ORDER
        .iter()
        .position(|c| c == condition)
        .unwrap_or(ORDER.len())
}

/// What the pod shows: missing, terminating or pending, failing, out of date (spec,
/// metadata, sidecar image), its configuration unconfirmed.
fn pod_conditions(facts: &GroupFacts, had: &impl Fn(C) -> bool, conditions: &mut Vec<C>) {
    match &facts.pod {
        None => conditions.push(C::MissingPod),
        Some(pod) => {
            if pod.terminating {
                conditions.push(C::ResourcesTerminating);
            } else if pod.pending {
                conditions.push(C::PodPending);
            }
            if pod.failing {
                conditions.push(C::PodFailing);
            }
            if !pod.spec_matches {
                conditions.push(C::IncorrectPodSpec);
            }
            if !pod.labels_match {
                conditions.push(C::IncorrectPodMetadata);
            }
            if !pod.sidecar_image_matches {
                conditions.push(C::IncorrectSidecarImage);
            }
            if !pod.config_confirmed {
                conditions.push(C::IncorrectConfigMap);
                if had(C::SidecarUnreachable) {
                    conditions.push(C::SidecarUnreachable);
                }
            }
        }
    }
}

/// What the database shows of the group's processes; unknown keeps `MissingProcesses`
/// as it was.
fn process_conditions(facts: &GroupFacts, had: &impl Fn(C) -> bool, conditions: &mut Vec<C>) {
    match facts.processes {
        ProcessFacts::Unknown => {
            if had(C::MissingProcesses) {
                conditions.push(C::MissingProcesses);
            }
        }
        ProcessFacts::Reported {
            reporting,
            excluded,
        } => {
            if reporting < facts.expected_processes {
                conditions.push(C::MissingProcesses);
            }
            if excluded && !facts.marked_for_removal {
                conditions.push(C::ProcessIsMarkedAsExcluded);
            }
            if facts.command_lines_match == Some(false) {
                conditions.push(C::IncorrectCommandLine);
            }
            if facts.io_error {
                conditions.push(C::ProcessHasIoError);
            }
        }
    }
}

/// The conditions the observations show. Conditions only other steps can observe keep
/// their previous state: `SidecarUnreachable` (set by UpdatePodConfig) stays while the
/// pod has not confirmed its configuration; `MissingProcesses` stays as it was while the
/// database status is unknown.
pub(crate) fn observed_conditions(
    facts: &GroupFacts,
    previous: &[ProcessGroupCondition],
) -> Vec<C> {
    let had = |c: C| previous.iter().any(|p| p.condition_type == c);
    let mut conditions = Vec::new();
    pod_conditions(facts, &had, &mut conditions);
    match facts.pvc {
        Presence::Missing => conditions.push(C::MissingPvc),
        Presence::Terminating => conditions.push(C::ResourcesTerminating),
        Presence::NotNeeded | Presence::Present => {}
    }
    match facts.service {
        Presence::Missing => conditions.push(C::MissingService),
        Presence::Terminating => conditions.push(C::ResourcesTerminating),
        Presence::NotNeeded | Presence::Present => {}
    }
    process_conditions(facts, &had, &mut conditions);
    match facts.taints {
        TaintFacts::Unknown => {
            for condition in [C::NodeTaintDetected, C::NodeTaintReplacing] {
                if had(condition.clone()) {
                    conditions.push(condition);
                }
            }
        }
        TaintFacts::Clear => {}
        TaintFacts::Tainted { replacing, .. } => {
            conditions.push(C::NodeTaintDetected);
            if replacing {
                conditions.push(C::NodeTaintReplacing);
            }
        }
    }
    conditions.sort_by_key(condition_rank);
    conditions.dedup();
    conditions
}

/// The new condition list: `observed` in canonical order, each keeping the timestamp of
/// its previous entry, new ones first seen `now`.
pub(crate) fn merge_conditions(
    previous: &[ProcessGroupCondition],
    observed: &[C],
    now_unix: i64,
) -> Vec<ProcessGroupCondition> {
    let mut merged: Vec<ProcessGroupCondition> = observed
        .iter()
        .map(|condition_type| ProcessGroupCondition {
            condition_type: condition_type.clone(),
            timestamp: previous
                .iter()
                .find(|p| &p.condition_type == condition_type)
                .map_or(now_unix, |p| p.timestamp),
        })
        .collect();
    merged.sort_by_key(|c| condition_rank(&c.condition_type));
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn healthy_pod() -> PodFacts {
        PodFacts {
            terminating: false,
            pending: false,
            failing: false,
            spec_matches: true,
            labels_match: true,
            config_confirmed: true,
            sidecar_image_matches: true,
        }
    }

    fn facts(pod: Option<PodFacts>, processes: ProcessFacts) -> GroupFacts {
        GroupFacts {
            marked_for_removal: false,
            pod,
            pvc: Presence::Present,
            service: Presence::NotNeeded,
            processes,
            expected_processes: 1,
            command_lines_match: None,
            io_error: false,
            taints: TaintFacts::Clear,
        }
    }

    fn cond(condition_type: C, timestamp: i64) -> ProcessGroupCondition {
        ProcessGroupCondition {
            condition_type,
            timestamp,
        }
    }

    #[test]
    fn healthy_group_has_no_condition() {
        let reported = ProcessFacts::Reported {
            reporting: 1,
            excluded: false,
        };
        assert!(observed_conditions(&facts(Some(healthy_pod()), reported), &[]).is_empty());
    }

    #[test]
    fn missing_objects_and_processes() {
        let mut group = facts(
            None,
            ProcessFacts::Reported {
                reporting: 0,
                excluded: false,
            },
        );
        group.pvc = Presence::Missing;
        group.service = Presence::Missing;
        assert_eq!(
            observed_conditions(&group, &[]),
            [
                C::MissingProcesses,
                C::MissingPod,
                C::MissingPvc,
                C::MissingService
            ]
        );
    }

    #[test]
    fn unknown_database_keeps_missing_processes_as_it_was() {
        let group = facts(Some(healthy_pod()), ProcessFacts::Unknown);
        assert!(observed_conditions(&group, &[]).is_empty());
        assert_eq!(
            observed_conditions(&group, &[cond(C::MissingProcesses, 5)]),
            [C::MissingProcesses]
        );
    }

    #[test]
    fn pod_problems_and_sticky_sidecar_unreachable() {
        let pod = PodFacts {
            pending: true,
            spec_matches: false,
            labels_match: false,
            config_confirmed: false,
            ..healthy_pod()
        };
        let reported = ProcessFacts::Reported {
            reporting: 1,
            excluded: true,
        };
        let previous = [cond(C::SidecarUnreachable, 3)];
        assert_eq!(
            observed_conditions(&facts(Some(pod.clone()), reported), &previous),
            [
                C::PodPending,
                C::IncorrectPodSpec,
                C::IncorrectPodMetadata,
                C::IncorrectConfigMap,
                C::SidecarUnreachable,
                C::ProcessIsMarkedAsExcluded
            ]
        );
        // Once the sidecar confirmed the configuration, unreachability is over.
        let confirmed = PodFacts {
            config_confirmed: true,
            ..pod
        };
        assert!(
            !observed_conditions(&facts(Some(confirmed), reported), &previous)
                .contains(&C::SidecarUnreachable)
        );
    }

    #[test]
    fn timestamps_are_first_seen() {
        let previous = [cond(C::MissingPod, 10), cond(C::MissingProcesses, 10)];
        let merged = merge_conditions(&previous, &[C::MissingProcesses, C::PodPending], 99);
        assert_eq!(
            merged,
            [cond(C::MissingProcesses, 10), cond(C::PodPending, 99)]
        );
    }

    /// One case per rule of the table in docs/operator.md ("Process-group conditions"):
    /// a healthy group with one observation changed shows exactly that condition, and
    /// the same group observed healthy again shows none (each rule appears and clears
    /// on the observation alone).
    #[test]
    fn each_condition_rule_appears_on_its_observation_and_clears_without_it() {
        let reported = |reporting: usize, excluded: bool| ProcessFacts::Reported {
            reporting,
            excluded,
        };
        let healthy = || facts(Some(healthy_pod()), reported(1, false));
        let with_pod = |change: fn(&mut PodFacts)| {
            let mut pod = healthy_pod();
            change(&mut pod);
            facts(Some(pod), reported(1, false))
        };
        let tainted = TaintFacts::Tainted {
            detected_since: 0,
            replacing: false,
        };
        let cases: Vec<(GroupFacts, Vec<C>)> = vec![
            (
                with_pod(|p| p.config_confirmed = false),
                vec![C::IncorrectConfigMap],
            ),
            (
                GroupFacts {
                    command_lines_match: Some(false),
                    ..healthy()
                },
                vec![C::IncorrectCommandLine],
            ),
            (
                facts(Some(healthy_pod()), reported(0, false)),
                vec![C::MissingProcesses],
            ),
            (facts(None, reported(1, false)), vec![C::MissingPod]),
            (
                GroupFacts {
                    pvc: Presence::Missing,
                    ..healthy()
                },
                vec![C::MissingPvc],
            ),
            (
                GroupFacts {
                    service: Presence::Missing,
                    ..healthy()
                },
                vec![C::MissingService],
            ),
            (with_pod(|p| p.pending = true), vec![C::PodPending]),
            (with_pod(|p| p.failing = true), vec![C::PodFailing]),
            (
                with_pod(|p| p.terminating = true),
                vec![C::ResourcesTerminating],
            ),
            (
                GroupFacts {
                    pvc: Presence::Terminating,
                    ..healthy()
                },
                vec![C::ResourcesTerminating],
            ),
            (
                with_pod(|p| p.spec_matches = false),
                vec![C::IncorrectPodSpec],
            ),
            (
                with_pod(|p| p.labels_match = false),
                vec![C::IncorrectPodMetadata],
            ),
            (
                with_pod(|p| p.sidecar_image_matches = false),
                vec![C::IncorrectSidecarImage],
            ),
            (
                facts(Some(healthy_pod()), reported(1, true)),
                vec![C::ProcessIsMarkedAsExcluded],
            ),
            (
                GroupFacts {
                    io_error: true,
                    ..healthy()
                },
                vec![C::ProcessHasIoError],
            ),
            (
                GroupFacts {
                    taints: tainted,
                    ..healthy()
                },
                vec![C::NodeTaintDetected],
            ),
            (
                GroupFacts {
                    taints: TaintFacts::Tainted {
                        detected_since: 0,
                        replacing: true,
                    },
                    ..healthy()
                },
                vec![C::NodeTaintDetected, C::NodeTaintReplacing],
            ),
        ];
        for (observed, expected) in cases {
            let shown = observed_conditions(&observed, &[]);
            assert_eq!(shown, expected, "{observed:?}");
            let previous: Vec<_> = shown.iter().map(|c| cond(c.clone(), 5)).collect();
            assert!(
                observed_conditions(&healthy(), &previous).is_empty(),
                "{expected:?} clears once the group is healthy again"
            );
        }
        // A group marked for removal is expected to be excluded.
        let marked = GroupFacts {
            marked_for_removal: true,
            ..facts(Some(healthy_pod()), reported(1, true))
        };
        assert!(observed_conditions(&marked, &[]).is_empty());
    }
}
