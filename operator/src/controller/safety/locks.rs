//! The global operator lock (docs/operator.md, "The steps"): when locks are in use
//! ([`safety::lock_needed`]), every action that changes the database for all operator
//! instances sharing it (configure, coordinators, exclude, kill, pod deletions,
//! maintenance) first takes the lock under the instance's lock ID
//! (`processGroupIDPrefix`).
//!
//! The lock key holds `(lockID, start, end)`. An instance may take it when nobody holds
//! it, when it has expired, or when it holds it already (it renews it once less than half
//! its duration is left, so a busy instance keeps it without writing every pass), and
//! gives it up ([`release`]) at the end of a pass with nothing of its own under way
//! (`super::lock_release`) or while it waits for the other instances (an upgrade's
//! pending-upgrade list). A lock ID on the deny list never takes it. The decision ([`decide_lock`]) is pure; [`acquire`]
//! reads the deny list and the lock and writes the new value through the pass's admin.

use fdb_shared::cluster_math::uses_locks;

use super::super::context::Context;
use super::super::errors::StepError;
use super::super::pass::io::PassIo;
use super::super::snapshot::ClusterSnapshot;
use crate::controller::safety::{self, LockNeed, LockedAction, Refusal};
use crate::fdb::{AdminClient as _, LockValue};

/// What the lock means for an instance now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LockDecision {
    /// It holds the lock with enough time left.
    Held,
    /// It takes (or renews) the lock: write this value.
    Take(LockValue),
    /// Its lock ID is on the deny list.
    Denied,
    /// Another instance holds an unexpired lock.
    HeldByOther {
        /// The holder.
        holder: String,
        /// Seconds until it expires.
        seconds_left: i64,
    },
}

/// Decides for `lock_id` at `now`, given the stored lock and the deny list;
/// `duration` is the lock duration in seconds.
pub(crate) fn decide_lock(
    lock_id: &str,
    current: Option<&LockValue>,
    denied: &[String],
    now: i64,
    duration: i64,
) -> LockDecision {
    if denied.iter().any(|id| id == lock_id) {
        return LockDecision::Denied;
    }
    let take = || LockValue {
        lock_id: lock_id.to_owned(),
        start: now,
        end: now.saturating_add(duration),
    };
    match current {
        None => LockDecision::Take(take()),
        Some(lock) if lock.is_expired(now) => LockDecision::Take(take()),
        Some(lock) if lock.lock_id == lock_id => {
            if lock.end.saturating_sub(now) > duration / 2 {
                LockDecision::Held
            } else {
                LockDecision::Take(LockValue {
                    start: lock.start,
                    ..take()
                })
            }
        }
        Some(lock) => LockDecision::HeldByOther {
            holder: lock.lock_id.clone(),
            seconds_left: lock.end.saturating_sub(now),
        },
    }
}

/// The lock duration of the cluster in seconds (`lockOptions.lockDurationMinutes`).
pub(crate) fn lock_duration_seconds(snapshot: &ClusterSnapshot) -> i64 {
    i64::from(snapshot.spec().lock_options.lock_duration_minutes().max(1)) * 60
}

/// Takes (or confirms) the lock for `action`. `Ok(Err(refusal))` when another instance
/// holds it or this one is denied; errors are admin failures.
pub(crate) async fn acquire(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    action: LockedAction,
) -> Result<Result<(), Refusal>, StepError> {
    let LockNeed::Needed { lock_id } = safety::lock_needed(snapshot, action) else {
        return Ok(Ok(()));
    };
    let admin = io.admin(ctx, snapshot)?;
    let denied = admin
        .deny_list()
        .await
        .map_err(StepError::admin("read the operator lock deny list"))?;
    let current = admin
        .read_lock()
        .await
        .map_err(StepError::admin("read the operator lock"))?;
    let decision = decide_lock(
        &lock_id,
        current.as_ref(),
        &denied,
        snapshot.now_unix(),
        lock_duration_seconds(snapshot),
    );
    let (namespace, name) = (snapshot.namespace(), snapshot.name());
    match decision {
        LockDecision::Held => {
            ctx.lock_releases.taken(namespace, name);
            Ok(Ok(()))
        }
        LockDecision::Take(value) => {
            tracing::info!(%lock_id, end = value.end, "taking the operator lock");
            // Remembered before the write: a write that fails may still have landed.
            ctx.lock_releases.taken(namespace, name);
            admin
                .write_lock(&value)
                .await
                .map_err(StepError::admin("take the operator lock"))?;
            Ok(Ok(()))
        }
        LockDecision::Denied => Ok(Err(Refusal::LockDenied { action, lock_id })),
        LockDecision::HeldByOther {
            holder,
            seconds_left,
        } => Ok(Err(Refusal::LockHeldByOther {
            action,
            holder,
            seconds_left,
        })),
    }
}

/// Gives the lock up (it expires now) when this instance holds it, so another instance
/// this one waits for can take it. Nothing to do without locks, when another holds it,
/// or when this instance gave it up and has not taken it since (no read then).
pub(crate) async fn release(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
) -> Result<(), StepError> {
    let LockNeed::Needed { lock_id } = safety::lock_needed(snapshot, LockedAction::Bounce) else {
        return Ok(());
    };
    let (namespace, name) = (snapshot.namespace(), snapshot.name());
    if ctx.lock_releases.is_released(namespace, name) {
        return Ok(());
    }
    let admin = io.admin(ctx, snapshot)?;
    let current = admin
        .read_lock()
        .await
        .map_err(StepError::admin("read the operator lock"))?;
    let now = snapshot.now_unix();
    let Some(lock) = current.filter(|l| l.lock_id == lock_id && !l.is_expired(now)) else {
        ctx.lock_releases.released(namespace, name);
        return Ok(());
    };
    tracing::info!(%lock_id, "releasing the operator lock for the other instances");
    admin
        .write_lock(&LockValue { end: now, ..lock })
        .await
        .map_err(StepError::admin("release the operator lock"))?;
    ctx.lock_releases.released(namespace, name);
    Ok(())
}

/// The deny list changes the spec asks for: entries to add (listed without
/// `allow: true` and not on the list) and to remove (listed with `allow: true` and on
/// the list). Entries the spec does not mention stay as they are.
pub(crate) fn deny_list_changes(
    snapshot: &ClusterSnapshot,
    live: &[String],
) -> (Vec<String>, Vec<String>) {
    let mut add = Vec::new();
    let mut remove = Vec::new();
    for entry in &snapshot.spec().lock_options.deny_list {
        if entry.id.is_empty() {
            continue;
        }
        let listed = live.contains(&entry.id);
        if entry.allow.unwrap_or(false) {
            if listed && !remove.contains(&entry.id) {
                remove.push(entry.id.clone());
            }
        } else if !listed && !add.contains(&entry.id) {
            add.push(entry.id.clone());
        }
    }
    (add, remove)
}

/// Whether the cluster manages the deny list and lock at all.
pub(crate) fn locks_in_use(snapshot: &ClusterSnapshot) -> bool {
    uses_locks(snapshot.spec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::Fixture;

    fn lock(id: &str, start: i64, end: i64) -> LockValue {
        LockValue {
            lock_id: id.into(),
            start,
            end,
        }
    }

    #[test]
    fn free_expired_or_own_locks_are_taken() {
        assert_eq!(
            decide_lock("a", None, &[], 100, 600),
            LockDecision::Take(lock("a", 100, 700))
        );
        assert_eq!(
            decide_lock("a", Some(&lock("b", 0, 100)), &[], 100, 600),
            LockDecision::Take(lock("a", 100, 700))
        );
        // Held with most of its time left: no write.
        assert_eq!(
            decide_lock("a", Some(&lock("a", 0, 600)), &[], 100, 600),
            LockDecision::Held
        );
        // Held, less than half left: renewed, keeping its start.
        assert_eq!(
            decide_lock("a", Some(&lock("a", 0, 600)), &[], 400, 600),
            LockDecision::Take(lock("a", 0, 1000))
        );
    }

    #[test]
    fn another_holder_or_the_deny_list_refuses() {
        assert_eq!(
            decide_lock("a", Some(&lock("b", 0, 600)), &[], 100, 600),
            LockDecision::HeldByOther {
                holder: "b".into(),
                seconds_left: 500
            }
        );
        assert_eq!(
            decide_lock("a", None, &["a".into()], 100, 600),
            LockDecision::Denied
        );
    }

    #[test]
    fn two_instances_never_hold_the_lock_at_once() {
        // `a` works until t = 1000, `b` all along; both ask every 50 s. `b` may only act
        // once the last lock `a` wrote has expired.
        let mut stored: Option<LockValue> = None;
        let mut a_lock_end = i64::MIN;
        let mut b_first = None;
        for now in (0..3000).step_by(50) {
            for id in ["a", "b"] {
                if id == "a" && now > 1000 {
                    continue;
                }
                let decision = decide_lock(id, stored.as_ref(), &[], now, 600);
                if let LockDecision::Take(value) = &decision {
                    stored = Some(value.clone());
                }
                let acts = matches!(decision, LockDecision::Take(_) | LockDecision::Held);
                if acts && id == "a" {
                    a_lock_end = stored.as_ref().map_or(a_lock_end, |l| l.end);
                    assert!(b_first.is_none(), "a acted at {now} after b took over");
                }
                if acts && id == "b" {
                    assert!(
                        now >= a_lock_end,
                        "b acted at {now}, a holds until {a_lock_end}"
                    );
                    b_first.get_or_insert(now);
                }
            }
        }
        assert_eq!(b_first, Some(a_lock_end), "b takes over exactly at expiry");
    }

    #[test]
    fn deny_list_changes_follow_the_spec() {
        let snapshot = Fixture::new(
            "{version: 7.1.57, lockOptions: {denyList: [{id: x}, {id: y, allow: true}, {id: z, allow: true}]}}",
        )
        .build();
        let (add, remove) = deny_list_changes(&snapshot, &["y".into(), "w".into()]);
        assert_eq!(add, ["x"]);
        assert_eq!(remove, ["y"]);
        let (add, remove) = deny_list_changes(&snapshot, &["x".into()]);
        assert!(add.is_empty() && remove.is_empty());
    }
}
