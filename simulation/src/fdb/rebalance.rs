//! Background rebalancing: data distribution moves shards from the most loaded storage
//! server to the least loaded one while they differ by more than three shards, at the
//! lowest priority (nothing else moving).
//!
//! FoundationDB's `BgDDMountainChopper` and `BgDDValleyFiller`
//! (`fdbserver/DataDistributionQueue.actor.cpp`, release-7.1) relocate a shard from a
//! loaded team to an unloaded one unless `sourceBytes - destBytes <= 3 * shardBytes`,
//! at `PRIORITY_REBALANCE_UNDERUTILIZED_TEAM` (120), below every repair, drain and
//! wiggle. So a storage server that joins empty (or is included again after its
//! exclusion) receives data back: deleting its disk then loses replicas, whatever an old
//! exclusion record says. Here the move is per disk: one replica goes from the most to
//! the least loaded eligible disk of a scope, in a domain the shard's other replicas do
//! not use.

use std::collections::BTreeMap;

use super::disks::DiskKey;
use super::movement::{MoveKind, Movement};
use super::shards::{Data, mix};

/// What rebalancing reads of data distribution's view: the eligible storage disks of
/// each scope (each datacenter that holds data, or all), every disk's team domain, and
/// the run's seed.
pub(super) struct Candidates<'a> {
    pub scopes: Vec<Vec<&'a DiskKey>>,
    pub zones: &'a BTreeMap<DiskKey, String>,
    pub seed: u64,
}

/// The smallest difference, in shards, worth a move (`rebalanceTeams`' "too similar").
const TOO_SIMILAR_SHARDS: usize = 3;

/// Plans at most one rebalancing move per scope (datacenter with regions); the planner
/// calls it only when no move is planned at all.
pub(super) fn plan(data: &Data, movement: &mut Movement, view: &Candidates<'_>) {
    let mut planned = Vec::new();
    for disks in &view.scopes {
        let mut disks = disks.clone();
        let Some(valley) = disks
            .iter()
            .copied()
            .min_by_key(|disk| (data.held_by(disk), mix(view.seed, 0, disk)))
        else {
            continue;
        };
        disks.sort_by_key(|disk| std::cmp::Reverse((data.held_by(disk), *disk)));
        let floor = data.held_by(valley);
        for mountain in disks {
            if data.held_by(mountain) <= floor + TOO_SIMILAR_SHARDS {
                break;
            }
            if let Some(shard) = movable_shard(data, view, mountain, valley) {
                planned.push((shard, mountain.clone(), valley.clone()));
                break;
            }
        }
    }
    for (shard, source, dest) in planned {
        movement.add(
            shard,
            source,
            MoveKind::Rebalance { dest },
            data.shard_bytes,
        );
    }
}

/// A shard on `mountain` that `valley` may take: not on it yet, and whose other replicas
/// leave `valley`'s domain free (the seed picks among them).
fn movable_shard(
    data: &Data,
    view: &Candidates<'_>,
    mountain: &DiskKey,
    valley: &DiskKey,
) -> Option<usize> {
    let valley_zone = view.zones.get(valley)?;
    data.shards
        .iter()
        .enumerate()
        .filter(|(_, shard)| {
            !shard.lost
                && shard.replicas.contains_key(mountain)
                && !shard.replicas.contains_key(valley)
                && shard
                    .replicas
                    .keys()
                    .filter(|disk| *disk != mountain)
                    .all(|disk| view.zones.get(disk) != Some(valley_zone))
        })
        .min_by_key(|(index, _)| mix(view.seed, *index, valley))
        .map(|(index, _)| index)
}
