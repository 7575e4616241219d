//! The database of a captured cluster: what `status json` says about it becomes the
//! simulated database's state once the captured pods' processes run (a snapshot's boot,
//! `spec/simulation.md`, "starting from a live cluster's snapshot").

use fdb_shared::api::DatabaseConfiguration;
use fdb_shared::status_json::DatabaseStatus;

use super::SimulatedFdb;
use super::records::{RoleAssignment, TransactionSystem};
use super::recovery;
use super::shards::GIB;
use super::timeline::{catch_up, refresh};
use fdb_operator::fdb::{ClientInfo, ExclusionTarget};

/// Why a captured `status json` cannot seed the database.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    /// The document is not a `status json`.
    #[error("status: {0}")]
    Parse(String),
    /// The captured database has no configuration (it was never configured).
    #[error("status: cluster.configuration: missing (the captured database is not configured)")]
    NotConfigured,
    /// An exclusion the database lists cannot be read.
    #[error(
        "status: cluster.configuration.excluded_servers[{index}]: {value:?} is not an address or locality"
    )]
    Exclusion {
        /// Its position.
        index: usize,
        /// What it says.
        value: String,
    },
}

/// What the seed took from the captured status (for the run's progress line).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeedReport {
    /// Exclusions taken over.
    pub exclusions: usize,
    /// Clients connected.
    pub clients: usize,
    /// Data per storage process, in GiB (the captured average).
    pub storage_gib: Option<f64>,
    /// Whether the transaction system is the captured one (every captured transaction
    /// role on a running process of the same address); else it was recruited anew.
    pub roles_kept: bool,
}

/// The transaction roles the simulated database recruits, by their `status json` name.
const TRANSACTION_ROLES: &[&str] = &[
    "log",
    "cluster_controller",
    "master",
    "commit_proxy",
    "grv_proxy",
    "resolver",
    "ratekeeper",
    "data_distributor",
];

/// The captured transaction system: each transaction role of `status json` on the
/// running process at its address; `None` when a role's process does not run here or
/// the capture holds no master (the database then recruits its own).
fn captured_transaction_system(
    state: &super::state::State,
    processes: &[(fdb_shared::address::ProcessAddress, Vec<String>)],
) -> Option<TransactionSystem> {
    let mut members = Vec::new();
    for (address, roles) in processes {
        for role in roles {
            let Some(role) = TRANSACTION_ROLES.iter().find(|r| **r == role.as_str()) else {
                continue;
            };
            let process = state.processes.values().find(|p| {
                p.running
                    && p.launch.address.host == address.host
                    && p.launch.address.port == address.port
            })?;
            members.push(RoleAssignment {
                role,
                address: process.launch.address.clone(),
                started_unix: process.started_unix,
            });
        }
    }
    let has = |role: &str| members.iter().any(|m| m.role == role);
    (has("master") && has("log") && has("cluster_controller"))
        .then_some(TransactionSystem { members })
}

/// The captured exclusions, as targets (an address or a locality each).
fn captured_exclusions(
    configuration: &DatabaseConfiguration,
) -> Result<Vec<ExclusionTarget>, SeedError> {
    let mut exclusions = Vec::new();
    for (index, server) in configuration.excluded_servers.iter().enumerate() {
        let text = match (&server.address, &server.locality) {
            (Some(address), _) => address.clone(),
            (None, Some(locality)) => locality.clone(),
            (None, None) => String::new(),
        };
        let target = ExclusionTarget::parse(&text).ok_or(SeedError::Exclusion {
            index,
            value: text.clone(),
        })?;
        exclusions.push(target);
    }
    Ok(exclusions)
}

/// The mean data of the captured storage processes, in GiB (none reported: `None`).
fn mean_storage_gib(parsed: &DatabaseStatus) -> Option<f64> {
    let used: Vec<f64> = parsed
        .cluster
        .processes
        .values()
        .flat_map(|p| p.roles.iter())
        .filter(|role| role.role == "storage")
        .filter_map(|role| role.kvstore_used_bytes)
        .map(|bytes| bytes as f64)
        .collect();
    (!used.is_empty()).then(|| used.iter().sum::<f64>() / used.len() as f64 / GIB)
}

/// The clients `status json` lists, with their versions and log groups.
fn captured_clients(parsed: &DatabaseStatus) -> Vec<ClientInfo> {
    parsed
        .cluster
        .clients
        .supported_versions
        .iter()
        .flat_map(|version| {
            version.connected_clients.iter().filter_map(move |client| {
                Some(ClientInfo {
                    address: client.address.clone(),
                    version: version.client_version?,
                    protocol_version: version.protocol_version.clone(),
                    log_group: client.log_group.clone(),
                })
            })
        })
        .collect()
}

/// Each captured process's address and roles.
fn captured_roles(
    parsed: &DatabaseStatus,
) -> Vec<(fdb_shared::address::ProcessAddress, Vec<String>)> {
    parsed
        .cluster
        .processes
        .values()
        .filter_map(|p| {
            let roles: Vec<String> = p.roles.iter().map(|r| r.role.clone()).collect();
            Some((p.address.clone()?, roles))
        })
        .collect()
}

/// The configuration as it was configured: the keys FoundationDB reports with their
/// unset value whether or not they were set (`super::render`'s always-reported keys)
/// are left out, as a database configured without them holds them; the status renders
/// them again.
fn without_reported_defaults(
    configuration: DatabaseConfiguration,
    parsed: &DatabaseStatus,
) -> DatabaseConfiguration {
    let version = parsed.cluster.running_version();
    let Ok(serde_json::Value::Object(mut fields)) = serde_json::to_value(&configuration) else {
        return configuration;
    };
    for (key, unset) in super::render_configuration::always_reported_configuration(version.as_ref())
    {
        if fields.get(&key) == Some(&unset) {
            fields.remove(&key);
        }
    }
    serde_json::from_value(serde_json::Value::Object(fields)).unwrap_or(configuration)
}

impl SimulatedFdb {
    /// Makes the database the captured one: its configuration, exclusions, maintenance
    /// zone and clients, and data per storage process from `kvstore_used_bytes`; call
    /// once the captured processes run, so the data is placed on all of them at once
    /// (as it was), not moved onto them one by one. The transaction system is recruited
    /// at once: the captured database was accepting commits, and nothing happened to it.
    pub fn seed_from_status(&self, status: serde_json::Value) -> Result<SeedReport, SeedError> {
        let parsed = DatabaseStatus::from_json_value(status)
            .map_err(|error| SeedError::Parse(error.to_string()))?;
        let mut configuration = parsed
            .cluster
            .configuration
            .clone()
            .ok_or(SeedError::NotConfigured)?;
        let exclusions = captured_exclusions(&configuration)?;
        configuration.excluded_servers.clear();
        let configuration = without_reported_defaults(configuration, &parsed);
        let storage_gib = mean_storage_gib(&parsed);
        let clients = captured_clients(&parsed);
        let captured_roles = captured_roles(&parsed);
        let mut report = SeedReport {
            exclusions: exclusions.len(),
            clients: clients.len(),
            storage_gib,
            roles_kept: false,
        };
        let now = self.now();
        let mut state = self.lock();
        catch_up(&mut state, now);
        if let Some(gib) = storage_gib {
            state.settings.storage_gib = gib;
        }
        if let Some(connection) = parsed.cluster.connection_string.clone() {
            state.connection_string = Some(connection);
        }
        state.configuration = Some(configuration);
        state.exclusions = exclusions;
        if let Some(zone) = parsed
            .cluster
            .maintenance_zone
            .clone()
            .filter(|z| !z.is_empty())
        {
            let remaining = parsed.cluster.maintenance_seconds_remaining.unwrap_or(0.0);
            state.maintenance = Some((zone, now.saturating_add(remaining.ceil() as i64)));
            state.maintenance_since = now;
        }
        for client in clients {
            if !state.clients.contains(&client) {
                state.clients.push(client);
            }
        }
        state.clients.sort();
        // The captured database was recovered: recruit its transaction system now,
        // without the time a recovery takes.
        let override_before = state.recovery_override.replace(0);
        recovery::force(&mut state, now, "snapshot boot");
        recovery::ensure(&mut state, now);
        state.recovery_override = override_before;
        // The captured roles stay where they were, when their processes run here: the
        // operator's first pass sees the transaction system it would have seen live.
        if state.transaction_system.is_some()
            && let Some(system) = captured_transaction_system(&state, &captured_roles)
        {
            state.transaction_system = Some(system);
            report.roles_kept = true;
        }
        state.ever_available = true;
        state.dirty = true;
        refresh(&mut state, now);
        Ok(report)
    }
}
