//! The upgrade's kill while the database is unavailable (issue 26, sweep seed 18).

use super::*;

/// Issue 26, seed 18: a process that restarted on the staged target (log-2, in
/// `incompatible_connections`) holds the database unavailable; the kill goes ahead
/// without waiting for availability, includes it, and does not count log-2 as missing.
/// Unavailable with nothing on the target, the kill waits.
#[test]
fn a_process_already_on_the_target_lets_the_kill_go_ahead_while_unavailable() {
    let base = upgrading("version: 7.3.43").groups([group("log-1"), group("log-2")]);
    let hash = desired_hash(&base, "log-1");
    let ready = base.pods([
        staged_pod("sample-log-1", "log-1", "10.0.0.1", SIDECAR_73, Some(&hash)),
        staged_pod("sample-log-2", "log-2", "10.0.0.2", SIDECAR_73, Some(&hash)),
    ]);
    let mut db = reporting(&["log-1"]);
    db.client.database_status.available = Some(false);
    let unavailable = ready.clone().database(db.clone()).build();
    assert!(matches!(
        decide_bounce(&unavailable).unwrap(),
        UpgradeBounce::Wait(UpgradeWait::Unsafe(Refusal::Unavailable))
    ));
    db.cluster.incompatible_connections = vec!["10.0.0.2:4501".parse().unwrap()];
    let split = ready.database(db).build();
    let UpgradeBounce::KillAll {
        addresses,
        while_unavailable,
        ..
    } = decide_bounce(&split).unwrap()
    else {
        panic!("must kill");
    };
    assert!(while_unavailable);
    let listed: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    assert_eq!(listed, ["10.0.0.1:4501", "10.0.0.2:4501"]);
}

/// Issue 26: the kill is counted, and while the upgrade is still pending after it (some
/// processes ignore kills), the next one waits out the back-off instead of going out
/// each pass; kills for another target do not hold it.
#[test]
fn a_kill_that_did_not_end_the_upgrade_is_retried_after_the_backoff() {
    use crate::controller::plan::{Action, PassFacts, Verdict, WaitOn};
    use crate::controller::subreconcilers::upgrade_bounce;
    use crate::controller::upgrade_retries::KillRecord;
    use std::time::Duration;

    let base = upgrading("version: 7.3.43").groups([group("log-1"), group("log-2")]);
    let hash = desired_hash(&base, "log-1");
    let mut db = reporting(&["log-1"]);
    db.client.database_status.available = Some(false);
    db.cluster.incompatible_connections = vec!["10.0.0.2:4501".parse().unwrap()];
    let split = base
        .pods([
            staged_pod("sample-log-1", "log-1", "10.0.0.1", SIDECAR_73, Some(&hash)),
            staged_pod("sample-log-2", "log-2", "10.0.0.2", SIDECAR_73, Some(&hash)),
        ])
        .database(db)
        .build();
    let mut facts = PassFacts::default();
    let first = upgrade_bounce::decide(&split, &facts).unwrap();
    let Some(Verdict::Act(plan)) = &first else {
        panic!("{first:?}")
    };
    assert!(matches!(&plan.actions[0].action, Action::Kill(a) if a.len() == 2));
    assert_eq!(
        plan.actions.last().map(|p| &p.action),
        Some(&Action::RememberUpgradeKill(v("7.3.43")))
    );

    let now = split.now_unix();
    facts.upgrade_kills = Some(KillRecord {
        target: v("7.3.43"),
        kills: 2,
        last_unix: now - 10,
    });
    let held = upgrade_bounce::decide(&split, &facts).unwrap();
    let Some(Verdict::Wait(wait)) = &held else {
        panic!("{held:?}")
    };
    assert_eq!(wait.waits_on, WaitOn::After(Duration::from_secs(50)));
    assert!(
        wait.reason.contains("after 2 kill(s)") && wait.reason.contains("tried in 50s"),
        "{}",
        wait.reason
    );

    facts.upgrade_kills = Some(KillRecord {
        target: v("7.3.43"),
        kills: 2,
        last_unix: now - 60,
    });
    let due = upgrade_bounce::decide(&split, &facts).unwrap();
    assert!(matches!(due, Some(Verdict::Act(_))), "{due:?}");
    facts.upgrade_kills = Some(KillRecord {
        target: v("7.4.1"),
        kills: 5,
        last_unix: now,
    });
    let other = upgrade_bounce::decide(&split, &facts).unwrap();
    assert!(matches!(other, Some(Verdict::Act(_))), "{other:?}");
}
