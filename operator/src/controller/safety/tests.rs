use fdb_shared::api::cluster::ProcessGroupCondition;
use fdb_shared::status_json::DatabaseStatus;

use std::collections::BTreeSet;

use super::*;
use crate::controller::fixtures::{Fixture, STATUS_7_1, group, pod, reporting};

const DOUBLE: &str = "version: 7.1.57";

fn fixture_status() -> DatabaseStatus {
    DatabaseStatus::parse_fdbcli_output(STATUS_7_1).unwrap()
}

fn with_db(db: DatabaseStatus) -> ClusterSnapshot {
    Fixture::new(DOUBLE)
        .connection_string("a:b@10.0.0.1:4501")
        .database(db)
        .build()
}

#[test]
fn availability_needs_a_readable_available_database() {
    assert_eq!(
        available(&Fixture::new(DOUBLE).build()),
        Err(Refusal::NoDatabase)
    );
    let unreadable = Fixture::new(DOUBLE).unreadable().build();
    assert_eq!(
        available(&unreadable).unwrap_err().to_string(),
        "cannot read the database status: `status json` timed out after 10s"
    );
    assert_eq!(available(&with_db(fixture_status())), Ok(()));
    let mut down = fixture_status();
    down.client.database_status.available = Some(false);
    assert_eq!(
        available(&with_db(down)).unwrap_err().to_string(),
        "the database is unavailable"
    );
    let mut unhealthy = fixture_status();
    unhealthy.client.database_status.healthy = Some(false);
    unhealthy.cluster.data.state.name = Some("healing".into());
    let snapshot = with_db(unhealthy);
    assert_eq!(available(&snapshot), Ok(()));
    assert_eq!(
        available_and_healthy(&snapshot).unwrap_err().to_string(),
        "the database is not healthy (data distribution: healing)"
    );
}

#[test]
fn recent_recoveries_block_until_the_wait_is_over() {
    // The capture recovered 76.8 s before it was taken.
    let snapshot = with_db(fixture_status());
    assert_eq!(
        recovered_for(&snapshot, MINIMUM_SECONDS_SINCE_RECOVERY)
            .unwrap_err()
            .to_string(),
        "the last recovery was 77s ago; 43s left of the 120s wait"
    );
    assert_eq!(recovered_for(&snapshot, 60.0), Ok(()));
    let mut unknown = fixture_status();
    unknown.cluster.recovery_state.seconds_since_last_recovered = None;
    assert_eq!(recovered_for(&with_db(unknown), 120.0), Ok(()));
}

#[test]
fn bounces_wait_for_the_youngest_process() {
    let refusal = minimum_uptime(&with_db(fixture_status())).unwrap_err();
    assert_eq!(
        refusal.to_string(),
        "process 10.1.18.254:4501 of storage-1 has been up 85s; 515s left of minimumUptimeSecondsForBounce (600s)"
    );
    let patient = Fixture::new("{version: 7.1.57, minimumUptimeSecondsForBounce: 60}")
        .connection_string("a:b@10.0.0.1:4501")
        .database(fixture_status())
        .build();
    assert_eq!(minimum_uptime(&patient), Ok(()));
    // Excluded processes and uptimes of exactly 0 do not count.
    let mut db = reporting(&["log-1", "log-2"]);
    if let Some(p) = db.cluster.processes.get_mut("p0") {
        p.uptime_seconds = Some(0.0);
    }
    if let Some(p) = db.cluster.processes.get_mut("p1") {
        p.uptime_seconds = Some(5.0);
        p.excluded = true;
    }
    assert_eq!(minimum_uptime(&with_db(db)), Ok(()));
}

fn missing_since(id: &str, since: i64) -> fdb_shared::api::cluster::ProcessGroupStatus {
    let mut group = group(id);
    group.process_group_conditions.push(ProcessGroupCondition {
        condition_type: ProcessGroupConditionType::MissingProcesses,
        timestamp: since,
    });
    group
}

#[test]
fn exclusions_wait_for_recently_missing_groups_of_the_class() {
    let mut removed = missing_since("storage-3", 9_990);
    removed.removal_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::UNIX_EPOCH,
    ));
    let snapshot = Fixture::new(DOUBLE)
        .groups([
            missing_since("storage-1", 9_600),
            missing_since("storage-2", 9_900),
            missing_since("log-1", 9_950),
            removed,
        ])
        .at(10_000)
        .build();
    assert_eq!(
        no_recently_missing(&snapshot, ProcessClass::Storage)
            .unwrap_err()
            .to_string(),
        "storage process group storage-2 has been missing processes for 100s; 200s left of the 300s wait"
    );
    assert!(no_recently_missing(&snapshot, ProcessClass::Log).is_err());
    assert_eq!(
        no_recently_missing(&snapshot, ProcessClass::Stateless),
        Ok(())
    );
    let later = Fixture::new(DOUBLE)
        .groups([missing_since("storage-1", 9_600)])
        .at(10_000)
        .build();
    assert_eq!(no_recently_missing(&later, ProcessClass::Storage), Ok(()));
}

/// Three storage groups in zones n1..n3, pods running, processes reporting.
fn three_zones(spec: &str, running: &[bool; 3]) -> Fixture {
    let ids = ["storage-1", "storage-2", "storage-3"];
    let pods: Vec<_> = ids
        .iter()
        .zip(running)
        .enumerate()
        .filter(|(_, (_, up))| **up)
        .map(|(i, (id, _))| {
            pod(
                &format!("sample-{id}"),
                id,
                &format!("n{}", i + 1),
                &format!("10.0.0.{}", i + 1),
            )
        })
        .collect();
    Fixture::new(spec)
        .groups(ids.map(group))
        .pods(pods)
        .connection_string("a:b@10.0.0.1:4501")
        .database(reporting(&ids))
}

fn zones(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|z| (*z).to_owned()).collect()
}

#[test]
fn the_fault_tolerance_budget_counts_zones_already_down() {
    let healthy = three_zones(DOUBLE, &[true, true, true]).build();
    let budget = zone_budget(&healthy);
    assert_eq!((budget.tolerated, budget.remaining()), (1, 1));
    assert_eq!(may_take_down(&healthy, &zones(&["n1"])), Ok(()));
    assert!(may_take_down(&healthy, &zones(&["n1", "n2"])).is_err());

    // storage-2's pod is gone: its zone (recorded in the status) is down.
    let degraded = three_zones(DOUBLE, &[true, false, true])
        .status(|s| s.process_groups[1].fault_domain = Some("n2".into()))
        .build();
    assert_eq!(
        zone_budget(&degraded).down,
        [ZoneDown {
            zone: "n2".into(),
            groups: vec!["storage-2".into()]
        }]
    );
    assert_eq!(
        may_take_down(&degraded, &zones(&["n2"])),
        Ok(()),
        "more of a zone already down costs nothing"
    );
    assert_eq!(
        may_take_down(&degraded, &zones(&["n1"]))
            .unwrap_err()
            .to_string(),
        "taking down zones n1 exceeds the fault tolerance: zones down: n2 (storage-2); 0 more may go down"
    );

    let capped = three_zones(
        "{version: 7.1.57, maxZonesWithUnavailablePods: 0}",
        &[true, true, true],
    )
    .build();
    assert!(may_take_down(&capped, &zones(&["n1"])).is_err());
    let triple = three_zones(
        "{version: 7.1.57, databaseConfiguration: {redundancy_mode: triple}}",
        &[true, true, true],
    )
    .build();
    assert_eq!(may_take_down(&triple, &zones(&["n1", "n3"])), Ok(()));
}

/// Issue 37: storage-1's pod deleted for an update and not back, storage-2 restarting
/// (its process not reporting): two zones down in double redundancy. More of zone n2
/// (storage-2's pod) is not free: it may hold the last live replica of some shard.
#[test]
fn zones_already_down_beyond_the_tolerance_cost_more_of_them_too() {
    let beyond = three_zones(DOUBLE, &[false, true, true])
        .status(|s| s.process_groups[0].fault_domain = Some("n1".into()))
        .database(reporting(&["storage-1", "storage-3"]))
        .build();
    let down: Vec<String> = zone_budget(&beyond)
        .down
        .into_iter()
        .map(|z| z.zone)
        .collect();
    assert_eq!(down, ["n1", "n2"]);
    assert_eq!(
        may_take_down(&beyond, &zones(&["n2"]))
            .unwrap_err()
            .to_string(),
        "taking down zones n2 exceeds the fault tolerance: zones down: n1 (storage-1); n2 (storage-2); 0 more may go down"
    );
    assert!(may_take_down(&beyond, &zones(&["n1"])).is_err());
}

#[test]
fn single_redundancy_takes_down_one_zone_at_a_time() {
    const SINGLE: &str = "{version: 7.1.57, databaseConfiguration: {redundancy_mode: single}}";
    let mut db = reporting(&["storage-1", "storage-2", "storage-3"]);
    let tolerance = &mut db.cluster.fault_tolerance;
    tolerance.max_zone_failures_without_losing_data = Some(0);
    tolerance.max_zone_failures_without_losing_availability = Some(0);
    let healthy = three_zones(SINGLE, &[true, true, true])
        .database(db.clone())
        .build();
    let budget = zone_budget(&healthy);
    assert_eq!((budget.tolerated, budget.remaining()), (0, 1));
    assert_eq!(may_take_down(&healthy, &zones(&["n1"])), Ok(()));
    assert!(may_take_down(&healthy, &zones(&["n1", "n2"])).is_err());
    // A zone still down: the next waits.
    let degraded = three_zones(SINGLE, &[true, false, true])
        .database(db.clone())
        .build();
    assert!(may_take_down(&degraded, &zones(&["n1"])).is_err());
    // Data still moving back: the next waits for every shard's replica.
    db.client.database_status.healthy = Some(false);
    db.cluster.data.state.name = Some("missing_data".into());
    let unhealthy = three_zones(SINGLE, &[true, true, true])
        .database(db.clone())
        .build();
    assert!(may_take_down(&unhealthy, &zones(&["n1"])).is_err());
    let capped = three_zones(
        "{version: 7.1.57, databaseConfiguration: {redundancy_mode: single}, maxZonesWithUnavailablePods: 0}",
        &[true, true, true],
    )
    .build();
    assert!(may_take_down(&capped, &zones(&["n1"])).is_err());
}

#[test]
fn the_database_reported_tolerance_caps_the_budget() {
    let mut db = reporting(&["storage-1", "storage-2", "storage-3"]);
    db.cluster
        .fault_tolerance
        .max_zone_failures_without_losing_data = Some(0);
    let snapshot = three_zones(DOUBLE, &[true, true, true])
        .database(db)
        .build();
    assert_eq!(zone_budget(&snapshot).reported, Some(0));
    assert!(may_take_down(&snapshot, &zones(&["n1"])).is_err());
}

#[test]
fn a_missing_process_or_unknown_zone_counts_as_down() {
    // storage-3 runs but does not report; its zone comes from its pod.
    let snapshot = three_zones(DOUBLE, &[true, true, true])
        .database(reporting(&["storage-1", "storage-2"]))
        .build();
    let down = zone_budget(&snapshot).down;
    assert_eq!(down.len(), 1);
    assert_eq!(down[0].zone, "n3");
    // Without pod nor recorded zone, the group is its own zone.
    let unknown = three_zones(DOUBLE, &[false, true, true]).build();
    assert_eq!(
        zone_budget(&unknown).down[0].zone,
        "storage-1 (zone unknown)"
    );
    // A fully excluded group is not down: its data has moved.
    let excluded = three_zones(DOUBLE, &[false, true, true])
        .status(|s| {
            s.process_groups[0].exclusion_timestamp = Some(
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
            );
        })
        .build();
    assert!(zone_budget(&excluded).down.is_empty());
}

#[test]
fn another_zone_under_maintenance_blocks() {
    let mut db = fixture_status();
    db.cluster.maintenance_zone = Some("n1".into());
    db.cluster.maintenance_seconds_remaining = Some(100.0);
    let snapshot = with_db(db);
    assert_eq!(maintenance(&snapshot, "n1"), Ok(()));
    assert_eq!(
        maintenance(&snapshot, "n2").unwrap_err().to_string(),
        "zone n1 is under maintenance (100s left)"
    );
    assert_eq!(maintenance(&with_db(fixture_status()), "n2"), Ok(()));
    assert_eq!(
        maintenance(&Fixture::new(DOUBLE).build(), "n2"),
        Err(Refusal::NoDatabase)
    );
}

#[test]
fn locks_are_needed_only_when_in_use() {
    let plain = Fixture::new(DOUBLE).build();
    assert_eq!(
        lock_needed(&plain, LockedAction::Bounce),
        LockNeed::NotNeeded
    );
    assert_eq!(lock(&plain, LockedAction::Bounce, false), Ok(()));
    let zoned =
        Fixture::new("{version: 7.1.57, processGroupIDPrefix: dc1, faultDomain: {zoneCount: 3}}")
            .build();
    assert_eq!(
        lock_needed(&zoned, LockedAction::Exclude),
        LockNeed::Needed {
            lock_id: "dc1".into()
        }
    );
    assert_eq!(lock(&zoned, LockedAction::Exclude, true), Ok(()));
    assert_eq!(
        lock(&zoned, LockedAction::Exclude, false)
            .unwrap_err()
            .to_string(),
        "excluding processes needs the operator lock \"dc1\", which is not held"
    );
    let disabled = Fixture::new(
        "{version: 7.1.57, faultDomain: {zoneCount: 3}, lockOptions: {disableLocks: true}}",
    )
    .build();
    assert_eq!(
        lock_needed(&disabled, LockedAction::Exclude),
        LockNeed::NotNeeded
    );
}

#[test]
fn a_bounce_is_the_only_disruption_of_its_pass() {
    assert_eq!(sole_disruption(&[]), Ok(()));
    let refusal = sole_disruption(&["sample-storage-2".to_owned()]).unwrap_err();
    assert_eq!(
        refusal,
        Refusal::PodDeletedThisPass {
            pod: "sample-storage-2".into()
        }
    );
    assert!(
        refusal.to_string().contains("sample-storage-2"),
        "{refusal}"
    );
}

/// log-1 and storage-1 reporting (10.0.0.1 and 10.0.0.2), with running pods (the pod
/// named `terminating` being deleted); the coordinator is storage-1's process.
fn pacing_fixture(db: DatabaseStatus, terminating: Option<&str>) -> Fixture {
    let mut pods = vec![
        pod("s-log-1", "log-1", "node-1", "10.0.0.1"),
        pod("s-storage-1", "storage-1", "node-2", "10.0.0.2"),
    ];
    for pod in &mut pods {
        if pod.metadata.name.as_deref() == terminating {
            pod.metadata.deletion_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    jiff::Timestamp::from_second(9_990).unwrap(),
                ));
        }
    }
    Fixture::new(DOUBLE)
        .groups([group("log-1"), group("storage-1")])
        .pods(pods)
        .connection_string("a:b@10.0.0.2:4501")
        .database(db)
}

#[test]
fn what_causes_a_recovery_is_a_transaction_process_or_a_coordinator() {
    let snapshot = pacing_fixture(reporting(&["log-1", "storage-1"]), None).build();
    let log = snapshot.group("log-1").unwrap();
    assert_eq!(
        causes_recovery(&snapshot, &log).as_deref(),
        Some("log process group log-1")
    );
    let storage = snapshot.group("storage-1").unwrap();
    assert_eq!(
        causes_recovery(&snapshot, &storage).as_deref(),
        Some("coordinator 10.0.0.2:4501")
    );
    // Once excluded, a transaction process holds no role: taking it down is no recovery.
    let mut excluded = reporting(&["log-1", "storage-1"]);
    excluded.cluster.processes.get_mut("p0").unwrap().excluded = true;
    let snapshot = pacing_fixture(excluded, None)
        .connection_string("a:b@10.0.0.9:4501")
        .build();
    assert_eq!(
        causes_recovery(&snapshot, &snapshot.group("log-1").unwrap()),
        None
    );
    assert_eq!(
        causes_recovery(&snapshot, &snapshot.group("storage-1").unwrap()),
        None
    );
}

#[test]
fn pacing_waits_for_this_pass_the_last_recovery_and_recoveries_still_coming() {
    let quiet = pacing_fixture(reporting(&["log-1", "storage-1"]), None).build();
    assert_eq!(paced(&quiet, None, false), Ok(()));
    assert_eq!(
        paced(&quiet, Some("changed the coordinators"), false)
            .unwrap_err()
            .to_string(),
        "this pass already caused a recovery (changed the coordinators); the next recovery-causing action waits for it"
    );
    let mut down = reporting(&["log-1", "storage-1"]);
    down.client.database_status.available = Some(false);
    assert_eq!(
        paced(&pacing_fixture(down, None).build(), None, false),
        Err(Refusal::Unavailable)
    );
    let mut recent = reporting(&["log-1", "storage-1"]);
    recent.cluster.recovery_state.seconds_since_last_recovered = Some(30.0);
    assert_eq!(
        paced(&pacing_fixture(recent, None).build(), None, false)
            .unwrap_err()
            .to_string(),
        "the last recovery was 30s ago; 90s left of the 120s wait"
    );
    // A terminating pod of a transaction process: its recovery is still to come.
    let terminating = |name| {
        pacing_fixture(reporting(&["log-1", "storage-1"]), Some(name))
            .connection_string("a:b@10.0.0.9:4501")
            .build()
    };
    assert_eq!(
        paced(&terminating("s-log-1"), None, false)
            .unwrap_err()
            .to_string(),
        "pod s-log-1 is terminating while it hosts log process group log-1; the recovery that causes comes first"
    );
    // A terminating storage pod hosting no coordinator causes none.
    assert_eq!(paced(&terminating("s-storage-1"), None, false), Ok(()));
    // Ending mixed versions (processes already on an upgrade's target): neither the
    // settling of the last recovery nor availability holds it; this pass's own
    // recovery still does.
    let mut recent = reporting(&["log-1", "storage-1"]);
    recent.cluster.recovery_state.seconds_since_last_recovered = Some(30.0);
    recent.client.database_status.available = Some(false);
    let mixed = pacing_fixture(recent, None).build();
    assert_eq!(paced(&mixed, None, true), Ok(()));
    assert!(paced(&mixed, Some("killed"), true).is_err());
}
