//! Coordinators that come back at new addresses: the coordinated state lives on a
//! coordinator's disk (its data directory), not at its address. When every pod is lost
//! and comes back on its PVC at a new IP, the database's connection string names
//! addresses nobody answers at; a process started with a cluster file that names the
//! same cluster (description and ID) at the new addresses reaches the coordinators'
//! disks again, and the database recovers with that connection string. This is what
//! `kubectl fdb fix-coordinator-ips` relies on (the Go plugin's
//! kubectl-fdb/cmd/fix_coordinator_ips.go: write the new connection string to
//! `/var/fdb/data/fdb.cluster` in every pod, then `pkill fdbserver`).

use fdb_shared::connection_string::ConnectionString;

use super::SimulatedFdb;
use super::state::State;
use super::{catch_up, refresh};

/// Records, for each coordinator of the current connection string, the disk of the
/// process that answers at its address (running or stopped): the disk that holds its
/// coordinated state. Called before a restarted process replaces its disk's old entry.
pub(super) fn remember_coordinator_disks(state: &mut State) {
    let Some(connection) = state.connection_string.clone() else {
        return;
    };
    let current: Vec<String> = connection
        .coordinators
        .iter()
        .map(ToString::to_string)
        .collect();
    state
        .coordinator_disks
        .retain(|address, _| current.contains(address));
    for coordinator in &connection.coordinators {
        let disk = state
            .processes
            .values()
            .find(|p| p.answers_to(coordinator))
            .map(|p| p.disk.clone());
        if let Some(disk) = disk {
            state
                .coordinator_disks
                .insert(coordinator.to_string(), disk);
        }
    }
}

/// Takes a launched process's cluster file (`cluster_file`) as the database's connection string when
/// the current one has lost its quorum and the new one names the same cluster at
/// addresses where a majority of the coordinators' disks answer now.
pub(super) fn adopt_moved_coordinators(state: &mut State, cluster_file: &str) {
    let Some(current) = state.connection_string.clone() else {
        return;
    };
    let Ok(named) = ConnectionString::parse(cluster_file) else {
        return;
    };
    if named == current
        || named.description != current.description
        || named.generation_id != current.generation_id
    {
        return;
    }
    let answering = state.coordinator_processes().iter().flatten().count();
    if answering * 2 > current.coordinators.len() {
        return;
    }
    let holding_state = named
        .coordinators
        .iter()
        .filter(|address| {
            state
                .processes
                .values()
                .any(|p| p.running && p.answers_to(address) && state.coordinated.serves(&p.disk))
        })
        .count();
    if holding_state * 2 > named.coordinators.len() {
        state.connection_string = Some(named);
        state.recovery_reason = Some("coordinators reached at new addresses".into());
    }
}

impl SimulatedFdb {
    /// `pkill fdbserver` in a pod: every running process listening on `host` stops, and
    /// its fdbmonitor starts it again after the restart delay (reading its cluster file
    /// anew). A signal, not an fdbcli command: it needs no database. Returns how many
    /// processes it stopped.
    pub fn signal_processes_on_host(&self, host: &str) -> usize {
        let now = self.now();
        let mut state = self.lock();
        catch_up(&mut state, now);
        let restart_at =
            now.saturating_add(i64::try_from(state.settings.restart_seconds).unwrap_or(0));
        let stopped: Vec<_> = state
            .processes
            .values()
            .filter(|p| p.running && p.launch.address.host == host)
            .map(|p| p.launch.address.clone())
            .collect();
        for address in &stopped {
            if let Some(process) = state.processes.get_mut(address) {
                process.running = false;
            }
            state.pending_restarts.insert(address.clone(), restart_at);
        }
        if !stopped.is_empty() {
            state.dirty = true;
            refresh(&mut state, now);
        }
        stopped.len()
    }
}
