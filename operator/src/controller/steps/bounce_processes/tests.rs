use fdb_shared::api::cluster::{ProcessGroupCondition, ProcessGroupConditionType as C};
use fdb_shared::status_json::DatabaseStatus;

use super::*;
use crate::controller::fixtures::{Fixture, group, pod, reporting};

const IDS: [&str; 4] = ["log-1", "storage-1", "storage-2", "stateless-1"];

fn with(id: &str, conditions: &[C]) -> fdb_shared::api::cluster::ProcessGroupStatus {
    let mut g = group(id);
    g.process_group_conditions = conditions
        .iter()
        .map(|c| ProcessGroupCondition {
            condition_type: c.clone(),
            timestamp: 1,
        })
        .collect();
    g
}

/// Four reporting groups, `storage-1` with `storage_1` and `storage-2` with an outdated
/// command line.
fn fixture_where_storage_1_has(spec: &str, storage_1: &[C]) -> Fixture {
    let pods = IDS.iter().enumerate().map(|(n, id)| {
        pod(
            &format!("sample-{id}"),
            id,
            "n",
            &format!("10.0.0.{}", n + 1),
        )
    });
    Fixture::new(spec)
        .groups([
            with("log-1", &[]),
            with("storage-1", storage_1),
            with("storage-2", &[C::IncorrectCommandLine]),
            with("stateless-1", &[]),
        ])
        .pods(pods)
        .database(reporting(&IDS))
}

/// Four reporting groups, `storage-1` and `storage-2` with an outdated command line.
fn fixture(spec: &str) -> Fixture {
    fixture_where_storage_1_has(spec, &[C::IncorrectCommandLine])
}

fn killed(decision: &BounceDecision) -> Vec<String> {
    match decision {
        BounceDecision::Kill(targets) => targets
            .iter()
            .flat_map(|t| t.addresses.iter().map(ToString::to_string))
            .collect(),
        other => panic!("expected a kill, got {other:?}"),
    }
}

#[test]
fn all_outdated_processes_are_killed_together() {
    let decision = decide(&fixture("version: 7.1.57").build());
    // The outdated ones, and every other running process with them: one restart.
    assert_eq!(
        killed(&decision),
        [
            "10.0.0.2:4501",
            "10.0.0.3:4501",
            "10.0.0.1:4501",
            "10.0.0.4:4501"
        ]
    );
    if let BounceDecision::Kill(targets) = &decision {
        assert_eq!(targets[2].reason, KillReason::Alongside);
    }
    // Nothing outdated: nothing to do.
    let clean = Fixture::new("version: 7.1.57")
        .groups(IDS.map(group))
        .database(reporting(&IDS))
        .build();
    assert_eq!(decide(&clean), BounceDecision::Nothing);
}

#[test]
fn marked_and_ignored_processes_are_never_killed() {
    let snapshot = fixture("{version: 7.1.57, buggify: {ignoreDuringRestart: [storage-2]}}")
        .status(|s| {
            if let Some(g) = s
                .process_groups
                .iter_mut()
                .find(|g| g.process_group_id == "storage-1")
            {
                crate::controller::status::mutations::mark_for_removal(
                    g,
                    jiff::Timestamp::from_second(5).unwrap(),
                );
            }
        })
        .build();
    assert_eq!(decide(&snapshot), BounceDecision::Nothing);
}

#[test]
fn kill_processes_false_is_honoured() {
    let snapshot = fixture("{version: 7.1.57, automationOptions: {killProcesses: false}}").build();
    assert_eq!(
        decide(&snapshot),
        BounceDecision::Disabled {
            groups: vec!["storage-1".into(), "storage-2".into()]
        }
    );
}

#[test]
fn a_group_still_waiting_for_its_config_blocks_the_bounce_and_is_named() {
    let snapshot = fixture("version: 7.1.57")
        .status(|s| {
            if let Some(g) = s
                .process_groups
                .iter_mut()
                .find(|g| g.process_group_id == "log-1")
            {
                *g = with("log-1", &[C::IncorrectConfigMap, C::SidecarUnreachable]);
            }
        })
        .build();
    match decide(&snapshot) {
        BounceDecision::Wait(reason) => {
            assert!(reason.contains("log-1 (sidecar unreachable)"), "{reason}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn minimum_uptime_and_availability_gate_the_bounce() {
    let mut young = reporting(&IDS);
    if let Some(p) = young.cluster.processes.get_mut("p3") {
        p.uptime_seconds = Some(30.0);
    }
    match decide(&fixture("version: 7.1.57").database(young).build()) {
        BounceDecision::Wait(reason) => {
            assert!(reason.contains("stateless-1"), "{reason}");
            assert!(reason.contains("minimumUptimeSecondsForBounce"), "{reason}");
        }
        other => panic!("unexpected {other:?}"),
    }
    let mut down = reporting(&IDS);
    down.client.database_status.available = Some(false);
    match decide(&fixture("version: 7.1.57").database(down).build()) {
        BounceDecision::Wait(reason) => assert!(reason.contains("unavailable"), "{reason}"),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn extra_targets_join_the_same_kill() {
    let snapshot = fixture("version: 7.1.57").build();
    let extra = KillTarget {
        group: "log-1".into(),
        addresses: vec!["10.0.0.1:4501".parse().unwrap()],
        reason: KillReason::Upgrade,
    };
    let duplicate = KillTarget {
        group: "storage-1".into(),
        addresses: vec!["10.0.0.2:4501".parse().unwrap()],
        reason: KillReason::Upgrade,
    };
    let decision = decide_with(&snapshot, [extra, duplicate]);
    assert_eq!(
        killed(&decision),
        [
            "10.0.0.1:4501",
            "10.0.0.2:4501",
            "10.0.0.3:4501",
            "10.0.0.4:4501"
        ]
    );
    if let BounceDecision::Kill(targets) = decision {
        assert_eq!(targets.len(), 4, "one target per group");
        assert_eq!(targets[1].reason, KillReason::Upgrade);
    }
}

#[test]
fn a_restart_waits_for_groups_marked_for_removal_that_still_run() {
    // log-1 is marked for removal and still runs: killing the rest would leave it alone
    // running, so the restart waits for its removal (without ending the pass).
    let snapshot = fixture("version: 7.1.57")
        .status(|s| {
            if let Some(g) = s
                .process_groups
                .iter_mut()
                .find(|g| g.process_group_id == "log-1")
            {
                crate::controller::status::mutations::mark_for_removal(
                    g,
                    jiff::Timestamp::from_second(5).unwrap(),
                );
            }
        })
        .build();
    match decide(&snapshot) {
        BounceDecision::WaitForRemovals(reason) => {
            assert!(
                reason.contains("waiting for the removal of log-1"),
                "{reason}"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_group_whose_removal_is_held_is_restarted_with_the_others() {
    // log-1 is marked for removal but its removal is held (blockRemoval, removalMode
    // None): it runs on for good, so the restart covers it instead of waiting for it.
    for spec in [
        "{version: 7.1.57, buggify: {blockRemoval: [log-1]}}",
        "{version: 7.1.57, automationOptions: {removalMode: None}}",
    ] {
        let snapshot = fixture(spec)
            .status(|s| {
                if let Some(g) = s
                    .process_groups
                    .iter_mut()
                    .find(|g| g.process_group_id == "log-1")
                {
                    crate::controller::status::mutations::mark_for_removal(
                        g,
                        jiff::Timestamp::from_second(5).unwrap(),
                    );
                }
            })
            .build();
        let decision = decide(&snapshot);
        assert_eq!(killed(&decision).len(), 4, "{spec}: {decision:?}");
    }
}

#[test]
fn ignore_during_restart_names_process_groups() {
    let snapshot =
        fixture("{version: 7.1.57, buggify: {ignoreDuringRestart: [storage-1]}}").build();
    // storage-1 keeps running, so no kill covers every process: only the outdated
    // processes of one zone go (storage-2's), none restarted alongside.
    let decision = decide(&snapshot);
    assert_eq!(killed(&decision), ["10.0.0.3:4501"], "{decision:?}");
}

/// The database recovered 100 s ago; its processes (in `IDS` order) have these uptimes.
fn recovered_with_uptimes(uptimes: [f64; 4]) -> DatabaseStatus {
    let mut db = reporting(&IDS);
    db.cluster.recovery_state.seconds_since_last_recovered = Some(100.0);
    for (n, uptime) in uptimes.into_iter().enumerate() {
        if let Some(p) = db.cluster.processes.get_mut(&format!("p{n}")) {
            p.uptime_seconds = Some(uptime);
        }
    }
    db
}

const SPEC_60: &str = "{version: 7.1.57, minimumUptimeSecondsForBounce: 60}";

#[test]
fn outdated_processes_older_than_a_restart_of_all_the_others_survived_it() {
    // log-1 and stateless-1 started at the last recovery, the outdated ones before it.
    let db = recovered_with_uptimes([95.0, 1000.0, 1000.0, 95.0]);
    match decide(&fixture(SPEC_60).database(db).build()) {
        BounceDecision::RecreatePods { groups, .. } => {
            assert_eq!(groups, ["storage-1", "storage-2"]);
        }
        BounceDecision::Wait(reason) => assert!(reason.contains("survived"), "{reason}"),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_restarted_process_of_a_group_marked_for_removal_is_no_sign_of_a_kill() {
    // Seed 156: every group kept running is outdated; only log-1, marked for removal
    // (never killed), restarted (a fault healed). No kill has run: the restart waits
    // for its removal, then kills.
    let db = recovered_with_uptimes([5.0, 1000.0, 1000.0, 1000.0]);
    let snapshot = fixture(SPEC_60)
        .database(db)
        .status(|s| {
            for g in &mut s.process_groups {
                match g.process_group_id.as_str() {
                    "log-1" => {
                        crate::controller::status::mutations::mark_for_removal(
                            g,
                            jiff::Timestamp::from_second(5).unwrap(),
                        );
                    }
                    "stateless-1" => *g = with("stateless-1", &[C::IncorrectCommandLine]),
                    _ => {}
                }
            }
        })
        .build();
    match decide(&snapshot) {
        BounceDecision::WaitForRemovals(reason) => {
            assert!(reason.contains("removal of log-1"), "{reason}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn an_outdated_process_started_after_the_last_recovery_means_no_kill_ran_since() {
    // storage-1 started after the recovery and still runs the outdated command line:
    // that recovery restarted nothing onto the current conf, so storage-2 survived no
    // kill. Every process is killed.
    let db = recovered_with_uptimes([95.0, 95.0, 1000.0, 95.0]);
    let decision = decide(&fixture(SPEC_60).database(db).build());
    assert_eq!(killed(&decision).len(), 4, "{decision:?}");
}

/// Pods that need an update and a restart: the restart waits for the pod update (Go's
/// `GetFilterConditions`), without holding the later steps (UpdatePods must run); with
/// `deletionMode: None` no pod update ever comes, so the restart goes on.
#[test]
fn a_restart_waits_for_the_pod_updates_of_the_groups_it_restarts() {
    let outdated = |spec: &str| {
        fixture_where_storage_1_has(spec, &[C::IncorrectPodSpec, C::IncorrectCommandLine]).build()
    };
    let decision = decide(&outdated("version: 7.1.57"));
    let BounceDecision::WaitForPodUpdates(reason) = &decision else {
        panic!("expected a wait for the pod update, got {decision:?}");
    };
    assert!(
        reason.contains("storage-1") && !reason.contains("storage-2"),
        "{reason}"
    );
    match verdict(decision, Duration::from_secs(5)) {
        Verdict::Wait(wait) => assert!(wait.goes_on, "UpdatePods must still run: {wait:?}"),
        other => panic!("expected a wait, got {other:?}"),
    }
    let never_updated = decide(&outdated(
        "{version: 7.1.57, automationOptions: {deletionMode: None}}",
    ));
    assert_eq!(killed(&never_updated).len(), 4, "{never_updated:?}");
}
