use super::*;
use crate::controller::fixtures::{Fixture, group, reporting};
use fdb_shared::api::cluster::{
    ProcessGroupCondition, ProcessGroupConditionType as C, ProcessGroupStatus,
};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

fn failed(id: &str, condition: C, since: i64) -> ProcessGroupStatus {
    let mut g = group(id);
    g.process_group_conditions = vec![ProcessGroupCondition {
        condition_type: condition,
        timestamp: since,
    }];
    g
}

fn ids(decision: &ReplaceDecision) -> Vec<&str> {
    decision.replace.iter().map(|(g, _)| g.as_str()).collect()
}

const SPEC: &str =
    "{version: 7.1.57, automationOptions: {replacements: {failureDetectionTimeSeconds: 600}}}";

#[test]
fn groups_failed_longer_than_the_detection_time_are_replaced_oldest_first_one_at_a_time() {
    let snapshot = Fixture::new(SPEC)
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
    let fixture = Fixture::new(SPEC)
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
    let maintenance = Fixture::new(SPEC)
        .groups([in_zone])
        .database(serde_json::from_value(db).unwrap())
        .build();
    assert!(decide(&maintenance).replace.is_empty());
    let crash = Fixture::new("{version: 7.1.57, buggify: {crashLoop: [storage-1]}, automationOptions: {replacements: {failureDetectionTimeSeconds: 600}}}")
        .groups(groups.clone())
        .build();
    assert!(decide(&crash).replace.is_empty());
    let empty = Fixture::new("{version: 7.1.57, buggify: {emptyMonitorConf: true}, automationOptions: {replacements: {failureDetectionTimeSeconds: 600}}}")
        .groups(groups.clone())
        .build();
    assert!(decide(&empty).replace.is_empty());
    let disabled =
        Fixture::new("{version: 7.1.57, automationOptions: {replacements: {enabled: false}}}")
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
    let early = Fixture::new(spec).groups(groups.clone()).at(10_000).build();
    assert_eq!(
        ids(&decide(&early)),
        ["storage-3"],
        "NodeTaintDetected alone is never replaced; the taint needs 1200 s"
    );
    let late = Fixture::new(spec).groups(groups).at(10_300).build();
    let decision = decide(&late);
    assert_eq!(ids(&decision), ["storage-1", "storage-3"]);
    assert!(
        decision.replace[0]
            .1
            .contains("taintReplacementTimeSeconds 1200"),
        "{decision:?}"
    );
}
