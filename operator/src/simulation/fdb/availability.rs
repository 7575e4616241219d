//! Whether the simulated database is available and healthy.

use std::collections::BTreeSet;

use fdb_shared::api::ProcessClass;

use super::data::moving_bytes;
use super::state::State;

/// The database's health at one instant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Health {
    /// A majority of coordinators runs one protocol.
    pub quorum: bool,
    /// `configure new` has happened.
    pub configured: bool,
    /// A transaction system is recruited.
    pub recruited: bool,
    /// Zones holding data that are down or cannot join.
    pub failed_storage_zones: usize,
    /// Fewest replicas any data has.
    pub min_replicas_remaining: usize,
    /// Accepts transactions.
    pub available: bool,
    /// Available, fully replicated and not moving data.
    pub healthy: bool,
    /// Every piece of data has all its replicas.
    pub full_replication: bool,
    /// Bytes still moving off excluded servers.
    pub moving_bytes: f64,
    /// `cluster.data.state.name`.
    pub data_state: &'static str,
}

pub(crate) fn assess(state: &State) -> Health {
    let version = state.cluster_version();
    let quorum = version.is_some();
    let configured = state.configuration.is_some();
    let recruited = state.transaction_system.is_some();
    let replicas = state.replicas();
    let failed_zones: BTreeSet<String> = state
        .processes
        .values()
        .filter(|p| {
            p.launch.class == ProcessClass::Storage
                && p.data_bytes > 0.0
                && !state.is_member(p, version.as_ref())
        })
        .map(|p| p.zone())
        .collect();
    let failed_storage_zones = failed_zones.len();
    let storage_zones = state.eligible_storage_zones();
    let min_replicas_remaining = replicas.saturating_sub(failed_storage_zones);
    let data_available = storage_zones > 0 && failed_storage_zones < replicas;
    let available = quorum && configured && recruited && data_available;
    let moving = moving_bytes(state);
    let full_replication = available && failed_storage_zones == 0 && storage_zones >= replicas;
    let healthy = full_replication && moving <= 0.0;
    let data_state = if !available {
        "missing_data"
    } else if failed_storage_zones > 0 || storage_zones < replicas {
        "healthy_repartitioning"
    } else if moving > 0.0 {
        "healthy_removing_server"
    } else {
        "healthy"
    };
    Health {
        quorum,
        configured,
        recruited,
        failed_storage_zones,
        min_replicas_remaining,
        available,
        healthy,
        full_replication,
        moving_bytes: moving,
        data_state,
    }
}
