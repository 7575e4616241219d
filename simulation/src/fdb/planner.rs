//! Data distribution: decides which shards move where, after any change.
//!
//! A replica is *leaving* when its disk is excluded, or failed (silent for
//! `failureDetectionSeconds`, outside the maintenance zone). Every shard wants
//! `replication factor` replicas that are not leaving, in distinct zones. A missing one is
//! copied from a live replica (the leaving one itself while it still serves, so an
//! excluded process drains its own data) to the least loaded eligible storage disk (a
//! member, not excluded, in a zone the shard does not use yet); when the copy completes
//! the leaving replica is dropped. A shard only moves when its whole team can be formed:
//! with too few eligible zones nothing moves and exclusions stay incomplete. Moves no
//! longer needed (the failed process came back, the exclusion was lifted) are cancelled.
//! A storage engine change rewrites each replica in place. In three_data_hall the
//! "zones" of a team are data halls (`State::team_domain`): three replicas in three
//! halls, and a disk without a `data_hall` locality takes no replica.

use std::collections::{BTreeMap, BTreeSet};

use super::disks::DiskKey;
use super::movement::{Move, MoveKind, Movement};
use super::rebalance;
use super::regions;
use super::shards::{Data, Shard, mix};
use super::state::State;

/// What data distribution knows about the disks at one instant.
struct View {
    serving: BTreeSet<DiskKey>,
    leaving: BTreeSet<DiskKey>,
    /// Storage disks new replicas may go to, with their zones.
    eligible: BTreeMap<DiskKey, String>,
    zones: BTreeMap<DiskKey, String>,
    replication: usize,
    seed: u64,
    /// With regions, the datacenters that each want `replication` replicas of every
    /// shard ([`regions::data_dcs`]), and the datacenter of each disk.
    dcs: Option<Vec<String>>,
    dc_of: BTreeMap<DiskKey, Option<String>>,
}

impl View {
    fn scopes(&self) -> Vec<Option<&str>> {
        regions::scopes(self.dcs.as_ref())
    }

    fn in_scope(&self, disk: &DiskKey, scope: Option<&str>) -> bool {
        regions::in_scope(self.dc_of.get(disk).and_then(Option::as_deref), scope)
    }

    /// Whether a disk is in a datacenter that holds data (always, without regions).
    fn holds_data(&self, disk: &DiskKey) -> bool {
        // As `scopes().any(in_scope)`, without building the scope list per disk.
        match &self.dcs {
            None => true,
            Some(dcs) => dcs.iter().any(|dc| self.in_scope(disk, Some(dc.as_str()))),
        }
    }
}

/// Replans data movement at `now` (after any change).
pub(crate) fn plan(state: &mut State, now: i64) {
    if state.data.is_none() {
        return;
    }
    let serving = state.serving_disks();
    let mut leaving = BTreeSet::new();
    let mut eligible = BTreeMap::new();
    let mut zones = BTreeMap::new();
    let dcs = regions::data_dcs(state.configuration.as_ref());
    let mut dc_of = BTreeMap::new();
    for (key, disk) in &state.disks {
        // The team domain: the zone, or the data hall in three_data_hall (a disk without
        // one takes no new replica and its replicas count for no domain).
        let domain = state.team_domain(&disk.launch);
        if let Some(domain) = &domain {
            zones.insert(key.clone(), domain.clone());
        }
        dc_of.insert(key.clone(), disk.dc().map(str::to_owned));
        let excluded = state.is_disk_excluded(disk);
        if excluded || state.is_failed(disk, now) {
            leaving.insert(key.clone());
        } else if let Some(domain) = domain.filter(|_| disk.is_storage() && serving.contains(key)) {
            eligible.insert(key.clone(), domain);
        }
    }
    let mut view = View {
        serving,
        leaving,
        eligible,
        zones,
        replication: state.replicas(),
        seed: state.settings.seed,
        dcs,
        dc_of,
    };
    // Storage outside the datacenters that hold data gets none.
    let outside: Vec<DiskKey> = view
        .eligible
        .keys()
        .filter(|disk| !view.holds_data(disk))
        .cloned()
        .collect();
    for disk in outside {
        view.eligible.remove(&disk);
    }
    let State { data, movement, .. } = state;
    let Some(data) = data.as_mut() else {
        return;
    };
    drop_surplus(data, movement, &view);
    validate(data, movement, &view);
    replicate(data, movement, &view);
    rewrite(data, movement, &view);
    // Repairs, drains and rewrites go first (their priorities are above the background
    // rebalancing's); rebalancing resumes once they are done, one move at a time.
    if movement.has_work_besides_rebalancing() {
        movement
            .moves
            .retain(|_, m| !matches!(m.kind, MoveKind::Rebalance { .. }));
    } else if movement.moves.is_empty() {
        let candidates = rebalance::Candidates {
            scopes: view
                .scopes()
                .into_iter()
                .map(|scope| {
                    view.eligible
                        .keys()
                        .filter(|disk| view.in_scope(disk, scope))
                        .collect()
                })
                .collect(),
            zones: &view.zones,
            seed: view.seed,
        };
        rebalance::plan(data, movement, &candidates);
    }
}

/// Shards with enough good replicas lose the rest at once (a failed or excluded copy
/// that is no longer needed, extra copies after a redundancy decrease), and need no
/// copies.
fn drop_surplus(data: &mut Data, movement: &mut Movement, view: &View) {
    let mut drops: Vec<(usize, DiskKey)> = Vec::new();
    let mut satisfied = BTreeSet::new();
    let scopes = view.scopes();
    for (index, shard) in data.shards.iter().enumerate() {
        if shard.lost {
            continue;
        }
        let good: Vec<&DiskKey> = shard
            .replicas
            .keys()
            .filter(|d| !view.leaving.contains(*d))
            .collect();
        if scopes.iter().any(|scope| {
            let in_scope: Vec<&DiskKey> = good
                .iter()
                .copied()
                .filter(|d| view.in_scope(d, *scope))
                .collect();
            distinct_domains(&in_scope, view) < view.replication
        }) {
            continue;
        }
        satisfied.insert(index);
        // Leaving replicas, and replicas outside the datacenters that hold data.
        drops.extend(
            shard
                .replicas
                .keys()
                .filter(|d| view.leaving.contains(*d) || !view.holds_data(d))
                .map(|d| (index, d.clone())),
        );
        for scope in &scopes {
            // Extra good replicas: keep one per zone first, the least loaded first.
            let mut keep: Vec<&DiskKey> = good
                .iter()
                .copied()
                .filter(|d| view.in_scope(d, *scope))
                .collect();
            keep.sort_by(|a, b| (data.held_by(a), *a).cmp(&(data.held_by(b), *b)));
            let mut zones_kept = BTreeSet::new();
            let (first, rest): (Vec<&DiskKey>, Vec<&DiskKey>) = keep
                .into_iter()
                .partition(|d| view.zones.get(*d).is_some_and(|z| zones_kept.insert(z)));
            drops.extend(
                first
                    .into_iter()
                    .chain(rest)
                    .skip(view.replication)
                    .map(|d| (index, d.clone())),
            );
        }
    }
    for (index, disk) in drops {
        data.drop_replica(index, &disk);
    }
    movement.moves.retain(|_, m| {
        !(satisfied.contains(&m.shard) && matches!(m.kind, MoveKind::Replicate { .. }))
    });
}

/// Cancels moves no longer possible or needed; finds another source for a move whose
/// source went away.
fn validate(data: &Data, movement: &mut Movement, view: &View) {
    let mut cancel = Vec::new();
    let mut resource = Vec::new();
    for (id, m) in &mut movement.moves {
        let Some(shard) = data.shards.get(m.shard).filter(|s| !s.lost) else {
            cancel.push(*id);
            continue;
        };
        match &mut m.kind {
            MoveKind::Replicate { dest, drop } => {
                if !view.eligible.contains_key(dest) || shard.replicas.contains_key(dest) {
                    cancel.push(*id);
                    continue;
                }
                if let Some(old) = drop.clone() {
                    if !shard.replicas.contains_key(&old) {
                        // Its disk is gone: the copy is still needed, nothing to drop.
                        *drop = None;
                    } else if !view.leaving.contains(&old) {
                        // It came back or was included again: no longer needed.
                        cancel.push(*id);
                        continue;
                    }
                }
            }
            MoveKind::Rebalance { dest } => {
                // Still worth it only while both ends serve and nothing else moved it.
                if !view.eligible.contains_key(dest)
                    || !view.eligible.contains_key(&m.source)
                    || shard.replicas.contains_key(dest)
                    || !shard.replicas.contains_key(&m.source)
                {
                    cancel.push(*id);
                }
                continue;
            }
            MoveKind::Rewrite => {
                let stale = shard
                    .replicas
                    .get(&m.source)
                    .is_some_and(|generation| *generation < data.engine_generation);
                if !stale || !view.serving.contains(&m.source) || view.leaving.contains(&m.source) {
                    cancel.push(*id);
                }
                continue;
            }
        }
        if !view.serving.contains(&m.source) || !shard.replicas.contains_key(&m.source) {
            resource.push(*id);
        }
    }
    for id in cancel {
        movement.moves.remove(&id);
    }
    for id in resource {
        let Some(m) = movement.moves.get(&id) else {
            continue;
        };
        let source = live_source(data, movement, view, m.shard);
        match source {
            Some(source) => {
                if let Some(m) = movement.moves.get_mut(&id) {
                    m.source = source;
                }
            }
            None => {
                movement.moves.remove(&id);
            }
        }
    }
}

/// Where one shard's copy goes: what it keeps, the moves already under way, and the
/// copies already headed to each disk.
struct Placement<'a> {
    index: usize,
    shard: &'a Shard,
    scope: Option<&'a str>,
    keep: &'a [&'a DiskKey],
    all_moves: &'a [&'a Move],
    incoming: &'a BTreeMap<DiskKey, usize>,
}

/// Up to `missing` destinations in distinct zones no replica or move uses, the least
/// loaded first (ties broken by the run's seed).
fn choose_destinations<'v>(
    data: &Data,
    view: &'v View,
    placement: Placement<'_>,
    missing: usize,
) -> Vec<&'v DiskKey> {
    let Placement {
        index,
        shard,
        scope,
        keep,
        all_moves,
        incoming,
    } = placement;
    let mut used_zones: BTreeSet<&String> =
        keep.iter().filter_map(|d| view.zones.get(*d)).collect();
    let mut dests_taken: BTreeSet<&DiskKey> = BTreeSet::new();
    for m in all_moves {
        if let MoveKind::Replicate { dest, .. } = &m.kind {
            used_zones.extend(view.zones.get(dest));
            dests_taken.insert(dest);
        }
    }
    let mut candidates: Vec<(&DiskKey, &String)> = view
        .eligible
        .iter()
        .filter(|(disk, zone)| {
            view.in_scope(disk, scope)
                && !shard.replicas.contains_key(*disk)
                && !dests_taken.contains(disk)
                && !used_zones.contains(zone)
        })
        .collect();
    candidates.sort_by_cached_key(|(disk, _)| {
        (
            data.held_by(disk) + incoming.get(*disk).copied().unwrap_or(0),
            mix(view.seed, index, disk),
        )
    });
    let mut chosen: Vec<&DiskKey> = Vec::new();
    let mut zones_chosen = BTreeSet::new();
    for (disk, zone) in candidates {
        if chosen.len() < missing && zones_chosen.insert(zone) {
            chosen.push(disk);
        }
    }
    chosen
}

/// The moves under way: the copies of each shard, how many copies head to each disk,
/// and how many moves read from each disk.
#[allow(clippy::type_complexity)]
fn in_flight(
    movement: &Movement,
) -> (
    BTreeMap<usize, Vec<&Move>>,
    BTreeMap<DiskKey, usize>,
    BTreeMap<DiskKey, usize>,
) {
    let mut pending: BTreeMap<usize, Vec<&Move>> = BTreeMap::new();
    let mut incoming: BTreeMap<DiskKey, usize> = BTreeMap::new();
    let mut queued: BTreeMap<DiskKey, usize> = BTreeMap::new();
    for m in movement.moves.values() {
        match &m.kind {
            MoveKind::Replicate { dest, .. } => {
                pending.entry(m.shard).or_default().push(m);
                *incoming.entry(dest.clone()).or_insert(0) += 1;
            }
            MoveKind::Rebalance { dest } => *incoming.entry(dest.clone()).or_insert(0) += 1,
            MoveKind::Rewrite => {}
        }
        *queued.entry(m.source.clone()).or_insert(0) += 1;
    }
    (pending, incoming, queued)
}

/// The replicas the moves will drop once their copies land.
fn dropped_by<'a>(moves: &[&'a Move]) -> BTreeSet<&'a DiskKey> {
    moves
        .iter()
        .filter_map(|m| match &m.kind {
            MoveKind::Replicate {
                drop: Some(old), ..
            } => Some(old),
            _ => None,
        })
        .collect()
}

/// The copies under way whose destination is in `scope`.
fn moves_in_scope<'a>(all_moves: &[&'a Move], view: &View, scope: Option<&str>) -> Vec<&'a Move> {
    all_moves
        .iter()
        .copied()
        .filter(|m| match &m.kind {
            MoveKind::Replicate { dest, .. } => view.in_scope(dest, scope),
            MoveKind::Rewrite | MoveKind::Rebalance { .. } => false,
        })
        .collect()
}

/// Plans the copies each shard needs, when its whole team can be formed.
fn replicate(data: &Data, movement: &mut Movement, view: &View) {
    let (pending, mut incoming, mut queued) = in_flight(movement);
    let mut planned: Vec<(usize, DiskKey, MoveKind)> = Vec::new();
    for (index, shard) in data.shards.iter().enumerate() {
        if shard.lost {
            continue;
        }
        for scope in view.scopes() {
            let keep: Vec<&DiskKey> = shard
                .replicas
                .keys()
                .filter(|d| !view.leaving.contains(*d))
                .collect();
            let all_moves = pending.get(&index).map_or(&[][..], Vec::as_slice);
            let moves = moves_in_scope(all_moves, view, scope);
            let in_scope: Vec<&DiskKey> = keep
                .iter()
                .copied()
                .filter(|d| view.in_scope(d, scope))
                .collect();
            // Replicas sharing a domain (after a switch to three_data_hall, two copies in
            // one hall) count once: the team needs a copy in another domain.
            let missing = view
                .replication
                .saturating_sub(distinct_domains(&in_scope, view))
                .saturating_sub(moves.len());
            if missing == 0 {
                continue;
            }
            let chosen = choose_destinations(
                data,
                view,
                Placement {
                    index,
                    shard,
                    scope,
                    keep: &keep,
                    all_moves,
                    incoming: &incoming,
                },
                missing,
            );
            if chosen.len() < missing {
                continue;
            }
            let covered = dropped_by(&moves);
            let mut uncovered = shard.replicas.keys().filter(|d| {
                view.leaving.contains(*d) && !covered.contains(d) && view.in_scope(d, scope)
            });
            for dest in chosen {
                let drop = uncovered.next().cloned();
                let own = drop.clone().filter(|d| view.serving.contains(d));
                let Some(source) =
                    own.or_else(|| pick_source(shard_holders(data, index), view, &queued))
                else {
                    break;
                };
                *queued.entry(source.clone()).or_insert(0) += 1;
                *incoming.entry(dest.clone()).or_insert(0) += 1;
                planned.push((
                    index,
                    source,
                    MoveKind::Replicate {
                        dest: dest.clone(),
                        drop,
                    },
                ));
            }
        }
    }
    let bytes = data.shard_bytes;
    for (index, source, kind) in planned {
        movement.add(index, source, kind, bytes);
    }
}

/// Plans in-place rewrites of replicas older than the storage engine.
fn rewrite(data: &Data, movement: &mut Movement, view: &View) {
    let pending: BTreeSet<(usize, DiskKey)> = movement
        .moves
        .values()
        .filter(|m| m.kind == MoveKind::Rewrite)
        .map(|m| (m.shard, m.source.clone()))
        .collect();
    let mut planned = Vec::new();
    for (index, shard) in data.shards.iter().enumerate() {
        for (disk, generation) in &shard.replicas {
            if *generation < data.engine_generation
                && view.serving.contains(disk)
                && !view.leaving.contains(disk)
                && !pending.contains(&(index, disk.clone()))
            {
                planned.push((index, disk.clone()));
            }
        }
    }
    for (index, disk) in planned {
        movement.add(index, disk, MoveKind::Rewrite, data.shard_bytes);
    }
}

fn shard_holders(data: &Data, index: usize) -> Vec<&DiskKey> {
    data.shards
        .get(index)
        .map(|s| s.replicas.keys().collect())
        .unwrap_or_default()
}

/// The live holder with the shortest queue.
fn pick_source(
    holders: Vec<&DiskKey>,
    view: &View,
    queued: &BTreeMap<DiskKey, usize>,
) -> Option<DiskKey> {
    holders
        .into_iter()
        .filter(|d| view.serving.contains(*d))
        .min_by(|a, b| {
            let load = |d: &DiskKey| queued.get(d).copied().unwrap_or(0);
            (load(a), *a).cmp(&(load(b), *b))
        })
        .cloned()
}

fn live_source(data: &Data, movement: &Movement, view: &View, index: usize) -> Option<DiskKey> {
    let mut queued: BTreeMap<DiskKey, usize> = BTreeMap::new();
    for m in movement.moves.values() {
        *queued.entry(m.source.clone()).or_insert(0) += 1;
    }
    pick_source(shard_holders(data, index), view, &queued)
}

/// Distinct team domains among `disks` (disks without one count for none).
fn distinct_domains(disks: &[&DiskKey], view: &View) -> usize {
    disks
        .iter()
        .filter_map(|d| view.zones.get(*d))
        .collect::<BTreeSet<_>>()
        .len()
}
