//! The coordinated state: what a coordinator keeps in its data directory
//! (`coordination-0.fdq`, `coordination-1.fdq`: the disk queue of its generation
//! registers, FoundationDB's `fdbserver/Coordination.actor.cpp`, `OnDemandStore` of
//! `localGenerationReg`). It lives on the coordinator's disk, so it survives a restart and
//! a pod recreated on the same PVC, and it is gone with the disk.
//!
//! A recovery reads the database's core state from the first majority of the
//! connection string's coordinators to reply, keeping the highest generation, and
//! writes the next generation to them (`fdbserver/CoordinatedState.actor.cpp`,
//! `replicatedRead`): when the running coordinators that never held it (fresh disks)
//! could make that majority alone, the state cannot be read and no recovery happens
//! (the world does not gamble on which replies come first). Before the database exists
//! every coordinator starts from empty registers. A coordinators change writes the
//! state to the new coordinators
//! first (`changeQuorum`, `fdbclient/ManagementAPI.actor.cpp`); a copy of the files
//! into a fresh disk (the Go runbook "Recover Lost Quorum Of Coordinators",
//! `kubectl fdb recover-multi-region-cluster`) is read by fdbserver when it starts there.

use fdb_shared::address::ProcessAddress;

use super::SimulatedFdb;
use super::disks::DiskKey;
use super::state::State;

/// The files of a coordinator's state in its data directory, in the order fdbserver
/// names them.
pub const COORDINATION_FILES: [&str; 2] = ["coordination-0.fdq", "coordination-1.fdq"];

/// A recovery writes the next generation to every coordinator it reaches: each running
/// coordinator's disk holds the state from now on (the first write names the database).
pub(crate) fn write_to_coordinators(state: &mut State) {
    if state.coordinated.database.is_none() {
        let id = state.random_id(16);
        state.coordinated.database = Some(id);
    }
    let disks: Vec<DiskKey> = state
        .coordinator_processes()
        .into_iter()
        .flatten()
        .map(|p| p.disk.clone())
        .collect();
    state.coordinated.disks.extend(disks);
}

/// A coordinators change: `changeQuorum` writes the coordinated state to the new
/// coordinators before it points the old ones at them
/// (`fdbclient/ManagementAPI.actor.cpp`).
pub(crate) fn write_to_new_coordinators(state: &mut State, coordinators: &[ProcessAddress]) {
    let disks: Vec<DiskKey> = state
        .processes
        .values()
        .filter(|p| p.running && coordinators.iter().any(|a| p.answers_to(a)))
        .map(|p| p.disk.clone())
        .collect();
    state.coordinated.disks.extend(disks);
}

/// fdbserver starting on a disk whose data directory has coordination files: a disk
/// the files were copied to holds the state when they are this database's.
pub(crate) fn read_at_start(state: &mut State, disk: &DiskKey, file: Option<&str>) {
    let Some(file) = file else {
        return;
    };
    if state.coordinated.file_content().as_deref().map(str::trim) == Some(file.trim()) {
        state.coordinated.disks.insert(disk.clone());
    }
}

impl SimulatedFdb {
    /// The content of the coordination files on the disk of the process at `address`,
    /// when that disk holds the coordinated state (the world keeps them in the process's
    /// data directory).
    pub fn coordination_file(&self, address: &ProcessAddress) -> Option<String> {
        let state = self.lock();
        let process = state.processes.get(address)?;
        if !state.coordinated.disks.contains(&process.disk) {
            return None;
        }
        state.coordinated.file_content()
    }
}
