//! The simulated database's state and the rules that keep it consistent.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::{DatabaseConfiguration, ProcessClass, RedundancyMode};
use fdb_shared::connection_string::ConnectionString;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::SimFdbSettings;
use super::processes::SimProcess;
use super::roles::TransactionSystem;
use crate::fdb::{ClientInfo, ExclusionTarget, LockValue};

/// Everything the simulated database knows.
#[derive(Debug)]
pub(crate) struct State {
    pub settings: SimFdbSettings,
    pub rng: ChaCha8Rng,
    pub processes: BTreeMap<ProcessAddress, SimProcess>,
    pub connection_string: Option<ConnectionString>,
    pub configuration: Option<DatabaseConfiguration>,
    pub exclusions: Vec<ExclusionTarget>,
    /// Zone under maintenance and when the maintenance ends (unix seconds).
    pub maintenance: Option<(String, i64)>,
    pub lock: Option<LockValue>,
    pub deny_list: BTreeSet<String>,
    pub clients: Vec<ClientInfo>,
    pub recoveries: u64,
    pub generation: i64,
    pub last_recovery_unix: i64,
    pub transaction_system: Option<TransactionSystem>,
    pub kill_requests: Vec<ProcessAddress>,
    pub last_tick_unix: i64,
    pub timeout_rate: f64,
}

impl State {
    pub fn new(settings: SimFdbSettings, rng: ChaCha8Rng, now: i64) -> Self {
        Self {
            settings,
            rng,
            processes: BTreeMap::new(),
            connection_string: None,
            configuration: None,
            exclusions: Vec::new(),
            maintenance: None,
            lock: None,
            deny_list: BTreeSet::new(),
            clients: Vec::new(),
            recoveries: 0,
            generation: 1,
            last_recovery_unix: now,
            transaction_system: None,
            kill_requests: Vec::new(),
            last_tick_unix: now,
            timeout_rate: 0.0,
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

    /// Copies of the data (and minimum distinct zones) the redundancy mode needs.
    pub fn replicas(&self) -> usize {
        let mode = self
            .configuration
            .as_ref()
            .and_then(|c| c.redundancy_mode.clone())
            .unwrap_or(RedundancyMode::DEFAULT);
        match mode {
            RedundancyMode::Single => 1,
            RedundancyMode::Double => 2,
            _ => 3,
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
    /// no protocol-compatible group of running coordinators is a majority (no quorum).
    pub fn cluster_version(&self) -> Option<FdbVersion> {
        let coordinators = self.coordinator_processes();
        let total = coordinators.len();
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

    /// Whether any exclusion matches the process.
    pub fn is_excluded(&self, process: &SimProcess) -> bool {
        self.exclusions.iter().any(|t| process.is_matched_by(t))
    }

    /// Members that are not excluded: where roles and data may go.
    pub fn eligible(&self) -> Vec<&SimProcess> {
        let version = self.cluster_version();
        self.processes
            .values()
            .filter(|p| self.is_member(p, version.as_ref()) && !self.is_excluded(p))
            .collect()
    }

    /// Distinct zones of eligible storage processes.
    pub fn eligible_storage_zones(&self) -> usize {
        self.eligible()
            .iter()
            .filter(|p| p.launch.class == ProcessClass::Storage)
            .map(|p| p.zone())
            .collect::<BTreeSet<_>>()
            .len()
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

    /// The full share of data a storage server holds.
    pub fn full_bytes(&self) -> f64 {
        self.settings.storage_bytes_per_process as f64
    }

    /// Brings derived state up to date after any change: data of non-excluded storage
    /// servers is rebalanced instantly, and the transaction system is checked (a
    /// recovery when a member is gone).
    pub fn refresh(&mut self, now: i64) {
        if let Some((_, until)) = &self.maintenance
            && *until <= now
        {
            self.maintenance = None;
        }
        if self.configuration.is_some() {
            let version = self.cluster_version();
            let full = self.full_bytes();
            let rebalanced: Vec<ProcessAddress> = self
                .processes
                .values()
                .filter(|p| {
                    p.launch.class == ProcessClass::Storage
                        && self.is_member(p, version.as_ref())
                        && !self.is_excluded(p)
                })
                .map(|p| p.launch.address.clone())
                .collect();
            for address in rebalanced {
                if let Some(process) = self.processes.get_mut(&address) {
                    process.data_bytes = full;
                }
            }
        }
        super::roles::ensure_transaction_system(self, now);
    }
}
