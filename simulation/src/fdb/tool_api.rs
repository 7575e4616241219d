//! What the simulated tools (`crate::fdbcli`) ask of the database beyond the admin
//! interface: the protocol it speaks, the processes its cluster controller lists (the
//! ones `kill` may name), the raw texts the tools print, and the clients the tool runs
//! are.

use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;

use super::SimulatedFdb;
use super::processes::protocol_hex;
use super::state::State;
use fdb_operator::fdb::ClientInfo;

/// How long a tool run stays listed as a client in `status json` (seconds): the cluster
/// controller keeps a client's report until it expires (`fdbserver/ClusterController`:
/// clients report every `CLIENT_STATUS_UPDATE` and are dropped after a few missed
/// reports; a short-lived fdbcli is listed for about ten seconds).
pub const TOOL_CLIENT_SECONDS: i64 = 10;

/// One connection of a tool run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolClient {
    /// The client's address (`IP:port`).
    pub address: String,
    /// Its library version.
    pub version: FdbVersion,
    /// Its trace log group.
    pub log_group: String,
}

impl SimulatedFdb {
    /// The simulated time now (unix seconds).
    pub fn now_unix(&self) -> i64 {
        self.now()
    }

    /// The version whose protocol the database speaks now (its coordinators'), if it
    /// has a quorum.
    pub fn protocol_version(&self) -> Option<FdbVersion> {
        self.caught_up().cluster_version()
    }

    /// The addresses the cluster controller lists as workers (fdbcli's `kill` list,
    /// `\xff\xff/worker_interfaces/`): the running processes of the database's protocol.
    pub fn listed_workers(&self) -> Vec<ProcessAddress> {
        let state = self.caught_up();
        let version = state.cluster_version();
        state
            .processes
            .values()
            .filter(|process| state.is_member(process, version.as_ref()))
            .flat_map(|process| {
                std::iter::once(process.launch.address.clone())
                    .chain(process.launch.other_addresses.iter().cloned())
            })
            .collect()
    }

    /// A tool run connected: the cluster controller lists it for
    /// [`TOOL_CLIENT_SECONDS`] (a client of another protocol is never listed).
    pub fn connect_tool_client(&self, client: &ToolClient) {
        let now = self.now();
        let mut state = self.caught_up();
        state.clients.retain(|c| c.address != client.address);
        state.clients.push(ClientInfo {
            address: client.address.clone(),
            version: client.version,
            protocol_version: Some(protocol_hex(&client.version)),
            log_group: client.log_group.clone(),
        });
        state
            .tool_clients
            .insert(client.address.clone(), now + TOOL_CLIENT_SECONDS);
    }

    /// `fdbbackup status --json -t TAG` as the tool prints it.
    pub fn backup_status_text(&self, tag: &str) -> String {
        let state = self.caught_up();
        state.backups.status_json(tag, state.origin).to_string()
    }
}

/// Tool clients whose listing ended are no longer listed.
pub(super) fn expire_tool_clients(state: &mut State, now: i64) {
    if state.tool_clients.is_empty() {
        return;
    }
    let expired: Vec<String> = state
        .tool_clients
        .iter()
        .filter(|(_, until)| **until <= now)
        .map(|(address, _)| address.clone())
        .collect();
    for address in expired {
        state.tool_clients.remove(&address);
        state.clients.retain(|c| c.address != address);
    }
}
