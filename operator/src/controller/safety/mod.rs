//! The safety gates every disruptive step shares (docs/operator.md, "The steps", and
//! docs/upgrades.md): pure functions of the snapshot, each `Ok(())` or a [`Refusal`] that
//! names what blocks (the group, the zone, the seconds left). Steps apply the gates of
//! their decision; the rules every plan shares ([`paced`], [`sole_disruption`], the lock)
//! are applied by the executor (`pass/executor.rs`) to each action that declares it needs
//! them.
//!
//! | action | gates in the step's decision | rules of the executor |
//! |---|---|---|
//! | change the database configuration | [`available_and_healthy`], [`recovered_for`] |
//! lock, [`paced`] |
//! | change coordinators | [`available`] | lock, [`paced`] |
//! | exclude | [`available`], [`recovered_for`], [`no_recently_missing`] | lock, [`paced`]
//! when one [`causes_recovery`] |
//! | include a transaction process | | lock, [`paced`] |
//! | take pods of zones down | [`may_take_down`], [`maintenance`] | lock, one disruption,
//! [`paced`] when one [`causes_recovery`] |
//! | bounce (knobs or upgrade) | [`available`], [`minimum_uptime`] | lock, one disruption
//! ([`sole_disruption`]), [`paced`] |
//!
//! [`paced`] is the one pacing rule (issue 26): every action that causes a recovery
//! waits until the database is available, its last recovery is
//! [`MINIMUM_SECONDS_SINCE_RECOVERY`] old, and no recovery is still coming from an
//! earlier action. It reads the database and the pods, not the operator's memory, so it
//! holds across operator restarts.

pub(crate) mod exclusion_sync;
pub(crate) mod lock_release;
pub(crate) mod locks;
pub(crate) mod restart_sync;
mod zones;

pub(crate) use zones::{group_zone, may_take_down, zone_budget};

use std::fmt;

use fdb_shared::api::ProcessClass;
use fdb_shared::api::cluster::ProcessGroupConditionType;
use fdb_shared::cluster_math::uses_locks;
use fdb_shared::status_json::DatabaseStatus;

use super::removals::placement;
use super::snapshot::{ClusterSnapshot, DatabaseState, GroupView};

/// How long after a recovery every recovery-causing action waits ([`paced`]; docs/operations.md,
/// "Pacing: one recovery at a time").
pub(crate) const MINIMUM_SECONDS_SINCE_RECOVERY: f64 = 120.0;

/// How long exclusions of a class wait after one of its groups went missing (the gates in
/// `steps/exclude_instances/mod.rs`): long enough to tell a restart from a loss.
pub(crate) const MISSING_PROCESSES_GRACE_SECONDS: i64 = 300;

/// A zone that is down, and the groups that make it so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ZoneDown {
    /// The zone (or, when a group's zone is unknown, the group counted as its own zone).
    pub zone: String,
    /// The groups of the zone that are down.
    pub groups: Vec<String>,
}

/// The actions that change the database for every operator instance managing it, and so
/// take the global lock when locks are in use (docs/operations.md, "Locks").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockedAction {
    /// `configure`.
    ConfigureDatabase,
    /// `coordinators`.
    ChangeCoordinators,
    /// `exclude`.
    Exclude,
    /// `include`.
    Include,
    /// `kill`.
    Bounce,
    /// Deleting pods (rolling updates, removals).
    DeletePods,
    /// Setting or resetting the maintenance zone.
    Maintenance,
}

impl fmt::Display for LockedAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ConfigureDatabase => "changing the database configuration",
            Self::ChangeCoordinators => "changing coordinators",
            Self::Exclude => "excluding processes",
            Self::Include => "including processes",
            Self::Bounce => "bouncing processes",
            Self::DeletePods => "deleting pods",
            Self::Maintenance => "setting the maintenance zone",
        })
    }
}

/// Whether an action must hold the global lock first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LockNeed {
    /// Locks are not in use for this cluster.
    NotNeeded,
    /// The lock, under this ID (`processGroupIDPrefix`), must be held.
    Needed {
        /// The lock ID.
        lock_id: String,
    },
}

/// Why a gate refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum Refusal {
    /// There is no connection string yet.
    #[error("there is no database yet")]
    NoDatabase,
    /// `status json` could not be read.
    #[error("cannot read the database status: {message}")]
    StatusUnreadable {
        /// Why.
        message: String,
    },
    /// The database is unavailable.
    #[error("the database is unavailable")]
    Unavailable,
    /// The database is available but not healthy.
    #[error("the database is not healthy (data distribution: {data_state})")]
    Unhealthy {
        /// `cluster.data.state.name`.
        data_state: String,
    },
    /// The pass already deleted a pod: a restart of every process waits for the next.
    #[error("this pass deleted pod {pod}; the restart waits for the next pass")]
    PodDeletedThisPass {
        /// The pod.
        pod: String,
    },
    /// The pass already took processes down (a kill).
    #[error(
        "this pass already disrupted the database ({action}); the next disruption waits for the next pass"
    )]
    DisruptedThisPass {
        /// What it did.
        action: String,
    },
    /// The pass already did something that causes a recovery.
    #[error(
        "this pass already caused a recovery ({action}); the next recovery-causing action waits for it"
    )]
    RecoveryCausedThisPass {
        /// What it did.
        action: String,
    },
    /// A recovery is still coming: a pod whose processes it needs is terminating.
    #[error("pod {pod} is terminating while it hosts {what}; the recovery that causes comes first")]
    RecoveryPending {
        /// The terminating pod.
        pod: String,
        /// What it hosts (a coordinator, a transaction process).
        what: String,
    },
    /// The last recovery is too recent.
    #[error(
        "the last recovery was {seconds_ago:.0}s ago; {left:.0}s left of the {minimum:.0}s wait",
        left = .minimum - .seconds_ago
    )]
    RecentRecovery {
        /// Seconds since the last recovery.
        seconds_ago: f64,
        /// Seconds that must have passed.
        minimum: f64,
    },
    /// A process has not been up long enough.
    #[error(
        "process {address} of {group} has been up {uptime:.0}s; {left:.0}s left of minimumUptimeSecondsForBounce ({minimum:.0}s)",
        left = .minimum - .uptime
    )]
    UptimeTooShort {
        /// The process group ID (`locality_instance_id`).
        group: String,
        /// The process's address.
        address: String,
        /// Its uptime.
        uptime: f64,
        /// The minimum.
        minimum: f64,
    },
    /// A group of the class went missing recently.
    #[error(
        "{class} process group {group} has been missing processes for {missing_for}s; {left}s left of the {grace}s wait",
        left = .grace - .missing_for
    )]
    RecentlyMissing {
        /// The group.
        group: String,
        /// Its class.
        class: ProcessClass,
        /// Seconds since its processes went missing.
        missing_for: i64,
        /// The wait.
        grace: i64,
    },
    /// Taking the zones down would exceed the fault tolerance.
    #[error("{}", describe_budget(.requested, .down, .remaining))]
    FaultTolerance {
        /// The zones the action would take down that are not down yet.
        requested: Vec<String>,
        /// Zones down now.
        down: Vec<ZoneDown>,
        /// How many more zones may go down.
        remaining: usize,
    },
    /// Another zone is under maintenance.
    #[error("zone {zone} is under maintenance{}", .seconds_left.map(|s| format!(" ({s:.0}s left)")).unwrap_or_default())]
    UnderMaintenance {
        /// The zone under maintenance.
        zone: String,
        /// Seconds left of the maintenance window, when reported.
        seconds_left: Option<f64>,
    },
    /// The action needs the global lock.
    #[error("{action} needs the operator lock {lock_id:?}, which is not held")]
    #[cfg_attr(not(test), expect(dead_code, reason = "built by the tests only"))]
    LockNotHeld {
        /// The action.
        action: LockedAction,
        /// The lock ID.
        lock_id: String,
    },
    /// Another operator instance holds the global lock.
    #[error("{action} needs the operator lock, which {holder:?} holds for {seconds_left}s more")]
    LockHeldByOther {
        /// The action.
        action: LockedAction,
        /// The holder's lock ID.
        holder: String,
        /// Seconds until the holder's lock expires.
        seconds_left: i64,
    },
    /// This instance's lock ID is on the deny list.
    #[error(
        "{action} needs the operator lock, but lock ID {lock_id:?} is on the deny list (spec.lockOptions.denyList with allow: true removes it)"
    )]
    LockDenied {
        /// The action.
        action: LockedAction,
        /// The denied lock ID.
        lock_id: String,
    },
}

fn describe_budget(requested: &[String], down: &[ZoneDown], remaining: &usize) -> String {
    let down_text = if down.is_empty() {
        "no zone is down".to_owned()
    } else {
        let zones: Vec<String> = down
            .iter()
            .map(|z| format!("{} ({})", z.zone, z.groups.join(", ")))
            .collect();
        format!("zones down: {}", zones.join("; "))
    };
    format!(
        "taking down zones {} exceeds the fault tolerance: {down_text}; {remaining} more may go down",
        requested.join(", ")
    )
}

/// The database status, or why there is none to judge from.
pub(crate) fn database(snapshot: &ClusterSnapshot) -> Result<&DatabaseStatus, Refusal> {
    match snapshot.database() {
        DatabaseState::Read(status) => Ok(status),
        DatabaseState::NotCreated => Err(Refusal::NoDatabase),
        DatabaseState::Unreadable(error) => Err(Refusal::StatusUnreadable {
            message: fdb_shared::error_chain::chain_text(&**error),
        }),
    }
}

/// The database is available (as the client sees it).
pub(crate) fn available(snapshot: &ClusterSnapshot) -> Result<(), Refusal> {
    if database(snapshot)?.is_available() {
        Ok(())
    } else {
        Err(Refusal::Unavailable)
    }
}

/// The database is available and healthy.
pub(crate) fn available_and_healthy(snapshot: &ClusterSnapshot) -> Result<(), Refusal> {
    available(snapshot)?;
    let db = database(snapshot)?;
    if db.is_healthy() {
        Ok(())
    } else {
        Err(Refusal::Unhealthy {
            data_state: db
                .cluster
                .data
                .state
                .name
                .clone()
                .unwrap_or_else(|| "unknown".to_owned()),
        })
    }
}

/// A bounce is its pass's only disruption: together with a pod the pass deleted (a
/// terminal pod recreated, a buggify change) it would not be one restart of every
/// process but that and a pod going away at once, which the fault-tolerance budget of
/// the pass did not count. `deleted_pods`: the pods the pass deleted so far
/// (`PassRecord::deleted_pods` of `pass/facts.rs`).
pub(crate) fn sole_disruption(deleted_pods: &[String]) -> Result<(), Refusal> {
    match deleted_pods.first() {
        Some(pod) => Err(Refusal::PodDeletedThisPass { pod: pod.clone() }),
        None => Ok(()),
    }
}

/// The last recovery was at least `minimum_seconds` ago (or is not reported).
pub(crate) fn recovered_for(
    snapshot: &ClusterSnapshot,
    minimum_seconds: f64,
) -> Result<(), Refusal> {
    match database(snapshot)?
        .cluster
        .recovery_state
        .seconds_since_last_recovered
    {
        Some(seconds) if seconds < minimum_seconds => Err(Refusal::RecentRecovery {
            seconds_ago: seconds,
            minimum: minimum_seconds,
        }),
        _ => Ok(()),
    }
}

/// Whether processes of `class` may hold roles of the transaction system (logs, proxies,
/// resolvers, the master, the cluster controller...): taking one down that does causes a
/// recovery. Storage, coordinator-only, backup and test processes do not.
pub(crate) fn runs_transaction_roles(class: ProcessClass) -> bool {
    !matches!(
        class,
        ProcessClass::Storage
            | ProcessClass::Coordinator
            | ProcessClass::Backup
            | ProcessClass::FastRestore
            | ProcessClass::StorageCache
            | ProcessClass::Test
            | ProcessClass::Tester
    )
}

/// What of the group makes taking it down (deleting its pod, killing, excluding or
/// including its processes) cause a recovery, if anything: a coordinator it hosts, or a
/// process of a transaction class that is not excluded.
pub(crate) fn causes_recovery(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> Option<String> {
    if let Some(coordinator) = placement::hosted_coordinator(snapshot, group) {
        return Some(format!("coordinator {coordinator}"));
    }
    let class = group.status.process_class;
    let excluded = group.status.exclusion_timestamp.is_some()
        || (group.is_reporting() && group.processes().all(|p| p.excluded));
    (runs_transaction_roles(class) && !excluded)
        .then(|| format!("{class} process group {}", group.id()))
}

/// The one pacing rule for every action that causes a recovery (a kill, an exclusion or
/// inclusion of a transaction process, a coordinators change, `configure`, deleting a
/// pod that [`causes_recovery`]): nothing earlier in this pass caused one
/// (`caused_this_pass`, see `PassRecord::recovery_caused` of `pass/facts.rs`), the database
/// is available, its last recovery is [`MINIMUM_SECONDS_SINCE_RECOVERY`] old, and no pod
/// hosting a transaction process or coordinator is terminating with its processes still
/// reporting (its recovery is still to come). Two recoveries back to back are minutes
/// of unavailability where one short one was needed.
/// With `ends_mixed_versions` (`Planned::ends_mixed_versions`) neither availability nor
/// the last recovery's settling: they only keep processes on the target out longer.
pub(crate) fn paced(
    snapshot: &ClusterSnapshot,
    caused_this_pass: Option<&str>,
    ends_mixed_versions: bool,
) -> Result<(), Refusal> {
    if let Some(action) = caused_this_pass {
        return Err(Refusal::RecoveryCausedThisPass {
            action: action.to_owned(),
        });
    }
    if !ends_mixed_versions {
        available(snapshot)?;
        recovered_for(snapshot, MINIMUM_SECONDS_SINCE_RECOVERY)?;
    }
    let pending = snapshot.groups().find_map(|group| {
        let pod = group.pod_head()?;
        pod.metadata.deletion_timestamp.as_ref()?;
        if !group.is_reporting() {
            return None;
        }
        Some((
            pod.metadata.name.clone()?,
            causes_recovery(snapshot, &group)?,
        ))
    });
    match pending {
        Some((pod, what)) => Err(Refusal::RecoveryPending { pod, what }),
        None => Ok(()),
    }
}

/// Every reporting, non-excluded process has been up `minimumUptimeSecondsForBounce`
/// (an uptime of exactly 0 is a status artefact and is skipped, as the Go operator
/// does). The refusal names the youngest process.
pub(crate) fn minimum_uptime(snapshot: &ClusterSnapshot) -> Result<(), Refusal> {
    let minimum = f64::from(snapshot.spec().minimum_uptime_seconds_for_bounce());
    let youngest = database(snapshot)?
        .cluster
        .processes
        .values()
        .filter(|p| !p.excluded && p.locality.instance_id.is_some())
        .filter_map(|p| Some((p, p.uptime_seconds.filter(|u| *u > 0.0)?)))
        .min_by(|(_, a), (_, b)| a.total_cmp(b));
    match youngest {
        Some((process, uptime)) if uptime < minimum => Err(Refusal::UptimeTooShort {
            group: process.locality.instance_id.clone().unwrap_or_default(),
            address: process
                .address
                .as_ref()
                .map_or_else(|| "without address".to_owned(), ToString::to_string),
            uptime,
            minimum,
        }),
        _ => Ok(()),
    }
}

/// No live group of `class` has been missing processes for less than
/// [`MISSING_PROCESSES_GRACE_SECONDS`] (from its `MissingProcesses` condition). The
/// refusal names the group with the longest wait left.
pub(crate) fn no_recently_missing(
    snapshot: &ClusterSnapshot,
    class: ProcessClass,
) -> Result<(), Refusal> {
    let now = snapshot.now_unix();
    let latest = snapshot
        .live_groups()
        .filter(|g| g.status.process_class == class)
        .filter_map(|g| {
            let since = g
                .status
                .condition_since(&ProcessGroupConditionType::MissingProcesses)?;
            Some((g.id(), now.saturating_sub(since)))
        })
        .filter(|(_, missing_for)| *missing_for < MISSING_PROCESSES_GRACE_SECONDS)
        .min_by_key(|(_, missing_for)| *missing_for);
    match latest {
        Some((group, missing_for)) => Err(Refusal::RecentlyMissing {
            group: group.to_owned(),
            class,
            missing_for,
            grace: MISSING_PROCESSES_GRACE_SECONDS,
        }),
        None => Ok(()),
    }
}

/// No zone other than `zone` is under maintenance (taking a second zone down while one
/// is in maintenance risks the data the maintenance keeps from being re-replicated).
pub(crate) fn maintenance(snapshot: &ClusterSnapshot, zone: &str) -> Result<(), Refusal> {
    let cluster = &database(snapshot)?.cluster;
    let seconds_left = cluster.maintenance_seconds_remaining;
    match cluster.maintenance_zone.as_deref() {
        Some(current) if !current.is_empty() && current != zone && seconds_left != Some(0.0) => {
            Err(Refusal::UnderMaintenance {
                zone: current.to_owned(),
                seconds_left,
            })
        }
        _ => Ok(()),
    }
}

/// Whether `action` needs the global lock: when locks are in use (multi-region, a zone
/// count, three_data_hall; not with `lockOptions.disableLocks`), every [`LockedAction`]
/// does. Taking the lock is the lock client's job; this is the decision.
pub(crate) fn lock_needed(snapshot: &ClusterSnapshot, _action: LockedAction) -> LockNeed {
    let spec = snapshot.spec();
    if uses_locks(spec) {
        LockNeed::Needed {
            lock_id: spec.process_group_id_prefix().to_owned(),
        }
    } else {
        LockNeed::NotNeeded
    }
}

/// `action` may run: it needs no lock, or the lock is `held`.
#[cfg(test)]
pub(crate) fn lock(
    snapshot: &ClusterSnapshot,
    action: LockedAction,
    held: bool,
) -> Result<(), Refusal> {
    match lock_needed(snapshot, action) {
        LockNeed::Needed { lock_id } if !held => Err(Refusal::LockNotHeld { action, lock_id }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
