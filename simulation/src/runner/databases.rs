//! The world's databases: the first cluster's (which `clusters:` members join) and one
//! per `fleet:` member, each a [`SimulatedFdb`] of its own. The world's fdbmonitors
//! drive them all through one [`ProcessHost`]: a process belongs to the database its
//! cluster file names (the connection string's description, as a client's cluster file
//! tells databases apart), and a process the world stops or forgets is the one of the
//! database that holds it at that address.

use fdb_shared::address::ProcessAddress;
use fdb_shared::connection_string::ConnectionString;

use crate::fdb::{ProcessLaunch, SimulatedFdb};
use crate::world::ProcessHost;

/// One database of the world, by the cluster it belongs to.
#[derive(Debug, Clone)]
pub struct WorldDatabase {
    /// The cluster whose database it is (a fleet member's name; the first cluster's).
    pub cluster: String,
    /// The description its connection string has.
    pub description: String,
    /// The database.
    pub fdb: SimulatedFdb,
}

/// Every database of the world; the first is the first cluster's.
#[derive(Debug, Clone)]
pub struct Databases {
    first: SimulatedFdb,
    fleet: Vec<WorldDatabase>,
}

impl Databases {
    /// The first cluster's database, and the fleet's.
    pub fn new(first: SimulatedFdb, fleet: Vec<WorldDatabase>) -> Self {
        Self { first, fleet }
    }

    /// The fleet's databases.
    pub fn fleet(&self) -> &[WorldDatabase] {
        &self.fleet
    }

    fn all(&self) -> impl Iterator<Item = &SimulatedFdb> {
        std::iter::once(&self.first).chain(self.fleet.iter().map(|d| &d.fdb))
    }

    /// The database a process started with `cluster_file` belongs to: the fleet
    /// member's whose description it names, else the first (whose description is
    /// its own, or its seed's for the `clusters:` members that join it).
    fn for_cluster_file(&self, cluster_file: &str) -> &SimulatedFdb {
        let description = cluster_file
            .trim()
            .parse::<ConnectionString>()
            .ok()
            .map(|c| c.description);
        self.fleet
            .iter()
            .find(|d| description.as_deref() == Some(d.description.as_str()))
            .map_or(&self.first, |d| &d.fdb)
    }

    /// The database holding a process at `address`: the one where it runs, else one
    /// where it stopped (at most one runs there: the world gives each pod its own IP).
    fn holding(&self, address: &ProcessAddress) -> Option<&SimulatedFdb> {
        self.all()
            .find(|fdb| fdb.process_at(address) == Some(true))
            .or_else(|| self.all().find(|fdb| fdb.process_at(address).is_some()))
    }
}

impl ProcessHost for Databases {
    fn start_process(&self, launch: ProcessLaunch) {
        let target = self.for_cluster_file(&launch.cluster_file_contents).clone();
        // A process moving to another database (a cluster file rewritten by hand) leaves
        // the one that held it, as its old database stops hearing from it.
        if let Some(holder) = self.holding(&launch.address)
            && !holder.same_database(&target)
            && holder.process_at(&launch.address) == Some(true)
        {
            holder.stop_process(&launch.address);
        }
        target.start_process(launch);
    }

    fn stop_process(&self, address: &ProcessAddress) {
        if let Some(fdb) = self.holding(address) {
            fdb.stop_process(address);
        }
    }

    fn remove_process(&self, address: &ProcessAddress) {
        if let Some(fdb) = self.holding(address) {
            fdb.remove_process(address);
        }
    }

    fn take_kill_requests(&self) -> Vec<ProcessAddress> {
        self.all()
            .flat_map(SimulatedFdb::take_kill_requests)
            .collect()
    }

    fn tick(&self) {
        self.all().for_each(SimulatedFdb::tick);
    }

    fn connection_string(&self) -> Option<String> {
        self.first.connection_string().map(|c| c.to_string())
    }

    fn connection_strings(&self) -> Vec<String> {
        self.all()
            .filter_map(|fdb| fdb.connection_string().map(|c| c.to_string()))
            .collect()
    }

    fn next_due(&self) -> Option<i64> {
        self.all().filter_map(SimulatedFdb::next_due).min()
    }

    fn coordination_file(&self, address: &ProcessAddress) -> Option<String> {
        self.holding(address)?.coordination_file(address)
    }

    fn set_backup_agents(&self, count: u32) {
        // Backup agents serve the first cluster's backups (`backups:` name it).
        self.first.set_backup_agents(count);
    }
}
