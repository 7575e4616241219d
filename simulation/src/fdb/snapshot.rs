//! A read-only view of the simulated database for the simulation's result JSON.

use std::collections::BTreeMap;

use fdb_shared::FdbVersion;
use fdb_shared::api::{DatabaseConfiguration, ProcessClass};
use serde::Serialize;

use super::availability::assess;
use super::render::roles_of;
use super::render_configuration::render_configuration;
use super::shards::MIB;
use super::state::State;
use fdb_operator::fdb::PendingUpgrade;

/// What the world reports about FoundationDB (the `fdb` block of the result).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SimFdbSnapshot {
    /// Whether the database accepts transactions.
    pub available: bool,
    /// Whether `configure new` has happened.
    pub configured: bool,
    /// The version most member processes run.
    pub version: Option<FdbVersion>,
    /// The database configuration as the database reports it (`status json`'s, without
    /// the exclusions: engine names of the running version, `proxies=N` split into commit
    /// and GRV proxies as FoundationDB stores it).
    pub configuration: Option<DatabaseConfiguration>,
    /// The connection string.
    pub connection_string: Option<String>,
    /// The coordinators' resolved `IP:port` (also when the connection string has DNS names).
    pub coordinators: Vec<String>,
    /// The exclusions in effect.
    pub excluded: Vec<String>,
    /// The zone under maintenance.
    pub maintenance_zone: Option<String>,
    /// Whether `status json`'s team trackers (`cluster.data.team_trackers[].state`) all
    /// report healthy: data distribution's view, where a silent server's replicas count
    /// until it is declared failed, and never fail inside the maintenance zone.
    pub teams_healthy: bool,
    /// Recoveries so far.
    pub recoveries: u64,
    /// Every recovery so far, in order: when it started and completed (seconds since the
    /// start of the run) and why. Judging how close together recoveries come needs this.
    pub recovery_log: Vec<SimRecovery>,
    /// MiB of data moved since the start (re-replication, exclusions, redundancy and
    /// storage engine changes).
    #[serde(rename = "movedMiB")]
    pub moved_mib: f64,
    /// Shards that lost their last replica.
    pub lost_shards: u64,
    /// Every `force_recovery_with_data_loss` a user ran, with the writes it lost.
    pub forced_recoveries: Vec<super::ForcedRecovery>,
    /// Running processes, by address.
    pub processes: Vec<SimProcessSnapshot>,
    /// A digest of the user data (`empty` for an empty database).
    pub data_digest: String,
    /// The database version now.
    pub data_version: i64,
    /// Backup agents running.
    pub backup_agents: u32,
    /// The lock ID stored in the global operator lock key, whether or not it expired.
    pub lock_holder: Option<String>,
    /// The pending-upgrade list, as `<target version>/<process group ID>`.
    pub pending_upgrades: Vec<String>,
    /// The clients `status json` lists now, as `<address> <version> <log group>` (the
    /// operator's tool runs among them for 10 s each).
    pub clients: Vec<String>,
}

/// One recovery of the transaction system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SimRecovery {
    /// Seconds since the start of the run when it began recovering.
    pub started: i64,
    /// Seconds since the start of the run when it completed (`None`: still running, or
    /// it went back to waiting for processes and the next entry is its retry).
    pub recovered: Option<i64>,
    /// Why it happened ("transaction process 127.0.3.4:4501 excluded").
    pub reason: String,
}

/// One running process.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SimProcessSnapshot {
    /// Public address.
    pub address: String,
    /// Process class.
    pub class: ProcessClass,
    /// Localities (`instance_id`, `zoneid`, ...).
    pub locality: BTreeMap<String, String>,
    /// Command line.
    pub command_line: String,
    /// Version.
    pub version: FdbVersion,
    /// Whether an exclusion matches it.
    pub excluded: bool,
    /// Roles it plays (empty when it cannot join the database).
    pub roles: Vec<String>,
    /// Seconds since it started.
    pub uptime_seconds: i64,
    /// Shard replicas on its disk (storage processes only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shards: Option<usize>,
}

pub(crate) fn snapshot(state: &State, now: i64) -> SimFdbSnapshot {
    let health = assess(state);
    let version = state.cluster_version();
    let mut counts: BTreeMap<FdbVersion, usize> = BTreeMap::new();
    for process in state
        .processes
        .values()
        .filter(|p| state.is_member(p, version.as_ref()))
    {
        *counts.entry(process.launch.version).or_insert(0) += 1;
    }
    let processes = state
        .processes
        .values()
        .filter(|p| p.running)
        .map(|p| SimProcessSnapshot {
            address: p.launch.address.to_string(),
            class: p.launch.class,
            locality: p.launch.locality.clone(),
            command_line: p.launch.command_line.clone(),
            version: p.launch.version,
            excluded: state.is_excluded(p),
            roles: if state.is_member(p, version.as_ref()) {
                roles_of(state, p).into_iter().map(str::to_owned).collect()
            } else {
                Vec::new()
            },
            uptime_seconds: (now - p.started_unix).max(0),
            shards: State::is_storage(p).then(|| state.held(&p.disk)),
        })
        .collect();
    SimFdbSnapshot {
        available: health.available,
        configured: health.configured,
        version: counts
            .into_iter()
            .max_by_key(|(version, count)| (*count, *version))
            .map(|(version, _)| version),
        configuration: reported_configuration(state),
        connection_string: state.connection_string.as_ref().map(ToString::to_string),
        coordinators: state
            .coordinator_processes()
            .into_iter()
            .flatten()
            .map(|p| p.launch.address.without_flags())
            .collect(),
        excluded: state.exclusions.iter().map(ToString::to_string).collect(),
        maintenance_zone: state.maintenance.as_ref().map(|(zone, _)| zone.clone()),
        teams_healthy: health.teams.healthy,
        recoveries: state.recoveries,
        recovery_log: state
            .recovery_log
            .iter()
            .map(|r| SimRecovery {
                started: r.started - state.origin,
                recovered: r.recovered.map(|at| at - state.origin),
                reason: r.reason.clone(),
            })
            .collect(),
        moved_mib: (state.movement.moved_bytes / MIB * 100.0).round() / 100.0,
        lost_shards: state.data.as_ref().map_or(0, |d| d.lost),
        forced_recoveries: state.failover.forced.clone(),
        processes,
        data_digest: state.user_data.digest().to_owned(),
        data_version: super::user_data::version_at(now - state.origin),
        backup_agents: state.backups.agents,
        lock_holder: state.lock.as_ref().map(|lock| lock.lock_id.clone()),
        pending_upgrades: state
            .system_keys
            .keys()
            .filter_map(|key| PendingUpgrade::from_key(key))
            .map(|entry| format!("{}/{}", entry.version, entry.group))
            .collect(),
        clients: state
            .clients
            .iter()
            .map(|c| format!("{} {} {}", c.address, c.version, c.log_group))
            .collect(),
    }
}

/// The configuration as `status json` reports it, the exclusions left out (they are
/// `excluded`).
fn reported_configuration(state: &State) -> Option<DatabaseConfiguration> {
    let rendered = render_configuration(state, state.cluster_version().as_ref());
    let mut configuration: DatabaseConfiguration = serde_json::from_value(rendered).ok()?;
    configuration.excluded_servers.clear();
    Some(configuration)
}
