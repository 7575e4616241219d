//! What the world's fdbmonitors drive: the simulated FoundationDB's process table.
//!
//! The world does not depend on the simulated FoundationDB's internals; it drives any
//! [`ProcessHost`]. [`SimulatedFdb`] implements it; tests can use a recording fake.
//! [`ProcessLaunch`] is the simulated FoundationDB's; the world fills every field,
//! including `data_identity` (`pvc:<ns>/<claim>@<uid>/<path>` or
//! `emptyDir:<pod uid>/<volume>/<path>`).

use fdb_shared::address::ProcessAddress;

pub use crate::fdb::ProcessLaunch;
use crate::fdb::SimulatedFdb;

/// The process table fdbmonitor drives. Methods take `&self`: implementations share
/// their state with the admin client the operator uses.
pub trait ProcessHost: Send + Sync {
    /// Starts (or restarts) the process at `launch.address`.
    fn start_process(&self, launch: ProcessLaunch);
    /// Stops the process at `address`; its data stays (the disk is kept).
    fn stop_process(&self, address: &ProcessAddress);
    /// Forgets the process at `address` with its data (the disk is gone).
    fn remove_process(&self, address: &ProcessAddress);
    /// The processes the operator asked to kill since the last call; fdbmonitor restarts
    /// them from the current conf.
    fn take_kill_requests(&self) -> Vec<ProcessAddress>;
    /// Lets the database progress to the current time (recoveries, data movement).
    fn tick(&self);
    /// The current connection string, when the database has one; running processes
    /// keep their data dir's cluster file up to date with it, as fdbserver does.
    fn connection_string(&self) -> Option<String>;
    /// Every database's current connection string (a world of several databases, a
    /// fleet, has one each); by default the one of [`Self::connection_string`].
    fn connection_strings(&self) -> Vec<String> {
        self.connection_string().into_iter().collect()
    }
    /// When the host's next transition by time alone is due (unix seconds): a killed
    /// process's restart, a recovery's end, a failure detection, a data move completing.
    fn next_due(&self) -> Option<i64> {
        None
    }
    /// The content of the coordination files (`coordination-0.fdq`, `-1.fdq`) the disk
    /// of the process at `address` holds, if it holds the coordinated state; fdbmonitor
    /// keeps them in the process's data directory.
    fn coordination_file(&self, address: &ProcessAddress) -> Option<String> {
        let _ = address;
        None
    }
    /// How many backup agents run now (pods running the `backup_agent` program); the
    /// database's backups and restores progress only while some do.
    fn set_backup_agents(&self, count: u32) {
        let _ = count;
    }
}

impl ProcessHost for SimulatedFdb {
    fn start_process(&self, launch: ProcessLaunch) {
        SimulatedFdb::start_process(self, launch);
    }

    fn stop_process(&self, address: &ProcessAddress) {
        SimulatedFdb::stop_process(self, address);
    }

    fn remove_process(&self, address: &ProcessAddress) {
        SimulatedFdb::remove_process(self, address);
    }

    fn take_kill_requests(&self) -> Vec<ProcessAddress> {
        SimulatedFdb::take_kill_requests(self)
    }

    fn tick(&self) {
        SimulatedFdb::tick(self);
    }

    fn connection_string(&self) -> Option<String> {
        SimulatedFdb::connection_string(self).map(|c| c.to_string())
    }

    fn next_due(&self) -> Option<i64> {
        SimulatedFdb::next_due(self)
    }

    fn set_backup_agents(&self, count: u32) {
        SimulatedFdb::set_backup_agents(self, count);
    }

    fn coordination_file(&self, address: &ProcessAddress) -> Option<String> {
        SimulatedFdb::coordination_file(self, address)
    }
}
