//! Failback: once the datacenter of the preferred region is back and caught up,
//! FoundationDB moves the transaction system back to it by itself. Its cluster
//! controller checks `betterMasterExists` every `CHECK_OUTSTANDING_INTERVAL`: with two
//! regions of different priorities, the primary not in the preferred one, the version
//! difference between the primary's and the remote's logs under `MAX_VERSION_DIFFERENCE`
//! and the remote healthy, `checkRegions` moves the cluster controller to the preferred
//! datacenter and the master is failed, so the next recovery recruits there
//! (apple/foundationdb, release-7.1: `fdbserver/ClusterController.actor.h`,
//! `betterMasterExists`, `findWorkersForConfigurationDispatch`;
//! `fdbserver/ClusterController.actor.cpp`, `doCheckOutstandingRequests`). With equal
//! priorities the database stays where it is.
//!
//! The world does not replay versions, so "caught up" is modelled as every process of
//! the preferred datacenter having run for [`CATCH_UP_SECONDS`]: its logs and storage
//! servers pull the commits they missed through the log routers before the difference
//! is small enough.

use fdb_shared::cluster_math::region_migration::{main_dc, priority_of};

use super::records::TransactionSystem;
use super::regions::dc_of;
use super::roles::preferred_primary;
use super::state::State;

/// How long the processes of a returning datacenter run before the world counts it as
/// caught up (`MAX_VERSION_DIFFERENCE` is 20 seconds of versions; the rest is the
/// catching up itself).
pub(crate) const CATCH_UP_SECONDS: i64 = 60;

/// The datacenter the transaction system should fail back to at `now`, if any.
pub(crate) fn better_primary(
    state: &State,
    system: &TransactionSystem,
    now: i64,
) -> Option<String> {
    let configuration = state.configuration.as_ref()?;
    if configuration.usable_regions.unwrap_or(1) < 2 {
        return None;
    }
    let master = system.members.iter().find(|m| m.role == "master")?;
    let current = dc_of(state.processes.get(&master.address)?)?.to_owned();
    let preferred = preferred_primary(state)?;
    let priority = |id: &str| {
        configuration
            .regions
            .iter()
            .filter_map(main_dc)
            .find(|dc| dc.id == id)
            .map(priority_of)
    };
    if preferred == current || priority(&preferred)? <= priority(&current)? {
        return None;
    }
    let caught_up = state
        .eligible()
        .iter()
        .filter(|p| dc_of(p) == Some(preferred.as_str()))
        .all(|p| p.started_unix.saturating_add(CATCH_UP_SECONDS) <= now);
    caught_up.then_some(preferred)
}
