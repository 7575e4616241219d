//! The upgrade's kill in the release sweep's cases (issue 26): while the database is
//! unavailable (seed 18), and with groups that do not report or an exclusion (seed 71).

use super::*;

/// Issue 26, seed 18: a process that restarted on the staged target (log-2, in
/// `incompatible_connections`) holds the database unavailable; the kill goes ahead
/// without waiting for availability and does not count log-2 as missing. It names only
/// log-1: log-2 needs no restart, and fdbcli refuses a whole kill naming an address its
/// cluster controller does not list (issue 36). Unavailable with nothing on the target,
/// the kill waits.
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
        ends_mixed_versions,
        ..
    } = decide_bounce(&split).unwrap()
    else {
        panic!("must kill");
    };
    assert!(ends_mixed_versions);
    let listed: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    assert_eq!(listed, ["10.0.0.1:4501"]);
}

/// Issue 26: the kill is counted, and while the upgrade is still pending after it (some
/// processes ignore kills), the next one waits out the back-off instead of going out
/// each pass; kills for another target do not hold it.
#[test]
fn a_kill_that_did_not_end_the_upgrade_is_retried_after_the_backoff() {
    use crate::controller::pass::plan::{Action, PassFacts, Verdict, WaitOn};
    use crate::controller::steps::bounce_processes::upgrade_bounce;
    use crate::controller::versions::retries::KillRecord;
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
    assert!(matches!(&plan.actions[0].action, Action::Kill(a) if a.len() == 1));
    assert_eq!(
        plan.actions.last().map(|p| &p.action),
        Some(&Action::RememberUpgradeKill(v("7.3.43")))
    );

    let now = split.now_unix();
    facts.remembered.upgrade_kills = Some(KillRecord {
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

    facts.remembered.upgrade_kills = Some(KillRecord {
        target: v("7.3.43"),
        kills: 2,
        last_unix: now - 60,
    });
    let due = upgrade_bounce::decide(&split, &facts).unwrap();
    assert!(matches!(due, Some(Verdict::Act(_))), "{due:?}");
    facts.remembered.upgrade_kills = Some(KillRecord {
        target: v("7.4.1"),
        kills: 5,
        last_unix: now,
    });
    let other = upgrade_bounce::decide(&split, &facts).unwrap();
    assert!(matches!(other, Some(Verdict::Act(_))), "{other:?}");
}

/// Issue 26, seed 71: the kill runs in a pass of its own. A pass that excluded a group
/// (the exclusion came due with the same snapshot) leaves the kill to the next pass;
/// the same snapshot without the exclusion kills.
#[test]
fn the_kill_waits_for_the_next_pass_after_an_exclusion_in_this_one() {
    use crate::controller::pass::plan::{Action, PassFacts, Verdict};
    use crate::controller::steps::bounce_processes::upgrade_bounce;

    let base = upgrading("version: 7.3.43").groups([group("log-1"), group("log-2")]);
    let hash = desired_hash(&base, "log-1");
    let ready = base
        .pods([
            staged_pod("sample-log-1", "log-1", "10.0.0.1", SIDECAR_73, Some(&hash)),
            staged_pod("sample-log-2", "log-2", "10.0.0.2", SIDECAR_73, Some(&hash)),
        ])
        .database(reporting(&["log-1", "log-2"]))
        .build();
    let mut facts = PassFacts::default();
    let kill = upgrade_bounce::decide(&ready, &facts).unwrap().unwrap();
    assert!(
        kill.actions()
            .iter()
            .any(|action| matches!(action, Action::Kill(_))),
        "{kill:?}"
    );
    facts.record.excluded = Some("exclude locality_instance_id:storage-2".to_owned());
    let Verdict::Wait(wait) = upgrade_bounce::decide(&ready, &facts).unwrap().unwrap() else {
        panic!("the kill must wait after an exclusion in the same pass");
    };
    assert!(wait.reason.contains("next pass"), "{}", wait.reason);
}

/// Issue 26, seed 71: a group being removed whose pod runs but whose processes do not
/// report is not restarted by the kill (it only restarts processes that report), so it
/// is neither staged nor holding the kill.
#[test]
fn a_group_being_removed_that_does_not_report_is_left_out_of_the_kill() {
    let mut removed = group("log-2");
    removed.removal_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::from_second(9_000).unwrap(),
    ));
    let base = upgrading("version: 7.3.43").groups([group("log-1"), removed]);
    let hash = desired_hash(&base, "log-1");
    let snapshot = base
        .pods([
            staged_pod("sample-log-1", "log-1", "10.0.0.1", SIDECAR_73, Some(&hash)),
            staged_pod("sample-log-2", "log-2", "10.0.0.2", SIDECAR_71, None),
        ])
        .database(reporting(&["log-1"]))
        .build();
    let UpgradeBounce::KillAll { addresses, .. } = decide_bounce(&snapshot).unwrap() else {
        panic!("a removed group that does not report must not hold the kill");
    };
    let listed: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    assert_eq!(listed, ["10.0.0.1:4501"]);
}
