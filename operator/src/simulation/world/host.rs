//! What the world's fdbmonitors drive: the simulated FoundationDB's process table.
//!
//! The world does not depend on the simulated FoundationDB's internals; it drives any
//! [`ProcessHost`]. The simulated FoundationDB implements it; tests can use a recording
//! fake.

use std::collections::BTreeMap;

use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::ProcessClass;

/// One fdbserver process as fdbmonitor starts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessLaunch {
    /// The public address (first entry of `public_address`).
    pub address: ProcessAddress,
    /// The command line as `status json` reports it (binary, then sorted `--key=value`).
    pub command_line: String,
    /// The process class (`class`).
    pub class: ProcessClass,
    /// Localities without the `locality_` prefix (`instance_id`, `zoneid`, ...).
    pub locality: BTreeMap<String, String>,
    /// The version named by the binary the `command` points at.
    pub version: FdbVersion,
    /// The cluster file the process starts with (its data dir's copy when present, else
    /// the seed file).
    pub cluster_file_contents: String,
    /// The pod running the process.
    pub pod: String,
    /// Which disk the process's data lives on, stable across pod recreations when the
    /// data volume is a PVC (`pvc:<namespace>/<claim>@<uid>/<datadir>`) and tied to the pod
    /// otherwise (`emptyDir:<pod uid>/<datadir>`). Two launches with the same identity
    /// see the same data.
    pub data_identity: String,
}

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
}
