//! ReplaceFailedPods (docs/operator.md, "The steps"): marks for removal (so a replacement
//! is added) the live process groups whose oldest condition eligible for automatic
//! replacement was first seen at least `failureDetectionTimeSeconds` ago (for
//! NodeTaintReplacing, `taintReplacementTimeSeconds`, default 1800: the taint's own
//! duration already passed before the condition was set, see
//! [`crate::controller::model::process_groups::taints`]). ProcessHasIOError comes from the
//! `io_error` messages of the group's processes in `status json`.
//!
//! - At most `replacements.maxConcurrentReplacements` (default 1) groups are in flight:
//!   marked and not yet fully excluded. Groups only waiting for their resources to
//!   terminate do not count.
//! - Never a group in the database's maintenance zone (its processes are down on purpose).
//! - Never a crash-looping group (`buggify.crashLoop`), and nothing at all with
//!   `buggify.emptyMonitorConf` (the processes are down on purpose).
//! - Node taints are a safeguard against a wide event (a whole rack or a cluster-wide
//!   node upgrade tainting many nodes): when more fault domains than
//!   `replacements.maxFaultDomainsWithTaintedProcessGroups` allows (a count, or a
//!   percentage of the cluster's fault domains rounded up; default 10 %) have a group with
//!   NodeTaintReplacing, marked or not, no group is replaced for a taint (other failures
//!   still are), so taint replacements never cover more fault domains than that at once.
//! - The oldest failures are replaced first.
//! - A failure not due yet asks for a pass when it falls due, so the replacement is not
//!   late by a long requeue of another step.
//! - A group never seen running (no address recorded: its pod never got one; or any group
//!   while the database has never been configured: none of its processes has ever run in
//!   it) is not judged by the timer alone: missing processes, pod or claim are what a group
//!   being created looks like, and replacing it would create one more such group (with a
//!   short `failureDetectionTimeSeconds`, a storm). It is replaced only when the scheduler
//!   says its pod cannot run where its volume is (`volume node affinity conflict`): a new
//!   group gets a new claim. The Go operator also treats a group without addresses apart:
//!   it never ran, so it holds no data
//!   (`internal/replacements/replace_failed_process_groups.go` of
//!   FoundationDB/fdb-kubernetes-operator).
//! - An invalid field of `spec.automationOptions.replacements` stops this step alone,
//!   with an InvalidSpec Event naming the field
//!   (`fdb_shared::validation::bounds::replacement_errors`); a negative
//!   `failureDetectionTimeSeconds` counts as 0.

use std::collections::BTreeSet;
use std::time::Duration;

use async_trait::async_trait;
use fdb_shared::api::cluster::ProcessGroupConditionType;

use super::Subreconciler;
use crate::controller::coordinators::room::coordinator_cannot_move;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict, Wait, WaitOn};
use crate::controller::pass::requeue::UNRECONCILED_INTERVAL;
use crate::controller::removals::{in_flight, placement};
use crate::controller::snapshot::{ClusterSnapshot, GroupView};
use crate::controller::status::mutations::StatusMutation;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ReplaceFailedPods;

/// What ReplaceFailedPods does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ReplaceDecision {
    /// Groups to mark, with why.
    pub replace: Vec<(String, String)>,
    /// Failed groups that wait, with why.
    pub waiting: Vec<(String, String)>,
    /// The failure that falls due next: seconds from now, and its group.
    pub next_due: Option<(i64, String)>,
    /// Why taint replacements are held back (too many tainted fault domains), when
    /// a group is due for one.
    pub taints_blocked: Option<String>,
    /// The invalid fields that stop automatic replacements, when any.
    pub invalid: Vec<String>,
    /// Groups never seen running whose claim cannot bind: group, claim and the storage
    /// class it names.
    pub unbound_claims: Vec<(String, String, String)>,
    /// Groups never seen running whose pod, made for `routing.podIPFamily`, was placed
    /// and has no IP: group, pod and the family.
    pub families_missing: Vec<(String, String, i32)>,
}

/// An eligible condition of a group and how long it must last.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Failure {
    /// When it is due: first seen plus `seconds`.
    due: i64,
    /// First seen.
    since: i64,
    /// The condition.
    condition: String,
    /// The setting that says how long it must last, and its value.
    setting: (&'static str, i64),
}

/// The eligible conditions of the group, each with when it is due.
fn failures<'a>(
    group: &'a GroupView<'_>,
    detection: i64,
    taint_time: i64,
) -> impl Iterator<Item = Failure> + 'a {
    group
        .status
        .process_group_conditions
        .iter()
        .filter(|c| c.condition_type.is_eligible_for_automatic_replacement())
        .map(move |c| {
            let taint = c.condition_type == ProcessGroupConditionType::NodeTaintReplacing;
            let setting = if taint {
                ("taintReplacementTimeSeconds", taint_time)
            } else {
                ("failureDetectionTimeSeconds", detection)
            };
            let since = c.timestamp;
            Failure {
                due: since.saturating_add(setting.1),
                since,
                condition: c.condition_type.as_str().to_owned(),
                setting,
            }
        })
}

/// Whether a failure is the node taint one.
fn is_taint(failure: &Failure) -> bool {
    failure.condition == ProcessGroupConditionType::NodeTaintReplacing.as_str()
}

/// Whether groups may be replaced for node taints now: `Err` says why not (more fault
/// domains have groups with NodeTaintReplacing than allowed).
fn taint_gate(snapshot: &ClusterSnapshot) -> Result<(), String> {
    // Most passes have no tainted group: the zones of every group are gathered only
    // when one is (issue 37: gathering them was a quarter of this step's steady cost).
    let tainted_somewhere = snapshot.groups().any(|group| {
        group
            .status
            .condition_since(&ProcessGroupConditionType::NodeTaintReplacing)
            .is_some()
    });
    if !tainted_somewhere {
        return Ok(());
    }
    let mut domains = BTreeSet::new();
    let mut tainted = BTreeSet::new();
    for group in snapshot.groups() {
        let zone = placement::zone(&group);
        let replacing = group
            .status
            .condition_since(&ProcessGroupConditionType::NodeTaintReplacing)
            .is_some();
        if replacing {
            tainted.insert(zone.clone());
        }
        domains.insert(zone);
    }
    if tainted.is_empty() {
        return Ok(());
    }
    let options = &snapshot.spec().automation_options.replacements;
    let allowed = options
        .max_fault_domains_with_tainted_process_groups(domains.len())
        .map_err(|problem| {
            format!("maxFaultDomainsWithTaintedProcessGroups is invalid ({problem}): no taint replacements")
        })?;
    if tainted.len() <= allowed {
        return Ok(());
    }
    let names: Vec<&str> = tainted.iter().map(String::as_str).collect();
    Err(format!(
        "{} of {} fault domains have process groups on tainted nodes ({}), more than maxFaultDomainsWithTaintedProcessGroups allows ({allowed}): no taint replacements until fewer are tainted",
        tainted.len(),
        domains.len(),
        names.join(", ")
    ))
}

/// Whether the scheduler reports that the group's pod cannot run where its volume is
/// (the claim is bound to a node or zone the pod cannot go to). The message is
/// `ErrReasonNodeConflict` of kubernetes/kubernetes
/// `pkg/scheduler/framework/plugins/volumebinding/binder.go`: "node(s) had volume node
/// affinity conflict" (newer releases: "didn't match PersistentVolume's node affinity").
pub(crate) fn volume_bound_elsewhere(group: &GroupView<'_>) -> bool {
    let conditions = group
        .pod_head()
        .and_then(|head| head.status.as_ref())
        .and_then(|status| status.conditions.as_ref());
    conditions.into_iter().flatten().any(|c| {
        c.type_ == "PodScheduled"
            && c.status == "False"
            && c.reason.as_deref() == Some("Unschedulable")
            && c.message.as_deref().is_some_and(|m| {
                m.contains("volume node affinity conflict")
                    || m.contains("PersistentVolume's node affinity")
            })
    })
}

/// The claim and storage class of a group whose pod waits for a claim that must bind
/// before the pod is placed (`ErrUnboundImmediatePVC` of the VolumeBinding plugin: a
/// class that does not exist is treated as immediate and never binds).
fn unbound_claim(group: &GroupView<'_>) -> Option<(String, String)> {
    let waits = group
        .pod_head()
        .and_then(|head| head.status.as_ref()?.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions.iter().any(|c| {
                c.type_ == "PodScheduled"
                    && c.status == "False"
                    && c.message
                        .as_deref()
                        .is_some_and(|m| m.contains("unbound immediate PersistentVolumeClaims"))
            })
        });
    let pvc = group.pvc.filter(|_| waits)?;
    if pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound") {
        return None;
    }
    let class = pvc.spec.as_ref()?.storage_class_name.clone()?;
    Some((pvc.metadata.name.clone().unwrap_or_default(), class))
}

/// How long a group's pod may wait for its IP before the missing family is reported: a
/// sandbox gets its IP in seconds when the network offers the family.
const FAMILY_IP_GRACE_SECONDS: i64 = 300;
/// How often the missing family is reported again while it lasts: a reminder, not an
/// Event per pass.
const FAMILY_REPORT_EVERY_SECONDS: i64 = 600;
/// How long each report lasts: a little longer than the 30 s an unreconciled cluster
/// waits at most between passes (`pass::requeue::UNRECONCILED_INTERVAL`), so every
/// window sees a pass.
const FAMILY_REPORT_WINDOW_SECONDS: i64 = 35;

/// Whether a group failing for `seconds` is reported in this pass.
fn family_report_due(seconds: i64) -> bool {
    seconds >= FAMILY_IP_GRACE_SECONDS
        && (seconds - FAMILY_IP_GRACE_SECONDS) % FAMILY_REPORT_EVERY_SECONDS
            < FAMILY_REPORT_WINDOW_SECONDS
}

/// The pod and family of a group whose pod was made for `routing.podIPFamily` and,
/// not refused by the scheduler, still has no IP: the kubelet cannot create its sandbox, which a
/// cluster network without that family causes (the kubelet's `FailedCreatePodSandBox`
/// Event on the pod says why). Before, the replacement of a running group for a family
/// change left nothing telling the user which field asked for the missing family.
fn placed_without_family_ip(group: &GroupView<'_>) -> Option<(String, i32)> {
    let pod = group.pod_head()?;
    let family = crate::controller::objects::pod_ip_family(pod)?;
    let status = pod.status.as_ref()?;
    let unplaced = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "PodScheduled" && c.status == "False");
    let pending = status.phase.as_deref().unwrap_or("Pending") == "Pending";
    let no_ip = status.pod_ip.as_deref().is_none_or(str::is_empty);
    (!unplaced && pending && no_ip).then(|| (pod.metadata.name.clone().unwrap_or_default(), family))
}

/// Whether the group has never been seen running: no address was ever recorded for it,
/// or the database was never configured (the cluster is being created).
fn never_seen_running(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> bool {
    group.status.addresses.is_empty() || !snapshot.status().configured
}

/// Whether buggify keeps this group down on purpose.
fn crash_looping(snapshot: &ClusterSnapshot, id: &str) -> bool {
    let buggify = &snapshot.spec().buggify;
    buggify.crash_loop.iter().any(|g| g == id || g == "*")
        || buggify
            .crash_loop_containers
            .iter()
            .any(|c| c.targets.iter().any(|g| g == id || g == "*"))
}

/// A failed group: when it failed, its ID and why it is replaced.
type FailedGroup = (i64, String, String);

/// Marks the failed groups, oldest failure first, within the replacement budget (the
/// replacements in flight count against it); the rest wait.
fn spend_budget(
    snapshot: &ClusterSnapshot,
    failed: Vec<FailedGroup>,
    decision: &mut ReplaceDecision,
) {
    let options = &snapshot.spec().automation_options.replacements;
    let busy = in_flight(snapshot);
    if options.fault_domain_based_replacements() {
        spend_budget_by_fault_domain(snapshot, failed, &busy, decision);
        return;
    }
    let mut budget = usize::try_from(options.max_concurrent_replacements())
        .unwrap_or(0)
        .saturating_sub(busy.len());
    for (_, id, reason) in failed {
        if budget == 0 {
            decision.waiting.push((
                id,
                format!(
                    "{} replacements in flight ({}), at most {} at a time",
                    busy.len(),
                    busy.join(", "),
                    options.max_concurrent_replacements()
                ),
            ));
            continue;
        }
        budget -= 1;
        decision.replace.push((id, reason));
    }
}

/// `faultDomainBasedReplacements`: the budget counts fault domains, not groups. Every
/// failed group of a fault domain that already has a replacement in flight may be
/// replaced; a new fault domain only while fewer than `maxConcurrentReplacements` have
/// one (as the Go operator's `removalAllowed` in
/// internal/replacements/replace_failed_process_groups.go decides).
fn spend_budget_by_fault_domain(
    snapshot: &ClusterSnapshot,
    failed: Vec<FailedGroup>,
    busy: &[String],
    decision: &mut ReplaceDecision,
) {
    let options = &snapshot.spec().automation_options.replacements;
    let max = usize::try_from(options.max_concurrent_replacements()).unwrap_or(0);
    let domain_of = |id: &str| snapshot.group(id).map(|group| placement::zone(&group));
    let mut domains: BTreeSet<String> = busy.iter().filter_map(|id| domain_of(id)).collect();
    for (_, id, reason) in failed {
        let domain = domain_of(&id).unwrap_or_else(|| id.clone());
        // More domains in flight than allowed (the setting was lowered): none more.
        let allowed = domains.len() < max || (domains.len() == max && domains.contains(&domain));
        if !allowed {
            decision.waiting.push((
                id,
                format!(
                    "fault domains with replacements in flight: {} (at most {max} at a time, faultDomainBasedReplacements)",
                    domains.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
            ));
            continue;
        }
        domains.insert(domain);
        decision.replace.push((id, reason));
    }
}

/// Decides from the snapshot.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> ReplaceDecision {
    let mut decision = ReplaceDecision::default();
    let spec = snapshot.spec();
    let options = &spec.automation_options.replacements;
    if !options.enabled() || spec.buggify.empty_monitor_conf == Some(true) {
        return decision;
    }
    decision.invalid = fdb_shared::validation::bounds::replacement_errors(spec);
    if !decision.invalid.is_empty() {
        return decision;
    }
    let now = snapshot.now_unix();
    let detection = options.failure_detection_time_seconds().max(0);
    let taint_time = options.taint_replacement_time_seconds();
    let maintenance_zone = snapshot
        .database_status()
        .and_then(|db| db.cluster.maintenance_zone.clone())
        .filter(|zone| !zone.is_empty());
    let taints = taint_gate(snapshot);
    let mut failed: Vec<FailedGroup> = Vec::new();
    for group in snapshot.live_groups() {
        let all: Vec<Failure> = failures(&group, detection, taint_time).collect();
        // A pod about to be recreated for buggify is not failing; it is being changed.
        if all.is_empty()
            || crash_looping(snapshot, group.id())
            || crate::controller::buggify_deletions::differs(snapshot, &group)
        {
            continue;
        }
        if never_seen_running(snapshot, &group) && !volume_bound_elsewhere(&group) {
            if let Some((claim, class)) = unbound_claim(&group) {
                decision
                    .unbound_claims
                    .push((group.id().to_owned(), claim, class));
            }
            let failing_for = all.iter().map(|f| now.saturating_sub(f.since)).max();
            if failing_for.is_some_and(family_report_due)
                && let Some((pod, family)) = placed_without_family_ip(&group)
            {
                decision
                    .families_missing
                    .push((group.id().to_owned(), pod, family));
            }
            decision.waiting.push((
                group.id().to_owned(),
                "never seen running: not replaced for being missing while it is created".to_owned(),
            ));
            continue;
        }
        let usable = all.iter().filter(|f| taints.is_ok() || !is_taint(f));
        let Some(failure) = usable.clone().filter(|f| f.due <= now).min().cloned() else {
            if let Some(later) = usable.map(|f| f.due).min() {
                let wait = later.saturating_sub(now);
                if decision.next_due.as_ref().is_none_or(|(s, _)| wait < *s) {
                    decision.next_due = Some((wait, group.id().to_owned()));
                }
            }
            if let Err(why) = &taints
                && all.iter().any(|f| is_taint(f) && f.due <= now)
            {
                decision.waiting.push((group.id().to_owned(), why.clone()));
                decision.taints_blocked = Some(why.clone());
            }
            continue;
        };
        let since = failure.since;
        let failed_for = now.saturating_sub(since);
        if maintenance_zone.as_deref() == Some(placement::zone(&group).as_str()) {
            decision.waiting.push((
                group.id().to_owned(),
                "its zone is in maintenance".to_owned(),
            ));
            continue;
        }
        // Its exclusion would wait for a coordinator change that cannot happen (a zone
        // down and no free zone), holding the budget while other failed groups wait;
        // once marked it could never return to the coordinators when its zone does.
        // It is replaced once its coordinator can move (issue 38 item 4).
        if coordinator_cannot_move(snapshot, &group) {
            decision.waiting.push((
                group.id().to_owned(),
                "it hosts a coordinator that no coordinator change could move now (too few zones with candidates); its replacement could not finish".to_owned(),
            ));
            continue;
        }
        failed.push((
            since,
            group.id().to_owned(),
            format!(
                "{} for {failed_for}s ({} {})",
                failure.condition, failure.setting.0, failure.setting.1
            ),
        ));
    }
    failed.sort();
    spend_budget(snapshot, failed, &mut decision);
    decision
}

/// When nothing is marked: come back when the next failure falls due, or look again
/// at the tainted fault domains; no later than an unreconciled cluster is looked at
/// again anyway. The rest of the pass goes on.
fn wait_of(decision: &ReplaceDecision) -> Option<Wait> {
    let due = decision.next_due.as_ref().map(|(seconds, group)| {
        (
            Duration::from_secs(seconds.unsigned_abs().max(1)),
            format!("process group {group} is replaced in {seconds}s unless it recovers"),
        )
    });
    let blocked = decision
        .taints_blocked
        .as_ref()
        .map(|why| (UNRECONCILED_INTERVAL, why.clone()));
    [blocked, due]
        .into_iter()
        .flatten()
        .min_by_key(|(delay, _)| *delay)
        .map(|(delay, reason)| {
            Wait::independent(WaitOn::After(delay.min(UNRECONCILED_INTERVAL)), reason)
        })
}

/// The plan of `decision`: the blocked Event, the marks (written at once: the next
/// steps add the replacements) and their Event; when nothing is marked, a wait of its own
/// until the next failure falls due.
pub(crate) fn verdict(decision: &ReplaceDecision) -> Verdict {
    for (group, reason) in &decision.waiting {
        tracing::info!(%group, %reason, "replacement waits");
    }
    let mut actions = Vec::new();
    if !decision.invalid.is_empty() {
        actions.push(Action::Event {
            reason: EventReason::InvalidSpec,
            action: "ReplaceFailedPods".to_owned(),
            note: format!(
                "automatic replacements stopped until the spec is fixed: {}",
                decision.invalid.join("; ")
            ),
        });
    }
    for (group, claim, class) in &decision.unbound_claims {
        actions.push(Action::Event {
            reason: EventReason::VolumeClaimUnbound,
            action: "ReplaceFailedPods".to_owned(),
            note: format!(
                "process group {group} cannot start: its claim {claim} names storage class {class:?} and is not bound (a class that does not exist keeps it Pending); not replaced, a replacement would wait the same way"
            ),
        });
    }
    if let Some((_, first, family)) = decision.families_missing.first() {
        let groups: Vec<&str> = decision
            .families_missing
            .iter()
            .map(|(group, _, _)| group.as_str())
            .collect();
        actions.push(Action::Event {
            reason: EventReason::PodIpFamilyUnavailable,
            action: "ReplaceFailedPods".to_owned(),
            note: format!(
                "{} process group(s) cannot start ({}): their pods are made for spec.routing.podIPFamily: {family} and get no IP (see the events of pod {first}: FailedCreatePodSandBox when the cluster network offers no IPv{family}); not replaced, a replacement would wait the same way, and the groups they replace keep running until they run",
                groups.len(),
                groups.join(", ")
            ),
        });
    }
    if let Some(why) = &decision.taints_blocked {
        actions.push(Action::Event {
            reason: EventReason::ReplacementBlocked,
            action: "ReplaceFailedPods".to_owned(),
            note: why.clone(),
        });
    }
    if decision.replace.is_empty() {
        return Verdict::plain(actions).then(wait_of(decision));
    }
    // Only live groups are candidates, so the marks always change the status.
    actions.push(Action::WriteStatus(
        decision
            .replace
            .iter()
            .map(|(group, _)| StatusMutation::MarkForRemoval {
                group: group.clone(),
            })
            .collect(),
    ));
    let text: Vec<String> = decision
        .replace
        .iter()
        .map(|(group, reason)| format!("{group}: {reason}"))
        .collect();
    actions.push(Action::Event {
        reason: EventReason::ReplacementChosen,
        action: "ReplaceFailedPods".to_owned(),
        note: format!("replacing failed process groups: {}", text.join("; ")),
    });
    Verdict::plain(actions)
}

#[async_trait]
impl Subreconciler for ReplaceFailedPods {
    fn name(&self) -> &'static str {
        "ReplaceFailedPods"
    }

    fn barrier(&self) -> Barrier {
        Barrier::GoesOn
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        Ok(verdict(&decide(snapshot)))
    }
}

#[cfg(test)]
mod tests;
