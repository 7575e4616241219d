//! When an exclusion FoundationDB refused is tried again: fdbcli's `exclude` refuses
//! while a storage server's metrics are missing ("Please try the exclude again in 30
//! seconds", `checkExclusion` in fdbclient/SpecialKeySpace.actor.cpp) or while the space
//! left would be under 10 %. Each attempt makes fdbcli fetch a whole `status json`, so
//! the operator does not retry every pass: after 30 s (FoundationDB's own advice), then
//! 60, 120, 240 and at most every 300 s while the refusals go on. The wait holds only
//! the exclusion: the later steps of the pass go on, as the Go operator's delayed
//! requeue lets its later sub-reconcilers run after a failed exclusion
//! (controllers/exclude_processes.go, controllers/cluster_controller.go).
//!
//! The operator remembers refusals in memory only: one that restarts may try once
//! sooner, which is harmless (the attempt is the same refused command). A change of
//! the cluster (a watch event) does not reset the wait; an exclusion that succeeds does.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::controller::retry_backoff::wait_left;

use crate::fdb::fdbcli::refusals::ExcludeRefusal;

/// The refusals of one cluster's exclusions since its last successful one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RefusalRecord {
    /// The last refusal.
    pub refusal: ExcludeRefusal,
    /// How many attempts in a row were refused.
    pub refusals: u32,
    /// When the last one was (Unix seconds).
    pub last_unix: i64,
}

/// How long the next attempt still waits at `now_unix` after the refusals of `record`
/// (`None`: it may go ahead).
pub(crate) fn retry_wait(record: Option<&RefusalRecord>, now_unix: i64) -> Option<Duration> {
    let record = record.filter(|r| r.refusals > 0)?;
    wait_left(record.refusals, record.last_unix, now_unix)
}

/// The refusals of each cluster (namespace, name), kept between passes.
#[derive(Debug, Default)]
pub(crate) struct ExclusionRefusals {
    clusters: Mutex<BTreeMap<(String, String), RefusalRecord>>,
}

impl ExclusionRefusals {
    /// The cluster's record, if its last exclusions were refused.
    pub(crate) fn record(&self, namespace: &str, name: &str) -> Option<RefusalRecord> {
        self.lock()
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Counts a refusal at `now_unix`.
    pub(crate) fn count(
        &self,
        namespace: &str,
        name: &str,
        refusal: ExcludeRefusal,
        now_unix: i64,
    ) -> RefusalRecord {
        let mut clusters = self.lock();
        let record = clusters
            .entry((namespace.to_owned(), name.to_owned()))
            .or_insert(RefusalRecord {
                refusal,
                refusals: 0,
                last_unix: now_unix,
            });
        record.refusal = refusal;
        record.refusals = record.refusals.saturating_add(1);
        record.last_unix = now_unix;
        record.clone()
    }

    /// Forgets the cluster's refusals (an exclusion went through).
    pub(crate) fn forget(&self, namespace: &str, name: &str) {
        self.lock().remove(&(namespace.to_owned(), name.to_owned()));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), RefusalRecord>> {
        self.clusters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::retry_backoff::backoff;

    #[test]
    fn the_backoff_starts_at_foundationdbs_30_seconds_and_doubles_up_to_300() {
        let waits: Vec<u64> = (1..=7).map(|k| backoff(k).as_secs()).collect();
        assert_eq!(waits, [30, 60, 120, 240, 300, 300, 300]);
        assert_eq!(backoff(u32::MAX).as_secs(), 300);
    }

    #[test]
    fn an_attempt_waits_out_the_backoff_of_the_refusals_before_it() {
        let record = RefusalRecord {
            refusal: ExcludeRefusal::MetricsMissing,
            refusals: 1,
            last_unix: 1000,
        };
        assert_eq!(retry_wait(None, 1000), None);
        assert_eq!(
            retry_wait(Some(&record), 1005),
            Some(Duration::from_secs(25))
        );
        assert_eq!(retry_wait(Some(&record), 1030), None);
        // A clock that went back waits the whole back-off, never less.
        assert_eq!(
            retry_wait(Some(&record), 900),
            Some(Duration::from_secs(30))
        );
    }

    #[test]
    fn refusals_are_counted_per_cluster_until_an_exclusion_goes_through() {
        let refusals = ExclusionRefusals::default();
        assert_eq!(refusals.record("default", "a"), None);
        refusals.count("default", "a", ExcludeRefusal::MetricsMissing, 10);
        let second = refusals.count("default", "a", ExcludeRefusal::FreeSpace, 50);
        assert_eq!(
            (second.refusal, second.refusals, second.last_unix),
            (ExcludeRefusal::FreeSpace, 2, 50)
        );
        assert_eq!(refusals.record("default", "b"), None);
        refusals.forget("default", "a");
        assert_eq!(refusals.record("default", "a"), None);
    }
}
