use fdb_shared::api::cluster::{ProcessGroupCondition, ProcessGroupConditionType as C};

use super::*;
use crate::controller::fixtures::{Fixture, group, reporting};
use crate::controller::steps::bounce_processes::global_bounce;
use crate::controller::steps::bounce_processes::{BounceDecision, decide};

/// This instance (`dc1`) has two groups with an outdated command line; the database
/// also runs two groups of `dc2`.
fn shared(spec: &str) -> Fixture {
    let outdated = |id: &str| {
        let mut g = group(id);
        g.process_group_conditions = vec![ProcessGroupCondition {
            condition_type: C::IncorrectCommandLine,
            timestamp: 1,
        }];
        g
    };
    Fixture::new(spec)
        .groups([outdated("dc1-log-1"), outdated("dc1-storage-1")])
        .database(reporting(&[
            "dc1-log-1",
            "dc1-storage-1",
            "dc2-log-1",
            "dc2-storage-1",
        ]))
}

fn entry(owner: &str, group: &str, since: i64) -> RestartEntry {
    RestartEntry {
        owner: owner.into(),
        group: group.into(),
        since,
    }
}

#[test]
fn a_database_with_processes_of_other_instances_is_synchronized() {
    assert!(synchronized(&shared("version: 7.1.57").build()));
    // `local` keeps the instance to itself (the Go operator's default mode).
    let local = shared("{version: 7.1.57, automationOptions: {synchronizationMode: local}}");
    assert!(!synchronized(&local.build()));
    // Alone on its database: not synchronized unless asked.
    let alone = Fixture::new("version: 7.1.57")
        .groups([group("dc1-log-1")])
        .database(reporting(&["dc1-log-1"]));
    assert!(!synchronized(&alone.clone().build()));
    let global =
        Fixture::new("{version: 7.1.57, automationOptions: {synchronizationMode: global}}")
            .groups([group("dc1-log-1")])
            .database(reporting(&["dc1-log-1"]));
    assert!(synchronized(&global.build()));
}

#[test]
fn own_changes_touch_only_this_instances_entries() {
    let listed = [
        entry("dc1", "dc1-log-1", 5),
        entry("dc1", "dc1-gone-1", 5),
        entry("dc2", "dc2-log-1", 5),
    ];
    let (add, remove) = own_changes(
        "dc1",
        &listed,
        &["dc1-log-1".into(), "dc1-storage-1".into()],
        9,
    );
    assert_eq!(add, [entry("dc1", "dc1-storage-1", 9)]);
    assert_eq!(remove, [entry("dc1", "dc1-gone-1", 5)]);
    let after = applied(listed.to_vec(), add, &remove);
    assert_eq!(after.len(), 3);
    assert!(after.contains(&entry("dc2", "dc2-log-1", 5)));
}

#[test]
fn the_kill_waits_for_every_pending_group_and_the_settle_time() {
    let snapshot = shared("version: 7.1.57").at(10_000).build();
    let mine = [
        entry("dc1", "dc1-log-1", 9_900),
        entry("dc1", "dc1-storage-1", 9_900),
    ];
    // dc2 needs a restart too but has not marked it ready.
    let lists = RestartLists {
        pending: [&mine[..], &[entry("dc2", "dc2-storage-1", 9_900)][..]].concat(),
        ready: mine.to_vec(),
    };
    let SharedKill::Wait { reason, .. } = decide_shared_kill(&snapshot, &lists, 10_000) else {
        panic!("killed before dc2 was ready");
    };
    assert!(reason.contains("dc2-storage-1"), "{reason}");
    // dc2 ready, but just now: wait out the settle time.
    let lists = RestartLists {
        ready: [&mine[..], &[entry("dc2", "dc2-storage-1", 9_990)][..]].concat(),
        ..lists
    };
    assert!(matches!(
        decide_shared_kill(&snapshot, &lists, 10_000),
        SharedKill::Wait {
            after_seconds: 20,
            ..
        }
    ));
    // Settled: every process of the database, in one kill.
    let SharedKill::Kill { targets, ready } = decide_shared_kill(&snapshot, &lists, 10_020) else {
        panic!("no kill once settled");
    };
    assert_eq!(ready, lists.ready);
    let groups: Vec<(&str, KillReason)> = targets
        .iter()
        .map(|t| (t.group.as_str(), t.reason))
        .collect();
    assert_eq!(
        groups,
        [
            ("dc1-log-1", KillReason::IncorrectCommandLine),
            ("dc1-storage-1", KillReason::IncorrectCommandLine),
            ("dc2-log-1", KillReason::Alongside),
            ("dc2-storage-1", KillReason::IncorrectCommandLine),
        ]
    );
}

#[test]
fn a_shared_database_writes_the_lists_before_any_kill() {
    let snapshot = shared("version: 7.1.57").build();
    assert!(matches!(decide(&snapshot), BounceDecision::Kill(_)));
    let facts = crate::controller::pass::plan::PassFacts::default();
    let mut answers = crate::controller::pass::facts::Answers::default();
    let verdict = global_bounce::decide(&snapshot, &facts, std::time::Duration::from_secs(5));
    assert_eq!(
        verdict.actions(),
        [&crate::controller::pass::plan::Action::SyncRestartLists {
            pending: vec!["dc1-log-1".into(), "dc1-storage-1".into()],
            ready: vec!["dc1-log-1".into(), "dc1-storage-1".into()],
        }]
    );
    // Concluded with dc2's pending group not ready: no kill, a wait.
    let facts = crate::controller::pass::plan::PassFacts::default();
    answers.restart_lists = Some(RestartLists {
        pending: vec![entry("dc2", "dc2-log-1", 1)],
        ready: vec![
            entry("dc1", "dc1-log-1", 1),
            entry("dc1", "dc1-storage-1", 1),
        ],
    });
    let verdict = global_bounce::conclude(&snapshot, &facts, &mut answers).unwrap();
    assert!(verdict.actions().is_empty(), "{verdict:?}");
    // All ready and settled: the ready entries cleared, then the kill of all four.
    answers.restart_lists = Some(RestartLists {
        pending: vec![],
        ready: vec![
            entry("dc1", "dc1-log-1", 1),
            entry("dc1", "dc1-storage-1", 1),
        ],
    });
    let verdict = global_bounce::conclude(&snapshot, &facts, &mut answers).unwrap();
    let actions = verdict.actions();
    assert!(
        matches!(actions[0], crate::controller::pass::plan::Action::ClearReadyForRestart(e) if e.len() == 2),
        "{actions:?}"
    );
    assert!(
        matches!(actions[1], crate::controller::pass::plan::Action::Kill(a) if a.len() == 4),
        "{actions:?}"
    );
}
