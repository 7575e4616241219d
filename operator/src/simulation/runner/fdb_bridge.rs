//! What the invariants read from the simulated database, in their own terms.
//!
//! Until the v2 data model of the simulated FoundationDB lands, the readings that need
//! it (zones out of service, lost shards, outages) are approximated from the public
//! snapshot; this module is the one place to switch to the model's own answers.

use crate::simulation::fdb::SimulatedFdb;
use crate::simulation::invariants::{Outage, ServiceState};

/// Zones and coordinators out of service.
pub(super) fn service_state(fdb: &SimulatedFdb) -> ServiceState {
    let snapshot = fdb.snapshot();
    let total = snapshot
        .connection_string
        .as_deref()
        .and_then(|text| text.split_once('@'))
        .map_or(0, |(_, coordinators)| coordinators.split(',').count());
    ServiceState {
        coordinators: total,
        coordinators_down: total.saturating_sub(snapshot.coordinators.len()),
        ..ServiceState::default()
    }
}

/// Shards lost for good.
pub(super) fn lost_shards(_fdb: &SimulatedFdb) -> u64 {
    0
}

/// Periods of unavailability since the start.
pub(super) fn outages(_fdb: &SimulatedFdb) -> Vec<Outage> {
    Vec::new()
}
