//! The executor's rules, each tested once, on plans: the lock, one disruption per pass,
//! recovery pacing.

use fdb_shared::status_json::DatabaseStatus;

use super::*;
use crate::controller::fixtures::{Fixture, group, pod, reporting};
use crate::controller::pass::plan::{Action, PassFacts, Planned};
use crate::controller::safety::LockedAction;

/// log-1 and storage-1 reporting, last recovery `since` seconds ago; `spec` decides
/// whether locks are in use.
fn snapshot(spec: &str, since: f64) -> ClusterSnapshot {
    let mut db: DatabaseStatus = reporting(&["log-1", "storage-1"]);
    db.cluster.recovery_state.seconds_since_last_recovered = Some(since);
    Fixture::new(spec)
        .groups([group("log-1"), group("storage-1")])
        .pods(vec![
            pod("s-log-1", "log-1", "node-1", "10.0.0.1"),
            pod("s-storage-1", "storage-1", "node-2", "10.0.0.2"),
        ])
        .connection_string("a:b@10.0.0.9:4501")
        .database(db)
        .build()
}

const NO_LOCKS: &str = "version: 7.1.57";
const LOCKS: &str = "{version: 7.1.57, faultDomain: {zoneCount: 3}}";

fn kill() -> Planned {
    Planned::locked(Action::Kill(Vec::new()), LockedAction::Bounce)
        .disrupting()
        .recovering(Some("kill of 0 processes".to_owned()))
}

fn delete() -> Planned {
    Planned::locked(
        Action::DeletePod("s-storage-1".into()),
        LockedAction::DeletePods,
    )
    .disrupting()
}

fn coordinators() -> Planned {
    Planned::locked(
        Action::ChangeCoordinators {
            coordinators: Vec::new(),
            reason: "test".into(),
        },
        LockedAction::ChangeCoordinators,
    )
    .recovering(Some("coordinators change".to_owned()))
}

fn fresh() -> PlanProgress {
    PlanProgress::default()
}

#[test]
fn the_lock_is_taken_once_per_pass_and_only_when_locks_are_in_use() {
    let facts = PassFacts::default();
    let action = coordinators();
    assert_eq!(
        admit(&snapshot(NO_LOCKS, 300.0), &facts, &action, &fresh()),
        Admission::Go { lock: None }
    );
    assert_eq!(
        admit(&snapshot(LOCKS, 300.0), &facts, &action, &fresh()),
        Admission::Go {
            lock: Some(LockedAction::ChangeCoordinators)
        }
    );
    let mut held = PassFacts::default();
    held.record.lock_held = true;
    assert_eq!(
        admit(&snapshot(LOCKS, 300.0), &held, &action, &fresh()),
        Admission::Go { lock: None }
    );
    // Status writes and Events need no lock.
    let plain = Planned::plain(Action::StageStatus(Vec::new()));
    assert_eq!(
        admit(&snapshot(LOCKS, 300.0), &facts, &plain, &fresh()),
        Admission::Go { lock: None }
    );
}

#[test]
fn one_disruption_per_pass_but_a_plan_is_one_disruption() {
    let snapshot = snapshot(NO_LOCKS, 300.0);
    let mut after_delete = PassFacts::default();
    after_delete.record.deleted_pods = vec!["s-log-1".into()];
    after_delete.record.disrupted = Some("deleted pod s-log-1".into());
    assert_eq!(
        admit(&snapshot, &after_delete, &kill(), &fresh()),
        Admission::Refused(Refusal::PodDeletedThisPass {
            pod: "s-log-1".into()
        })
    );
    let mut after_kill = PassFacts::default();
    after_kill.record.disrupted = Some("kill of 3 processes".into());
    assert_eq!(
        admit(&snapshot, &after_kill, &delete(), &fresh()),
        Admission::Refused(Refusal::DisruptedThisPass {
            action: "kill of 3 processes".into()
        })
    );
    // The second pod of the same batch belongs to the same disruption.
    let in_plan = PlanProgress {
        disrupted: true,
        recovered: false,
    };
    assert_eq!(
        admit(&snapshot, &after_kill, &delete(), &in_plan),
        Admission::Go { lock: None }
    );
    // What does not disrupt is not held back.
    assert_eq!(
        admit(&snapshot, &after_kill, &coordinators(), &fresh()),
        Admission::Go { lock: None }
    );
}

#[test]
fn recovery_causing_actions_are_paced() {
    let facts = PassFacts::default();
    // The last recovery is 30 s old: no second one yet.
    assert_eq!(
        admit(&snapshot(NO_LOCKS, 30.0), &facts, &coordinators(), &fresh()),
        Admission::Refused(Refusal::RecentRecovery {
            seconds_ago: 30.0,
            minimum: safety::MINIMUM_SECONDS_SINCE_RECOVERY,
        })
    );
    // Old enough, but this pass already caused one.
    let mut caused = PassFacts::default();
    caused.record.recovery_caused = Some("excluded log process group log-1".into());
    assert_eq!(
        admit(
            &snapshot(NO_LOCKS, 300.0),
            &caused,
            &coordinators(),
            &fresh()
        ),
        Admission::Refused(Refusal::RecoveryCausedThisPass {
            action: "excluded log process group log-1".into()
        })
    );
    assert_eq!(
        admit(
            &snapshot(NO_LOCKS, 300.0),
            &facts,
            &coordinators(),
            &fresh()
        ),
        Admission::Go { lock: None }
    );
    // Deleting a storage pod hosting no coordinator causes no recovery: not paced.
    assert_eq!(
        admit(&snapshot(NO_LOCKS, 30.0), &facts, &delete(), &fresh()),
        Admission::Go { lock: None }
    );
}
