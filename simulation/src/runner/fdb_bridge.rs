//! What the invariants read from the simulated database, in their own terms.

use crate::fdb::SimulatedFdb;
use crate::invariants::{Outage, ServiceState};

/// Zones and coordinators out of service, as the database sees them.
pub(super) fn service_state(fdb: &SimulatedFdb) -> ServiceState {
    let gaps = fdb.service_gaps();
    ServiceState {
        storage_zones_down: gaps.storage_zones_down,
        log_zones_down: gaps.log_zones_down,
        coordinators_down: gaps.coordinators_down,
        coordinators: gaps.coordinators,
        zone_halls: gaps.zone_halls,
    }
}

/// Shards lost for good.
pub(super) fn lost_shards(fdb: &SimulatedFdb) -> u64 {
    fdb.lost_shards()
}

/// Periods of unavailability since the start.
pub(super) fn outages(fdb: &SimulatedFdb) -> Vec<Outage> {
    fdb.outages()
        .into_iter()
        .map(|outage| Outage {
            start: outage.start,
            end: outage.end,
            cause: outage.cause,
            recovery_seconds: outage.recovery_seconds,
        })
        .collect()
}
