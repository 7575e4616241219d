//! The database's user data, as a digest that evolves with writes.
//!
//! A workload writes one key every [`WRITE_INTERVAL_SECONDS`] while the database is
//! available (key `user/<n>`, value derived from `n`); the data's content is the chain of
//! those writes, so its digest after each write is well defined, and so is the digest at
//! any database version (the last write at or before it). The database's version
//! advances with time, [`VERSIONS_PER_SECOND`] per second, as FoundationDB's does.
//! `clearData` empties the database and stops the workload (as a user would before a
//! restore); a restore replaces the content with a backup's.

use sha2::{Digest, Sha256};

/// Seconds between two writes of the workload.
pub const WRITE_INTERVAL_SECONDS: i64 = 10;
/// Database versions per second.
pub const VERSIONS_PER_SECOND: i64 = 1_000_000;
/// The digest of an empty database.
pub const EMPTY_DIGEST: &str = "empty";

/// The user data: every content the database held, by the version it took effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UserData {
    /// `(version, digest)`, in version order; the first entry is the initial content.
    history: Vec<(i64, String)>,
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
            history: vec![(0, EMPTY_DIGEST.to_owned())],
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

fn chain(previous: &str, number: u64) -> String {
    let mut hasher = Sha256::new();
    hasher.update(previous.as_bytes());
    hasher.update(format!("user/{number:08}=value-{number}").as_bytes());
    hex::encode(&hasher.finalize()[..8])
}

impl UserData {
    /// Plays the workload up to `seconds` since the origin; `available` says whether the
    /// database accepted writes meanwhile (it is looked at as often as the world
    /// changes, so this is exact to a settle).
    pub fn play(&mut self, seconds: i64, available: bool) {
        let first = self.played_until / WRITE_INTERVAL_SECONDS + 1;
        let last = seconds / WRITE_INTERVAL_SECONDS;
        if self.workload && available {
            for tick in first..=last {
                let digest = chain(self.digest(), self.writes);
                self.writes += 1;
                self.history
                    .push((version_at(tick * WRITE_INTERVAL_SECONDS), digest));
            }
        }
        self.played_until = self.played_until.max(seconds);
    }

    /// The current digest.
    pub fn digest(&self) -> &str {
        self.history
            .last()
            .map_or(EMPTY_DIGEST, |(_, digest)| digest.as_str())
    }

    /// The digest at `version`: the content after the last change at or before it.
    pub fn digest_at(&self, version: i64) -> &str {
        self.history
            .iter()
            .rev()
            .find(|(at, _)| *at <= version)
            .map_or(EMPTY_DIGEST, |(_, digest)| digest.as_str())
    }

    /// The changes after `after` and at or before `until` (what a mutation log copies);
    /// later changes get versions above `until`.
    pub fn changes_between(&mut self, after: i64, until: i64) -> Vec<(i64, String)> {
        self.observed = self.observed.max(until);
        self.history
            .iter()
            .filter(|(at, _)| *at > after && *at <= until)
            .cloned()
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
        let last = self.history.last().map_or(0, |(at, _)| *at);
        let version = version.max(last + 1).max(self.observed + 1);
        self.history.push((version, digest));
        version
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
        let at_20 = data.digest_at(version_at(20)).to_owned();
        let at_29 = data.digest_at(version_at(29)).to_owned();
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
}
