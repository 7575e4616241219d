use super::*;
use crate::controller::fixtures::{Fixture, group, pod, reporting};
use fdb_shared::api::cluster::ProcessGroupConditionType as C;
use fdb_shared::status_json::DatabaseStatus;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

const SPEC: &str = "{version: 7.1.57, processCounts: {storage: 3, log: -1, stateless: -1, cluster_controller: -1}, routing: {useDNSInClusterFile: false}}";
const IDS: [&str; 4] = ["storage-1", "storage-2", "storage-3", "storage-4"];

fn marked(id: &str) -> fdb_shared::api::cluster::ProcessGroupStatus {
    let mut g = group(id);
    g.removal_timestamp = Some(Time(Timestamp::from_second(9_000).unwrap()));
    g
}

/// storage-1..4 on their own nodes, storage-4 marked, all reporting; coordinators on
/// storage-1..3.
fn fixture(db: DatabaseStatus) -> Fixture {
    Fixture::new(SPEC)
        .groups([group(IDS[0]), group(IDS[1]), group(IDS[2]), marked(IDS[3])])
        .pods(IDS.iter().enumerate().map(|(i, id)| {
            pod(
                &format!("sample-{id}"),
                id,
                &format!("node-{i}"),
                &format!("10.0.0.{}", i + 1),
            )
        }))
        .connection_string("s:abc@10.0.0.1:4501,10.0.0.2:4501,10.0.0.3:4501")
        .status(|s| s.running_version = Some("7.1.57".into()))
        .database(db)
}

fn with(mut db: DatabaseStatus, change: impl FnOnce(&mut serde_json::Value)) -> DatabaseStatus {
    let mut value = serde_json::to_value(&db).unwrap();
    change(&mut value);
    db = serde_json::from_value(value).unwrap();
    db
}

#[test]
fn a_marked_serving_group_is_excluded_by_locality_behind_the_gates() {
    let decision = decide(&fixture(reporting(&IDS)).build());
    assert_eq!(
        decision.exclude,
        [(
            "storage-4".to_owned(),
            vec![ExclusionTarget::instance_id("storage-4").unwrap()]
        )]
    );
    // A recent recovery blocks it.
    let recent = with(reporting(&IDS), |v| {
        v["cluster"]["recovery_state"] = serde_json::json!({"seconds_since_last_recovered": 30.0});
    });
    let decision = decide(&fixture(recent).build());
    assert!(decision.exclude.is_empty());
    assert!(
        decision.waiting[0].1.contains("last recovery"),
        "{decision:?}"
    );
}

#[test]
fn a_serving_group_waits_for_its_class_to_have_the_desired_count_up() {
    // storage-3 does not report: only 2 of 3 serve.
    let decision = decide(
        &fixture(with(reporting(&IDS), |v| {
            v["cluster"]["processes"]
                .as_object_mut()
                .unwrap()
                .remove("p2");
        }))
        .status(|s| {
            s.process_groups[2].process_group_conditions =
                vec![fdb_shared::api::cluster::ProcessGroupCondition {
                    condition_type: C::MissingProcesses,
                    timestamp: 1_000,
                }];
        })
        .build(),
    );
    assert!(decision.exclude.is_empty());
    assert!(
        decision.waiting[0].1.contains("only 2 of 3"),
        "{decision:?}"
    );
}

#[test]
fn old_versions_exclude_every_recorded_address_and_addressless_groups_wait() {
    let old = |f: Fixture| f.status(|s| s.running_version = Some("7.1.25".into()));
    let with_history = old(fixture(reporting(&IDS))).status(|s| {
        s.process_groups[3].addresses = vec!["10.0.9.9".into()];
    });
    let decision = decide(&with_history.build());
    let targets = &decision.exclude[0].1;
    let text: Vec<String> = targets.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        ["10.0.0.4", "10.0.9.9"],
        "the pod's IP and the old one"
    );
    // Without a pod, a status address or a process, there is nothing to exclude.
    let addressless = Fixture::new(SPEC)
        .groups([group(IDS[0]), group(IDS[1]), group(IDS[2]), marked(IDS[3])])
        .status(|s| s.running_version = Some("7.1.25".into()))
        .database(reporting(&IDS[..3]));
    let decision = decide(&addressless.build());
    assert!(decision.exclude.is_empty());
    assert!(
        decision.waiting[0].1.contains("never had an address"),
        "{decision:?}"
    );
}

#[test]
fn a_group_hosting_a_coordinator_waits_for_the_coordinators_to_move() {
    let fixture = fixture(reporting(&IDS))
        .connection_string("s:abc@10.0.0.1:4501,10.0.0.2:4501,10.0.0.4:4501");
    let decision = decide(&fixture.build());
    assert!(decision.exclude.is_empty());
    assert!(
        decision.waiting[0].1.contains("coordinator 10.0.0.4:4501"),
        "{decision:?}"
    );
}

#[test]
fn the_exclusion_is_recorded_once_complete() {
    let excluded = with(reporting(&IDS), |v| {
        v["cluster"]["configuration"] = serde_json::json!({"excluded_servers": [{"locality": "locality_instance_id:storage-4"}]});
        v["cluster"]["processes"]["p3"]["excluded"] = serde_json::json!(true);
        v["cluster"]["processes"]["p3"]["roles"] = serde_json::json!([{"role": "storage"}]);
    });
    let decision = decide(&fixture(excluded.clone()).build());
    assert!(decision.complete.is_empty() && decision.exclude.is_empty());
    assert!(
        decision.waiting[0].1.contains("still has roles"),
        "{decision:?}"
    );
    let drained = with(excluded, |v| {
        v["cluster"]["processes"]["p3"]["roles"] = serde_json::json!([]);
    });
    assert_eq!(decide(&fixture(drained).build()).complete, ["storage-4"]);
}

#[test]
fn groups_removed_without_exclusion_are_never_excluded() {
    let fixture = fixture(reporting(&IDS)).status(|s| s.process_groups[3].exclusion_skipped = true);
    assert_eq!(decide(&fixture.build()), ExcludeDecision::default());
}

/// After FoundationDB refused an exclusion, the next attempt waits out the back-off
/// (`removals/exclusion_retries.rs`) with a wait that lets the later steps go on, then
/// is planned again.
#[test]
fn an_exclusion_foundationdb_refused_waits_out_its_backoff_and_lets_later_steps_go_on() {
    use crate::controller::pass::plan::{Action, PassFacts, WaitOn};
    use crate::controller::removals::exclusion_retries::RefusalRecord;
    use crate::fdb::fdbcli::refusals::ExcludeRefusal;
    let snapshot = fixture(reporting(&IDS)).build();
    let now = snapshot.now_unix();
    let excludes = |verdict: &Verdict| match verdict {
        Verdict::Act(plan) => plan
            .actions
            .iter()
            .any(|p| matches!(p.action, Action::Exclude(_))),
        _ => false,
    };
    let mut facts = PassFacts::default();
    assert!(excludes(
        &ExcludeInstances.decide(&snapshot, &facts).unwrap()
    ));
    facts.remembered.exclusion_refusal = Some(RefusalRecord {
        refusal: ExcludeRefusal::MetricsMissing,
        refusals: 1,
        last_unix: now - 5,
    });
    let Verdict::Wait(wait) = ExcludeInstances.decide(&snapshot, &facts).unwrap() else {
        panic!("a wait");
    };
    assert!(wait.goes_on, "{wait:?}");
    assert_eq!(wait.waits_on, WaitOn::After(Duration::from_secs(25)));
    assert!(
        wait.reason.contains("storage-4") && wait.reason.contains("metrics"),
        "{wait:?}"
    );
    // The second refusal in a row waits 60 s; once it is over, the exclusion is planned.
    facts.remembered.exclusion_refusal = Some(RefusalRecord {
        refusal: ExcludeRefusal::FreeSpace,
        refusals: 2,
        last_unix: now - 59,
    });
    assert!(!excludes(
        &ExcludeInstances.decide(&snapshot, &facts).unwrap()
    ));
    facts.remembered.exclusion_refusal = Some(RefusalRecord {
        refusal: ExcludeRefusal::FreeSpace,
        refusals: 2,
        last_unix: now - 60,
    });
    assert!(excludes(
        &ExcludeInstances.decide(&snapshot, &facts).unwrap()
    ));
}
