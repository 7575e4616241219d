//! Data movement: excluded storage servers hand their data to the others over simulated
//! time, and only while enough zones remain to hold every replica.

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::ProcessClass;

use super::state::State;

/// Moves data from `state.last_tick_unix` to `now`.
///
/// Each excluded storage server that runs and holds data drains at
/// `storage_bytes_per_process / exclusion_seconds` bytes per second, concurrently, as
/// long as the eligible storage servers span at least as many zones as the redundancy
/// mode needs. Otherwise nothing moves: the exclusion stays incomplete.
pub(crate) fn advance(state: &mut State, now: i64) {
    let elapsed = now.saturating_sub(state.last_tick_unix);
    state.last_tick_unix = state.last_tick_unix.max(now);
    if elapsed <= 0 || state.configuration.is_none() {
        return;
    }
    if state.eligible_storage_zones() < state.replicas() {
        return;
    }
    let seconds = state.settings.exclusion_seconds.max(1) as f64;
    let rate = state.full_bytes() / seconds;
    let version = state.cluster_version();
    let draining: Vec<ProcessAddress> = state
        .processes
        .values()
        .filter(|p| {
            p.launch.class == ProcessClass::Storage
                && p.data_bytes > 0.0
                && state.is_member(p, version.as_ref())
                && state.is_excluded(p)
        })
        .map(|p| p.launch.address.clone())
        .collect();
    for address in draining {
        if let Some(process) = state.processes.get_mut(&address) {
            process.data_bytes = (process.data_bytes - rate * elapsed as f64).max(0.0);
        }
    }
}

/// Bytes still to move off excluded storage servers.
pub(crate) fn moving_bytes(state: &State) -> f64 {
    state
        .processes
        .values()
        .filter(|p| p.launch.class == ProcessClass::Storage && state.is_excluded(p))
        .map(|p| p.data_bytes)
        .sum()
}
