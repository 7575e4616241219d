//! What the runner's invariants ask the simulated database: outages, lost shards,
//! replicas held per process group, what is out of service, and why removing a group
//! would risk data.

use fdb_shared::address::ProcessAddress;
use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::api::ProcessClass;

use super::SimulatedFdb;
use super::processes::zone_of;
use super::records::Outage;
use super::render::roles_of;
use super::state::State;
use super::timeline::catch_up;

/// What is out of service right now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceGaps {
    /// Zones with a storage process that is not serving (not running, or not a
    /// protocol-compatible member) while its disk still holds shard replicas.
    pub storage_zones_down: BTreeSet<String>,
    /// Zones with a log-class process that is not serving and not excluded.
    pub log_zones_down: BTreeSet<String>,
    /// Coordinators of the connection string no serving process answers for.
    pub coordinators_down: usize,
    /// Coordinators in the connection string.
    pub coordinators: usize,
    /// In three_data_hall, the data hall of each zone that has one (empty otherwise):
    /// the tolerance is one whole hall plus one zone.
    pub zone_halls: BTreeMap<String, String>,
}

impl SimulatedFdb {
    /// Whether the database knows a process at `address`: `Some(true)` running,
    /// `Some(false)` stopped with its disk kept, `None` unknown (the world's other
    /// databases route a process's stop to the one that holds it).
    pub fn process_at(&self, address: &ProcessAddress) -> Option<bool> {
        self.lock().processes.get(address).map(|p| p.running)
    }

    /// Shards that lost their last replica (they stay lost).
    pub fn lost_shards(&self) -> u64 {
        let state = self.caught_up();
        state.data.as_ref().map_or(0, |d| d.lost)
    }

    /// Every period the database was unavailable since it was first available, with
    /// exact virtual times even when nobody looked during the period.
    pub fn outages(&self) -> Vec<Outage> {
        self.caught_up().outages.clone()
    }

    /// Shard replicas on the disks of the processes whose `locality_instance_id` is
    /// `instance_id`, running or stopped.
    pub fn replicas_held(&self, instance_id: &str) -> usize {
        let state = self.caught_up();
        state
            .disks
            .iter()
            .filter(|(_, disk)| disk.instance_id() == Some(instance_id))
            .map(|(key, _)| state.held(key))
            .sum()
    }

    /// Why deleting the pod or volume of this process group (processes whose
    /// `locality_instance_id` is `instance_id`) would put data at risk, or `None`: a
    /// storage process's disk still holds shard replicas; another stateful process
    /// (log, transaction) is not excluded or still has roles. Stopped processes count
    /// with what their disk holds: a removed pod's process no longer reports to
    /// `status json`.
    pub fn removal_risk(&self, instance_id: &str) -> Option<String> {
        let state = self.caught_up();
        let state = &*state;
        let storage = state.disks.iter().find_map(|(key, disk)| {
            let held = state.held(key);
            (disk.is_storage() && disk.instance_id() == Some(instance_id) && held > 0).then(|| {
                let who = format!("storage process {}", disk.launch.address);
                if state.is_disk_excluded(disk) {
                    format!("{who} still holds {held} shard replicas")
                } else {
                    format!("{who} is not excluded and holds {held} shard replicas")
                }
            })
        });
        if storage.is_some() {
            return storage;
        }
        let version = state.cluster_version();
        state
            .processes
            .values()
            .filter(|p| p.launch.class.is_stateful() && p.instance_id() == Some(instance_id))
            .find_map(|process| {
                let who = format!(
                    "{} process {}",
                    process.launch.class, process.launch.address
                );
                if process.launch.class != ProcessClass::Storage && !state.is_excluded(process) {
                    return Some(format!("{who} is not excluded"));
                }
                let roles: Vec<&str> = if state.is_member(process, version.as_ref()) {
                    roles_of(state, process)
                        .into_iter()
                        .filter(|role| *role != "storage")
                        .collect()
                } else {
                    Vec::new()
                };
                (!roles.is_empty()).then(|| format!("{who} still has roles: {}", roles.join(", ")))
            })
    }

    /// What is out of service right now: storage zones whose silent processes hold
    /// replicas, log zones with a silent process that is not excluded, and coordinators
    /// no serving process answers for.
    pub fn service_gaps(&self) -> ServiceGaps {
        let state = self.caught_up();
        let serving = state.serving_disks();
        let version = state.cluster_version();
        let storage_zones_down = state
            .disks
            .iter()
            .filter(|(key, disk)| {
                disk.is_storage() && state.held(key) > 0 && !serving.contains(*key)
            })
            .map(|(_, disk)| disk.zone())
            .collect();
        let log_zones_down = state
            .processes
            .values()
            .filter(|p| {
                matches!(
                    p.launch.class,
                    ProcessClass::Log | ProcessClass::Transaction
                ) && !state.is_member(p, version.as_ref())
                    && !state.is_excluded(p)
            })
            .map(|p| p.zone())
            .collect();
        let coordinators = state
            .connection_string
            .as_ref()
            .map_or(0, |c| c.coordinators.len());
        let serving_coordinators = state.connection_string.as_ref().map_or(0, |connection| {
            connection
                .coordinators
                .iter()
                .filter(|address| {
                    state
                        .processes
                        .values()
                        .any(|p| p.answers_to(address) && state.is_member(p, version.as_ref()))
                })
                .count()
        });
        let zone_halls = if state.by_data_hall() {
            state
                .processes
                .values()
                .map(|p| &p.launch)
                .chain(state.disks.values().map(|d| &d.launch))
                .filter_map(|launch| {
                    let hall = launch.locality.get("data_hall")?;
                    Some((zone_of(launch), hall.clone()))
                })
                .collect()
        } else {
            BTreeMap::new()
        };
        ServiceGaps {
            storage_zones_down,
            log_zones_down,
            coordinators_down: coordinators - serving_coordinators,
            coordinators,
            zone_halls,
        }
    }

    /// The state brought up to the clock's time.
    pub(super) fn caught_up(&self) -> std::sync::MutexGuard<'_, State> {
        let now = self.now();
        let mut state = self.lock();
        catch_up(&mut state, now);
        state
    }
}
