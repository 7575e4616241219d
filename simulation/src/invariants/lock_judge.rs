//! The `lock-not-held` invariant: an admin write (configure, exclude, include,
//! coordinators, kill, maintenance) by an operator instance is judged against the
//! database's global lock key at that moment. It is a violation when the lock key names
//! another instance whose lock has not expired, or when the instance's cluster uses locks
//! (docs/operator.md, "The steps": multi-region, a zone count, three_data_hall, unless
//! `lockOptions.disableLocks`) and the key does not name it with an unexpired lock. The
//! instance's lock ID is its cluster's `processGroupIDPrefix`.
//!
//! Commands issued before the database is configured (`configure new`) are not judged:
//! there is no key space yet in which a lock could be held.
//!
//! The judgement reads the world (the lock key in the simulated database and the cluster
//! object in the API server), never the operator's own account of what it did.

use std::fmt;

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::cluster_math::uses_locks;

use crate::fdb::SimulatedFdb;
use crate::kube::FakeApiServer;
use fdb_operator::fdb::LockValue;

/// Judges an admin write of an operator instance as it happens.
pub trait AdminWriteJudge: Send + Sync + fmt::Debug {
    /// The violation's detail when `issuer` (a cluster name) may not issue `command` now.
    fn judge(&self, issuer: &str, command: &str) -> Option<String>;
}

/// The admin actions the invariant judges (event action names).
pub const JUDGED_ACTIONS: [&str; 6] = [
    "configure",
    "exclude",
    "include",
    "coordinators",
    "kill",
    "maintenance",
];

/// The lock judgement on the simulated world.
#[derive(Debug, Clone)]
pub struct LockJudge {
    api: FakeApiServer,
    fdb: SimulatedFdb,
    namespace: String,
}

impl LockJudge {
    /// Judges instances managing clusters of `namespace` against `fdb`'s lock key.
    pub fn new(api: FakeApiServer, fdb: SimulatedFdb, namespace: impl Into<String>) -> Self {
        Self {
            api,
            fdb,
            namespace: namespace.into(),
        }
    }
}

impl AdminWriteJudge for LockJudge {
    fn judge(&self, issuer: &str, command: &str) -> Option<String> {
        let cluster = self
            .api
            .get_typed::<FoundationDBCluster>(Some(&self.namespace), issuer)
            .ok()
            .flatten();
        let (lock_id, locks_on) = match &cluster {
            Some(cluster) => (
                cluster.spec.process_group_id_prefix().to_owned(),
                uses_locks(&cluster.spec),
            ),
            None => (issuer.to_owned(), false),
        };
        let (stored, now, configured) = self.fdb.lock_key();
        // `configure new` creates the database: before it there is no key space in which
        // anyone could hold a lock.
        if !configured {
            return None;
        }
        lock_violation(
            issuer,
            &lock_id,
            locks_on,
            stored.as_ref().filter(|lock| !lock.is_expired(now)),
            command,
        )
    }
}

/// The pure rule: `holder` is the unexpired lock in the database, if any.
pub fn lock_violation(
    issuer: &str,
    lock_id: &str,
    locks_on: bool,
    holder: Option<&LockValue>,
    command: &str,
) -> Option<String> {
    match holder {
        Some(lock) if lock.lock_id != lock_id => Some(format!(
            "{issuer} (lock ID {lock_id:?}) issued `{command}` while {:?} held the operator lock (until {})",
            lock.lock_id, lock.end
        )),
        None if locks_on => Some(format!(
            "{issuer} (lock ID {lock_id:?}) uses locks but issued `{command}` without holding the operator lock"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(id: &str) -> LockValue {
        LockValue {
            lock_id: id.into(),
            start: 0,
            end: 600,
        }
    }

    #[test]
    fn only_the_holder_writes_and_instances_with_locks_need_the_lock() {
        assert_eq!(
            lock_violation("kc1", "kc1", true, Some(&lock("kc1")), "kill"),
            None
        );
        let other = lock_violation("kc2", "kc2", true, Some(&lock("kc1")), "exclude x").unwrap();
        assert!(other.contains("\"kc1\" held the operator lock"), "{other}");
        // An instance that does not use locks is still caught writing under another's lock.
        assert!(lock_violation("kc2", "kc2", false, Some(&lock("kc1")), "kill").is_some());
        let none = lock_violation("kc1", "kc1", true, None, "configure").unwrap();
        assert!(none.contains("without holding"), "{none}");
        // No locks anywhere: nothing to judge.
        assert_eq!(lock_violation("sample", "", false, None, "kill"), None);
    }
}
