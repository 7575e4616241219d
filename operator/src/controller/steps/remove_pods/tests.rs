use super::*;
use crate::controller::fixtures::{Fixture, group, pod, reporting};
use fdb_shared::api::cluster::ProcessGroupStatus;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

const SPEC: &str = "{version: 7.1.57, processCounts: {storage: 2, log: -1, stateless: -1, cluster_controller: -1}, routing: {useDNSInClusterFile: false}}";

fn at(seconds: i64) -> Option<Time> {
    Some(Time(Timestamp::from_second(seconds).unwrap()))
}

fn excluded(id: &str) -> ProcessGroupStatus {
    let mut g = group(id);
    g.removal_timestamp = at(9_000);
    g.exclusion_timestamp = at(9_500);
    g
}

fn pvc(name: &str, group: &str) -> PersistentVolumeClaim {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"foundationdb.org/fdb-process-group-id": group}}
    }))
    .unwrap()
}

fn terminating<K: kube::Resource>(mut object: K, since: i64) -> K {
    object.meta_mut().deletion_timestamp = at(since);
    object
}

fn base() -> Fixture {
    Fixture::new(SPEC)
        .groups([group("storage-1"), group("storage-2")])
        .connection_string("s:abc@10.0.0.1:4501")
        .pods([pod("sample-storage-1", "storage-1", "n1", "10.0.0.1")])
}

#[test]
fn the_pod_goes_first_then_the_pvc_then_the_group_is_included_and_dropped() {
    let db = with_exclusion(reporting(&["storage-1", "storage-2"]));
    let with_pod = base()
        .groups([excluded("storage-3")])
        .pods([pod("sample-storage-3", "storage-3", "n3", "10.0.0.3")])
        .pvcs([pvc("sample-storage-3-data", "storage-3")])
        .database(db.clone());
    let decision = decide(&with_pod.clone().build());
    assert_eq!(decision.delete_pods, ["sample-storage-3"]);
    assert!(decision.delete_pvcs.is_empty(), "the PVC waits for the pod");
    let pod_gone = base()
        .groups([excluded("storage-3")])
        .pvcs([pvc("sample-storage-3-data", "storage-3")])
        .database(db.clone());
    assert_eq!(
        decide(&pod_gone.build()).delete_pvcs,
        ["sample-storage-3-data"]
    );
    let all_gone = base().groups([excluded("storage-3")]).database(db);
    let decision = decide(&all_gone.build());
    assert_eq!(decision.finished, ["storage-3"]);
    assert_eq!(
        decision.include,
        [ExclusionTarget::instance_id("storage-3").unwrap()]
    );
}

fn with_exclusion(
    db: fdb_shared::status_json::DatabaseStatus,
) -> fdb_shared::status_json::DatabaseStatus {
    let mut value = serde_json::to_value(&db).unwrap();
    value["cluster"]["configuration"] = serde_json::json!({"excluded_servers": [{"locality": "locality_instance_id:storage-3"},
            {"locality": "locality_instance_id:storage-4"}]});
    serde_json::from_value(value).unwrap()
}

/// An exclusion recorded once is checked again before the pod and before the PVC: a
/// group the database no longer lists as excluded (someone ran `include`), or whose
/// exclusion cannot be read now, keeps both (PR #2504 of the Go operator).
#[test]
fn a_recorded_exclusion_the_database_does_not_confirm_now_keeps_pod_and_pvc() {
    let unlisted = reporting(&["storage-1", "storage-2"]);
    let with_pod = base()
        .groups([excluded("storage-3")])
        .pods([pod("sample-storage-3", "storage-3", "n3", "10.0.0.3")])
        .database(unlisted.clone());
    let decision = decide(&with_pod.build());
    assert!(decision.delete_pods.is_empty());
    assert!(
        decision.waiting[0]
            .1
            .contains("no longer lists locality_instance_id:storage-3 as excluded"),
        "{:?}",
        decision.waiting
    );
    let pod_gone = base()
        .groups([excluded("storage-3")])
        .pvcs([pvc("sample-storage-3-data", "storage-3")]);
    assert!(
        decide(&pod_gone.clone().database(unlisted).build())
            .delete_pvcs
            .is_empty()
    );
    let unreadable = decide(&pod_gone.build());
    assert!(unreadable.delete_pvcs.is_empty());
    assert!(
        unreadable.waiting[0].1.contains("cannot be checked now"),
        "{:?}",
        unreadable.waiting
    );
}

#[test]
fn a_stuck_pod_blocks_only_its_own_group_and_only_until_ignored() {
    let db = with_exclusion(reporting(&["storage-1", "storage-2"]));
    let mut other = excluded("storage-4");
    other.addresses = vec!["10.0.0.4".into()];
    let fixture = |since: i64| {
        base()
            .groups([excluded("storage-3"), other.clone()])
            .pods([
                terminating(
                    pod("sample-storage-3", "storage-3", "n3", "10.0.0.3"),
                    since,
                ),
                pod("sample-storage-4", "storage-4", "n4", "10.0.0.4"),
            ])
            .pvcs([pvc("sample-storage-3-data", "storage-3")])
            .database(db.clone())
            .at(10_000)
    };
    let decision = decide(&fixture(9_900).build());
    assert_eq!(
        decision.delete_pods,
        ["sample-storage-4"],
        "the other group goes on"
    );
    assert!(decision.delete_pvcs.is_empty());
    assert_eq!(decision.waiting[0].1, "pod sample-storage-3 is terminating");
    // Terminating for longer than ignoreTerminatingPodsSeconds (600): the PVC goes too.
    let decision = decide(&fixture(9_000).build());
    assert_eq!(decision.delete_pvcs, ["sample-storage-3-data"]);
}

#[test]
fn never_the_pod_of_a_coordinator_nor_of_a_group_not_excluded() {
    let mut coordinator = excluded("storage-1");
    coordinator.addresses = vec!["10.0.0.1".into()];
    let mut not_excluded = group("storage-2");
    not_excluded.removal_timestamp = at(9_000);
    let snapshot = Fixture::new(SPEC)
        .groups([coordinator, not_excluded])
        .connection_string("s:abc@10.0.0.1:4501")
        .pods([
            pod("sample-storage-1", "storage-1", "n1", "10.0.0.1"),
            pod("sample-storage-2", "storage-2", "n2", "10.0.0.2"),
        ])
        .database(reporting(&["storage-1", "storage-2"]))
        .build();
    let decision = decide(&snapshot);
    assert!(decision.delete_pods.is_empty(), "{decision:?}");
    assert!(
        decision
            .waiting
            .iter()
            .any(|(g, r)| g == "storage-1" && r.contains("coordinator"))
    );
    assert!(
        decision
            .waiting
            .iter()
            .any(|(g, r)| g == "storage-2" && r.contains("not fully excluded"))
    );
}

#[test]
fn a_removal_the_user_holds_back_leaves_the_resources_alone() {
    let db = with_exclusion(reporting(&["storage-1", "storage-2"]));
    let spec_with = |extra: &str| SPEC.replacen('{', &format!("{{{extra}, "), 1);
    for extra in [
        "buggify: {blockRemoval: [storage-3]}",
        "automationOptions: {removalMode: None}",
    ] {
        let held = Fixture::new(&spec_with(extra))
            .groups([
                group("storage-1"),
                group("storage-2"),
                excluded("storage-3"),
            ])
            .connection_string("s:abc@10.0.0.1:4501")
            .pods([pod("sample-storage-3", "storage-3", "n3", "10.0.0.3")])
            .pvcs([pvc("sample-storage-3-data", "storage-3")])
            .database(db.clone())
            .build();
        let decision = decide(&held);
        assert!(decision.delete_pods.is_empty(), "{extra}: {decision:?}");
        assert!(decision.finished.is_empty(), "{extra}: {decision:?}");
        assert_eq!(decision.held.len(), 1, "{extra}: {decision:?}");
    }
    // Another group's block does not hold this one.
    let other = Fixture::new(&spec_with("buggify: {blockRemoval: [storage-9]}"))
        .groups([
            group("storage-1"),
            group("storage-2"),
            excluded("storage-3"),
        ])
        .connection_string("s:abc@10.0.0.1:4501")
        .pods([pod("sample-storage-3", "storage-3", "n3", "10.0.0.3")])
        .database(db)
        .build();
    assert_eq!(decide(&other).delete_pods, ["sample-storage-3"]);
}

#[test]
fn the_plan_deletes_then_includes_under_the_lock_and_drops_the_group() {
    let db = with_exclusion(reporting(&["storage-1", "storage-2"]));
    let with_pod = base()
        .groups([excluded("storage-3")])
        .pods([pod("sample-storage-3", "storage-3", "n3", "10.0.0.3")])
        .pvcs([pvc("sample-storage-3-data", "storage-3")])
        .database(db.clone())
        .build();
    let verdict = RemovePods.decide(&with_pod, &PassFacts::default()).unwrap();
    let Verdict::Act(plan) = &verdict else {
        panic!("{verdict:?}")
    };
    assert!(matches!(&plan.actions[0].action,
        Action::Delete { kind: ObjectKind::Pods, name } if name == "sample-storage-3"));
    assert!(matches!(
        &plan.actions[1].action,
        Action::Event {
            reason: EventReason::ResourcesDeleted,
            ..
        }
    ));
    assert!(
        plan.actions.iter().all(|p| !p.disrupts),
        "no process of the database goes"
    );
    let wait = plan.then.as_ref().unwrap();
    assert!(wait.reason.contains("resources of removed process groups"));

    let all_gone = base().groups([excluded("storage-3")]).database(db).build();
    let verdict = RemovePods.decide(&all_gone, &PassFacts::default()).unwrap();
    let Verdict::Act(plan) = &verdict else {
        panic!("{verdict:?}")
    };
    let include = &plan.actions[0];
    assert!(matches!(&include.action, Action::Include(targets) if targets.len() == 1));
    assert_eq!(include.lock, Some(LockedAction::Include));
    assert_eq!(
        include.recovery, None,
        "a storage process takes no transaction role"
    );
    assert!(matches!(&plan.actions[1].action,
        Action::WriteStatus(m) if m == &[StatusMutation::RemoveProcessGroup { group: "storage-3".into() }]));
    assert!(matches!(
        &plan.actions[2].action,
        Action::Event {
            reason: EventReason::ProcessGroupRemoved,
            ..
        }
    ));
    assert!(plan.refused.contains("wait to be included"));
    assert_eq!(plan.then, None);
}
