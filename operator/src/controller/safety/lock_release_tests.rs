use super::*;
use crate::controller::fixtures::{Fixture, group, reporting};

const SPEC: &str = "{version: 7.1.57, faultDomain: {zoneCount: 3}}";

fn seen(id: &str) -> fdb_shared::api::cluster::ProcessGroupStatus {
    let mut status = group(id);
    status.addresses = vec!["10.0.0.9".into()];
    status.fault_domain = Some(format!("z-{id}"));
    status
}

fn marked(id: &str) -> fdb_shared::api::cluster::ProcessGroupStatus {
    let mut status = seen(id);
    status.removal_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::UNIX_EPOCH,
    ));
    status
}

#[test]
fn a_reconciled_pass_always_gives_the_lock_up() {
    assert_eq!(decide_at_pass_end(true, None), PassEndLock::Release);
    assert_eq!(
        decide_at_pass_end(true, Some(InFlight::LockedActionThisPass)),
        PassEndLock::Release
    );
}

#[test]
fn an_unreconciled_pass_keeps_the_lock_only_while_its_operation_is_under_way() {
    // Waiting for pods to be scheduled: nothing of its own in the database.
    assert_eq!(decide_at_pass_end(false, None), PassEndLock::Release);
    let removal = InFlight::Removals(vec!["storage-1".into()]);
    assert_eq!(
        decide_at_pass_end(false, Some(removal.clone())),
        PassEndLock::Keep(removal)
    );
}

#[test]
fn a_group_waiting_for_its_first_pod_is_nothing_in_flight() {
    // storage-4 never ran (no address), its pod pending; the others report.
    let snapshot = Fixture::new(SPEC)
        .groups([seen("storage-1"), seen("storage-2"), group("storage-4")])
        .database(reporting(&["storage-1", "storage-2"]))
        .build();
    assert_eq!(in_flight(&snapshot, false), None);
    assert_eq!(
        in_flight(&snapshot, true),
        Some(InFlight::LockedActionThisPass)
    );
}

#[test]
fn a_group_seen_running_and_not_reporting_keeps_the_lock() {
    let snapshot = Fixture::new(SPEC)
        .groups([seen("storage-1"), seen("storage-2")])
        .database(reporting(&["storage-1"]))
        .build();
    assert_eq!(
        in_flight(&snapshot, false),
        Some(InFlight::ProcessesDown(vec!["storage-2".into()]))
    );
}

#[test]
fn an_excluded_removal_keeps_the_lock_until_included() {
    let mut excluded = marked("storage-2");
    excluded.excluded_targets = vec!["locality_instance_id:storage-2".into()];
    let snapshot = Fixture::new(SPEC)
        .groups([seen("storage-1"), excluded])
        .database(reporting(&["storage-1", "storage-2"]))
        .build();
    assert_eq!(
        in_flight(&snapshot, false),
        Some(InFlight::Removals(vec!["storage-2".into()]))
    );
    // Marked, exclusion not started: not under way yet.
    let snapshot = Fixture::new(SPEC)
        .groups([seen("storage-1"), marked("storage-2")])
        .database(reporting(&["storage-1", "storage-2"]))
        .build();
    assert_eq!(in_flight(&snapshot, false), None);
}

#[test]
fn maintenance_on_its_zone_or_an_unread_database_keeps_the_lock() {
    let mut status = reporting(&["storage-1"]);
    status.cluster.maintenance_zone = Some("z-storage-1".into());
    let snapshot = Fixture::new(SPEC)
        .groups([seen("storage-1")])
        .database(status)
        .build();
    assert_eq!(
        in_flight(&snapshot, false),
        Some(InFlight::Maintenance("z-storage-1".into()))
    );
    // Another instance's zone: not this instance's operation.
    let mut status = reporting(&["storage-1"]);
    status.cluster.maintenance_zone = Some("elsewhere".into());
    let snapshot = Fixture::new(SPEC)
        .groups([seen("storage-1")])
        .database(status)
        .build();
    assert_eq!(in_flight(&snapshot, false), None);
    let snapshot = Fixture::new(SPEC)
        .groups([seen("storage-1")])
        .unreadable()
        .build();
    assert_eq!(in_flight(&snapshot, false), Some(InFlight::DatabaseUnknown));
}

#[test]
fn the_memo_forgets_a_release_once_the_lock_is_taken_again() {
    let memo = LockReleases::default();
    assert!(!memo.is_released("ns", "a"));
    memo.released("ns", "a");
    assert!(memo.is_released("ns", "a") && !memo.is_released("ns", "b"));
    memo.taken("ns", "a");
    assert!(!memo.is_released("ns", "a"));
}
