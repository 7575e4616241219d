//! `force_recovery_with_data_loss DCID` (fdbcli's
//! `fdbcli/ForceRecoveryWithDataLossCommand.actor.cpp`, through `forceRecovery` in
//! `fdbclient/ManagementAPI.actor.cpp` to the cluster controller's
//! `handleForcedRecoveries` in `fdbserver/ClusterController.actor.cpp`): it needs a
//! cluster controller (a majority of the coordinators reachable); when the database
//! commits, it does nothing; otherwise the next recovery recovers into DCID from the
//! logs there, giving every other region's datacenter a negative priority and setting
//! `usable_regions` to 1 (`updateConfigForForcedRecovery`), and the commits DCID lacked
//! are lost. The world models the remote's log routers one workload write
//! ([`WRITE_INTERVAL_SECONDS`]) behind the primary.

use fdb_shared::cluster_math::region_migration::{is_satellite, priority_of};

use super::failover::old_logs_readable;
use super::records::ForcedRecovery;
use super::state::State;
use super::user_data::{WRITE_INTERVAL_SECONDS, version_at};
use super::{SimulatedFdb, catch_up, recovery, refresh};

/// How far the remote region's logs are behind the primary's (seconds).
pub const REMOTE_LAG_SECONDS: i64 = WRITE_INTERVAL_SECONDS;

/// Why `force_recovery_with_data_loss` does not return.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForceRecoveryHang {
    /// No majority of the coordinators answers: no cluster controller gets elected.
    #[error("no cluster controller: a majority of the coordinators is unreachable")]
    NoClusterController,
    /// The coordinators reached do not hold the coordinated state: the recovery cannot
    /// read the database's core state, so the commit fdbcli waits for never happens.
    #[error("the recovery cannot read the coordinated state from a majority of the coordinators")]
    NoCoordinatedState,
    /// DCID is none of the configuration's region datacenters.
    #[error("{0} is not a datacenter of the region configuration")]
    UnknownDataCenter(String),
}

impl SimulatedFdb {
    /// `force_recovery_with_data_loss DCID`: `Ok(None)` when the database commits (it
    /// does nothing), `Ok(Some(_))` with what the forced recovery loses, or why fdbcli
    /// would wait forever.
    pub fn force_recovery_with_data_loss(
        &self,
        dc: &str,
    ) -> Result<Option<ForcedRecovery>, ForceRecoveryHang> {
        let now = self.now();
        let mut state = self.lock();
        catch_up(&mut state, now);
        let reachable = state.coordinator_processes().iter().flatten().count();
        if reachable * 2 <= state.coordinator_processes().len() {
            return Err(ForceRecoveryHang::NoClusterController);
        }
        if super::availability::assess(&state).available {
            return Ok(None);
        }
        if state.cluster_version().is_none() {
            return Err(ForceRecoveryHang::NoCoordinatedState);
        }
        let Some(configuration) = state.configuration.as_mut() else {
            return Err(ForceRecoveryHang::NoCoordinatedState);
        };
        let mut known = false;
        for region in &mut configuration.regions {
            for center in region.datacenters.iter_mut().filter(|d| !is_satellite(d)) {
                if center.id == dc {
                    known = true;
                    if priority_of(center) < 0 {
                        center.priority = Some(1);
                    }
                } else if priority_of(center) >= 0 {
                    center.priority = Some(-1);
                }
            }
        }
        if !known {
            return Err(ForceRecoveryHang::UnknownDataCenter(dc.to_owned()));
        }
        configuration.usable_regions = Some(1);
        configuration.regions.sort_by_key(|region| {
            std::cmp::Reverse(
                region
                    .datacenters
                    .iter()
                    .find(|d| !is_satellite(d))
                    .map_or(i32::MIN, priority_of),
            )
        });
        let forced = lose_what_the_dc_lacked(&mut state, dc, now);
        state.failover.forced_into = Some(dc.to_owned());
        state.failover.forced.push(forced.clone());
        state.dirty = true;
        recovery::force(&mut state, now, "force_recovery_with_data_loss");
        refresh(&mut state, now);
        Ok(Some(forced))
    }

    /// Every forced recovery so far.
    pub fn forced_recoveries(&self) -> Vec<ForcedRecovery> {
        self.lock().failover.forced.clone()
    }
}

/// The commits datacenter `dc` lacked when the database stopped committing: none when
/// it was the primary or the last generation's logs outside the remote can be read,
/// else those of the last [`REMOTE_LAG_SECONDS`]. They are gone from the user data.
fn lose_what_the_dc_lacked(state: &mut State, dc: &str, now: i64) -> ForcedRecovery {
    let stopped = state
        .outages
        .last()
        .filter(|o| o.end.is_none())
        .map_or(now, |o| o.start);
    let last_version = version_at(stopped - state.origin);
    let intact =
        state.failover.last.as_ref().is_none_or(|last| {
            last.primary.as_deref() == Some(dc) || old_logs_readable(state, last)
        });
    let kept_version = if intact {
        last_version
    } else {
        version_at(stopped - state.origin - REMOTE_LAG_SECONDS)
    };
    let at_version = version_at(now - state.origin);
    let lost_writes = state.user_data.roll_back(kept_version, at_version);
    ForcedRecovery {
        at: now - state.origin,
        data_center: dc.to_owned(),
        kept_version,
        lost_writes,
    }
}
