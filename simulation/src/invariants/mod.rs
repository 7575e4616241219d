//! The invariants a simulated run is checked against (`spec/simulation.md`, v2).
//!
//! They judge the world, not the operator's own account of it: deletions are found by
//! comparing the objects before and after an action (so a `deletecollection` counts
//! like single deletes), zones out of service come from the simulated database's view
//! of its processes, lost data from its shards, outages from its availability history.
//! The checks here are pure: the runner gathers observations ([`observation`]) and the
//! [`InvariantMonitor`] turns breaches into violations, each reported once per episode.

mod divergence;
mod leftover_exclusions;
pub mod lock_judge;
mod observation;
#[cfg(test)]
mod outage_tests;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::FdbVersion;

use super::result::Violation;

pub use divergence::{ActualWorld, DesiredWorld, LivePod, divergences};
pub use leftover_exclusions::{GroupBeingRemoved, leftover_exclusions};
pub use observation::{ActionWindow, ClientView, Outage, ServiceState, TrackedObject};

/// `data-loss-risk`: a PVC was deleted while its storage process still held data.
pub const DATA_LOSS_RISK: &str = "data-loss-risk";
/// `data-lost`: a shard lost its last replica.
pub const DATA_LOST: &str = "data-lost";
/// `fault-tolerance-exceeded`: operator actions took out more zones than tolerated.
pub const FAULT_TOLERANCE_EXCEEDED: &str = "fault-tolerance-exceeded";
/// `coordinator-deleted`: the pod of a current coordinator was deleted.
pub const COORDINATOR_DELETED: &str = "coordinator-deleted";
/// `mixed-version-bounce`: processes on incompatible versions for more than one pass.
pub const MIXED_VERSION_BOUNCE: &str = "mixed-version-bounce";
/// `unavailable-at-rest`: a pass reported Reconciled with the database unavailable.
pub const UNAVAILABLE_AT_REST: &str = "unavailable-at-rest";
/// `reconciled-but-diverged`: a pass reported Reconciled while the world disagrees with
/// the spec.
pub const RECONCILED_BUT_DIVERGED: &str = "reconciled-but-diverged";
/// `client-incompatible-upgrade`: processes moved to a protocol a connected client lacks.
pub const CLIENT_INCOMPATIBLE_UPGRADE: &str = "client-incompatible-upgrade";
/// `unavailable-by-operator`: an operator action made the database unavailable for
/// longer than one recovery.
pub const UNAVAILABLE_BY_OPERATOR: &str = "unavailable-by-operator";
/// `expectation-failed`: an `expect` step's conditions did not hold in time.
pub const EXPECTATION_FAILED: &str = "expectation-failed";
/// An operator instance issued an admin write (configure, exclude, include, coordinators,
/// kill, maintenance) while the database's lock key did not name it as the holder: its
/// cluster uses locks and it does not hold the lock, or another instance holds it.
pub const LOCK_NOT_HELD: &str = "lock-not-held";
/// `write-refused`: the API server refused a write of the operator as invalid (422): a
/// real operator making it would be stuck (its change never lands) or blind (a status
/// it cannot record).
pub const WRITE_REFUSED: &str = "write-refused";
/// `status-off-schema`: the world rendered a `status json` that FoundationDB's schema of
/// its version does not permit (`fdb/status_schema.rs`): a bug of the world, whose
/// operator then reads a document no real cluster prints.
pub const STATUS_OFF_SCHEMA: &str = "status-off-schema";
/// `exclusion-left-behind`: a pass reported Reconciled while an exclusion the operator
/// made belonged to no process group being removed.
pub const EXCLUSION_LEFT_BEHIND: &str = "exclusion-left-behind";

/// Watches a run and collects violations.
#[derive(Debug, Default)]
pub struct InvariantMonitor {
    violations: Vec<Violation>,
    fault_tolerance_breached: bool,
    mixed_version_passes: u32,
    mixed_version_reported: bool,
    /// Outage starts already reported (an outage is judged once).
    outages_reported: BTreeSet<i64>,
    /// The protocol the database ran at the last look, for upgrade detection.
    last_cluster_version: Option<FdbVersion>,
    diverged_reported: bool,
    /// Leftover exclusions already reported (each is judged once).
    leftovers_reported: BTreeSet<String>,
}

impl InvariantMonitor {
    /// A monitor with no violations.
    pub fn new() -> Self {
        Self::default()
    }

    /// The violations so far, in order.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// Consumes the monitor, returning the violations.
    pub fn into_violations(self) -> Vec<Violation> {
        self.violations
    }

    /// Records a violation.
    pub fn violate(&mut self, invariant: &str, time: u64, pass: u64, detail: String) {
        self.violations.push(Violation {
            invariant: invariant.to_owned(),
            time,
            pass,
            detail,
        });
    }

    /// Judges the deletions an operator action requested: PVCs whose storage process
    /// still held data, pods of coordinators.
    pub fn check_deletions(&mut self, window: &ActionWindow<'_>) {
        for pvc in window.deleted_pvcs {
            if window.removed_without_exclusion.contains(&pvc.group) {
                continue;
            }
            if let Some(risk) = (window.removal_risk)(&pvc.group) {
                self.violate(
                    DATA_LOSS_RISK,
                    window.time,
                    window.pass,
                    format!(
                        "{} deleted PVC {} of {} while {risk}",
                        window.by, pvc.name, pvc.group
                    ),
                );
            }
        }
        for pod in window.deleted_pods {
            let hosted: Vec<&String> = window
                .coordinators
                .iter()
                .filter(|coordinator| {
                    let host = coordinator
                        .rsplit_once(':')
                        .map_or(coordinator.as_str(), |(host, _)| host);
                    pod.addresses.iter().any(|address| address == host)
                })
                .collect();
            if let Some(coordinator) = hosted.first() {
                self.violate(
                    COORDINATOR_DELETED,
                    window.time,
                    window.pass,
                    format!(
                        "{} deleted pod {} of {}, which hosts coordinator {coordinator}",
                        window.by, pod.name, pod.group
                    ),
                );
            }
        }
    }

    /// Judges what an operator action took out of service: it exceeds the fault
    /// tolerance when it adds a zone (or coordinator) to those out of service and the
    /// total, faults included, is then above what the redundancy mode tolerates.
    pub fn check_fault_tolerance(
        &mut self,
        time: u64,
        pass: u64,
        before: &ServiceState,
        after: &ServiceState,
        tolerance: usize,
    ) {
        let mut breaches = Vec::new();
        let after_halls = &after.zone_halls;
        for (what, before, after) in [
            (
                "storage",
                &before.storage_zones_down,
                &after.storage_zones_down,
            ),
            ("log", &before.log_zones_down, &after.log_zones_down),
        ] {
            let added: Vec<&str> = after.difference(before).map(String::as_str).collect();
            if !added.is_empty() && beyond(after, tolerance, after_halls) {
                let all: Vec<&str> = after.iter().map(String::as_str).collect();
                breaches.push(format!(
                    "{} zones of {what} out of service ({}; the action added {}); the redundancy mode tolerates {}",
                    after.len(),
                    all.join(", "),
                    added.join(", "),
                    if after_halls.is_empty() {
                        format!("{tolerance}")
                    } else {
                        format!("one data hall and {} more", tolerance.saturating_sub(1))
                    }
                ));
            }
        }
        let coordinator_tolerance = after.coordinators.saturating_sub(1) / 2;
        if after.coordinators_down > before.coordinators_down
            && after.coordinators_down > coordinator_tolerance
        {
            breaches.push(format!(
                "{} of {} coordinators unreachable; a majority must stay reachable",
                after.coordinators_down, after.coordinators
            ));
        }
        if breaches.is_empty() {
            if !beyond(&after.storage_zones_down, tolerance, &after.zone_halls)
                && !beyond(&after.log_zones_down, tolerance, &after.zone_halls)
            {
                self.fault_tolerance_breached = false;
            }
            return;
        }
        if !self.fault_tolerance_breached {
            self.violate(
                FAULT_TOLERANCE_EXCEEDED,
                time,
                pass,
                format!("after an operator action: {}", breaches.join("; ")),
            );
        }
        self.fault_tolerance_breached = true;
    }

    /// Judges lost shards: any new loss is a violation, whoever caused it.
    pub fn check_lost_shards(&mut self, time: u64, pass: u64, before: u64, after: u64, by: &str) {
        if after > before {
            self.violate(
                DATA_LOST,
                time,
                pass,
                format!(
                    "{} shard(s) lost their last replica ({after} lost in all) after an action by the {by}",
                    after - before
                ),
            );
        }
    }

    /// Judges the versions running after a pass: incompatible versions side by side for
    /// more than one pass.
    pub fn check_versions(&mut self, time: u64, pass: u64, running_versions: &[FdbVersion]) {
        let mut lines: Vec<FdbVersion> = Vec::new();
        for version in running_versions {
            if !lines
                .iter()
                .any(|seen| seen.is_protocol_compatible(version))
            {
                lines.push(*version);
            }
        }
        if lines.len() < 2 {
            self.mixed_version_passes = 0;
            self.mixed_version_reported = false;
            return;
        }
        self.mixed_version_passes += 1;
        if self.mixed_version_passes > 1 && !self.mixed_version_reported {
            self.mixed_version_reported = true;
            lines.sort();
            let versions: Vec<String> = lines.iter().map(ToString::to_string).collect();
            self.violate(
                MIXED_VERSION_BOUNCE,
                time,
                pass,
                format!(
                    "processes ran on incompatible versions {} for {} passes",
                    versions.join(" and "),
                    self.mixed_version_passes
                ),
            );
        }
    }

    /// Judges a pass that reported Reconciled: the database must be available and the
    /// world must match the spec.
    pub fn check_reconciled(
        &mut self,
        time: u64,
        pass: u64,
        available: bool,
        divergences: &[String],
    ) {
        if !available {
            self.violate(
                UNAVAILABLE_AT_REST,
                time,
                pass,
                "a pass reported Reconciled while the database was unavailable".to_owned(),
            );
        }
        if divergences.is_empty() {
            self.diverged_reported = false;
        } else if !self.diverged_reported {
            self.diverged_reported = true;
            self.violate(
                RECONCILED_BUT_DIVERGED,
                time,
                pass,
                format!(
                    "a pass reported Reconciled, but: {}",
                    divergences.join("; ")
                ),
            );
        }
    }

    /// Judges a pass that reported Reconciled against the exclusions the operator left
    /// in place (see [`leftover_exclusions`]); each leftover is reported once.
    pub fn check_leftover_exclusions(&mut self, time: u64, pass: u64, leftovers: &[String]) {
        let new: Vec<&str> = leftovers
            .iter()
            .filter(|target| !self.leftovers_reported.contains(*target))
            .map(String::as_str)
            .collect();
        if new.is_empty() {
            return;
        }
        self.violate(
            EXCLUSION_LEFT_BEHIND,
            time,
            pass,
            format!(
                "a pass reported Reconciled while the operator's exclusions of {} belong to no process group being removed",
                new.join(", ")
            ),
        );
        self.leftovers_reported
            .extend(new.into_iter().map(str::to_owned));
    }

    /// Judges a change of the database's protocol: every connected client that is not
    /// ignored must support the new one, unless upgradability checks are off.
    pub fn check_client_compatibility(
        &mut self,
        time: u64,
        pass: u64,
        cluster_version: Option<FdbVersion>,
        clients: &ClientView<'_>,
    ) {
        let Some(now) = cluster_version else { return };
        let previous = self.last_cluster_version.replace(now);
        let Some(previous) = previous else { return };
        if previous.is_protocol_compatible(&now) || clients.checks_disabled {
            return;
        }
        let stranded: Vec<String> = clients
            .clients
            .iter()
            .filter(|client| !clients.ignored_log_groups.contains(&client.log_group))
            .filter(|client| !client.version.is_protocol_compatible(&now))
            .map(|client| {
                format!(
                    "{} ({}, log group {:?})",
                    client.address, client.version, client.log_group
                )
            })
            .collect();
        if !stranded.is_empty() {
            self.violate(
                CLIENT_INCOMPATIBLE_UPGRADE,
                time,
                pass,
                format!(
                    "the database moved from {previous} to {now}, which these connected clients do not support: {}",
                    stranded.join(", ")
                ),
            );
        }
    }

    /// Judges outages that began at an operator action: each may last one recovery
    /// (`allowed.recovery`, or the longer one a `slowRecovery` fault imposed while the
    /// outage lasted), or `restart + recovery` (`allowed.bounce`) when it began at
    /// the one cluster-wide kill of a bounce. Outages less than one recovery apart count
    /// as one: clients see a database that keeps failing them (a storm of recoveries, as
    /// a rolling restart of transaction processes one by one causes). Open outages are
    /// judged by how long they have lasted so far.
    pub fn check_outages(
        &mut self,
        now: i64,
        start_unix: i64,
        outages: &[Outage],
        acted: &ActionTimes<'_>,
        allowed: OutageAllowance,
    ) {
        let (operator_actions, others_acted) = (acted.operator, acted.others);
        let (allowed_seconds, bounce_allowance) = (allowed.recovery, allowed.bounce);
        // The action that caused an outage happened at its start (processes stop at once).
        let near = |at: i64, start: i64| at <= start && start - at <= 1;
        let by_others_only = |start: i64| {
            others_acted.iter().any(|at| near(*at, start))
                && !operator_actions.iter().any(|(at, _)| near(*at, start))
        };
        for outage in merge_outages(outages, allowed_seconds, by_others_only) {
            if self.outages_reported.contains(&outage.start) {
                continue;
            }
            // The action that caused it happened at its start (processes stop at once).
            let Some(cluster_wide) = operator_actions
                .iter()
                .filter(|(at, _)| *at <= outage.start && outage.start - *at <= 1)
                .map(|(_, cluster_wide)| *cluster_wide)
                .max()
            else {
                continue;
            };
            // A recovery the database itself made slower (a `slowRecovery` fault) is
            // the fault's doing: the action is allowed the recovery it actually needed.
            let slower = outage
                .recovery_seconds
                .saturating_sub(allowed_seconds)
                .max(0);
            let allowed = if cluster_wide {
                bounce_allowance
            } else {
                allowed_seconds
            }
            .saturating_add(slower);
            let lasted = outage.end.unwrap_or(now) - outage.start;
            if lasted > allowed {
                self.outages_reported.insert(outage.start);
                let elapsed = |at: i64| u64::try_from(at - start_unix).unwrap_or(0);
                self.violate(
                    UNAVAILABLE_BY_OPERATOR,
                    elapsed(outage.start),
                    0,
                    format!(
                        "an operator action made the database unavailable for {lasted} s{} (one recovery allows {allowed} s): {}",
                        if outage.end.is_none() { " so far" } else { "" },
                        outage.cause
                    ),
                );
            }
        }
    }
}

/// When actions happened (unix seconds), for outage attribution: the operator's (with
/// whether each was the one cluster-wide kill of a bounce), and users' acts and faults.
#[derive(Debug, Clone, Copy)]
pub struct ActionTimes<'a> {
    /// The operator's disruptive actions, each with whether it was the cluster-wide kill.
    pub operator: &'a [(i64, bool)],
    /// Users' acts and faults.
    pub others: &'a [i64],
}

/// How long (seconds) an outage an operator action began may last.
#[derive(Debug, Clone, Copy)]
pub struct OutageAllowance {
    /// Any action: one recovery.
    pub recovery: i64,
    /// The one cluster-wide kill of a bounce: a restart plus a recovery.
    pub bounce: i64,
}

/// Whether the zones out of service exceed the tolerance: more than `tolerance` zones;
/// in three_data_hall (`zone_halls` not empty) more than one whole data hall plus
/// `tolerance - 1` zones elsewhere, which is what that mode survives.
fn beyond(
    down: &BTreeSet<String>,
    tolerance: usize,
    zone_halls: &BTreeMap<String, String>,
) -> bool {
    if zone_halls.is_empty() {
        return down.len() > tolerance;
    }
    let mut per_hall: BTreeMap<String, usize> = BTreeMap::new();
    for zone in down {
        let hall = zone_halls
            .get(zone)
            .map_or_else(|| format!("zone:{zone}"), |hall| format!("hall:{hall}"));
        *per_hall.entry(hall).or_insert(0) += 1;
    }
    let largest = per_hall.values().max().copied().unwrap_or(0);
    down.len() - largest > tolerance.saturating_sub(1)
}

/// Outages that overlap, or follow each other within `gap` seconds, are one outage,
/// unless one of them began at a user's act or a fault alone (`by_others_only`).
fn merge_outages(
    outages: &[Outage],
    gap: i64,
    by_others_only: impl Fn(i64) -> bool,
) -> Vec<Outage> {
    let mut sorted = outages.to_vec();
    sorted.sort_by_key(|outage| outage.start);
    let mut merged: Vec<Outage> = Vec::new();
    for outage in sorted {
        if let Some(last) = merged.last_mut() {
            let last_end = last.end;
            // An outage a user or a fault began is not part of the operator's storm
            // (issue 26, seed 136: a user evicted the only replica's pod 2 s after the
            // recovery of an operator's pod deletion ended).
            let storm = !by_others_only(last.start) && !by_others_only(outage.start);
            if storm && last_end.is_none_or(|end| outage.start <= end.saturating_add(gap)) {
                last.end = match (last_end, outage.end) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
                if !last.cause.contains(&outage.cause) {
                    last.cause = format!("{}, then {}", last.cause, outage.cause);
                }
                last.recovery_seconds = last.recovery_seconds.max(outage.recovery_seconds);
                continue;
            }
        }
        merged.push(outage);
    }
    merged
}
