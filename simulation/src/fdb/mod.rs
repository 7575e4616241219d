//! The simulated FoundationDB: processes, roles, shards and their replicas, data
//! distribution, exclusions, recoveries, protocol versions, coordinators, configuration,
//! maintenance, lock keys and clients, behind the same [`fdb_operator::fdb::AdminClient`]
//! interface as the real database.
//!
//! The data is `shards` shards with `replication factor` replicas each, on the disks of
//! storage processes in distinct zones ([`shards`], [`disks`]). Data distribution
//! ([`planner`]) re-replicates the shards of failed processes and moves them off excluded
//! ones at a rate per source ([`movement`]); recoveries take time ([`recovery`]);
//! transitions that happen by time alone take effect at their exact virtual time
//! ([`timeline`]).
//!
//! The world drives it:
//! - the simulated fdbmonitor calls [`SimulatedFdb::start_process`] for each process its
//!   conf describes (again after a kill, with what it re-reads from the current conf
//!   and binary) and [`SimulatedFdb::stop_process`] when a process goes away;
//!   [`SimulatedFdb::remove_process`] when its disk goes too;
//! - after advancing the clock the world calls [`SimulatedFdb::tick`], and steps time to
//!   [`SimulatedFdb::next_due`];
//! - a kill through the admin interface stops the processes at once; the world drains
//!   [`SimulatedFdb::take_kill_requests`] (the kills whose `restartSeconds` are up) and
//!   restarts them.

mod admin;
mod availability;
mod backup;
mod backup_api;
mod backup_expiry;
mod coordinated_state;
mod coordinator_moves;
mod disks;
mod engines;
mod exclude_check;
mod failback;
mod failover;
mod faults;
mod forced_recovery;
mod forwards;
mod inspect;
mod movement;
mod planner;
mod processes;
mod rebalance;
mod records;
mod recovery;
mod regions;
mod render;
mod render_configuration;
mod render_metrics;
mod roles;
mod seed;
mod shards;
mod snapshot;
mod state;
mod status_schema;
mod summary;
#[cfg(test)]
mod tests;
mod timeline;
mod tool_api;
mod user_data;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use fdb_shared::address::ProcessAddress;
use fdb_shared::connection_string::ConnectionString;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use self::disks::{Disk, disk_key};
use self::state::State;
use self::timeline::{catch_up, refresh};
use fdb_operator::clock::Clock;

pub use backup::{BlobContainer, BlobSnapshot, RESTORE_SECONDS};
pub use backup_expiry::{ExpireRefusal, ExpireRequest, VERSIONS_PER_DAY};
pub use coordinated_state::COORDINATION_FILES;
pub use exclude_check::ExcludeRefusal;
pub use forced_recovery::{ForceRecoveryHang, REMOTE_LAG_SECONDS};
pub use inspect::ServiceGaps;
pub use processes::ProcessLaunch;
pub use records::{ForcedRecovery, Outage};
pub use snapshot::{SimFdbSnapshot, SimProcessSnapshot};
pub use status_schema::{OffSchemaSink, SchemaSource, StatusCheck, foundationdb_schema};
pub use tool_api::{TOOL_CLIENT_SECONDS, ToolClient};
pub use user_data::{EMPTY_DIGEST, VERSIONS_PER_SECOND, WRITE_INTERVAL_SECONDS};

/// The name of the span around the simulated database's share of the operator's
/// `status json` read: rendering and printing the document, what fdbcli does in a
/// process of its own in production. The operator's share, parsing the printed text, is
/// outside it, so that a measure of the operator's CPU can leave the tool's out
/// (`benches/controller_scale.rs`).
pub const SIMULATED_FDBCLI: &str = "simulated_fdbcli";

/// Tunables of the simulated database (the scenario's `world` settings).
#[derive(Debug, Clone, PartialEq)]
pub struct SimFdbSettings {
    /// Data per storage process when the database is created, in GiB (default 1).
    pub storage_gib: f64,
    /// Shards the data is split into (default 256).
    pub shards: u32,
    /// Data movement rate per source process, in MiB/s (default 50).
    pub move_mib_per_second: f64,
    /// When set, the movement rate is such that a fully loaded storage process
    /// (`storage_gib`) drains in this many seconds, instead of `move_mib_per_second`.
    pub exclusion_seconds: Option<u64>,
    /// Seconds of silence after which data distribution declares a storage process
    /// failed and re-replicates its shards (default 60).
    pub failure_detection_seconds: u64,
    /// Seconds one recovery takes, the database unavailable meanwhile (default 5).
    pub recovery_seconds: u64,
    /// Seconds before fdbmonitor brings a killed process back (default 5).
    pub restart_seconds: u64,
    /// Seed of the random choices (generation IDs, process IDs, placement ties,
    /// injected timeouts).
    pub seed: u64,
}

impl Default for SimFdbSettings {
    fn default() -> Self {
        Self {
            storage_gib: 1.0,
            shards: 256,
            move_mib_per_second: 50.0,
            exclusion_seconds: None,
            failure_detection_seconds: 60,
            recovery_seconds: 5,
            restart_seconds: 5,
            seed: 1,
        }
    }
}

/// The simulated database. Clones share the same database.
#[derive(Debug, Clone)]
pub struct SimulatedFdb {
    clock: Arc<dyn Clock>,
    state: Arc<Mutex<State>>,
    /// Matches every rendered `status json` against FoundationDB's schema, once on.
    status_check: Arc<Mutex<Option<StatusCheck>>>,
}

impl SimulatedFdb {
    /// An empty database (no processes yet).
    pub fn new(clock: Arc<dyn Clock>, settings: SimFdbSettings) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(settings.seed);
        let now = clock.now_unix();
        Self {
            clock,
            state: Arc::new(Mutex::new(State::new(settings, rng, now))),
            status_check: Arc::default(),
        }
    }

    /// Whether `other` is a handle on this same database (clones share it).
    pub fn same_database(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn now(&self) -> i64 {
        self.clock.now_unix()
    }

    /// Starts (or restarts) a process. The data lives on its disk (`data_identity`), not
    /// at an address: a process on a disk the database knows, also at a new IP, keeps
    /// that disk's process ID and serves its replicas again; uptime starts at 0.
    /// The first cluster file seen defines the connection string.
    pub fn start_process(&self, launch: ProcessLaunch) {
        let now = self.now();
        let mut state = self.lock();
        catch_up(&mut state, now);
        if state.connection_string.is_none()
            && let Ok(connection) = ConnectionString::parse(&launch.cluster_file_contents)
        {
            state.connection_string = Some(connection);
        }
        let disk = disk_key(&launch);
        let cluster_file = launch.cluster_file_contents.clone();
        coordinator_moves::remember_coordinator_disks(&mut state);
        state.pending_restarts.remove(&launch.address);
        // A stopped process that mounted this disk elsewhere is this one, moved.
        let moved_from: Vec<ProcessAddress> = state
            .processes
            .iter()
            .filter(|(address, p)| **address != launch.address && !p.running && p.disk == disk)
            .map(|(address, _)| address.clone())
            .collect();
        for address in moved_from {
            state.processes.remove(&address);
            state.pending_restarts.remove(&address);
        }
        coordinated_state::read_at_start(&mut state, &disk, launch.coordination_file.as_deref());
        let known = state.disks.get(&disk).map(|d| d.process_id.clone());
        let process_id = known.unwrap_or_else(|| state.random_process_id());
        let silent_since = state.disks.get(&disk).and_then(|d| d.silent_since);
        state.disks.insert(
            disk.clone(),
            Disk {
                launch: launch.clone(),
                process_id: process_id.clone(),
                silent_since,
            },
        );
        state.processes.insert(
            launch.address.clone(),
            processes::SimProcess {
                launch,
                process_id,
                started_unix: now,
                running: true,
                disk,
            },
        );
        coordinator_moves::adopt_moved_coordinators(&mut state, &cluster_file);
        state.dirty = true;
        refresh(&mut state, now);
    }

    /// Stops the process at `address` (pod gone, node down, process missing). Its disk
    /// (and the replicas on it) is kept in case it comes back; a pending kill restart is
    /// dropped.
    pub fn stop_process(&self, address: &ProcessAddress) {
        let now = self.now();
        let mut state = self.lock();
        catch_up(&mut state, now);
        if let Some(process) = state.processes.get_mut(address) {
            process.running = false;
        }
        state.pending_restarts.remove(address);
        state.dirty = true;
        refresh(&mut state, now);
    }

    /// Forgets the process at `address` and destroys its disk: the replicas on it are
    /// gone for good (a shard left without any is lost), and the coordinated state it
    /// held.
    pub fn remove_process(&self, address: &ProcessAddress) {
        let now = self.now();
        let mut state = self.lock();
        catch_up(&mut state, now);
        if let Some(process) = state.processes.remove(address)
            && !state.processes.values().any(|p| p.disk == process.disk)
        {
            state.disks.remove(&process.disk);
            state.forwards.remove(&process.disk);
            state.coordinated.disks.remove(&process.disk);
            if let Some(data) = state.data.as_mut() {
                data.destroy_disk(&process.disk);
            }
        }
        state.pending_restarts.remove(address);
        state.dirty = true;
        refresh(&mut state, now);
    }

    /// The killed processes whose restart is due (`restartSeconds` after the kill),
    /// each returned once; the world restarts them from the current monitor conf and
    /// binary with `start_process`.
    pub fn take_kill_requests(&self) -> Vec<ProcessAddress> {
        let now = self.now();
        let mut state = self.caught_up();
        let due: Vec<ProcessAddress> = state
            .pending_restarts
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(address, _)| address.clone())
            .collect();
        for address in &due {
            state.pending_restarts.remove(address);
        }
        due
    }

    /// Brings the database to the clock's current time (data movement, failure
    /// detection, recoveries, maintenance expiry), each transition at its own time.
    pub fn tick(&self) {
        drop(self.caught_up());
    }

    /// When the next transition that happens by time alone is due (unix seconds): a
    /// failure detection, the end of a recovery, a move completing, a killed process's
    /// restart, the maintenance zone expiring. `None` when nothing is pending.
    pub fn next_due(&self) -> Option<i64> {
        timeline::next_due(&self.caught_up())
    }

    /// `status json` as FoundationDB would print it.
    pub fn render_status_json(&self) -> serde_json::Value {
        let now = self.now();
        let state = self.caught_up();
        let document = render::render(&state, now);
        let version = status_schema::rendering_version(&state);
        drop(state);
        self.check_status(&document, version.as_ref());
        document
    }

    /// A read-only view for the result JSON.
    pub fn snapshot(&self) -> SimFdbSnapshot {
        let now = self.now();
        snapshot::snapshot(&self.caught_up(), now)
    }

    /// The current connection string, once known.
    pub fn connection_string(&self) -> Option<ConnectionString> {
        self.lock().connection_string.clone()
    }

    /// The value of the global operator lock key now, the time (unix seconds), and
    /// whether the database is configured (before, it has no key space to hold a lock).
    pub fn lock_key(&self) -> (Option<fdb_operator::fdb::LockValue>, i64, bool) {
        let state = self.lock();
        (
            state.lock.clone(),
            self.now(),
            state.configuration.is_some(),
        )
    }
}
