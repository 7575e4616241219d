//! The database's data: shards, each with replicas on disks in distinct zones.
//!
//! Created at the first moment the configured database has storage servers, as
//! `shards` equal shards totalling `storageGiB` x storage servers / replication factor
//! (so each storage server holds about `storageGiB`), placed evenly and deterministically.
//! Replicas change only through [`Data::add_replica`], [`Data::drop_replica`] and
//! [`Data::destroy_disk`], which keep the per-disk counts in step.

use std::collections::{BTreeMap, BTreeSet};

use super::disks::DiskKey;

/// Bytes in a GiB.
pub(crate) const GIB: f64 = (1u64 << 30) as f64;
/// Bytes in a MiB.
pub(crate) const MIB: f64 = (1u64 << 20) as f64;

/// One shard.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shard {
    /// Disks holding a complete copy, with the storage engine generation it was written
    /// with (a storage engine change rewrites replicas of older generations).
    pub replicas: BTreeMap<DiskKey, u32>,
    /// Every replica was destroyed: the shard is gone for good.
    pub lost: bool,
}

/// All shards of the database.
#[derive(Debug, Clone)]
pub(crate) struct Data {
    /// Size of one shard.
    pub shard_bytes: f64,
    pub shards: Vec<Shard>,
    /// Replicas per disk.
    held: BTreeMap<DiskKey, usize>,
    /// The current storage engine generation.
    pub engine_generation: u32,
    /// Shards lost so far.
    pub lost: u64,
}

/// A storage disk data may be placed on.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub disk: DiskKey,
    pub zone: String,
}

impl Data {
    /// Places `shards` shards of `shard_bytes` with `replication` replicas each on the
    /// candidates, in distinct zones (fewer replicas when there are fewer zones: data
    /// distribution adds the rest once zones appear), the least loaded disk first and
    /// seeded ties.
    pub fn place(
        candidates: &[Candidate],
        shards: usize,
        shard_bytes: f64,
        replication: usize,
        seed: u64,
    ) -> Self {
        let mut data = Self {
            shard_bytes,
            shards: vec![Shard::default(); shards],
            held: BTreeMap::new(),
            engine_generation: 0,
            lost: 0,
        };
        for index in 0..shards {
            let mut order: Vec<&Candidate> = candidates.iter().collect();
            order.sort_by_key(|c| (data.held_by(&c.disk), mix(seed, index, &c.disk)));
            let mut zones = BTreeSet::new();
            for candidate in order {
                if zones.len() >= replication {
                    break;
                }
                if zones.insert(candidate.zone.as_str()) {
                    data.add_replica(index, &candidate.disk, 0);
                }
            }
        }
        data
    }

    /// Replicas on that disk.
    pub fn held_by(&self, disk: &str) -> usize {
        self.held.get(disk).copied().unwrap_or(0)
    }

    /// Total replicas.
    pub fn total_replicas(&self) -> usize {
        self.held.values().sum()
    }

    pub fn add_replica(&mut self, shard: usize, disk: &str, generation: u32) {
        if let Some(entry) = self.shards.get_mut(shard)
            && entry.replicas.insert(disk.to_owned(), generation).is_none()
        {
            *self.held.entry(disk.to_owned()).or_insert(0) += 1;
        }
    }

    /// Drops a replica; never the last one (that only happens when its disk is lost).
    pub fn drop_replica(&mut self, shard: usize, disk: &str) {
        let Some(entry) = self.shards.get_mut(shard) else {
            return;
        };
        if entry.replicas.len() > 1 && entry.replicas.remove(disk).is_some() {
            self.uncount(disk);
        }
    }

    /// Marks a replica as written with the current storage engine.
    pub fn rewrite_replica(&mut self, shard: usize, disk: &str) {
        let generation = self.engine_generation;
        if let Some(replica) = self
            .shards
            .get_mut(shard)
            .and_then(|s| s.replicas.get_mut(disk))
        {
            *replica = generation;
        }
    }

    /// The disk is gone: its replicas with it. Returns how many shards that lost.
    pub fn destroy_disk(&mut self, disk: &str) -> u64 {
        if self.held_by(disk) == 0 {
            return 0;
        }
        let mut newly_lost = 0;
        for shard in &mut self.shards {
            if shard.replicas.remove(disk).is_some() && shard.replicas.is_empty() && !shard.lost {
                shard.lost = true;
                newly_lost += 1;
            }
        }
        self.held.remove(disk);
        self.lost += newly_lost;
        newly_lost
    }

    fn uncount(&mut self, disk: &str) {
        if let Some(count) = self.held.get_mut(disk) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.held.remove(disk);
            }
        }
    }
}

/// A deterministic, well spread tie-breaker for placing shard `index` on `disk`.
pub(crate) fn mix(seed: u64, index: usize, disk: &str) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64 ^ seed.rotate_left(17) ^ (index as u64);
    for byte in disk.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    // A final avalanche, so neighbouring indexes order disks differently.
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^ (hash >> 33)
}
