use super::*;
use crate::controller::fixtures::{Fixture, group, reporting};
use crate::controller::pass::plan::Plan;
use fdb_shared::api::cluster::{
    ProcessGroupCondition, ProcessGroupConditionType as C, ProcessGroupStatus,
};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// A group seen running once (it has an address) that has failed since `since`.
fn failed(id: &str, condition: C, since: i64) -> ProcessGroupStatus {
    let mut g = group(id);
    g.addresses = vec!["10.1.0.1".to_owned()];
    g.process_group_conditions = vec![ProcessGroupCondition {
        condition_type: condition,
        timestamp: since,
    }];
    g
}

/// A fixture of a cluster whose database has been configured.
fn fixture(spec: &str) -> Fixture {
    Fixture::new(spec).status(|status| status.configured = true)
}

fn ids(decision: &ReplaceDecision) -> Vec<&str> {
    decision.replace.iter().map(|(g, _)| g.as_str()).collect()
}

const SPEC: &str =
    "{version: 7.1.57, automationOptions: {replacements: {failureDetectionTimeSeconds: 600}}}";

#[test]
fn groups_failed_longer_than_the_detection_time_are_replaced_oldest_first_one_at_a_time() {
    let snapshot = fixture(SPEC)
        .groups([
            failed("storage-1", C::MissingProcesses, 9_000),
            failed("storage-2", C::PodPending, 8_000),
            failed("storage-3", C::MissingProcesses, 9_900),
            failed("storage-4", C::IncorrectPodSpec, 1_000),
        ])
        .at(10_000)
        .build();
    let decision = decide(&snapshot);
    assert_eq!(
        ids(&decision),
        ["storage-2"],
        "the oldest; storage-3 is too recent, IncorrectPodSpec is not eligible"
    );
    assert_eq!(decision.waiting[0].0, "storage-1");
}

#[test]
fn groups_marked_and_not_excluded_count_against_the_budget() {
    let mut in_flight = group("storage-9");
    in_flight.removal_timestamp = Some(Time(Timestamp::from_second(9_500).unwrap()));
    let mut done = group("storage-8");
    done.removal_timestamp = Some(Time(Timestamp::from_second(9_000).unwrap()));
    done.exclusion_timestamp = Some(Time(Timestamp::from_second(9_100).unwrap()));
    let fixture = fixture(SPEC)
        .groups([failed("storage-1", C::MissingProcesses, 1_000), done])
        .at(10_000);
    assert_eq!(
        ids(&decide(&fixture.clone().build())),
        ["storage-1"],
        "an excluded group does not count"
    );
    let blocked = fixture.groups([in_flight]).build();
    let decision = decide(&blocked);
    assert!(decision.replace.is_empty());
    assert!(decision.waiting[0].1.contains("storage-9"), "{decision:?}");
}

#[test]
fn maintenance_buggify_and_disabled_replacements_are_respected() {
    let groups = [failed("storage-1", C::MissingProcesses, 1_000)];
    let mut db = serde_json::to_value(reporting(&[])).unwrap();
    db["cluster"]["maintenance_zone"] = serde_json::json!("z1");
    let mut in_zone = groups[0].clone();
    in_zone.fault_domain = Some("z1".into());
    let maintenance = fixture(SPEC)
        .groups([in_zone])
        .database(serde_json::from_value(db).unwrap())
        .build();
    assert!(decide(&maintenance).replace.is_empty());
    let crash = fixture("{version: 7.1.57, buggify: {crashLoop: [storage-1]}, automationOptions: {replacements: {failureDetectionTimeSeconds: 600}}}")
        .groups(groups.clone())
        .build();
    assert!(decide(&crash).replace.is_empty());
    let empty = fixture("{version: 7.1.57, buggify: {emptyMonitorConf: true}, automationOptions: {replacements: {failureDetectionTimeSeconds: 600}}}")
        .groups(groups.clone())
        .build();
    assert!(decide(&empty).replace.is_empty());
    let disabled =
        fixture("{version: 7.1.57, automationOptions: {replacements: {enabled: false}}}")
            .groups(groups)
            .build();
    assert!(decide(&disabled).replace.is_empty());
}

#[test]
fn taint_replacing_waits_for_the_taint_replacement_time_and_io_errors_for_the_detection_time() {
    let spec = "{version: 7.1.57, automationOptions: {replacements: {failureDetectionTimeSeconds: 600, taintReplacementTimeSeconds: 1200, maxConcurrentReplacements: 5}}}";
    let groups = [
        failed("storage-1", C::NodeTaintReplacing, 9_000),
        failed("storage-2", C::NodeTaintDetected, 1_000),
        failed("storage-3", C::ProcessHasIoError, 9_300),
    ];
    let early = fixture(spec).groups(groups.clone()).at(10_000).build();
    assert_eq!(
        ids(&decide(&early)),
        ["storage-3"],
        "NodeTaintDetected alone is never replaced; the taint needs 1200 s"
    );
    let late = fixture(spec).groups(groups).at(10_300).build();
    let decision = decide(&late);
    assert_eq!(ids(&decision), ["storage-1", "storage-3"]);
    assert!(
        decision.replace[0]
            .1
            .contains("taintReplacementTimeSeconds 1200"),
        "{decision:?}"
    );
}

fn tainted(id: &str, zone: &str, since: i64) -> ProcessGroupStatus {
    let mut g = failed(id, C::NodeTaintReplacing, since);
    g.fault_domain = Some(zone.into());
    g
}

fn healthy(id: &str, zone: &str) -> ProcessGroupStatus {
    let mut g = group(id);
    g.fault_domain = Some(zone.into());
    g
}

#[test]
fn taint_replacements_stop_when_more_fault_domains_are_tainted_than_allowed() {
    let spec = "{version: 7.1.57, automationOptions: {replacements: {taintReplacementTimeSeconds: 60, maxConcurrentReplacements: 9, maxFaultDomainsWithTaintedProcessGroups: 1}}}";
    let mut io_error = tainted("storage-3", "z3", 1_000);
    io_error
        .process_group_conditions
        .push(ProcessGroupCondition {
            condition_type: C::ProcessHasIoError,
            timestamp: 1_000,
        });
    let groups = [
        tainted("storage-1", "z1", 1_000),
        tainted("log-1", "z1", 1_000),
        tainted("storage-2", "z2", 1_000),
        io_error,
        healthy("storage-4", "z4"),
    ];
    let decision = decide(&fixture(spec).groups(groups.clone()).build());
    assert_eq!(
        ids(&decision),
        ["storage-3"],
        "three tainted fault domains, one allowed: only the I/O error is replaced"
    );
    let waiting: Vec<&str> = decision.waiting.iter().map(|(g, _)| g.as_str()).collect();
    assert_eq!(waiting, ["storage-1", "log-1", "storage-2"]);
    assert!(
        decision.waiting[0].1.contains("3 of 4 fault domains")
            && decision.waiting[0].1.contains("z1, z2, z3"),
        "{decision:?}"
    );
    // One tainted fault domain is within the limit: both of its groups go.
    let one = decide(
        &fixture(spec)
            .groups(
                groups
                    .iter()
                    .take(2)
                    .cloned()
                    .chain([healthy("storage-4", "z4")]),
            )
            .build(),
    );
    assert_eq!(ids(&one), ["log-1", "storage-1"]);
    // A percentage of the fault domains, rounded up: 50 % of 4 allows 2, not 3.
    let half = spec.replace(
        "maxFaultDomainsWithTaintedProcessGroups: 1",
        "maxFaultDomainsWithTaintedProcessGroups: \"50%\"",
    );
    assert_eq!(
        ids(&decide(&fixture(&half).groups(groups.clone()).build())),
        ["storage-3"]
    );
    let three = spec.replace(
        "maxFaultDomainsWithTaintedProcessGroups: 1",
        "maxFaultDomainsWithTaintedProcessGroups: \"75%\"",
    );
    assert_eq!(
        ids(&decide(&fixture(&three).groups(groups).build())).len(),
        4
    );
}

#[test]
fn the_next_failure_to_fall_due_is_named_with_its_wait() {
    let snapshot = fixture(SPEC)
        .groups([
            failed("storage-1", C::MissingProcesses, 9_900),
            failed("storage-2", C::PodFailing, 9_700),
            failed("storage-3", C::IncorrectPodSpec, 9_000),
        ])
        .at(10_000)
        .build();
    let decision = decide(&snapshot);
    assert!(decision.replace.is_empty());
    assert_eq!(decision.next_due, Some((300, "storage-2".to_owned())));
}

#[test]
fn waiting_asks_for_a_pass_when_the_next_failure_falls_due_or_taints_may_have_cleared() {
    let mut decision = ReplaceDecision {
        next_due: Some((12, "storage-2".into())),
        ..ReplaceDecision::default()
    };
    assert_eq!(
        verdict(&decision),
        Verdict::Wait(Wait::independent(
            WaitOn::After(Duration::from_secs(12)),
            "process group storage-2 is replaced in 12s unless it recovers"
        ))
    );
    decision.next_due = Some((7_000, "storage-2".into()));
    decision.taints_blocked = Some("too many tainted".into());
    let Verdict::Act(plan) = verdict(&decision) else {
        panic!("the blocked Event");
    };
    assert!(matches!(
        &plan.actions[..],
        [only] if only.action == Action::Event {
            reason: EventReason::ReplacementBlocked,
            action: "ReplaceFailedPods".into(),
            note: "too many tainted".into()
        }
    ));
    assert_eq!(
        plan.then,
        Some(Wait::independent(
            WaitOn::After(UNRECONCILED_INTERVAL),
            "too many tainted"
        ))
    );
    assert_eq!(verdict(&ReplaceDecision::default()), Verdict::Continue);
    // A mark goes on: the marks are written, then their Event.
    decision.replace = vec![("storage-3".into(), "PodFailing for 600s".into())];
    let actions: Vec<_> = verdict(&decision).actions().into_iter().cloned().collect();
    assert!(
        matches!(
            &actions[..],
            [Action::Event { reason: EventReason::ReplacementBlocked, .. }, Action::WriteStatus(marks), Action::Event { reason: EventReason::ReplacementChosen, .. }]
                if *marks == [StatusMutation::MarkForRemoval { group: "storage-3".into() }]
        ),
        "{actions:?}"
    );
    assert!(matches!(
        verdict(&decision),
        Verdict::Act(Plan { then: None, .. })
    ));
}

/// A Pending pod of `group` the scheduler could not place, with its message.
fn unschedulable_pod(group: &str, message: &str) -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("sample-{group}"), "labels": {"foundationdb.org/fdb-process-group-id": group}},
        "spec": {"containers": []},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "message": message}]}
    }))
    .unwrap()
}

const AT_ONCE: &str =
    "{version: 7.1.57, automationOptions: {replacements: {failureDetectionTimeSeconds: 0}}}";

/// With a detection time of 0 (legal, as in Go), groups being created (no address yet,
/// missing everything) are not replaced: that was the storm a short time used to cause.
#[test]
fn groups_never_seen_running_are_not_replaced_by_the_timer_alone() {
    let mut new = group("storage-5");
    new.process_group_conditions = vec![
        ProcessGroupCondition {
            condition_type: C::MissingProcesses,
            timestamp: 1_000,
        },
        ProcessGroupCondition {
            condition_type: C::MissingPod,
            timestamp: 1_000,
        },
    ];
    let mut pending = new.clone();
    pending.process_group_id = "storage-6".to_owned();
    let snapshot = fixture(AT_ONCE)
        .groups([new, pending])
        .pods([unschedulable_pod(
            "storage-6",
            "0/3 nodes are available: 3 Insufficient cpu.",
        )])
        .at(100_000)
        .build();
    let decision = decide(&snapshot);
    assert!(decision.replace.is_empty(), "{decision:?}");
    assert!(
        decision
            .waiting
            .iter()
            .all(|(_, why)| why.contains("never seen running"))
    );
    // A group that ran is replaced at once with that detection time.
    let ran = fixture(AT_ONCE)
        .groups([failed("storage-1", C::MissingProcesses, 99_999)])
        .at(100_000)
        .build();
    assert_eq!(ids(&decide(&ran)), ["storage-1"]);
}

/// A group whose pod cannot run where its claim is bound (local volume on a drained
/// node) is replaced even if it never ran: a new group gets a new claim.
#[test]
fn a_group_whose_volume_is_bound_elsewhere_is_replaced_even_if_it_never_ran() {
    let mut new = group("storage-5");
    new.process_group_conditions = vec![ProcessGroupCondition {
        condition_type: C::PodPending,
        timestamp: 1_000,
    }];
    for message in [
        "0/3 nodes are available: 1 node(s) had volume node affinity conflict, 2 node(s) already run a pod.",
        "0/3 nodes are available: 3 node(s) didn't match PersistentVolume's node affinity.",
    ] {
        let snapshot = fixture(SPEC)
            .groups([new.clone()])
            .pods([unschedulable_pod("storage-5", message)])
            .at(10_000)
            .build();
        assert_eq!(ids(&decide(&snapshot)), ["storage-5"], "{message}");
    }
}

/// A negative time counts as 0, as in Go.
#[test]
fn a_negative_detection_time_counts_as_zero() {
    let snapshot = fixture(
        "{version: 7.1.57, automationOptions: {replacements: {failureDetectionTimeSeconds: -30}}}",
    )
    .groups([
        failed("storage-1", C::MissingProcesses, 10_000),
        failed("storage-2", C::MissingProcesses, 10_001),
    ])
    .at(10_000)
    .build();
    let decision = decide(&snapshot);
    assert_eq!(ids(&decision), ["storage-1"]);
    assert_eq!(decision.next_due, Some((1, "storage-2".to_owned())));
}

/// An invalid replacement field stops this step alone, with an Event naming the field.
#[test]
fn an_invalid_replacement_field_stops_replacements_with_an_event_naming_it() {
    let snapshot = fixture(
        "{version: 7.1.57, automationOptions: {replacements: {maxConcurrentReplacements: -1}}}",
    )
    .groups([failed("storage-1", C::MissingProcesses, 1_000)])
    .at(100_000)
    .build();
    let decision = decide(&snapshot);
    assert!(decision.replace.is_empty());
    let actions: Vec<_> = verdict(&decision).actions().into_iter().cloned().collect();
    assert!(
        matches!(&actions[..], [Action::Event { reason: EventReason::InvalidSpec, note, .. }]
            if note.contains("spec.automationOptions.replacements.maxConcurrentReplacements")),
        "{actions:?}"
    );
}

/// A group whose claim names a storage class that does not exist: an Event names the
/// class, and the group is not replaced (its replacement would wait the same way).
#[test]
fn a_claim_of_a_missing_storage_class_is_reported_by_name_and_not_replaced() {
    let mut new = group("storage-5");
    new.process_group_conditions = vec![ProcessGroupCondition {
        condition_type: C::PodPending,
        timestamp: 1_000,
    }];
    let pvc: k8s_openapi::api::core::v1::PersistentVolumeClaim =
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "sample-storage-5-data",
                "labels": {"foundationdb.org/fdb-process-group-id": "storage-5"}},
            "spec": {"storageClassName": "fast-ssd"},
            "status": {"phase": "Pending"}
        }))
        .unwrap();
    let snapshot = fixture(AT_ONCE)
        .groups([new])
        .pods([unschedulable_pod(
            "storage-5",
            "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
        )])
        .pvcs([pvc])
        .at(100_000)
        .build();
    let decision = decide(&snapshot);
    assert!(decision.replace.is_empty(), "{decision:?}");
    let actions: Vec<_> = verdict(&decision).actions().into_iter().cloned().collect();
    assert!(
        matches!(&actions[..], [Action::Event { reason: EventReason::VolumeClaimUnbound, note, .. }]
            if note.contains("\"fast-ssd\"") && note.contains("sample-storage-5-data")),
        "{actions:?}"
    );
}

/// While the database has never been configured (the cluster is being created) no group
/// has ever run in it: none is replaced by the timer, even with an address.
#[test]
fn nothing_is_replaced_by_the_timer_before_the_database_is_configured() {
    let creating = Fixture::new(AT_ONCE)
        .groups([failed("cluster_controller-1", C::MissingProcesses, 1_000)])
        .at(100_000)
        .build();
    let decision = decide(&creating);
    assert!(decision.replace.is_empty(), "{decision:?}");
}

#[test]
fn fault_domain_based_replacements_replace_every_failed_group_of_a_domain_in_flight() {
    let spec = "{version: 7.1.57, automationOptions: {replacements: {failureDetectionTimeSeconds: 600, maxConcurrentReplacements: 1, faultDomainBasedReplacements: true}}}";
    let zoned = |id: &str, zone: &str, since: i64| {
        let mut g = failed(id, C::MissingProcesses, since);
        g.fault_domain = Some(zone.into());
        g
    };
    let groups = [
        zoned("storage-1", "zone-a", 1_000),
        zoned("log-1", "zone-a", 1_000),
        zoned("storage-2", "zone-b", 2_000),
        zoned("storage-3", "zone-a", 3_000),
    ];
    let decision = decide(&fixture(spec).groups(groups.clone()).at(10_000).build());
    assert_eq!(ids(&decision), ["log-1", "storage-1", "storage-3"]);
    assert_eq!(decision.waiting[0].0, "storage-2");
    assert!(decision.waiting[0].1.contains("zone-a"), "{decision:?}");
    // The same failures group by group: one at a time.
    let by_group = spec.replace(", faultDomainBasedReplacements: true", "");
    let decision = decide(&fixture(&by_group).groups(groups).at(10_000).build());
    assert_eq!(ids(&decision), ["log-1"]);
}
