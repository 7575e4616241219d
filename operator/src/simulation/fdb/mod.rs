//! The simulated FoundationDB: processes, roles, data movement, exclusions, recoveries,
//! protocol versions, coordinators, configuration, maintenance, lock keys and clients,
//! behind the same [`AdminClient`] interface as the real database.
//!
//! The world drives it:
//! - the simulated fdbmonitor calls [`SimulatedFdb::start_process`] for each process its
//!   conf describes (again after a kill, with what it re-reads from the current conf
//!   and binary) and [`SimulatedFdb::stop_process`] when a process goes away;
//! - after advancing the clock the world calls [`SimulatedFdb::tick`];
//! - a kill through the admin interface stops the processes at once and queues their
//!   addresses; the world drains [`SimulatedFdb::take_kill_requests`] and restarts them.

mod availability;
mod data;
mod processes;
mod render;
mod roles;
mod snapshot;
mod state;
#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::DatabaseConfiguration;
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::status_json::DatabaseStatus;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use self::state::State;
use crate::clock::Clock;
use crate::fdb::fdbcli::commands;
use crate::fdb::{
    AdminClient, AdminError, ClientInfo, ExclusionReport, ExclusionTarget, LockValue,
};

pub use processes::ProcessLaunch;
pub use snapshot::{SimFdbSnapshot, SimProcessSnapshot};

/// Tunables of the simulated database.
#[derive(Debug, Clone, PartialEq)]
pub struct SimFdbSettings {
    /// Seconds to move a fully loaded storage process's data away (default 60).
    pub exclusion_seconds: u64,
    /// Bytes a storage process holds (default 1 GiB).
    pub storage_bytes_per_process: u64,
    /// Seed of the random choices (generation IDs, process IDs, injected timeouts).
    pub seed: u64,
}

impl Default for SimFdbSettings {
    fn default() -> Self {
        Self {
            exclusion_seconds: 60,
            storage_bytes_per_process: 1 << 30,
            seed: 1,
        }
    }
}

/// The simulated database. Clones share the same database.
#[derive(Debug, Clone)]
pub struct SimulatedFdb {
    clock: Arc<dyn Clock>,
    state: Arc<Mutex<State>>,
}

impl SimulatedFdb {
    /// An empty database (no processes yet).
    pub fn new(clock: Arc<dyn Clock>, settings: SimFdbSettings) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(settings.seed);
        let now = clock.now_unix();
        Self {
            clock,
            state: Arc::new(Mutex::new(State::new(settings, rng, now))),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn now(&self) -> i64 {
        self.clock.now_unix()
    }

    /// Starts (or restarts) a process. A restart at the same address, or on the same disk
    /// (`data_identity`) at a new address, keeps the process ID, and keeps its data when
    /// the instance ID is unchanged; uptime starts at 0.
    /// The first cluster file seen defines the connection string.
    pub fn start_process(&self, launch: ProcessLaunch) {
        let now = self.now();
        let mut state = self.lock();
        data::advance(&mut state, now);
        if state.connection_string.is_none()
            && let Ok(connection) = ConnectionString::parse(&launch.cluster_file_contents)
        {
            state.connection_string = Some(connection);
        }
        // The data lives on a disk, not at an address: a stopped process whose disk (data
        // identity) this launch mounts hands over its data and process ID, also when the
        // pod came back with a new IP.
        let moved_from = state
            .processes
            .iter()
            .find(|(address, p)| {
                **address != launch.address
                    && !p.running
                    && !launch.data_identity.is_empty()
                    && p.launch.data_identity == launch.data_identity
            })
            .map(|(address, _)| address.clone());
        let previous = match moved_from {
            Some(old_address) => state.processes.remove(&old_address),
            None => state.processes.get(&launch.address).cloned(),
        };
        let same_instance = previous.as_ref().is_some_and(|p| {
            p.launch.locality.get("instance_id") == launch.locality.get("instance_id")
        });
        let process_id = match &previous {
            Some(p) if same_instance => p.process_id.clone(),
            _ => state.random_process_id(),
        };
        let data_bytes = previous
            .as_ref()
            .filter(|_| same_instance)
            .map_or(0.0, |p| p.data_bytes);
        state.processes.insert(
            launch.address.clone(),
            processes::SimProcess {
                launch,
                process_id,
                started_unix: now,
                running: true,
                data_bytes,
            },
        );
        state.refresh(now);
    }

    /// Stops the process at `address` (pod gone, node down, process missing). Its disk
    /// (data) is kept in case it comes back.
    pub fn stop_process(&self, address: &ProcessAddress) {
        let now = self.now();
        let mut state = self.lock();
        data::advance(&mut state, now);
        if let Some(process) = state.processes.get_mut(address) {
            process.running = false;
        }
        state.refresh(now);
    }

    /// Forgets a process entirely (its disk is gone too).
    pub fn remove_process(&self, address: &ProcessAddress) {
        let now = self.now();
        let mut state = self.lock();
        state.processes.remove(address);
        state.refresh(now);
    }

    /// The addresses killed through the admin interface since the last call; the world
    /// restarts each from the current monitor conf and binary with `start_process`.
    pub fn take_kill_requests(&self) -> Vec<ProcessAddress> {
        std::mem::take(&mut self.lock().kill_requests)
    }

    /// Advances data movement and maintenance expiry to the clock's current time.
    pub fn tick(&self) {
        let now = self.now();
        let mut state = self.lock();
        data::advance(&mut state, now);
        state.refresh(now);
    }

    /// Connects a client (shown in `cluster.clients`).
    pub fn connect_client(&self, client: ClientInfo) {
        let mut state = self.lock();
        if !state.clients.contains(&client) {
            state.clients.push(client);
            state.clients.sort();
        }
    }

    /// Disconnects every client entry with that address.
    pub fn disconnect_client(&self, address: &str) {
        self.lock().clients.retain(|c| c.address != address);
    }

    /// Makes that share (0..1) of admin calls answer [`AdminError::Timeout`],
    /// deterministically with the seed.
    pub fn set_timeout_rate(&self, rate: f64) {
        self.lock().timeout_rate = rate.clamp(0.0, 1.0);
    }

    /// `status json` as FoundationDB would print it.
    pub fn render_status_json(&self) -> serde_json::Value {
        let now = self.now();
        let mut state = self.lock();
        data::advance(&mut state, now);
        state.refresh(now);
        render::render(&state, now)
    }

    /// A read-only view for the result JSON.
    pub fn snapshot(&self) -> SimFdbSnapshot {
        let now = self.now();
        snapshot::snapshot(&self.lock(), now)
    }

    /// Why deleting the pod or volume of this process group (processes whose
    /// `locality_instance_id` is `instance_id`) would put data at risk, or `None` when
    /// every such stateful process is fully excluded: excluded, its data moved away and
    /// no roles left. Stopped processes count with the data on their disk, which the
    /// world's invariants need: a removed pod's process no longer reports to `status json`.
    pub fn removal_risk(&self, instance_id: &str) -> Option<String> {
        let now = self.now();
        let mut state = self.lock();
        data::advance(&mut state, now);
        state.refresh(now);
        let version = state.cluster_version();
        let state = &*state;
        state
            .processes
            .values()
            .filter(|p| {
                p.launch.class.is_stateful()
                    && p.launch.locality.get("instance_id").map(String::as_str) == Some(instance_id)
            })
            .find_map(|process| {
                let who = format!(
                    "{} process {}",
                    process.launch.class, process.launch.address
                );
                if !state.is_excluded(process) {
                    return Some(format!("{who} is not excluded"));
                }
                if process.data_bytes > 0.0 {
                    return Some(format!(
                        "{who} still holds {:.0} bytes of data",
                        process.data_bytes
                    ));
                }
                let roles = if state.is_member(process, version.as_ref()) {
                    render::roles_of(state, process)
                } else {
                    Vec::new()
                };
                (!roles.is_empty()).then(|| format!("{who} still has roles: {}", roles.join(", ")))
            })
    }

    /// The current connection string, once known.
    pub fn connection_string(&self) -> Option<ConnectionString> {
        self.lock().connection_string.clone()
    }

    /// Begins an admin call: maybe an injected timeout, then the state brought up to now.
    fn call(&self, command: &str) -> Result<(MutexGuard<'_, State>, i64), AdminError> {
        let now = self.now();
        let mut state = self.lock();
        let rate = state.timeout_rate;
        if rate > 0.0 && state.rng.random::<f64>() < rate {
            return Err(AdminError::Timeout {
                command: command.to_owned(),
                seconds: 10,
            });
        }
        data::advance(&mut state, now);
        state.refresh(now);
        Ok((state, now))
    }

    /// Like [`Self::call`], for commands that need an available database.
    fn call_available(&self, command: &str) -> Result<(MutexGuard<'_, State>, i64), AdminError> {
        let (state, now) = self.call(command)?;
        let health = availability::assess(&state);
        if !health.available {
            return Err(AdminError::Unavailable {
                command: command.to_owned(),
                output: unavailable_reason(&health),
            });
        }
        Ok((state, now))
    }
}

fn unavailable_reason(health: &availability::Health) -> String {
    if !health.quorum {
        "unable to reach a quorum of coordinators".to_owned()
    } else if !health.configured {
        "the database is not configured".to_owned()
    } else if !health.recruited {
        "the transaction system cannot be recruited".to_owned()
    } else {
        format!(
            "storage servers in {} zones are unreachable",
            health.failed_storage_zones
        )
    }
}

#[async_trait::async_trait]
impl AdminClient for SimulatedFdb {
    async fn status(&self) -> Result<DatabaseStatus, AdminError> {
        let command = "status json";
        let (state, now) = self.call(command)?;
        let value = render::render(&state, now);
        drop(state);
        DatabaseStatus::from_json_value(value).map_err(|source| AdminError::Parse {
            command: command.to_owned(),
            source,
        })
    }

    async fn configure(
        &self,
        configuration: &DatabaseConfiguration,
        new_database: bool,
    ) -> Result<(), AdminError> {
        let command = commands::configure(configuration, new_database);
        let (mut state, now) = if new_database {
            self.call(&command)?
        } else {
            self.call_available(&command)?
        };
        if state.cluster_version().is_none() {
            return Err(AdminError::Unavailable {
                command,
                output: "unable to reach a quorum of coordinators".to_owned(),
            });
        }
        match (&mut state.configuration, new_database) {
            (Some(_), true) => {
                return Err(AdminError::Failed {
                    command,
                    code: Some(1),
                    stderr:
                        "ERROR: Database already exists! To change configuration, don't say `new'"
                            .to_owned(),
                });
            }
            (None, false) => {
                return Err(AdminError::Failed {
                    command,
                    code: Some(1),
                    stderr: "ERROR: Database not yet configured; use `configure new'".to_owned(),
                });
            }
            (current, _) => {
                let merged = merge_configuration(current.take().unwrap_or_default(), configuration);
                *current = Some(merged);
            }
        }
        state.refresh(now);
        Ok(())
    }

    async fn exclude(&self, targets: &[ExclusionTarget], blocking: bool) -> Result<(), AdminError> {
        let command = commands::exclude(targets, blocking);
        let (mut state, now) = self.call_available(&command)?;
        for target in targets {
            if !state.exclusions.contains(target) {
                state.exclusions.push(target.clone());
            }
        }
        state.refresh(now);
        if blocking {
            let report = ExclusionReport::from_status(
                &DatabaseStatus::from_json_value(render::render(&state, now)).map_err(
                    |source| AdminError::Parse {
                        command: command.clone(),
                        source,
                    },
                )?,
                targets,
            );
            if !report.all_complete() {
                // fdbcli waits for the data to move and gives up at its timeout.
                return Err(AdminError::Timeout {
                    command,
                    seconds: 10,
                });
            }
        }
        Ok(())
    }

    async fn exclusion_status(
        &self,
        targets: &[ExclusionTarget],
    ) -> Result<ExclusionReport, AdminError> {
        let status = self.status().await?;
        Ok(ExclusionReport::from_status(&status, targets))
    }

    async fn include(&self, targets: &[ExclusionTarget]) -> Result<(), AdminError> {
        let command = commands::include(targets);
        let (mut state, now) = self.call_available(&command)?;
        state.exclusions.retain(|t| !targets.contains(t));
        state.refresh(now);
        Ok(())
    }

    async fn change_coordinators(
        &self,
        coordinators: &[ProcessAddress],
    ) -> Result<ConnectionString, AdminError> {
        let command = commands::coordinators(coordinators);
        let (mut state, now) = self.call_available(&command)?;
        let version = state.cluster_version();
        for address in coordinators {
            let serving = state
                .processes
                .values()
                .any(|p| p.answers_to(address) && state.is_member(p, version.as_ref()));
            if !serving {
                return Err(AdminError::Failed {
                    command,
                    code: Some(1),
                    stderr: format!(
                        "ERROR: coordinator {address} is not a reachable process of the database"
                    ),
                });
            }
        }
        let unique: std::collections::BTreeSet<_> = coordinators.iter().collect();
        if coordinators.is_empty() || unique.len() != coordinators.len() {
            return Err(AdminError::Failed {
                command,
                code: Some(1),
                stderr: "ERROR: coordinators must be distinct and at least one".to_owned(),
            });
        }
        let generation_id = state.random_id(32);
        let Some(current) = state.connection_string.clone() else {
            return Err(AdminError::Unavailable {
                command,
                output: "no connection string".to_owned(),
            });
        };
        let next = current.with_coordinators(generation_id, coordinators.to_vec());
        state.connection_string = Some(next.clone());
        state.refresh(now);
        Ok(next)
    }

    async fn kill(&self, addresses: &[ProcessAddress]) -> Result<(), AdminError> {
        let command = commands::kill(addresses);
        let (mut state, now) = self.call(&command)?;
        if state.cluster_version().is_none() {
            return Err(AdminError::Unavailable {
                command,
                output: "unable to reach a quorum of coordinators".to_owned(),
            });
        }
        let killed: Vec<ProcessAddress> = state
            .processes
            .values()
            .filter(|p| p.running && addresses.iter().any(|a| p.answers_to(a)))
            .map(|p| p.launch.address.clone())
            .collect();
        for address in &killed {
            if let Some(process) = state.processes.get_mut(address) {
                process.running = false;
            }
        }
        state.kill_requests.extend(killed);
        // One recovery for the whole batch, if it hit the transaction system.
        state.refresh(now);
        Ok(())
    }

    async fn set_maintenance_zone(
        &self,
        zone: &str,
        duration_seconds: u64,
    ) -> Result<(), AdminError> {
        let command = commands::maintenance_on(zone, duration_seconds);
        let (mut state, now) = self.call_available(&command)?;
        let until = now.saturating_add(i64::try_from(duration_seconds).unwrap_or(i64::MAX));
        state.maintenance = Some((zone.to_owned(), until));
        Ok(())
    }

    async fn reset_maintenance_zone(&self) -> Result<(), AdminError> {
        let (mut state, _) = self.call_available("maintenance off")?;
        state.maintenance = None;
        Ok(())
    }

    async fn read_lock(&self) -> Result<Option<LockValue>, AdminError> {
        let command = commands::get_key(crate::fdb::locks::GLOBAL_LOCK_KEY);
        let (state, _) = self.call_available(&command)?;
        Ok(state.lock.clone())
    }

    async fn write_lock(&self, lock: &LockValue) -> Result<(), AdminError> {
        let command = commands::write_keys(
            &[(crate::fdb::locks::GLOBAL_LOCK_KEY.to_vec(), lock.encode())],
            &[],
        );
        let (mut state, _) = self.call_available(&command)?;
        state.lock = Some(lock.clone());
        Ok(())
    }

    async fn deny_list(&self) -> Result<Vec<String>, AdminError> {
        let (state, _) = self.call_available("getrange denyList")?;
        Ok(state.deny_list.iter().cloned().collect())
    }

    async fn update_deny_list(&self, add: &[String], remove: &[String]) -> Result<(), AdminError> {
        let (mut state, _) = self.call_available("update denyList")?;
        for id in remove {
            state.deny_list.remove(id);
        }
        state.deny_list.extend(add.iter().cloned());
        Ok(())
    }
}

/// `configure` changes only the settings it names.
fn merge_configuration(
    mut current: DatabaseConfiguration,
    change: &DatabaseConfiguration,
) -> DatabaseConfiguration {
    macro_rules! take {
        ($($field:ident),*) => { $( if change.$field.is_some() { current.$field = change.$field.clone(); } )* };
    }
    take!(
        redundancy_mode,
        storage_engine,
        usable_regions,
        logs,
        proxies,
        commit_proxies,
        grv_proxies,
        resolvers,
        log_routers,
        remote_logs,
        perpetual_storage_wiggle,
        perpetual_storage_wiggle_engine,
        perpetual_storage_wiggle_locality,
        storage_migration_type
    );
    if !change.regions.is_empty() {
        current.regions = change.regions.clone();
    }
    current
}
