//! The state of the data at a glance (replicas remaining, shards without a live replica,
//! replicas still to move), recomputed after each change rather than on every read.

use std::collections::BTreeSet;

use super::records::DataSummary;
use super::regions;
use super::state::State;

pub(crate) fn summarize(state: &State, now: i64) -> DataSummary {
    let Some(data) = &state.data else {
        return DataSummary::default();
    };
    let replication = state.replicas();
    let serving = state.serving_disks();
    let mut leaving = BTreeSet::new();
    let mut silent_disks = 0;
    for (key, disk) in &state.disks {
        if state.is_disk_excluded(disk) || state.is_failed(disk, now) {
            leaving.insert(key.as_str());
        }
        if data.held_by(key) > 0 && !serving.contains(key) {
            silent_disks += 1;
        }
    }
    let mut summary = DataSummary {
        placed: true,
        min_live_replicas: replication,
        min_live_zones: replication,
        silent_disks,
        ..DataSummary::default()
    };
    // With regions, each datacenter holding data counts on its own.
    let dcs = regions::data_dcs(state.configuration.as_ref());
    let scopes = regions::scopes(dcs.as_ref());
    for shard in &data.shards {
        let mut live_anywhere = 0;
        let mut live = vec![0; scopes.len()];
        let mut zones = vec![BTreeSet::new(); scopes.len()];
        for (disk, generation) in &shard.replicas {
            if serving.contains(disk) {
                live_anywhere += 1;
                let known = state.disks.get(disk);
                let dc = known.and_then(|d| d.dc());
                // A replica outside any team domain (a disk without a data hall in
                // three_data_hall) does not count towards the spread.
                let domain = known.and_then(|d| state.team_domain(&d.launch));
                for (index, scope) in scopes.iter().enumerate() {
                    if regions::in_scope(dc, *scope) {
                        live[index] += 1;
                        if let Some(domain) = &domain {
                            zones[index].insert(domain.clone());
                        }
                    }
                }
            }
            if leaving.contains(disk.as_str()) {
                summary.leaving_replicas += 1;
            }
            if *generation < data.engine_generation {
                summary.stale_replicas += 1;
            }
        }
        if live_anywhere == 0 {
            summary.without_live_replica += 1;
        }
        if zones.iter().any(|z| z.len() < replication) {
            summary.under_replicated += 1;
        }
        for (live, zones) in live.iter().zip(&zones) {
            summary.min_live_replicas = summary.min_live_replicas.min(*live);
            summary.min_live_zones = summary.min_live_zones.min(zones.len());
        }
    }
    summary
}
