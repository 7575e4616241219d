//! Data movement in progress: copies of shards from a live replica to a new disk, and
//! rewrites of replicas for a new storage engine.
//!
//! Each source disk sends at the movement rate, one move at a time in the order the
//! moves were planned (the first is in flight, the others queued), so a move's end is
//! known exactly and the timeline can stop there.

use std::collections::BTreeMap;

use super::disks::DiskKey;
use super::shards::Data;

/// What a move does when it completes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MoveKind {
    /// Adds a replica on `dest`, then drops the one on `drop` (a failed or excluded
    /// disk's copy) if any.
    Replicate {
        dest: DiskKey,
        drop: Option<DiskKey>,
    },
    /// Rewrites the source's own replica with the current storage engine.
    Rewrite,
    /// Moves the source's replica to `dest` (data distribution's background
    /// rebalancing): adds the copy on `dest`, then drops the source's.
    Rebalance { dest: DiskKey },
}

/// One planned move.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Move {
    pub shard: usize,
    /// The live replica the data is read from.
    pub source: DiskKey,
    pub kind: MoveKind,
    /// Bytes still to send.
    pub remaining: f64,
}

/// The moves planned, by ID (planning order).
#[derive(Debug, Clone, Default)]
pub(crate) struct Movement {
    pub moves: BTreeMap<u64, Move>,
    next_id: u64,
    /// Bytes sent since the start (also of moves cancelled midway).
    pub moved_bytes: f64,
}

impl Movement {
    pub fn add(&mut self, shard: usize, source: DiskKey, kind: MoveKind, bytes: f64) {
        self.next_id += 1;
        self.moves.insert(
            self.next_id,
            Move {
                shard,
                source,
                kind,
                remaining: bytes,
            },
        );
    }

    /// The move in flight for each source: its first.
    pub fn in_flight(&self) -> BTreeMap<&DiskKey, u64> {
        let mut first = BTreeMap::new();
        for (id, m) in &self.moves {
            first.entry(&m.source).or_insert(*id);
        }
        first
    }

    /// Seconds until the first move in flight completes, each source sending at
    /// `rate_of(source)` bytes/s.
    pub fn next_completion(&self, rate_of: impl Fn(&DiskKey) -> f64) -> Option<f64> {
        self.in_flight()
            .into_iter()
            .filter_map(|(source, id)| {
                let rate = rate_of(source);
                let m = self.moves.get(&id)?;
                (rate > 0.0).then(|| (m.remaining / rate).max(0.0))
            })
            .min_by(f64::total_cmp)
    }

    /// Sends `seconds` worth of data on every move in flight, each source at
    /// `rate_of(source)` bytes/s; returns the moves that completed (removed from the
    /// plan). The caller never passes a completion without stopping there, so only moves
    /// in flight at the start can complete.
    pub fn progress(&mut self, seconds: f64, rate_of: impl Fn(&DiskKey) -> f64) -> Vec<Move> {
        if seconds <= 0.0 {
            return Vec::new();
        }
        let active: Vec<(f64, u64)> = self
            .in_flight()
            .into_iter()
            .map(|(source, id)| (rate_of(source), id))
            .filter(|(rate, _)| *rate > 0.0)
            .collect();
        let mut done = Vec::new();
        for (rate, id) in active {
            // Float noise: a move within a microsecond of its end is done.
            let epsilon = rate * 1e-6 + 1.0;
            if let Some(m) = self.moves.get_mut(&id) {
                let sent = (rate * seconds).min(m.remaining);
                m.remaining -= sent;
                self.moved_bytes += sent;
                if m.remaining <= epsilon {
                    self.moved_bytes += m.remaining.max(0.0);
                    if let Some(finished) = self.moves.remove(&id) {
                        done.push(finished);
                    }
                }
            }
        }
        done
    }

    /// Whether any move other than a background rebalance is planned: repairs,
    /// drains and rewrites (what keeps the database from healthy).
    pub fn has_work_besides_rebalancing(&self) -> bool {
        self.moves
            .values()
            .any(|m| !matches!(m.kind, MoveKind::Rebalance { .. }))
    }

    /// Whether a background rebalance is planned.
    pub fn is_rebalancing(&self) -> bool {
        self.moves
            .values()
            .any(|m| matches!(m.kind, MoveKind::Rebalance { .. }))
    }

    /// Bytes of moves in flight and of moves queued behind them.
    pub fn in_flight_and_queued(&self) -> (f64, f64) {
        let active: Vec<u64> = self.in_flight().into_values().collect();
        self.moves
            .iter()
            .fold((0.0, 0.0), |(flight, queue), (id, m)| {
                if active.contains(id) {
                    (flight + m.remaining, queue)
                } else {
                    (flight, queue + m.remaining)
                }
            })
    }
}

/// Applies completed moves to the data.
pub(crate) fn complete(data: &mut Data, done: Vec<Move>) {
    let generation = data.engine_generation;
    for m in done {
        match m.kind {
            MoveKind::Replicate { dest, drop } => {
                data.add_replica(m.shard, &dest, generation);
                if let Some(old) = drop {
                    data.drop_replica(m.shard, &old);
                }
            }
            MoveKind::Rewrite => data.rewrite_replica(m.shard, &m.source),
            MoveKind::Rebalance { dest } => {
                data.add_replica(m.shard, &dest, generation);
                data.drop_replica(m.shard, &m.source);
            }
        }
    }
}
