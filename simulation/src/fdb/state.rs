//! The simulated database's state and the questions asked of it.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::{DatabaseConfiguration, ProcessClass, RedundancyMode};
use fdb_shared::connection_string::ConnectionString;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::SimFdbSettings;
use super::backup::Backups;
use super::disks::{Disk, DiskKey};
use super::movement::Movement;
use super::processes::{ProcessLaunch, SimProcess, zone_of};
use super::records::DataSummary;
use super::records::Outage;
use super::records::TransactionSystem;
use super::records::{CoordinatedState, Failover, Recovery, RecoveryRecord};
use super::shards::{Data, GIB, MIB};
use super::user_data::UserData;
use fdb_operator::fdb::{ClientInfo, ExclusionTarget, LockValue};

/// How much slower data moves off a disk under `ioLatency`.
pub(crate) const SLOW_DISK_DIVISOR: f64 = 10.0;

/// What `statusProcessesMissing` hides from `status json`.
#[derive(Debug, Default)]
pub(crate) struct StatusHidden {
    /// Process groups (`locality_instance_id`).
    pub groups: BTreeSet<String>,
    /// Datacenters (`locality_dcid`).
    pub data_centers: BTreeSet<String>,
}

/// Everything the simulated database knows.
#[derive(Debug)]
pub(crate) struct State {
    pub settings: SimFdbSettings,
    pub rng: ChaCha8Rng,
    pub processes: BTreeMap<ProcessAddress, SimProcess>,
    /// Every disk a process has mounted and that still exists.
    pub disks: BTreeMap<DiskKey, Disk>,
    /// The shards, once the configured database had storage servers.
    pub data: Option<Data>,
    pub movement: Movement,
    /// Derived from `data` and the processes at the last change.
    pub summary: DataSummary,
    pub connection_string: Option<ConnectionString>,
    /// Coordination forwards: the disks of former coordinators, each with the cluster
    /// keys (`description:ID`) of the connection strings it forwards clients from to
    /// the current one (`fdbserver/Coordination.actor.cpp` `setForward`, stored on the
    /// coordinator's disk, so kept across restarts and lost with the disk).
    pub forwards: BTreeMap<DiskKey, BTreeSet<String>>,
    pub configuration: Option<DatabaseConfiguration>,
    pub exclusions: Vec<ExclusionTarget>,
    /// Zone under maintenance and when the maintenance ends (unix seconds).
    pub maintenance: Option<(String, i64)>,
    /// When the maintenance zone was last set (unix seconds): data distribution clears
    /// the zone when a storage server outside it is declared failed after that.
    pub maintenance_since: i64,
    pub lock: Option<LockValue>,
    pub deny_list: BTreeSet<String>,
    /// Other keys of the system key space the operator writes (the pending-upgrade
    /// list), byte for byte.
    pub system_keys: BTreeMap<Vec<u8>, Vec<u8>>,
    pub clients: Vec<ClientInfo>,
    /// The clients of tool runs (`fdb/tool_api.rs`), by address: when each stops being
    /// listed (unix seconds).
    pub tool_clients: BTreeMap<String, i64>,
    /// The disk holding each coordinator's coordinated state, by the coordinator's
    /// address in the connection string (`fdb/coordinator_moves.rs`).
    pub coordinator_disks: BTreeMap<String, DiskKey>,
    /// Which disks hold the coordinated state (`coordinated_state.rs`).
    pub coordinated: CoordinatedState,
    /// The last transaction system's logs and a forced recovery asked for
    /// (`failover.rs`, `forced_recovery.rs`).
    pub failover: Failover,
    pub recovery: Recovery,
    pub transaction_system: Option<TransactionSystem>,
    pub recoveries: u64,
    /// Every recovery so far, in order (one per count of `recoveries`).
    pub recovery_log: Vec<RecoveryRecord>,
    pub generation: i64,
    /// When the last recovery completed (unix seconds).
    pub last_recovered_unix: i64,
    /// Why the next recovery happens, when the caller knows better than the process
    /// table (a kill batch, a configure, a coordinators change).
    pub recovery_reason: Option<String>,
    /// Killed processes and when fdbmonitor brings each back (unix seconds).
    pub pending_restarts: BTreeMap<ProcessAddress, i64>,
    /// Unix seconds at which `time` is 0.
    pub origin: i64,
    /// Seconds since `origin` to which data movement has been advanced.
    pub time: f64,
    /// Something changed since data distribution last looked.
    pub dirty: bool,
    pub timeout_rate: f64,
    /// Process groups whose processes report `io_error`.
    pub io_errors: BTreeSet<String>,
    /// `storageMetricsMissing`: process groups whose storage servers report no metrics.
    pub metrics_missing: BTreeSet<String>,
    /// `statusProcessesMissing`: process groups, and datacenters (`dcid`), whose running
    /// processes `status json` does not list.
    pub status_hidden: StatusHidden,
    /// Process groups whose processes survive kills.
    pub ignore_kill: BTreeSet<String>,
    /// `ioLatency`: process groups whose disks are slow, with the latency of one I/O
    /// (milliseconds).
    pub io_latency: BTreeMap<String, u64>,
    /// `slowRecovery`: recoveries take this long instead.
    pub recovery_override: Option<u64>,
    pub outages: Vec<Outage>,
    /// Whether the database has been available at least once (outages count from then).
    pub ever_available: bool,
    /// The user data (a digest of what the workload wrote).
    pub user_data: UserData,
    /// Backups, restores and the blob store.
    pub backups: Backups,
}

impl State {
    pub fn new(settings: SimFdbSettings, rng: ChaCha8Rng, now: i64) -> Self {
        Self {
            settings,
            rng,
            processes: BTreeMap::new(),
            disks: BTreeMap::new(),
            data: None,
            movement: Movement::default(),
            summary: DataSummary::default(),
            connection_string: None,
            forwards: BTreeMap::new(),
            configuration: None,
            exclusions: Vec::new(),
            maintenance: None,
            maintenance_since: now,
            lock: None,
            deny_list: BTreeSet::new(),
            system_keys: BTreeMap::new(),
            clients: Vec::new(),
            tool_clients: BTreeMap::new(),
            coordinator_disks: BTreeMap::new(),
            coordinated: CoordinatedState::default(),
            failover: Failover::default(),
            recovery: Recovery::default(),
            transaction_system: None,
            recoveries: 0,
            recovery_log: Vec::new(),
            generation: 1,
            last_recovered_unix: now,
            recovery_reason: None,
            pending_restarts: BTreeMap::new(),
            origin: now,
            time: 0.0,
            dirty: true,
            timeout_rate: 0.0,
            io_errors: BTreeSet::new(),
            metrics_missing: BTreeSet::new(),
            status_hidden: StatusHidden::default(),
            ignore_kill: BTreeSet::new(),
            io_latency: BTreeMap::new(),
            recovery_override: None,
            outages: Vec::new(),
            ever_available: false,
            user_data: UserData::default(),
            backups: Backups::default(),
        }
    }

    /// A random alphanumeric string (generation IDs).
    pub fn random_id(&mut self, length: usize) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..length)
            .map(|_| char::from(ALPHABET[self.rng.random_range(0..ALPHABET.len())]))
            .collect()
    }

    /// A random 32-digit hex process ID.
    pub fn random_process_id(&mut self) -> String {
        format!("{:032x}", self.rng.random::<u128>())
    }

    /// Whether the configuration is `three_data_hall` or its fallback: storage teams span
    /// distinct data halls and the logs two halls (`fdbclient/ManagementAPI.actor.cpp`,
    /// `configForToken`: both modes' policies are across `data_hall`).
    pub fn by_data_hall(&self) -> bool {
        self.configuration
            .as_ref()
            .and_then(|c| c.redundancy_mode.as_ref())
            .is_some_and(RedundancyMode::spreads_over_data_halls)
    }

    /// The failure domain a storage team spreads over: the `data_hall` locality in
    /// three_data_hall (`None` for a process without one: FoundationDB's replication
    /// policy cannot place a replica on it), else the zone.
    pub fn team_domain(&self, launch: &ProcessLaunch) -> Option<String> {
        if self.by_data_hall() {
            launch.locality.get("data_hall").cloned()
        } else {
            Some(zone_of(launch))
        }
    }

    /// Copies of the data (and minimum distinct zones) the redundancy mode needs.
    pub fn replicas(&self) -> usize {
        let mode = self
            .configuration
            .as_ref()
            .and_then(|c| c.redundancy_mode.clone())
            .unwrap_or(RedundancyMode::DEFAULT);
        // three_data_hall_fallback keeps 2 storage replicas, in distinct halls
        // (`configForToken`: `redundancy = "2"`).
        match mode {
            RedundancyMode::Single => 1,
            RedundancyMode::Double | RedundancyMode::ThreeDataHallFallback => 2,
            _ => 3,
        }
    }

    /// Seconds one recovery takes now.
    pub fn recovery_seconds(&self) -> i64 {
        let seconds = self
            .recovery_override
            .unwrap_or(self.settings.recovery_seconds);
        i64::try_from(seconds).unwrap_or(i64::MAX / 4)
    }

    /// Bytes per second one source disk sends.
    pub fn move_rate(&self) -> f64 {
        match self.settings.exclusion_seconds {
            Some(seconds) => self.settings.storage_gib * GIB / seconds.max(1) as f64,
            None => self.settings.move_mib_per_second * MIB,
        }
    }

    /// The rate each source disk sends data at: the movement rate, a tenth of it from
    /// the disks of groups under `ioLatency`.
    pub fn source_rates(&self) -> impl Fn(&DiskKey) -> f64 + use<> {
        let rate = self.move_rate();
        let slow: BTreeSet<DiskKey> = self
            .disks
            .iter()
            .filter(|(_, disk)| {
                disk.instance_id()
                    .is_some_and(|id| self.io_latency.contains_key(id))
            })
            .map(|(key, _)| key.clone())
            .collect();
        move |key: &DiskKey| {
            if slow.contains(key) {
                rate / SLOW_DISK_DIVISOR
            } else {
                rate
            }
        }
    }

    /// The running processes that answer to the connection string's coordinators.
    pub fn coordinator_processes(&self) -> Vec<Option<&SimProcess>> {
        let Some(connection) = &self.connection_string else {
            return Vec::new();
        };
        connection
            .coordinators
            .iter()
            .map(|address| {
                self.processes
                    .values()
                    .find(|p| p.running && p.answers_to(address))
            })
            .collect()
    }

    /// The version the coordinators' majority runs: the database's protocol. `None` when
    /// no protocol-compatible group of running coordinators is a majority (no quorum),
    /// or when the running coordinators without the coordinated state could make a
    /// majority of the replies by themselves (`coordinated_state.rs`).
    pub fn cluster_version(&self) -> Option<FdbVersion> {
        let coordinators = self.coordinator_processes();
        let total = coordinators.len();
        let fresh = coordinators
            .iter()
            .flatten()
            .filter(|p| !self.coordinated.serves(&p.disk))
            .count();
        if fresh * 2 > total {
            return None;
        }
        let running: Vec<FdbVersion> = coordinators
            .iter()
            .flatten()
            .map(|p| p.launch.version)
            .collect();
        running
            .iter()
            .filter(|candidate| {
                running
                    .iter()
                    .filter(|v| v.is_protocol_compatible(candidate))
                    .count()
                    * 2
                    > total
            })
            .max()
            .copied()
    }

    /// Whether a process takes part in the database: running and protocol-compatible.
    pub fn is_member(&self, process: &SimProcess, cluster_version: Option<&FdbVersion>) -> bool {
        process.running
            && cluster_version.is_some_and(|v| v.is_protocol_compatible(&process.launch.version))
    }

    /// Whether the process's storage server reports no metrics (`storageMetricsMissing`).
    pub fn metrics_missing_of(&self, process: &SimProcess) -> bool {
        process
            .instance_id()
            .is_some_and(|id| self.metrics_missing.contains(id))
    }

    /// Whether `status json` leaves the running process out (`statusProcessesMissing`).
    pub fn hidden_from_status(&self, process: &SimProcess) -> bool {
        process
            .instance_id()
            .is_some_and(|id| self.status_hidden.groups.contains(id))
            || process
                .launch
                .locality
                .get("dcid")
                .is_some_and(|dc| self.status_hidden.data_centers.contains(dc))
    }

    /// Whether any exclusion matches the process.
    pub fn is_excluded(&self, process: &SimProcess) -> bool {
        self.exclusions.iter().any(|t| process.is_matched_by(t))
    }

    /// Whether any exclusion matches the disk's last process.
    pub fn is_disk_excluded(&self, disk: &Disk) -> bool {
        self.exclusions.iter().any(|t| disk.is_matched_by(t))
    }

    /// Members that are not excluded: where roles and data may go.
    pub fn eligible(&self) -> Vec<&SimProcess> {
        let version = self.cluster_version();
        self.processes
            .values()
            .filter(|p| self.is_member(p, version.as_ref()) && !self.is_excluded(p))
            .collect()
    }

    /// Disks mounted by a member process: their replicas are live.
    pub fn serving_disks(&self) -> BTreeSet<DiskKey> {
        let version = self.cluster_version();
        self.processes
            .values()
            .filter(|p| self.is_member(p, version.as_ref()))
            .map(|p| p.disk.clone())
            .collect()
    }

    /// Whether the process plays the coordinator role.
    pub fn is_coordinator(&self, process: &SimProcess) -> bool {
        self.connection_string.as_ref().is_some_and(|connection| {
            connection
                .coordinators
                .iter()
                .any(|address| process.answers_to(address))
        })
    }

    /// Whether the maintenance zone covers `zone` at `now`.
    pub fn under_maintenance(&self, zone: &str, now: i64) -> bool {
        self.maintenance
            .as_ref()
            .is_some_and(|(maintenance, until)| maintenance == zone && *until > now)
    }

    /// When the disk's silence makes data distribution give up on it (unix seconds),
    /// ignoring maintenance.
    pub fn failure_time(&self, disk: &Disk) -> Option<i64> {
        let detection = i64::try_from(self.settings.failure_detection_seconds).unwrap_or(0);
        disk.silent_since
            .map(|since| since.saturating_add(detection))
    }

    /// Whether data distribution treats the disk as failed at `now`: silent long enough
    /// and not covered by the maintenance zone.
    pub fn is_failed(&self, disk: &Disk, now: i64) -> bool {
        self.failure_time(disk).is_some_and(|at| at <= now)
            && !self.under_maintenance(&disk.zone(), now)
    }

    /// Replicas on the disk.
    pub fn held(&self, disk: &str) -> usize {
        self.data.as_ref().map_or(0, |d| d.held_by(disk))
    }

    /// Bytes of one shard.
    pub fn shard_bytes(&self) -> f64 {
        self.data.as_ref().map_or(0.0, |d| d.shard_bytes)
    }

    /// Whether the process is a storage process.
    pub fn is_storage(process: &SimProcess) -> bool {
        process.launch.class == ProcessClass::Storage
    }
}
