//! The back-off between an upgrade's cluster-wide kills: a kill that did not restart
//! every process (some ignore kills, issue 26) leaves the database down with processes
//! on both versions; the kill is tried again, but after 30 s, then 60, 120, 240 and at
//! most every 300 s, not every pass: each kill restarts every process already on the
//! target again, for nothing while the others do not move.
//!
//! The operator remembers its kills in memory only: one that restarts forgets them and
//! may retry once sooner, which is harmless (the retry is the same kill).

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::controller::retry_backoff::wait_left;

use fdb_shared::FdbVersion;

/// This instance's kills for an upgrade of one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KillRecord {
    /// The upgrade's target.
    pub target: FdbVersion,
    /// How many kills it made for that target.
    pub kills: u32,
    /// When it made the last one (Unix seconds).
    pub last_unix: i64,
}

/// How long the next kill for `target` still waits at `now_unix` after the kills of
/// `record` (`None`: it may go ahead). Kills for another target do not count.
pub(crate) fn retry_wait(
    record: Option<&KillRecord>,
    target: &FdbVersion,
    now_unix: i64,
) -> Option<Duration> {
    let record = record.filter(|r| r.target == *target && r.kills > 0)?;
    wait_left(record.kills, record.last_unix, now_unix)
}

/// The kills of each cluster (namespace, name), kept between passes.
#[derive(Debug, Default)]
pub struct UpgradeKills {
    clusters: Mutex<BTreeMap<(String, String), KillRecord>>,
}

impl UpgradeKills {
    /// The cluster's record, if it killed for an upgrade.
    pub fn record(&self, namespace: &str, name: &str) -> Option<KillRecord> {
        self.lock()
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Counts a kill for `target` at `now_unix`: the count starts again for a new target.
    pub fn count(
        &self,
        namespace: &str,
        name: &str,
        target: &FdbVersion,
        now_unix: i64,
    ) -> KillRecord {
        let mut clusters = self.lock();
        let record = clusters
            .entry((namespace.to_owned(), name.to_owned()))
            .or_insert_with(|| KillRecord {
                target: *target,
                kills: 0,
                last_unix: now_unix,
            });
        if record.target != *target {
            record.target = *target;
            record.kills = 0;
        }
        record.kills = record.kills.saturating_add(1);
        record.last_unix = now_unix;
        record.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), KillRecord>> {
        self.clusters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::retry_backoff::backoff;

    fn v(text: &str) -> FdbVersion {
        text.parse().unwrap()
    }

    #[test]
    fn the_backoff_doubles_from_30_seconds_up_to_300() {
        let waits: Vec<u64> = (1..=7).map(|k| backoff(k).as_secs()).collect();
        assert_eq!(waits, [30, 60, 120, 240, 300, 300, 300]);
        assert_eq!(backoff(u32::MAX).as_secs(), 300);
    }

    #[test]
    fn a_retry_waits_out_the_backoff_of_the_kills_for_the_same_target() {
        let record = KillRecord {
            target: v("7.3.43"),
            kills: 2,
            last_unix: 1000,
        };
        assert_eq!(retry_wait(None, &v("7.3.43"), 1000), None);
        assert_eq!(
            retry_wait(Some(&record), &v("7.3.43"), 1005),
            Some(Duration::from_secs(55))
        );
        assert_eq!(retry_wait(Some(&record), &v("7.3.43"), 1060), None);
        // A clock that went back waits the whole back-off, never less.
        assert_eq!(
            retry_wait(Some(&record), &v("7.3.43"), 900),
            Some(Duration::from_secs(60))
        );
        // Kills for another target do not hold this one.
        assert_eq!(retry_wait(Some(&record), &v("7.4.1"), 1005), None);
    }

    #[test]
    fn kills_are_counted_per_cluster_and_start_again_for_a_new_target() {
        let kills = UpgradeKills::default();
        assert_eq!(kills.record("default", "a"), None);
        kills.count("default", "a", &v("7.3.43"), 10);
        let second = kills.count("default", "a", &v("7.3.43"), 50);
        assert_eq!((second.kills, second.last_unix), (2, 50));
        assert_eq!(kills.record("default", "b"), None);
        let other = kills.count("default", "a", &v("7.4.1"), 90);
        assert_eq!((other.kills, other.last_unix), (1, 90));
        assert_eq!(kills.record("default", "a"), Some(other));
    }
}
