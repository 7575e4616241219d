//! The database's user data, as a digest that evolves with writes.
//!
//! A workload writes one key every [`WRITE_INTERVAL_SECONDS`] while the database is
//! available (key `user/<n>`, value derived from `n`, `n` counting every write ever
//! made). The content is therefore the last content set outright (empty, a clear, a
//! restore) plus the keys `user/<since>` to `user/<n>` written after it, and its digest
//! names exactly that, so the digest at any database version (the last write at or
//! before it) is well defined. The database's version advances with time,
//! [`VERSIONS_PER_SECOND`] per second, as FoundationDB's does.
//!
//! The history holds one entry per content set outright and one per uninterrupted run
//! of writes, not one per write: ten idle simulated years used to keep 31 million
//! entries (1.5 GB); the digest after any write of a run is computed from the run.
//! `clearData` empties the database and stops the workload (as a user would before a
//! restore); a restore replaces the content with a backup's.

use sha2::{Digest, Sha256};

/// Seconds between two writes of the workload.
pub const WRITE_INTERVAL_SECONDS: i64 = 10;
/// Database versions per second.
pub const VERSIONS_PER_SECOND: i64 = 1_000_000;
/// The digest of an empty database.
pub const EMPTY_DIGEST: &str = "empty";
/// Database versions between two writes of the workload.
const VERSIONS_PER_WRITE: i64 = WRITE_INTERVAL_SECONDS * VERSIONS_PER_SECOND;

/// A content set outright, and the writes made over it since.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Base {
    /// The digest of the content set outright.
    digest: String,
    /// The number of the first write made over it.
    since: u64,
}

/// One change of the history.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    /// The content became `digest` at `version` (the initial content, a clear, a restore).
    Set { version: i64, digest: String },
    /// Writes `first_number..first_number + count` over `base`, one every
    /// [`VERSIONS_PER_WRITE`] from `first_version` on.
    Writes {
        first_version: i64,
        first_number: u64,
        count: u64,
        base: Base,
    },
}

impl Change {
    /// The version of the change's first content.
    fn first_version(&self) -> i64 {
        match self {
            Self::Set { version, .. } => *version,
            Self::Writes { first_version, .. } => *first_version,
        }
    }

    /// The version of the change's last content.
    fn last_version(&self) -> i64 {
        match self {
            Self::Set { version, .. } => *version,
            Self::Writes {
                first_version,
                count,
                ..
            } => write_version(*first_version, count.saturating_sub(1)),
        }
    }

    /// Every content of the change at a version in `after..=until`, in version order.
    fn contents_between(&self, after: i64, until: i64) -> Vec<(i64, String)> {
        match self {
            Self::Set { version, digest } => {
                if *version > after && *version <= until {
                    vec![(*version, digest.clone())]
                } else {
                    Vec::new()
                }
            }
            Self::Writes {
                first_version,
                first_number,
                count,
                base,
            } => (0..*count)
                .map(|index| (write_version(*first_version, index), index))
                .skip_while(|(version, _)| *version <= after)
                .take_while(|(version, _)| *version <= until)
                .map(|(version, index)| (version, content(base, first_number + index)))
                .collect(),
        }
    }

    /// The content of the change at `version` (at or after its first version).
    fn content_at(&self, version: i64) -> String {
        match self {
            Self::Set { digest, .. } => digest.clone(),
            Self::Writes {
                first_version,
                first_number,
                count,
                base,
            } => {
                let index = u64::try_from((version - first_version) / VERSIONS_PER_WRITE)
                    .unwrap_or(0)
                    .min(count.saturating_sub(1));
                content(base, first_number + index)
            }
        }
    }
}

/// The version of the `index`-th write of a run starting at `first_version`.
fn write_version(first_version: i64, index: u64) -> i64 {
    let index = i64::try_from(index).unwrap_or(i64::MAX);
    first_version.saturating_add(index.saturating_mul(VERSIONS_PER_WRITE))
}

/// The digest of `base` with the keys `user/<since>` to `user/<last>` written over it.
fn content(base: &Base, last: u64) -> String {
    let mut hasher = Sha256::new();
    hasher.update(base.digest.as_bytes());
    hasher.update(format!("+user/{:08}..=user/{last:08}", base.since).as_bytes());
    hex::encode(&hasher.finalize()[..8])
}

/// The user data: every content the database held, by the version it took effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UserData {
    /// The changes, in version order; the first is the initial content.
    history: Vec<Change>,
    /// The content set outright last, and the first write over it.
    base: Base,
    /// The current digest.
    current: String,
    /// Writes so far (the next key's number).
    writes: u64,
    /// Seconds since the origin up to which the workload has been played.
    played_until: i64,
    /// Whether the workload writes.
    workload: bool,
    /// The highest version a reader has seen (a backup's log end): a later change gets a
    /// higher one, as every commit does in FoundationDB.
    observed: i64,
}

impl Default for UserData {
    fn default() -> Self {
        Self {
            history: vec![Change::Set {
                version: 0,
                digest: EMPTY_DIGEST.to_owned(),
            }],
            base: Base {
                digest: EMPTY_DIGEST.to_owned(),
                since: 0,
            },
            current: EMPTY_DIGEST.to_owned(),
            writes: 0,
            played_until: 0,
            workload: true,
            observed: 0,
        }
    }
}

/// The version at `seconds` since the origin.
pub(crate) fn version_at(seconds: i64) -> i64 {
    seconds.max(0).saturating_mul(VERSIONS_PER_SECOND)
}

impl UserData {
    /// Plays the workload up to `seconds` since the origin; `available` says whether the
    /// database accepted writes meanwhile (it is looked at as often as the world
    /// changes, so this is exact to a settle).
    pub fn play(&mut self, seconds: i64, available: bool) {
        let first = self.played_until / WRITE_INTERVAL_SECONDS + 1;
        let last = seconds / WRITE_INTERVAL_SECONDS;
        if self.workload && available && first <= last {
            let new = u64::try_from(last - first + 1).unwrap_or(0);
            let first_version = version_at(first * WRITE_INTERVAL_SECONDS);
            let writes = self.writes;
            match self.history.last_mut() {
                // The run goes on: its next write is this one.
                Some(Change::Writes {
                    first_version: run_start,
                    first_number,
                    count,
                    ..
                }) if write_version(*run_start, *count) == first_version
                    && *first_number + *count == writes =>
                {
                    *count += new;
                }
                _ => self.history.push(Change::Writes {
                    first_version,
                    first_number: writes,
                    count: new,
                    base: self.base.clone(),
                }),
            }
            self.writes += new;
            self.current = content(&self.base, self.writes - 1);
        }
        self.played_until = self.played_until.max(seconds);
    }

    /// The current digest.
    pub fn digest(&self) -> &str {
        &self.current
    }

    /// The digest at `version`: the content after the last change at or before it.
    pub fn digest_at(&self, version: i64) -> String {
        self.history
            .iter()
            .rev()
            .find(|change| change.first_version() <= version)
            .map_or_else(
                || EMPTY_DIGEST.to_owned(),
                |change| change.content_at(version),
            )
    }

    /// The changes after `after` and at or before `until` (what a mutation log copies);
    /// later changes get versions above `until`.
    pub fn changes_between(&mut self, after: i64, until: i64) -> Vec<(i64, String)> {
        self.observed = self.observed.max(until);
        self.history
            .iter()
            .filter(|change| change.last_version() > after && change.first_version() <= until)
            .flat_map(|change| change.contents_between(after, until))
            .collect()
    }

    /// The user empties the database at (about) `version` and stops writing; returns
    /// the version the clear committed at.
    pub fn clear(&mut self, version: i64) -> i64 {
        self.workload = false;
        self.set(version, EMPTY_DIGEST.to_owned())
    }

    /// The content becomes `digest` (a restore) at `version`, or just after the last
    /// version written or read if that is later; returns the version.
    pub fn set(&mut self, version: i64, digest: String) -> i64 {
        let last = self.history.last().map_or(0, Change::last_version);
        let version = version.max(last + 1).max(self.observed + 1);
        self.base = Base {
            digest: digest.clone(),
            since: self.writes,
        };
        self.current = digest.clone();
        self.history.push(Change::Set { version, digest });
        version
    }

    /// A forced recovery keeps the commits up to `kept` only: the content goes back to
    /// what it was there, from version `at` on (the workload writes on over it). Returns
    /// how many workload writes were lost.
    pub fn roll_back(&mut self, kept: i64, at: i64) -> u64 {
        let lost: u64 = self
            .history
            .iter()
            .map(|change| match change {
                Change::Set { .. } => 0,
                Change::Writes {
                    first_version,
                    count,
                    ..
                } => {
                    if *first_version > kept {
                        *count
                    } else {
                        let kept_writes =
                            u64::try_from((kept - first_version) / VERSIONS_PER_WRITE)
                                .unwrap_or(0)
                                .saturating_add(1);
                        count.saturating_sub(kept_writes)
                    }
                }
            })
            .sum();
        if lost > 0 {
            let digest = self.digest_at(kept);
            self.set(at, digest);
        }
        lost
    }

    /// Whether the database holds no user data.
    pub fn is_empty(&self) -> bool {
        self.digest() == EMPTY_DIGEST
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_chain_and_versions_pick_the_content() {
        let mut data = UserData::default();
        data.play(35, true);
        assert_eq!(data.writes, 3);
        let at_20 = data.digest_at(version_at(20));
        let at_29 = data.digest_at(version_at(29));
        assert_eq!(at_20, at_29);
        assert_ne!(data.digest(), at_20);
        assert_eq!(data.digest_at(version_at(5)), EMPTY_DIGEST);
        // Unavailable: no writes, and time still counts.
        data.play(60, false);
        assert_eq!(data.writes, 3);
        data.clear(version_at(61));
        assert!(data.is_empty());
        data.play(200, true);
        assert!(data.is_empty(), "the workload stops with clearData");
        data.set(version_at(201), at_20.clone());
        assert_eq!(data.digest(), at_20);
        assert_eq!(data.changes_between(0, version_at(25)).len(), 2);
        // A change right after a read at the same second commits at a higher version.
        let read = version_at(300);
        let _ = data.changes_between(0, read);
        let cleared = data.clear(read);
        assert!(cleared > read);
        assert_eq!(data.digest_at(read), at_20);
    }

    #[test]
    fn idle_time_adds_no_history() {
        let mut data = UserData::default();
        // A day of settles at odd moments: one run, however often it is looked at.
        for seconds in (7..=86_400).step_by(7) {
            data.play(seconds, true);
        }
        data.play(86_400, true);
        assert_eq!(data.writes, 8_640);
        assert_eq!(data.history.len(), 2, "the initial content and one run");
        // Split by an outage: the digest still names the same content.
        let mut split = UserData::default();
        split.play(30, true);
        split.play(45, false);
        split.play(86_400, true);
        assert_eq!(split.history.len(), 3);
        // Write 8638 came at 86 390 s without the outage; write 3 at 40 s.
        assert_eq!(split.digest(), data.digest_at(version_at(86_390)));
        assert_eq!(
            split.digest_at(version_at(50)),
            data.digest_at(version_at(40))
        );
        assert_ne!(
            split.digest_at(version_at(50)),
            split.digest_at(version_at(60))
        );
        assert_eq!(
            split.changes_between(version_at(20), version_at(60)).len(),
            3,
            "writes 2 (30 s), 3 (50 s, after the outage) and 4 (60 s)"
        );
    }
}
