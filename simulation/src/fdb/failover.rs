//! Failovers: a recovery must lock the previous generation's logs before it recruits
//! the next one (`fdbserver/ClusterRecovery.actor.cpp`, `recoverFrom` reading the old log
//! system): the commits of the last generation live only there. With regions, a
//! recovery that moves the primary to another datacenter therefore needs the old
//! primary's logs or its satellites' logs; the remote region's logs lag behind by what
//! its log routers had not pulled yet, and FoundationDB recovers from them only when a
//! user forces it (`forced_recovery.rs`).

use std::collections::BTreeMap;

use super::disks::DiskKey;
use super::records::{LogGeneration, TransactionSystem};
use super::regions::dc_of;
use super::state::State;

/// The generation a recovered transaction system makes the last one.
pub(crate) fn record_generation(state: &mut State, system: &TransactionSystem) {
    let dc_at = |address| {
        state
            .processes
            .get(address)
            .and_then(|p| dc_of(p).map(str::to_owned))
    };
    let primary = system
        .members
        .iter()
        .find(|m| m.role == "master")
        .and_then(|m| dc_at(&m.address));
    let remote = system
        .members
        .iter()
        .find(|m| m.role == "router")
        .and_then(|m| dc_at(&m.address));
    let mut logs: BTreeMap<Option<String>, Vec<DiskKey>> = BTreeMap::new();
    for address in system.logs() {
        if let Some(process) = state.processes.get(address) {
            logs.entry(dc_of(process).map(str::to_owned))
                .or_default()
                .push(process.disk.clone());
        }
    }
    state.failover.last = Some(LogGeneration {
        primary,
        remote,
        logs,
    });
    state.failover.forced_into = None;
}

/// Whether a recovery may recruit `system`: a region change of the primary needs the
/// last generation's logs (of its primary or a satellite) or a forced recovery there.
pub(crate) fn may_recruit(state: &State, system: &TransactionSystem) -> bool {
    let Some(last) = &state.failover.last else {
        return true;
    };
    let new_primary = system
        .members
        .iter()
        .find(|m| m.role == "master")
        .and_then(|m| state.processes.get(&m.address))
        .and_then(|p| dc_of(p).map(str::to_owned));
    if last.primary.is_none() || new_primary == last.primary {
        return true;
    }
    state.failover.forced_into.is_some() && state.failover.forced_into == new_primary
        || old_logs_readable(state, last)
}

/// Whether some datacenter's logs of the last generation (not the remote's) can be
/// read: no more of them lost than the replication tolerates.
pub(crate) fn old_logs_readable(state: &State, last: &LogGeneration) -> bool {
    let version = state.cluster_version();
    let tolerated = state.replicas().saturating_sub(1);
    last.logs
        .iter()
        .filter(|(dc, _)| dc.is_some() && **dc != last.remote)
        .any(|(_, disks)| {
            let alive = disks
                .iter()
                .filter(|disk| {
                    state
                        .processes
                        .values()
                        .any(|p| &p.disk == *disk && state.is_member(p, version.as_ref()))
                })
                .count();
            alive > 0 && disks.len() - alive <= tolerated
        })
}
