//! Whether the simulated database is available and healthy, the data state it reports,
//! and how many zone failures it tolerates.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::api::ProcessClass;

use super::records::Recovery;
use super::recovery::QUORUM_LOST;
use super::state::State;

/// The database's health at one instant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Health {
    /// A majority of coordinators runs one protocol.
    pub quorum: bool,
    /// `configure new` has happened.
    pub configured: bool,
    /// A transaction system is recruited and its recovery is over.
    pub recovered: bool,
    /// Accepts transactions.
    pub available: bool,
    /// Available, fully replicated and not moving data.
    pub healthy: bool,
    /// Every shard has all its replicas live, in distinct zones.
    pub full_replication: bool,
    /// Why the database is unavailable.
    pub cause: Option<String>,
    /// `cluster.data.state`: every replica counted only while its server serves.
    pub data: DataState,
    /// The team trackers' state (`cluster.data.team_trackers[].state`): data
    /// distribution's view, where a replica counts until its server is declared failed
    /// ([`super::records::DataSummary::teams`]).
    pub teams: DataState,
    /// Bytes of moves in flight and queued.
    pub in_flight_bytes: f64,
    pub in_queue_bytes: f64,
}

/// `cluster.data.state` and the movement priority behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DataState {
    pub name: &'static str,
    pub description: &'static str,
    pub healthy: bool,
    pub min_replicas_remaining: usize,
    /// FoundationDB's data distribution priority of the most urgent work.
    pub highest_priority: i64,
}

pub(crate) fn assess(state: &State) -> Health {
    let quorum = state.cluster_version().is_some();
    let configured = state.configuration.is_some();
    let recovered = state.recovery == Recovery::Recovered && state.transaction_system.is_some();
    let summary = &state.summary;
    let data_ok = summary.placed && summary.without_live_replica == 0;
    let available = quorum && configured && recovered && data_ok;
    let cause = if available {
        None
    } else if !quorum {
        Some(match state.recovery.reason() {
            Some(reason) if reason != QUORUM_LOST => format!("recovery after {reason}"),
            _ => "no quorum of coordinators".to_owned(),
        })
    } else if !configured {
        Some("the database is not configured".to_owned())
    } else if !recovered {
        Some(match state.recovery.reason() {
            Some(QUORUM_LOST) => "no quorum of coordinators".to_owned(),
            reason => format!(
                "recovery after {}",
                reason.unwrap_or("a transaction system change")
            ),
        })
    } else if !summary.placed {
        Some("no storage servers".to_owned())
    } else if state.data.as_ref().is_some_and(|d| d.lost > 0) {
        Some("lost shards".to_owned())
    } else {
        Some("shards without a live replica".to_owned())
    };
    let summary_counts = &state.summary;
    let data = data_state(
        state,
        summary_counts.without_live_replica,
        summary_counts.min_live_replicas,
        summary_counts.under_replicated,
    );
    let teams = &summary_counts.teams;
    let teams = data_state(
        state,
        teams.without_replica,
        teams.min_replicas,
        teams.under_replicated,
    );
    let (in_flight_bytes, in_queue_bytes) = state.movement.in_flight_and_queued();
    let full_replication =
        summary.placed && summary.without_live_replica == 0 && summary.under_replicated == 0;
    Health {
        quorum,
        configured,
        recovered,
        available,
        healthy: available && data.healthy && !state.movement.has_work_besides_rebalancing(),
        full_replication,
        cause,
        data,
        teams,
        in_flight_bytes,
        in_queue_bytes,
    }
}

/// The state FoundationDB reports for shards of which `without` have no replica left,
/// the worst has `min_replicas` and `under_replicated` lack distinct zones (the leaving
/// and stale replicas come from the summary).
fn data_state(
    state: &State,
    without: usize,
    min_replicas: usize,
    under_replicated: usize,
) -> DataState {
    let summary = &state.summary;
    let replication = state.replicas();
    let (name, description, healthy, highest_priority) = if !summary.placed {
        ("initializing", "Initializing data distribution.", false, 0)
    } else if without > 0 {
        (
            "missing_data",
            "No replicas remain of some data.",
            false,
            809,
        )
    } else if min_replicas <= 1 && replication > 1 {
        (
            "healing",
            "Only one replica remains of some data.",
            false,
            800,
        )
    } else if under_replicated > 0 || min_replicas < replication {
        ("healing", "Restoring replication factor.", false, 700)
    } else if summary.leaving_replicas > 0 {
        (
            "healthy_removing_server",
            "Removing storage server.",
            true,
            150,
        )
    } else if summary.stale_replicas > 0 {
        (
            "healthy_rebalancing",
            "Rewriting data for the new storage engine.",
            true,
            120,
        )
    } else if state.movement.is_rebalancing() {
        // `PRIORITY_REBALANCE_UNDERUTILIZED_TEAM` (120) maps to this name in
        // `fdbserver/Status.actor.cpp` (release-7.1).
        ("healthy_rebalancing", "Rebalancing", true, 120)
    } else {
        ("healthy", "", true, 0)
    };
    DataState {
        name,
        description,
        healthy,
        min_replicas_remaining: if summary.placed { min_replicas } else { 0 },
        highest_priority,
    }
}

/// `(max_zone_failures_without_losing_data, ..._availability)`: the fewest of what the
/// storage replicas (live zones of the worst shard, less one), the logs (replicas of the
/// log data; zones able to host logs beyond the replication factor, counted as
/// `getExtraTLogEligibleZones` in FoundationDB's fdbserver/Status.actor.cpp does) and the coordinators
/// (zones whose loss leaves a majority) survive.
pub(crate) fn fault_tolerance(state: &State, health: &Health) -> (i64, i64) {
    if !health.available {
        return (0, 0);
    }
    let replication = i64::try_from(state.replicas()).unwrap_or(1);
    let storage = i64::try_from(state.summary.min_live_zones).unwrap_or(0) - 1;
    let version = state.cluster_version();
    let zone_of = |address: &fdb_shared::address::ProcessAddress| {
        state.processes.get(address).map(|p| p.zone())
    };
    let log_zones: BTreeSet<String> = state
        .transaction_system
        .iter()
        .flat_map(|system| system.logs())
        .filter_map(zone_of)
        .collect();
    let log_data = replication.min(i64::try_from(log_zones.len()).unwrap_or(0)) - 1;
    let log_capable: BTreeSet<String> = state
        .eligible()
        .into_iter()
        .filter(|p| {
            // A process may host a log when its class fits the role at all
            // (`machineClassFitness(TLog) < NeverAssign` in FoundationDB's
            // fdbrpc/Locality.cpp): storage processes count, as the worst fit.
            matches!(
                p.launch.class,
                ProcessClass::Log
                    | ProcessClass::Transaction
                    | ProcessClass::Unset
                    | ProcessClass::Storage
            )
        })
        .map(|p| p.zone())
        .collect();
    let log_availability = i64::try_from(log_capable.len()).unwrap_or(0) - replication;
    let mut coordinator_zones: BTreeMap<String, i64> = BTreeMap::new();
    let total = state.coordinator_processes().len();
    for process in state.coordinator_processes().into_iter().flatten() {
        if state.is_member(process, version.as_ref()) {
            *coordinator_zones.entry(process.zone()).or_insert(0) += 1;
        }
    }
    let majority = i64::try_from(total / 2 + 1).unwrap_or(1);
    let mut reachable: i64 = coordinator_zones.values().sum();
    let mut sizes: Vec<i64> = coordinator_zones.into_values().collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let mut coordinators = 0;
    for size in sizes {
        if reachable - size < majority {
            break;
        }
        reachable -= size;
        coordinators += 1;
    }
    let data = storage.min(log_data).min(coordinators).max(0);
    let availability = storage.min(log_availability).min(coordinators).max(0);
    (data, availability)
}
