//! Tests of the invariant checks, from hand-made observations.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::FdbVersion;
use fdb_shared::api::{DatabaseConfiguration, ProcessClass, RedundancyMode};

use super::*;
use fdb_operator::fdb::ClientInfo;

fn object(name: &str, group: &str, class: ProcessClass, ip: &str) -> TrackedObject {
    TrackedObject {
        name: name.to_owned(),
        uid: format!("uid-{name}"),
        group: group.to_owned(),
        class,
        terminating: false,
        addresses: vec![ip.to_owned()],
    }
}

pub(super) fn invariants(monitor: &InvariantMonitor) -> Vec<&str> {
    monitor
        .violations()
        .iter()
        .map(|v| v.invariant.as_str())
        .collect()
}

fn window<'a>(
    pods: &'a [TrackedObject],
    pvcs: &'a [TrackedObject],
    risk: &'a dyn Fn(&str) -> Option<String>,
    without: &'a BTreeSet<String>,
    coordinators: &'a [String],
) -> ActionWindow<'a> {
    ActionWindow {
        time: 10,
        pass: 1,
        by: "operator",
        deleted_pods: pods,
        deleted_pvcs: pvcs,
        removal_risk: risk,
        removed_without_exclusion: without,
        coordinators,
    }
}

#[test]
fn deleting_a_pvc_that_holds_data_is_a_data_loss_risk_unless_the_user_asked() {
    let pvc = [object(
        "sample-storage-2-data",
        "storage-2",
        ProcessClass::Storage,
        "",
    )];
    let risk =
        |group: &str| (group == "storage-2").then(|| "it holds 12 shard replicas".to_owned());
    let coordinators = vec!["127.0.0.11:4501".to_owned()];
    let mut monitor = InvariantMonitor::new();
    monitor.check_deletions(&window(&[], &pvc, &risk, &BTreeSet::new(), &coordinators));
    assert_eq!(invariants(&monitor), [DATA_LOSS_RISK]);
    assert!(monitor.violations()[0].detail.contains("12 shard replicas"));

    let without: BTreeSet<String> = ["storage-2".to_owned()].into();
    let mut monitor = InvariantMonitor::new();
    monitor.check_deletions(&window(&[], &pvc, &risk, &without, &coordinators));
    assert!(monitor.violations().is_empty());

    let drained = |_: &str| None;
    let mut monitor = InvariantMonitor::new();
    monitor.check_deletions(&window(
        &[],
        &pvc,
        &drained,
        &BTreeSet::new(),
        &coordinators,
    ));
    assert!(monitor.violations().is_empty(), "a drained PVC may go");
}

#[test]
fn deleting_a_pod_is_no_data_loss_risk_but_a_coordinators_pod_is_reported() {
    let pods = [
        object(
            "sample-storage-1",
            "storage-1",
            ProcessClass::Storage,
            "127.0.0.21",
        ),
        object("sample-log-1", "log-1", ProcessClass::Log, "127.0.0.11"),
    ];
    let risk = |_: &str| Some("not excluded".to_owned());
    let coordinators = vec!["127.0.0.11:4501".to_owned()];
    let mut monitor = InvariantMonitor::new();
    monitor.check_deletions(&window(&pods, &[], &risk, &BTreeSet::new(), &coordinators));
    assert_eq!(invariants(&monitor), [COORDINATOR_DELETED]);
    assert!(monitor.violations()[0].detail.contains("sample-log-1"));
}

fn zones(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

#[test]
fn an_action_that_adds_a_zone_beyond_the_tolerance_is_reported_once_per_episode() {
    let none = ServiceState {
        coordinators: 3,
        ..ServiceState::default()
    };
    let one = ServiceState {
        storage_zones_down: zones(&["zone-1"]),
        ..none.clone()
    };
    let two = ServiceState {
        storage_zones_down: zones(&["zone-1", "zone-2"]),
        ..none.clone()
    };
    let mut monitor = InvariantMonitor::new();
    monitor.check_fault_tolerance(1, 1, &none, &one, 1);
    assert!(monitor.violations().is_empty(), "one zone is tolerated");
    monitor.check_fault_tolerance(2, 2, &one, &two, 1);
    assert_eq!(invariants(&monitor), [FAULT_TOLERANCE_EXCEEDED]);
    assert!(monitor.violations()[0].detail.contains("zone-2"));
    monitor.check_fault_tolerance(3, 3, &two, &two, 1);
    assert_eq!(monitor.violations().len(), 1, "same episode");
    monitor.check_fault_tolerance(4, 4, &two, &none, 1);
    monitor.check_fault_tolerance(5, 5, &one, &two, 1);
    assert_eq!(monitor.violations().len(), 2, "a new episode");
}

#[test]
fn a_fault_already_counting_against_the_tolerance_makes_a_second_zone_too_many() {
    // zone-1 is down by a fault (in `before`); the operator takes zone-3's logs down.
    let before = ServiceState {
        storage_zones_down: zones(&["zone-1"]),
        coordinators: 3,
        ..ServiceState::default()
    };
    let after = ServiceState {
        log_zones_down: zones(&["zone-3"]),
        ..before.clone()
    };
    let mut monitor = InvariantMonitor::new();
    monitor.check_fault_tolerance(1, 1, &before, &after, 1);
    assert!(
        monitor.violations().is_empty(),
        "storage and logs are counted separately"
    );
    let after = ServiceState {
        storage_zones_down: zones(&["zone-1", "zone-3"]),
        ..before.clone()
    };
    monitor.check_fault_tolerance(1, 1, &before, &after, 1);
    assert_eq!(invariants(&monitor), [FAULT_TOLERANCE_EXCEEDED]);
}

#[test]
fn losing_the_coordinator_majority_is_exceeding_the_tolerance() {
    let before = ServiceState {
        coordinators: 3,
        coordinators_down: 1,
        ..ServiceState::default()
    };
    let after = ServiceState {
        coordinators_down: 2,
        ..before.clone()
    };
    let mut monitor = InvariantMonitor::new();
    monitor.check_fault_tolerance(1, 1, &before, &before, 1);
    assert!(monitor.violations().is_empty());
    monitor.check_fault_tolerance(1, 1, &before, &after, 1);
    assert_eq!(invariants(&monitor), [FAULT_TOLERANCE_EXCEEDED]);
}

#[test]
fn any_new_lost_shard_is_data_lost() {
    let mut monitor = InvariantMonitor::new();
    monitor.check_lost_shards(1, 1, 0, 0, "operator");
    assert!(monitor.violations().is_empty());
    monitor.check_lost_shards(1, 1, 0, 3, "user");
    assert_eq!(invariants(&monitor), [DATA_LOST]);
    assert!(monitor.violations()[0].detail.contains("3 shard(s)"));
}

fn version(text: &str) -> FdbVersion {
    text.parse().unwrap()
}

#[test]
fn incompatible_versions_for_more_than_one_pass_are_a_mixed_version_bounce() {
    let mut monitor = InvariantMonitor::new();
    let patch = [version("7.1.57"), version("7.1.25")];
    monitor.check_versions(1, 1, &patch);
    monitor.check_versions(1, 2, &patch);
    assert!(
        monitor.violations().is_empty(),
        "patch versions are compatible"
    );
    let mixed = [version("7.1.57"), version("7.3.43")];
    monitor.check_versions(1, 3, &mixed);
    assert!(monitor.violations().is_empty(), "one pass is allowed");
    monitor.check_versions(1, 4, &mixed);
    monitor.check_versions(1, 5, &mixed);
    assert_eq!(invariants(&monitor), [MIXED_VERSION_BOUNCE]);
}

#[test]
fn reconciled_while_unavailable_or_diverged_is_reported() {
    let mut monitor = InvariantMonitor::new();
    monitor.check_reconciled(5, 2, true, &[]);
    assert!(monitor.violations().is_empty());
    monitor.check_reconciled(5, 2, false, &[]);
    assert_eq!(invariants(&monitor), [UNAVAILABLE_AT_REST]);
    monitor.check_reconciled(5, 3, true, &["3 live storage groups".to_owned()]);
    monitor.check_reconciled(5, 4, true, &["3 live storage groups".to_owned()]);
    assert_eq!(
        invariants(&monitor),
        [UNAVAILABLE_AT_REST, RECONCILED_BUT_DIVERGED]
    );
}

#[test]
fn an_upgrade_past_a_connected_clients_protocol_is_reported_unless_ignored() {
    let clients = vec![ClientInfo {
        address: "10.9.0.1:4000".into(),
        version: version("7.1.57"),
        protocol_version: None,
        log_group: "app".into(),
    }];
    let none = BTreeSet::new();
    let view = ClientView {
        clients: &clients,
        ignored_log_groups: &none,
        checks_disabled: false,
    };
    let mut monitor = InvariantMonitor::new();
    monitor.check_client_compatibility(1, 1, Some(version("7.1.57")), &view);
    monitor.check_client_compatibility(2, 2, Some(version("7.1.63")), &view);
    assert!(
        monitor.violations().is_empty(),
        "a patch upgrade is compatible"
    );
    monitor.check_client_compatibility(3, 3, Some(version("7.3.43")), &view);
    assert_eq!(invariants(&monitor), [CLIENT_INCOMPATIBLE_UPGRADE]);
    assert!(monitor.violations()[0].detail.contains("10.9.0.1:4000"));

    let ignored: BTreeSet<String> = ["app".to_owned()].into();
    let view = ClientView {
        clients: &clients,
        ignored_log_groups: &ignored,
        checks_disabled: false,
    };
    let mut monitor = InvariantMonitor::new();
    monitor.check_client_compatibility(1, 1, Some(version("7.1.57")), &view);
    monitor.check_client_compatibility(3, 3, Some(version("7.3.43")), &view);
    assert!(monitor.violations().is_empty(), "its log group is ignored");
}

fn desired() -> DesiredWorld {
    DesiredWorld {
        counts: [(ProcessClass::Storage, 2), (ProcessClass::Log, 1)].into(),
        version: version("7.1.57"),
        images: [("foundationdb".to_owned(), "fdb:7.1.57".to_owned())].into(),
        configuration: DatabaseConfiguration {
            redundancy_mode: Some(RedundancyMode::Double),
            ..DatabaseConfiguration::default()
        },
        marked_for_removal: BTreeSet::new(),
        ever_marked: ["storage-2".to_owned()].into(),
    }
}

fn pod(group: &str, class: ProcessClass, image: &str) -> LivePod {
    LivePod {
        name: format!("sample-{group}"),
        group: group.to_owned(),
        class,
        images: [("foundationdb".to_owned(), image.to_owned())].into(),
        claim: Some(format!("sample-{group}-data")),
    }
}

fn actual() -> ActualWorld {
    ActualWorld {
        pods: vec![
            pod("storage-1", ProcessClass::Storage, "fdb:7.1.57"),
            pod("storage-2", ProcessClass::Storage, "fdb:7.1.57"),
            pod("log-1", ProcessClass::Log, "fdb:7.1.57"),
        ],
        pvcs: [
            "sample-storage-1-data",
            "sample-storage-2-data",
            "sample-log-1-data",
        ]
        .map(str::to_owned)
        .into(),
        process_versions: BTreeMap::from([("127.0.0.1:4501".to_owned(), version("7.1.57"))]),
        configuration: Some(DatabaseConfiguration {
            redundancy_mode: Some(RedundancyMode::Double),
            ..DatabaseConfiguration::default()
        }),
        excluded_groups: BTreeSet::new(),
    }
}

#[test]
fn a_world_that_matches_the_spec_has_no_divergence() {
    assert_eq!(divergences(&desired(), &actual()), Vec::<String>::new());
}

#[test]
fn every_kind_of_divergence_is_named() {
    let mut world = actual();
    world
        .pods
        .push(pod("storage-3", ProcessClass::Storage, "fdb:7.1.57"));
    world.pods[0]
        .images
        .insert("foundationdb".into(), "fdb:7.3.43".into());
    world.pvcs.remove("sample-log-1-data");
    world
        .process_versions
        .insert("127.0.0.2:4501".into(), version("7.3.43"));
    world.configuration = Some(DatabaseConfiguration {
        redundancy_mode: Some(RedundancyMode::Triple),
        ..DatabaseConfiguration::default()
    });
    world.excluded_groups.insert("storage-2".into());
    let found = divergences(&desired(), &world).join("\n");
    for expected in [
        "3 live storage process groups with a pod, the spec asks for 2",
        "pods without their PVC: sample-log-1",
        "1 processes run 7.3.43 instead of 7.1.57",
        "foundationdb container does not run fdb:7.1.57: sample-storage-1",
        "the database configuration differs",
        "exclusions of groups no longer marked for removal: storage-2",
    ] {
        assert!(
            found.contains(expected),
            "{expected:?} missing in:\n{found}"
        );
    }

    let mut spec = desired();
    spec.marked_for_removal.insert("storage-3".into());
    spec.marked_for_removal.insert("storage-2".into());
    spec.counts.insert(ProcessClass::Storage, 1);
    let mut world = actual();
    world
        .pods
        .push(pod("storage-3", ProcessClass::Storage, "fdb:7.1.57"));
    world.excluded_groups.insert("storage-2".into());
    assert_eq!(
        divergences(&spec, &world),
        Vec::<String>::new(),
        "groups marked for removal may linger, excluded"
    );

    let mut world = actual();
    world.excluded_groups.insert("storage-1".into());
    assert_eq!(
        divergences(&desired(), &world),
        Vec::<String>::new(),
        "an exclusion the operator never asked for is not its leftover"
    );
}

#[test]
fn an_exclusion_of_no_group_being_removed_is_left_behind() {
    let set =
        |items: &[&str]| -> BTreeSet<String> { items.iter().map(|s| (*s).to_owned()).collect() };
    let removing = [GroupBeingRemoved {
        id: "storage-4".into(),
        ips: ["10.0.0.4".parse().unwrap()].into_iter().collect(),
    }];
    let by_operator = set(&[
        "locality_instance_id:storage-4",
        "10.0.0.4",
        "locality_instance_id:storage-3",
        "10.0.0.3",
        "10.0.0.9:4501",
    ]);
    // Exclusions of the group being removed belong; a user's own exclusion is not the
    // operator's to include.
    let now = set(&["locality_instance_id:storage-4", "10.0.0.4", "10.0.0.7"]);
    assert!(leftover_exclusions(&now, &by_operator, &removing).is_empty());
    let now = set(&[
        "locality_instance_id:storage-4",
        "locality_instance_id:storage-3",
        "10.0.0.3",
        "10.0.0.9:4501",
    ]);
    let leftovers = leftover_exclusions(&now, &by_operator, &removing);
    assert_eq!(
        leftovers,
        [
            "10.0.0.3",
            "10.0.0.9:4501",
            "locality_instance_id:storage-3"
        ]
    );
    let mut monitor = InvariantMonitor::new();
    monitor.check_leftover_exclusions(10, 3, &leftovers);
    monitor.check_leftover_exclusions(20, 4, &leftovers);
    assert_eq!(invariants(&monitor), [EXCLUSION_LEFT_BEHIND]);
    assert!(monitor.violations()[0].detail.contains("10.0.0.3"));
    monitor.check_leftover_exclusions(30, 5, &[]);
    assert_eq!(invariants(&monitor), [EXCLUSION_LEFT_BEHIND]);
}

#[test]
fn three_data_hall_tolerates_one_hall_and_one_more_zone() {
    // Nodes n1..n6 in halls a, b, c (two each); tolerance 2 as for triple.
    let zone_halls: std::collections::BTreeMap<String, String> = [
        ("n1", "a"),
        ("n2", "a"),
        ("n3", "b"),
        ("n4", "b"),
        ("n5", "c"),
        ("n6", "c"),
    ]
    .into_iter()
    .map(|(zone, hall)| (zone.to_owned(), hall.to_owned()))
    .collect();
    let state = |down: &[&str]| ServiceState {
        storage_zones_down: zones(down),
        coordinators: 9,
        zone_halls: zone_halls.clone(),
        ..ServiceState::default()
    };
    let mut monitor = InvariantMonitor::new();
    // Hall a down (a fault), then the operator takes one zone of hall b: within bounds.
    monitor.check_fault_tolerance(1, 1, &state(&["n1", "n2"]), &state(&["n1", "n2", "n3"]), 2);
    assert!(monitor.violations().is_empty(), "one hall and one zone");
    // A zone of hall c as well: three halls touched beyond the one lost.
    monitor.check_fault_tolerance(
        2,
        2,
        &state(&["n1", "n2", "n3"]),
        &state(&["n1", "n2", "n3", "n5"]),
        2,
    );
    assert_eq!(invariants(&monitor), [FAULT_TOLERANCE_EXCEEDED]);
    assert!(
        monitor.violations()[0]
            .detail
            .contains("one data hall and 1 more")
    );
    // Without halls, three zones are beyond a tolerance of 2.
    let mut plain = InvariantMonitor::new();
    let without = |down: &[&str]| ServiceState {
        zone_halls: std::collections::BTreeMap::new(),
        ..state(down)
    };
    plain.check_fault_tolerance(
        1,
        1,
        &without(&["n1", "n2"]),
        &without(&["n1", "n2", "n3"]),
        2,
    );
    assert_eq!(invariants(&plain), [FAULT_TOLERANCE_EXCEEDED]);
}
