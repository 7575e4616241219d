//! Tests of UpdateDatabaseConfiguration's decisions.

use super::*;
use crate::controller::fixtures::{Fixture, group};
use fdb_shared::api::RedundancyMode;
use fdb_shared::status_json::DatabaseStatus;

/// A configured (or not) cluster with groups log-1 and storage-1 and `db`.
fn snapshot(configured: bool, db: DatabaseStatus) -> ClusterSnapshot {
    Fixture::new("version: 7.1.57")
        .groups([group("log-1"), group("storage-1")])
        .connection_string("sample:abc@10.0.0.1:4501")
        .status(|s| s.configured = configured)
        .database(db)
        .build()
}

fn desired() -> serde_json::Value {
    let spec = crate::controller::fixtures::cluster("version: 7.1.57").spec;
    serde_json::to_value(desired_database_configuration(&spec)).unwrap()
}

fn db(
    instances: &[&str],
    configuration: Option<serde_json::Value>,
    available: bool,
) -> DatabaseStatus {
    let processes: serde_json::Map<String, serde_json::Value> = instances
        .iter()
        .map(|id| {
            (
                (*id).to_owned(),
                serde_json::json!({"locality": {"instance_id": id}}),
            )
        })
        .collect();
    let mut cluster = serde_json::json!({"processes": processes});
    if let Some(configuration) = configuration {
        cluster["configuration"] = configuration;
    }
    serde_json::from_value(serde_json::json!({
        "client": {"database_status": {"available": available, "healthy": available}},
        "cluster": cluster
    }))
    .unwrap()
}

#[test]
fn configure_new_waits_for_every_group() {
    let action = decide(&snapshot(false, db(&["log-1"], None, false)));
    assert_eq!(
        action,
        ConfigurationAction::Wait(
            "waiting for 1 of 2 process groups to report to the database before configuring it"
                .to_owned()
        )
    );
    match decide(&snapshot(false, db(&["log-1", "storage-1"], None, false))) {
        ConfigurationAction::ConfigureNew(desired) => {
            assert_eq!(desired.redundancy_mode, Some(RedundancyMode::Double));
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn an_existing_configuration_is_recorded_then_changed_only_when_safe() {
    let configured = serde_json::json!({"redundancy_mode": "single", "storage_engine": "ssd-2",
        "logs": 3, "proxies": 3, "resolvers": 1, "usable_regions": 1});
    assert_eq!(
        decide(&snapshot(false, db(&[], Some(configured.clone()), true))),
        ConfigurationAction::MarkConfigured
    );
    assert!(matches!(
        decide(&snapshot(true, db(&[], Some(configured.clone()), false))),
        ConfigurationAction::Wait(_)
    ));
    assert!(matches!(
        decide(&snapshot(true, db(&[], Some(configured.clone()), true))),
        ConfigurationAction::Change(_)
    ));
    let mut recovering = db(&[], Some(configured), true);
    recovering
        .cluster
        .recovery_state
        .seconds_since_last_recovered = Some(30.0);
    match decide(&snapshot(true, recovering)) {
        ConfigurationAction::Wait(reason) => assert!(reason.contains("30s ago"), "{reason}"),
        other => panic!("a change right after a recovery: {other:?}"),
    }
    assert_eq!(
        decide(&snapshot(true, db(&[], Some(desired()), true))),
        ConfigurationAction::None
    );
}

#[test]
fn a_second_region_joins_at_a_negative_priority_before_usable_regions_rises() {
    let spec = "version: 7.1.57\ndataCenter: dc1\ndatabaseConfiguration: {usable_regions: 2, regions: [{datacenters: [{id: dc1, priority: 1}]}, {datacenters: [{id: dc2, priority: 0}]}]}";
    let snapshot = |live: serde_json::Value| {
        Fixture::new(spec)
            .groups([group("log-1"), group("storage-1")])
            .connection_string("sample:abc@10.0.0.1:4501")
            .status(|s| s.configured = true)
            .database(db(&[], Some(live), true))
            .build()
    };
    let stage_1 = serde_json::json!({"redundancy_mode": "double", "storage_engine": "ssd-2",
        "logs": 3, "proxies": 3, "resolvers": 1, "usable_regions": 1,
        "regions": [{"datacenters": [{"id": "dc1", "priority": 1}]}]});
    let ConfigurationAction::Change(next) = decide(&snapshot(stage_1.clone())) else {
        panic!("a change is due");
    };
    assert_eq!(next.usable_regions, Some(1));
    assert_eq!(next.regions.len(), 2);
    assert_eq!(next.regions[1].datacenters[0].priority, Some(-1));
    // With both regions known, usable_regions rises alone.
    let mut joined = stage_1;
    joined["regions"] = serde_json::to_value(&next.regions).unwrap();
    let ConfigurationAction::Change(next) = decide(&snapshot(joined.clone())) else {
        panic!("a change is due");
    };
    assert_eq!(next.usable_regions, Some(2));
    assert_eq!(
        serde_json::to_value(&next.regions).unwrap(),
        joined["regions"]
    );
}

mod hall_tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, group};

    /// A database of four processes whose `data_hall` localities are `halls` ("" for
    /// none), live configuration `live`.
    fn db(halls: [&str; 4], live: &str) -> DatabaseStatus {
        let processes: serde_json::Map<String, serde_json::Value> = halls
        .iter()
        .enumerate()
        .map(|(i, hall)| {
            let mut locality = serde_json::json!({"instance_id": format!("log-{}", i + 1), "zoneid": format!("z{i}")});
            if !hall.is_empty() {
                locality["data_hall"] = serde_json::json!(hall);
            }
            (format!("p{i}"), serde_json::json!({"locality": locality, "class_type": "log"}))
        })
        .collect();
        serde_json::from_value(serde_json::json!({
        "client": {"database_status": {"available": true, "healthy": true}},
        "cluster": {"processes": processes, "recovery_state": {"seconds_since_last_recovered": 600.0},
            "configuration": {"redundancy_mode": live, "storage_engine": "ssd-2",
                "logs": 4, "proxies": 3, "resolvers": 1, "usable_regions": 1}}
    }))
    .unwrap()
    }

    /// Five log processes in zones z0..z4, halls as given, live double.
    fn db5(halls: [&str; 5]) -> DatabaseStatus {
        let mut status = db([halls[0], halls[1], halls[2], halls[3]], "double");
        let mut extra = status.cluster.processes.values().next().unwrap().clone();
        extra.locality.instance_id = Some("log-5".to_owned());
        extra.locality.zoneid = Some("z4".to_owned());
        extra.locality.data_hall = Some(halls[4].to_owned());
        status.cluster.processes.insert("p4".to_owned(), extra);
        status
    }

    fn decide_with(db: DatabaseStatus) -> ConfigurationAction {
        let groups = ["log-1", "log-2", "log-3", "log-4", "log-5"].map(group);
        decide(
            &Fixture::new(
                "{version: 7.1.57, databaseConfiguration: {redundancy_mode: three_data_hall}}",
            )
            .groups(groups)
            .connection_string("sample:abc@10.0.0.1:4501")
            .status(|s| s.configured = true)
            .database(db)
            .build(),
        )
    }

    #[test]
    fn three_data_hall_waits_for_every_locality_and_three_halls() {
        match decide_with(db(["a", "b", "", "c"], "double")) {
            ConfigurationAction::WaitForHalls(reason) => {
                assert!(
                    reason.contains("1 of 4 processes to report a data_hall"),
                    "{reason}"
                );
                assert!(reason.contains("log-3"), "{reason}");
            }
            other => panic!("unexpected {other:?}"),
        }
        match decide_with(db(["a", "b", "b", "a"], "double")) {
            ConfigurationAction::WaitForHalls(reason) => {
                assert!(
                    reason.contains("needs processes in 3 data halls"),
                    "{reason}"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        // Three halls, but only hall a has logs in two zones.
        match decide_with(db(["a", "b", "c", "a"], "double")) {
            ConfigurationAction::WaitForHalls(reason) => {
                assert!(reason.contains("a: 2, b: 1, c: 1"), "{reason}");
            }
            other => panic!("unexpected {other:?}"),
        }
        match decide_with(db5(["a", "b", "c", "a", "b"])) {
            ConfigurationAction::Change(desired) => {
                assert_eq!(desired.redundancy_mode, Some(RedundancyMode::ThreeDataHall));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn other_modes_never_wait_for_halls() {
        let triple = DatabaseConfiguration {
            redundancy_mode: Some(RedundancyMode::Triple),
            ..DatabaseConfiguration::default()
        };
        assert_eq!(hall_gap(&db(["", "", "", ""], "double"), &triple), None);
    }

    /// A lost hall: two halls left (a, b), logs in two zones of each, live
    /// three_data_hall, available but not healthy (the teams lack their third hall).
    fn hall_lost() -> DatabaseStatus {
        let mut status = db(["a", "b", "a", "b"], "three_data_hall");
        status.client.database_status.healthy = Some(false);
        status
    }

    fn decide_for(configuration: &str, db: DatabaseStatus) -> ConfigurationAction {
        let groups = ["log-1", "log-2", "log-3", "log-4"].map(group);
        decide(
            &Fixture::new(&format!(
                "{{version: 7.1.57, databaseConfiguration: {configuration}}}"
            ))
            .groups(groups)
            .connection_string("sample:abc@10.0.0.1:4501")
            .status(|s| s.configured = true)
            .database(db)
            .build(),
        )
    }

    #[test]
    fn the_fallback_from_three_data_hall_needs_availability_not_health() {
        match decide_for(
            "{redundancy_mode: three_data_hall_fallback, logs: 4}",
            hall_lost(),
        ) {
            ConfigurationAction::Change(desired) => assert_eq!(
                desired.redundancy_mode,
                Some(RedundancyMode::ThreeDataHallFallback)
            ),
            other => panic!("the fallback waits for the lost hall: {other:?}"),
        }
        // Only the fallback alone: with another change in the same `configure`, or to
        // another mode, an unhealthy database still waits.
        for configuration in [
            "{redundancy_mode: three_data_hall_fallback, logs: 6}",
            "{redundancy_mode: triple, logs: 4}",
        ] {
            assert!(
                matches!(
                    decide_for(configuration, hall_lost()),
                    ConfigurationAction::Wait(_) | ConfigurationAction::WaitForHalls(_)
                ),
                "{configuration}"
            );
        }
        // And never while the database is unavailable.
        let mut unavailable = hall_lost();
        unavailable.client.database_status.available = Some(false);
        assert!(matches!(
            decide_for(
                "{redundancy_mode: three_data_hall_fallback, logs: 4}",
                unavailable
            ),
            ConfigurationAction::Wait(_)
        ));
    }

    #[test]
    fn the_fallback_needs_two_halls_and_three_data_hall_three() {
        let fallback = DatabaseConfiguration {
            redundancy_mode: Some(RedundancyMode::ThreeDataHallFallback),
            ..DatabaseConfiguration::default()
        };
        assert_eq!(hall_gap(&hall_lost(), &fallback), None);
        let gap = hall_gap(&db(["a", "a", "a", "a"], "three_data_hall"), &fallback);
        assert!(
            gap.as_deref().is_some_and(
                |gap| gap.contains("three_data_hall_fallback needs processes in 2 data halls")
            ),
            "{gap:?}"
        );
        match decide_for("{redundancy_mode: three_data_hall, logs: 4}", {
            let mut status = hall_lost();
            status
                .cluster
                .configuration
                .as_mut()
                .unwrap()
                .redundancy_mode = Some(RedundancyMode::ThreeDataHallFallback);
            status.client.database_status.healthy = Some(true);
            status
        }) {
            ConfigurationAction::WaitForHalls(reason) => assert!(
                reason.contains("three_data_hall needs processes in 3 data halls"),
                "{reason}"
            ),
            other => panic!("back to three_data_hall before the hall returns: {other:?}"),
        }
    }
}
