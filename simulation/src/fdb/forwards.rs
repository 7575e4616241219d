//! Coordination forwards: after a coordinators change, the former coordinators tell a
//! client holding the old connection string where the database went.
//!
//! FoundationDB's `changeLeaderCoordinators` sends every old coordinator a
//! `ForwardRequest`; each stores the new connection string under the old cluster key
//! on its disk (`fdbserver/Coordination.actor.cpp`, `setForward` and the `fwd/`
//! keyspace), and a client reading an old cluster file follows the first forward it
//! is given (`fdbclient/MonitorLeader.actor.cpp` `getLeader`: "If any coordinator says
//! that the quorum is forwarded, then it is") and persists the new connection string
//! into its cluster file (`setAndPersistConnectionString`). This is how another
//! operator instance of the same database, whose `status.connectionString` still
//! names the old coordinators, reads the status after one instance moved them.

use fdb_shared::connection_string::ConnectionString;

use super::SimulatedFdb;
use super::state::State;

/// The key a coordinator stores a database's state under (`description:ID`).
fn cluster_key(connection: &ConnectionString) -> String {
    format!("{}:{}", connection.description, connection.generation_id)
}

/// The coordinators of `previous` that run now store a forward from its key (a
/// coordinator that is down misses the request).
pub(super) fn store(state: &mut State, previous: &ConnectionString) {
    let key = cluster_key(previous);
    let disks: Vec<_> = state
        .processes
        .values()
        .filter(|p| p.running && previous.coordinators.iter().any(|c| p.answers_to(c)))
        .map(|p| p.disk.clone())
        .collect();
    for disk in disks {
        state.forwards.entry(disk).or_default().insert(key.clone());
    }
}

impl SimulatedFdb {
    /// Whether a client holding `file` (a connection string naming none of the current
    /// coordinators) is forwarded to the database: a running process answering one of
    /// its coordinators holds a forward from its key.
    pub fn forwards(&self, file: &ConnectionString) -> bool {
        let state = self.caught_up();
        let key = cluster_key(file);
        state.processes.values().any(|p| {
            p.running
                && file.coordinators.iter().any(|c| p.answers_to(c))
                && state
                    .forwards
                    .get(&p.disk)
                    .is_some_and(|keys| keys.contains(&key))
        })
    }
}
