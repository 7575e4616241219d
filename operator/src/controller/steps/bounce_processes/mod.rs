//! BounceProcesses (docs/operator.md, "The steps"): restarts, with one `fdbcli kill`, the
//! processes that run an outdated command line (fdbmonitor does not restart them when
//! their conf changes).
//!
//! The decision is split so other reasons to restart can join the same single kill:
//! [`incorrect_command_line_targets`] lists the processes this step restarts and why,
//! and [`plan_kill`] judges any list of [`KillTarget`]s against the shared gates. An
//! upgrade adds its cluster-wide targets (`KillReason::Upgrade`) and calls
//! [`decide_with`]; the gates, the lock and the execution stay the same.
//!
//! Gates, in order: `automationOptions.killProcesses`; every live group that runs
//! processes has confirmed its configuration (so one kill restarts everything onto the
//! new conf: a group still waiting, e.g. with an unreachable sidecar, is named); the
//! database is available ([`safety::available`]); every process has been up
//! `minimumUptimeSecondsForBounce` ([`safety::minimum_uptime`], which also keeps a second
//! kill from following the first before the restarted processes report); the global lock
//! when locks are in use ([`crate::controller::safety::locks`]); no pod deleted earlier in
//! the same pass (the kill is its pass's only disruption). Groups marked for removal are
//! never killed, unless the user holds their removal back (`buggify.blockRemoval`,
//! `removalMode: None`): those run on for good and are restarted with the others.
//! Groups in `buggify.ignoreDuringRestart` (process group IDs) are never killed; while
//! one of them runs, no kill can cover every process, so the restart goes one zone at a
//! time (the Go operator kills all the others at once, taking every zone down).

pub(crate) mod global_bounce;
mod step;
pub(crate) mod upgrade_bounce;

use std::collections::BTreeSet;
use std::time::Duration;

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::cluster::ProcessGroupConditionType;

use crate::controller::events::EventReason;
pub(crate) use crate::controller::kill_target::{KillReason, KillTarget};
use crate::controller::pass::plan::{Action, Plan, Planned, Verdict, Wait, WaitOn};
use crate::controller::removals::{kept_running, placement};
use crate::controller::safety::{self, LockedAction, Refusal};
use crate::controller::snapshot::{ClusterSnapshot, GroupView};

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct BounceProcesses;

/// What BounceProcesses does this pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BounceDecision {
    /// Nothing needs a restart.
    Nothing,
    /// Restarts are needed but `automationOptions.killProcesses` is false.
    Disabled {
        /// The groups that would be restarted.
        groups: Vec<String>,
    },
    /// Restarts are needed but a gate refuses; the reason names what blocks.
    Wait(String),
    /// Restarts wait for groups marked for removal whose processes still run (the rest
    /// of the pass goes on, so their removal can finish).
    WaitForRemovals(String),
    /// Restarts wait for the pods of groups that need one to be updated first
    /// (IncorrectPodSpec); the rest of the pass goes on, so UpdatePods can update them.
    WaitForPodUpdates(String),
    /// Kill these targets with one command.
    Kill(Vec<KillTarget>),
    /// These groups' processes survived the last cluster-wide restart (they ignore
    /// kills): delete the pod of the first, within the zone budget, instead of killing
    /// every process again.
    RecreatePods {
        /// The surviving groups, the pod of the first is deleted.
        groups: Vec<String>,
        /// The pod to delete.
        pod: String,
    },
}

/// The reporting addresses of `group`, none when it is ignored during restarts.
fn addresses_of(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> Vec<ProcessAddress> {
    if snapshot.ignored_during_restart(group.id()) {
        return Vec::new();
    }
    let mut addresses: Vec<ProcessAddress> = group
        .processes()
        .filter_map(|p| p.address.clone())
        .collect();
    addresses.sort_by_key(ToString::to_string);
    addresses.dedup();
    addresses
}

/// The live groups whose processes run an outdated command line (IncorrectCommandLine),
/// with their reporting addresses, in status order.
pub(crate) fn incorrect_command_line_targets(snapshot: &ClusterSnapshot) -> Vec<KillTarget> {
    snapshot
        .groups()
        .filter(|g| kept_running(snapshot, g))
        .filter(|g| {
            g.status
                .condition_since(&ProcessGroupConditionType::IncorrectCommandLine)
                .is_some()
        })
        .filter_map(|g| {
            let addresses = addresses_of(snapshot, &g);
            (!addresses.is_empty()).then(|| KillTarget {
                group: g.id().to_owned(),
                addresses,
                reason: KillReason::IncorrectCommandLine,
            })
        })
        .collect()
}

/// Live groups that run processes but have not confirmed their current configuration
/// (IncorrectConfigMap, SidecarUnreachable): a kill now would restart them onto the old
/// conf and a second kill would follow.
fn waiting_for_config(snapshot: &ClusterSnapshot) -> Vec<String> {
    snapshot
        .groups()
        .filter(|g| kept_running(snapshot, g))
        .filter(|g| g.is_reporting())
        .filter(|g| {
            g.status.process_group_conditions.iter().any(|c| {
                matches!(
                    c.condition_type,
                    ProcessGroupConditionType::IncorrectConfigMap
                        | ProcessGroupConditionType::SidecarUnreachable
                )
            })
        })
        .map(|g| {
            let unreachable = g
                .status
                .condition_since(&ProcessGroupConditionType::SidecarUnreachable)
                .is_some();
            if unreachable {
                format!("{} (sidecar unreachable)", g.id())
            } else {
                g.id().to_owned()
            }
        })
        .collect()
}

/// Judges `targets` against the bounce gates (module documentation). Targets of groups
/// marked for removal (unless their removal is held) are dropped; targets of one group
/// are merged.
pub(crate) fn plan_kill(snapshot: &ClusterSnapshot, targets: Vec<KillTarget>) -> BounceDecision {
    let mut targets: Vec<KillTarget> = targets
        .into_iter()
        .filter(|t| {
            snapshot
                .group(&t.group)
                .is_none_or(|g| kept_running(snapshot, &g))
        })
        .filter(|t| !t.addresses.is_empty())
        .collect();
    targets.sort_by(|a, b| a.group.cmp(&b.group).then(a.reason.cmp(&b.reason)));
    targets.dedup_by(|later, earlier| {
        if later.group != earlier.group {
            return false;
        }
        earlier.addresses.append(&mut later.addresses);
        earlier.addresses.sort_by_key(ToString::to_string);
        earlier.addresses.dedup();
        earlier.reason = earlier.reason.max(later.reason);
        true
    });
    if targets.is_empty() {
        return BounceDecision::Nothing;
    }
    let survived = survivors(snapshot, &targets);
    if !survived.is_empty() {
        return plan_recreate(snapshot, survived);
    }
    if let Some(pinned) = pinned_group(snapshot) {
        return plan_zone_kill(snapshot, targets, &pinned);
    }
    let groups: Vec<String> = targets.iter().map(|t| t.group.clone()).collect();
    // One restart covers every running process: a kill that leaves some running takes
    // the others' zones down at once, beyond what the redundancy tolerates, while a
    // cluster-wide one is a single restart and recovery. Processes of groups marked for
    // removal are never killed: the restart waits for their removal instead.
    let covered: BTreeSet<String> = targets
        .iter()
        .flat_map(|t| t.addresses.iter().map(ToString::to_string))
        .collect();
    let mut leaving = Vec::new();
    for group in snapshot.groups() {
        let missing: Vec<ProcessAddress> = addresses_of(snapshot, &group)
            .into_iter()
            .filter(|a| !covered.contains(&a.to_string()))
            .collect();
        if missing.is_empty() {
            continue;
        }
        if !kept_running(snapshot, &group) {
            leaving.push(group.id().to_owned());
        } else {
            targets.push(KillTarget {
                group: group.id().to_owned(),
                addresses: missing,
                reason: KillReason::Alongside,
            });
        }
    }
    if !leaving.is_empty() {
        return BounceDecision::WaitForRemovals(format!(
            "{} process groups need a restart ({}); waiting for the removal of {} (marked for removal, still running) so that one restart covers every process",
            groups.len(),
            abbreviate(&groups),
            leaving.join(", ")
        ));
    }
    if let Some(held) = held_before_any_kill(snapshot, &groups) {
        return held;
    }
    let gates = safety::available(snapshot).and_then(|()| safety::minimum_uptime(snapshot));
    if let Err(refusal) = gates {
        return BounceDecision::Wait(describe_wait(&groups, &refusal));
    }
    BounceDecision::Kill(targets)
}

/// Slack, in seconds, between a process's start and the recovery its restart caused.
const RESTART_SLACK_SECONDS: f64 = 10.0;

/// The targets (outdated command line only) whose processes survived the last
/// cluster-wide restart: they have run since before the last recovery, while every
/// other process a kill covers (of the groups kept running) started after it and no
/// target did. Killing every process again would not restart them either (a process
/// that ignores kills); their pods are recreated.
///
/// Only what a cluster-wide kill would have restarted is evidence of one (issue 26,
/// seed 156): a group marked for removal is never killed, so its process restarting
/// (a fault healed) says nothing of a kill; and a target that started after the last
/// recovery still runs an outdated command line, so that recovery was no restart onto
/// the current configuration (the kill never happened, e.g. the database was
/// unavailable since the change).
fn survivors(snapshot: &ClusterSnapshot, targets: &[KillTarget]) -> Vec<String> {
    if targets
        .iter()
        .any(|t| t.reason != KillReason::IncorrectCommandLine)
    {
        return Vec::new();
    }
    let Ok(db) = safety::database(snapshot) else {
        return Vec::new();
    };
    let Some(since_recovery) = db.cluster.recovery_state.seconds_since_last_recovered else {
        return Vec::new();
    };
    let targeted: BTreeSet<String> = targets
        .iter()
        .flat_map(|t| t.addresses.iter().map(ToString::to_string))
        .collect();
    let leaving: BTreeSet<String> = snapshot
        .groups()
        .filter(|g| !kept_running(snapshot, g))
        .flat_map(|g| {
            g.processes()
                .filter_map(|p| p.address.as_ref().map(ToString::to_string))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut restarted_others = 0;
    let mut old_targets = BTreeSet::new();
    for process in db.cluster.processes.values() {
        let (Some(address), Some(uptime)) = (&process.address, process.uptime_seconds) else {
            continue;
        };
        let address = address.to_string();
        let older = uptime > since_recovery + RESTART_SLACK_SECONDS;
        match (targeted.contains(&address), older) {
            (false, _) if leaving.contains(&address) => {}
            (false, true) => return Vec::new(),
            (false, false) => restarted_others += 1,
            (true, true) => {
                old_targets.insert(address);
            }
            (true, false) => return Vec::new(),
        }
    }
    if restarted_others == 0 {
        return Vec::new();
    }
    targets
        .iter()
        .filter(|t| {
            t.addresses
                .iter()
                .all(|a| old_targets.contains(&a.to_string()))
        })
        .map(|t| t.group.clone())
        .collect()
}

/// Recreating the pod of the first survivor: gated like any pod deletion (available,
/// within the zone budget, not a coordinator's pod, no pod terminating).
fn plan_recreate(snapshot: &ClusterSnapshot, groups: Vec<String>) -> BounceDecision {
    let Some(group) = groups.first().and_then(|id| snapshot.group(id)) else {
        return BounceDecision::Nothing;
    };
    let why = format!(
        "{} survived the last restart of every process (they ignore kills); their pods are recreated one at a time",
        abbreviate(&groups)
    );
    if let Some(held) = held_before_any_kill(snapshot, &groups) {
        return held;
    }
    let Some(pod) = group
        .pod_head()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    else {
        return BounceDecision::Wait(format!("{why}; waiting for the pod of {}", group.id()));
    };
    if let Some(coordinator) = placement::hosted_coordinator(snapshot, &group) {
        return BounceDecision::Wait(format!(
            "{why}; {} hosts coordinator {coordinator}, which must move first",
            group.id()
        ));
    }
    if let Some(terminating) = snapshot
        .pod_heads()
        .find(|p| p.metadata.deletion_timestamp.is_some())
    {
        return BounceDecision::Wait(format!(
            "{why}; waiting for pod {} to finish terminating",
            kube::ResourceExt::name_any(terminating)
        ));
    }
    let zones = BTreeSet::from([safety::group_zone(&group)]);
    let gates = safety::available(snapshot)
        .and_then(|()| safety::may_take_down(snapshot, &zones))
        .and_then(|()| safety::minimum_uptime(snapshot));
    if let Err(refusal) = gates {
        return BounceDecision::Wait(format!("{why}; waiting: {refusal}"));
    }
    BounceDecision::RecreatePods {
        pod: kube::ResourceExt::name_any(pod),
        groups,
    }
}

/// What holds every restart, whole-cluster or zone by zone: kills turned off by the
/// user, or groups that have not confirmed their new configuration yet. `None` when
/// neither holds; `groups` are the groups that need the restart.
fn held_before_any_kill(snapshot: &ClusterSnapshot, groups: &[String]) -> Option<BounceDecision> {
    if !snapshot.spec().automation_options.kill_processes() {
        return Some(BounceDecision::Disabled {
            groups: groups.to_vec(),
        });
    }
    let waiting = waiting_for_config(snapshot);
    if !waiting.is_empty() {
        return Some(BounceDecision::Wait(format!(
            "{} process groups need a restart, but {} have not confirmed their configuration yet: {}",
            groups.len(),
            waiting.len(),
            waiting.join(", ")
        )));
    }
    let updating = waiting_for_pod_update(snapshot, groups);
    (!updating.is_empty()).then(|| {
        BounceDecision::WaitForPodUpdates(format!(
            "{} process groups need a restart, but the pods of {} are not updated yet (IncorrectPodSpec): restarting first would restart them again once updated",
            groups.len(),
            abbreviate(&updating)
        ))
    })
}

/// The groups among `groups` (those needing a restart) whose pod is not updated yet
/// (IncorrectPodSpec), when pod updates will come: the restart waits for them, as the Go
/// operator's does (`GetFilterConditions` in its `internal/restarts/restarts.go`), so a
/// change of the pod and of the command line (an environment variable a new knob reads,
/// DNS names in the cluster file) is one restart, after the pod update, not a restart
/// onto a half-applied change. Not while TLS is turned on or off (pod updates wait for
/// that migration's restarts) nor with `deletionMode: None` (the operator never updates
/// the pods).
fn waiting_for_pod_update(snapshot: &ClusterSnapshot, groups: &[String]) -> Vec<String> {
    use fdb_shared::api::cluster::DeletionMode;
    let cluster = snapshot.cluster();
    if crate::controller::model::process_config::listens_on_both(cluster)
        || snapshot.spec().automation_options.deletion_mode() == DeletionMode::None
    {
        return Vec::new();
    }
    groups
        .iter()
        .filter(|id| {
            snapshot.group(id).is_some_and(|g| {
                g.status
                    .condition_since(&ProcessGroupConditionType::IncorrectPodSpec)
                    .is_some()
            })
        })
        .cloned()
        .collect()
}

/// A group of `buggify.ignoreDuringRestart` with running processes, if any: then no kill
/// can cover every process, and a kill of all the others would take every zone down
/// while one keeps running.
fn pinned_group(snapshot: &ClusterSnapshot) -> Option<String> {
    snapshot
        .groups()
        .find(|g| {
            snapshot.ignored_during_restart(g.id()) && g.processes().any(|p| p.address.is_some())
        })
        .map(|g| g.id().to_owned())
}

/// The restart while `pinned` must keep running: the targets of one zone (the first, in
/// group order) per kill, within what the redundancy tolerates; the minimum uptime gate
/// spaces the zones out, so each comes back before the next goes.
fn plan_zone_kill(
    snapshot: &ClusterSnapshot,
    mut targets: Vec<KillTarget>,
    pinned: &str,
) -> BounceDecision {
    let groups: Vec<String> = targets.iter().map(|t| t.group.clone()).collect();
    if let Some(held) = held_before_any_kill(snapshot, &groups) {
        return held;
    }
    let zone_of = |group: &str| snapshot.group(group).map(|g| placement::zone(&g));
    let first_zone = targets.first().and_then(|t| zone_of(&t.group));
    targets.retain(|t| zone_of(&t.group) == first_zone);
    // Each zone's restart is a recovery of its own: the next waits until the last one
    // is over and every process reports again, so two never overlap.
    let minimum = f64::from(snapshot.spec().minimum_uptime_seconds_for_bounce());
    let absent: Vec<String> = snapshot
        .groups()
        .filter(|g| kept_running(snapshot, g) && g.pod.is_some())
        .filter(|g| g.processes().count() < usize::try_from(g.servers_per_pod()).unwrap_or(1))
        .map(|g| g.id().to_owned())
        .collect();
    if !absent.is_empty() {
        return BounceDecision::Wait(format!(
            "{} process groups need a restart; waiting for {} to report again before the next zone",
            groups.len(),
            abbreviate(&absent)
        ));
    }
    let gates = safety::available(snapshot)
        .and_then(|()| safety::recovered_for(snapshot, minimum))
        .and_then(|()| safety::minimum_uptime(snapshot));
    if let Err(refusal) = gates {
        return BounceDecision::Wait(format!(
            "{}; restarting one zone at a time while {pinned} (spec.buggify.ignoreDuringRestart) keeps running",
            describe_wait(&groups, &refusal)
        ));
    }
    BounceDecision::Kill(targets)
}

fn describe_wait(groups: &[String], refusal: &Refusal) -> String {
    format!(
        "{} process groups need a restart ({}); waiting: {refusal}",
        groups.len(),
        abbreviate(groups)
    )
}

/// At most five names, then a count.
fn abbreviate(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
    match names.len().saturating_sub(shown.len()) {
        0 => shown.join(", "),
        more => format!("{}, and {more} more", shown.join(", ")),
    }
}

/// This step's decision with extra targets (e.g. an upgrade's cluster-wide restart)
/// added to the IncorrectCommandLine ones, all judged together for one kill.
pub(crate) fn decide_with(
    snapshot: &ClusterSnapshot,
    extra: impl IntoIterator<Item = KillTarget>,
) -> BounceDecision {
    let mut targets = incorrect_command_line_targets(snapshot);
    targets.extend(extra);
    plan_kill(snapshot, targets)
}

/// This step's decision.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> BounceDecision {
    decide_with(snapshot, Vec::new())
}

/// The verdict of `decision`: a kill is one plan (locked, one disruption, paced as a
/// recovery), after which the pass waits for the processes to report again. `delay`:
/// when a waiting bounce looks again (`requeue::kill_wait_delay`).
pub(crate) fn verdict(decision: BounceDecision, delay: Duration) -> Verdict {
    let targets = match decision {
        BounceDecision::Nothing => return Verdict::Continue,
        BounceDecision::Disabled { groups } => {
            tracing::info!(
                groups = %abbreviate(&groups),
                "processes need a restart, but automationOptions.killProcesses is false"
            );
            return Verdict::Continue;
        }
        BounceDecision::Wait(reason) => {
            return Verdict::Wait(Wait::new(WaitOn::After(delay), reason));
        }
        BounceDecision::WaitForRemovals(reason) => {
            // Not a barrier wait: the removals after this step must go on.
            return Verdict::Wait(Wait::independent(WaitOn::Database, reason));
        }
        BounceDecision::WaitForPodUpdates(reason) => {
            // Not a barrier wait: UpdatePods, after this step, updates those pods.
            return Verdict::Wait(Wait::independent(WaitOn::Kubernetes, reason));
        }
        BounceDecision::Kill(targets) => targets,
        BounceDecision::RecreatePods { groups, pod } => {
            return Verdict::Act(recreate_pod_plan(&groups, &pod));
        }
    };
    let addresses: Vec<ProcessAddress> = targets
        .iter()
        .flat_map(|t| t.addresses.iter().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let groups: Vec<String> = targets.iter().map(|t| t.group.clone()).collect();
    let reasons: BTreeSet<String> = targets.iter().map(|t| t.reason.to_string()).collect();
    let reasons: Vec<String> = reasons.into_iter().collect();
    let count = addresses.len();
    let note = format!(
        "restarted {count} processes of {} process groups ({}): {}",
        groups.len(),
        reasons.join(", "),
        abbreviate(&groups)
    );
    let kill = Planned::locked(Action::Kill(addresses), LockedAction::Bounce)
        .disrupting()
        .recovering(Some(format!("kill of {count} processes")));
    Verdict::Act(
        Plan::new(
            vec![
                kill,
                Planned::plain(Action::Event {
                    reason: EventReason::ProcessesBounced,
                    action: "BounceProcesses".to_owned(),
                    note,
                }),
            ],
            format!("{} process groups need a restart: ", targets.len()),
        )
        .then(Wait::new(
            WaitOn::Database,
            format!("restarted {count} processes; waiting for them to report again"),
        )),
    )
}

/// Deletes the pod of a process that survived the restart of every process; AddPods
/// recreates it (on its PVC) with the current configuration. A pod deletion under the
/// lock, one disruption, paced as a recovery like the kill it replaces.
fn recreate_pod_plan(groups: &[String], pod: &str) -> Plan {
    tracing::info!(%pod, "recreating the pod of a process that survived the restart");
    let delete = Planned::locked(Action::DeletePod(pod.to_owned()), LockedAction::DeletePods)
        .disrupting()
        .recovering(Some(format!("recreation of pod {pod}")));
    Plan::new(
        vec![
            delete,
            Planned::plain(Action::Event {
                reason: EventReason::ProcessesBounced,
                action: "BounceProcesses".to_owned(),
                note: format!(
                    "deleted pod {pod}: its processes survived the restart of every process ({} to recreate in all)",
                    groups.len()
                ),
            }),
        ],
        format!("waiting to recreate pod {pod}: "),
    )
    .then(Wait::new(
        WaitOn::Kubernetes,
        format!(
            "deleted pod {pod}, whose processes survived the restart of every process; waiting for it to come back"
        ),
    ))
}

#[cfg(test)]
mod tests;
