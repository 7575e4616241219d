//! The state of the data at a glance (replicas remaining, shards without a live replica,
//! replicas still to move), recomputed after each change rather than on every read.

use std::collections::BTreeSet;

use super::records::{DataSummary, TeamCounts};
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
        teams: TeamCounts {
            min_replicas: replication,
            ..TeamCounts::default()
        },
        ..DataSummary::default()
    };
    // With regions, each datacenter holding data counts on its own.
    let dcs = regions::data_dcs(state.configuration.as_ref());
    let scopes = regions::scopes(dcs.as_ref());
    for shard in &data.shards {
        let mut live = Spread::new(scopes.len());
        let mut counted = Spread::new(scopes.len());
        for (disk, generation) in &shard.replicas {
            let known = state.disks.get(disk);
            let dc = known.and_then(|d| d.dc());
            // A replica outside any team domain (a disk without a data hall in
            // three_data_hall) does not count towards the spread.
            let domain = known.and_then(|d| state.team_domain(&d.launch));
            if serving.contains(disk) {
                live.add(&scopes, dc, domain.as_ref());
            }
            // Data distribution counts a replica until its server is declared failed.
            if known.is_some_and(|d| !state.is_failed(d, now)) {
                counted.add(&scopes, dc, domain.as_ref());
            }
            if leaving.contains(disk.as_str()) {
                summary.leaving_replicas += 1;
            }
            if *generation < data.engine_generation {
                summary.stale_replicas += 1;
            }
        }
        if live.anywhere == 0 {
            summary.without_live_replica += 1;
        }
        if live.under(replication) {
            summary.under_replicated += 1;
        }
        summary.min_live_replicas = summary.min_live_replicas.min(live.fewest());
        summary.min_live_zones = summary.min_live_zones.min(live.fewest_zones());
        let teams = &mut summary.teams;
        if counted.anywhere == 0 {
            teams.without_replica += 1;
        }
        if counted.under(replication) {
            teams.under_replicated += 1;
        }
        teams.min_replicas = teams.min_replicas.min(counted.fewest());
    }
    summary
}

/// One shard's replicas of one kind (live, or counted by data distribution): how many,
/// and in how many team domains, per datacenter scope.
struct Spread {
    anywhere: usize,
    replicas: Vec<usize>,
    zones: Vec<BTreeSet<String>>,
}

impl Spread {
    fn new(scopes: usize) -> Self {
        Self {
            anywhere: 0,
            replicas: vec![0; scopes],
            zones: vec![BTreeSet::new(); scopes],
        }
    }

    fn add(&mut self, scopes: &[Option<&str>], dc: Option<&str>, domain: Option<&String>) {
        self.anywhere += 1;
        for (index, scope) in scopes.iter().enumerate() {
            if regions::in_scope(dc, *scope) {
                self.replicas[index] += 1;
                if let Some(domain) = domain {
                    self.zones[index].insert(domain.clone());
                }
            }
        }
    }

    fn under(&self, replication: usize) -> bool {
        self.zones.iter().any(|z| z.len() < replication)
    }

    fn fewest(&self) -> usize {
        self.replicas.iter().copied().min().unwrap_or(0)
    }

    fn fewest_zones(&self) -> usize {
        self.zones.iter().map(BTreeSet::len).min().unwrap_or(0)
    }
}
