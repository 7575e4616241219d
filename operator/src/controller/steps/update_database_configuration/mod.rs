//! UpdateDatabaseConfiguration: `configure new <desired>` once, when every live process
//! group reports to the database (then `status.configured`); later `configure` the
//! differences between the live and the desired configuration, only while the database
//! is available and healthy. A configuration of three_data_hall (new, or a change to it)
//! waits until every process reports a `data_hall` locality, in three halls. Region
//! changes go one step at a time (`cluster_math::next_configuration_change`): a new
//! region joins at a negative priority, `usable_regions` rises, and only then does the
//! region get its priority; FoundationDB refuses `regions` and `usable_regions` in one
//! command.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::api::{DatabaseConfiguration, ProcessClass, RedundancyMode};
use fdb_shared::cluster_math::{
    configuration_string, configure_change_command, desired_database_configuration,
    next_configuration_change,
};
use fdb_shared::status_json::DatabaseStatus;
use fdb_shared::validation::engine_change_error;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::pass::plan::{
    Action, Barrier, PassFacts, Plan, Planned, Verdict, Wait, WaitOn,
};
use crate::controller::safety::LockedAction;
use crate::controller::safety::{
    self, MINIMUM_SECONDS_SINCE_RECOVERY, Refusal, available_and_healthy, recovered_for,
};
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::status::mutations::StatusMutation;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct UpdateDatabaseConfiguration;

/// What to do about the database configuration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ConfigurationAction {
    /// Nothing.
    None,
    /// The database already has a configuration: record `configured`.
    MarkConfigured,
    /// Wait, for the reason given.
    Wait(String),
    /// Wait for the processes to report their data halls before three_data_hall: the
    /// later steps go on (the bounce that rolls the locality out is one of them).
    WaitForHalls(String),
    /// `configure new` with this configuration.
    ConfigureNew(DatabaseConfiguration),
    /// `configure` this configuration (the live one differs): the desired one, or the
    /// next step towards it when the regions change.
    Change(DatabaseConfiguration),
    /// The spec asks for a change FoundationDB would refuse, for the reason given
    /// (naming the field): no `configure`, an InvalidSpec Event, the other steps go on.
    Refused(String),
}

/// The wait a safety refusal means for a configuration change, in this step's words.
fn wait_for(refusal: &Refusal) -> ConfigurationAction {
    ConfigurationAction::Wait(match refusal {
        Refusal::RecentRecovery {
            seconds_ago,
            minimum,
        } => format!(
            "the last recovery was {seconds_ago:.0}s ago; changing the configuration waits until {minimum:.0}s have passed"
        ),
        Refusal::StatusUnreadable { .. } | Refusal::NoDatabase => format!("{refusal}"),
        _ => {
            "waiting for the database to be available and healthy before changing its configuration"
                .to_owned()
        }
    })
}

/// Decides from the snapshot (nothing before there is a database), region changes one
/// step at a time.
#[cfg(test)]
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> ConfigurationAction {
    decide_ordered(snapshot, true)
}

/// [`decide`], with the region order switched off in mutation tests only.
fn decide_ordered(snapshot: &ClusterSnapshot, region_order: bool) -> ConfigurationAction {
    let db = match safety::database(snapshot) {
        Ok(db) => db,
        Err(Refusal::NoDatabase) => return ConfigurationAction::None,
        Err(refusal) => return wait_for(&refusal),
    };
    let status = snapshot.status();
    let desired = desired_database_configuration(snapshot.spec());
    if !status.configured {
        if db.cluster.configuration.is_some() {
            return ConfigurationAction::MarkConfigured;
        }
        let live = snapshot.live_groups().count();
        let missing = snapshot
            .live_groups()
            .filter(|group| !group.is_reporting())
            .count();
        if missing > 0 || live == 0 {
            return ConfigurationAction::Wait(format!(
                "waiting for {missing} of {live} process groups to report to the database before configuring it"
            ));
        }
        if let Some(gap) = hall_gap(db, &desired) {
            return ConfigurationAction::WaitForHalls(gap);
        }
        return ConfigurationAction::ConfigureNew(desired);
    }
    let Some(live) = &db.cluster.configuration else {
        return ConfigurationAction::Wait("the database reports no configuration yet".to_owned());
    };
    let running = db.cluster.running_version();
    if configure_change_command(live, &desired, running.as_ref()).is_none() {
        return ConfigurationAction::None;
    }
    // An engine change without a migration type fails on every try: refuse it once,
    // naming the field (fdb_shared::validation::engine_change_error).
    if let Some(error) = engine_change_error(snapshot.spec(), live, running.as_ref()) {
        return ConfigurationAction::Refused(error);
    }
    // three_data_hall before every process has its data hall would leave the logs and
    // the data no policy-conforming team: the database could not recover.
    if live.redundancy_mode != desired.redundancy_mode
        && let Some(gap) = hall_gap(db, &desired)
    {
        return ConfigurationAction::WaitForHalls(gap);
    }
    // A configuration change causes a recovery itself: not right after another one.
    let safe = available_and_healthy(snapshot)
        .and_then(|()| recovered_for(snapshot, MINIMUM_SECONDS_SINCE_RECOVERY));
    match safe {
        Ok(()) if region_order => {
            ConfigurationAction::Change(next_configuration_change(live, &desired))
        }
        Ok(()) => ConfigurationAction::Change(desired),
        Err(refusal) => wait_for(&refusal),
    }
}

/// Data halls three_data_hall spreads its storage teams over.
const DATA_HALLS: usize = 3;

/// Why `desired` (three_data_hall) cannot be configured yet: processes that report no
/// `data_hall` locality (the localities roll out first, through the pods' process
/// configuration), fewer than three halls among them, or log processes that cannot hold
/// the mode's log team (2 zones in each of 2 halls). `None` for other modes, or when all
/// of that is there.
pub(crate) fn hall_gap(db: &DatabaseStatus, desired: &DatabaseConfiguration) -> Option<String> {
    if desired.redundancy_mode != Some(RedundancyMode::ThreeDataHall) {
        return None;
    }
    let processes: Vec<_> = db
        .cluster
        .processes
        .values()
        .filter(|p| !p.excluded)
        .collect();
    let without: Vec<String> = processes
        .iter()
        .filter(|p| p.locality.data_hall.as_deref().is_none_or(str::is_empty))
        .map(|p| {
            p.locality
                .instance_id
                .clone()
                .or_else(|| p.address.as_ref().map(ToString::to_string))
                .unwrap_or_default()
        })
        .collect::<BTreeSet<String>>()
        .into_iter()
        .collect::<Vec<String>>();
    if !without.is_empty() {
        let shown: Vec<&str> = without.iter().take(5).map(String::as_str).collect();
        return Some(format!(
            "waiting for {} of {} processes to report a data_hall locality ({}{}) before configuring three_data_hall",
            without.len(),
            processes.len(),
            shown.join(", "),
            if without.len() > shown.len() {
                ", ..."
            } else {
                ""
            }
        ));
    }
    let halls: BTreeSet<&str> = processes
        .iter()
        .filter_map(|p| p.locality.data_hall.as_deref())
        .collect();
    if halls.len() < DATA_HALLS {
        return Some(format!(
            "three_data_hall needs processes in {DATA_HALLS} data halls, but they report {} ({})",
            halls.len(),
            halls.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    // The log policy of three_data_hall: 4 replicas, 2 zones in each of 2 halls. Without
    // log processes placed so, the database could not recruit its logs after the change.
    let mut log_zones: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for process in &processes {
        let log_class = matches!(
            process.class_type,
            Some(ProcessClass::Log | ProcessClass::Transaction)
        );
        if let (true, Some(hall), Some(zone)) = (
            log_class,
            process.locality.data_hall.as_deref(),
            process.locality.zoneid.as_deref(),
        ) {
            log_zones.entry(hall).or_default().insert(zone);
        }
    }
    let log_halls = log_zones.values().filter(|zones| zones.len() >= 2).count();
    (log_halls < 2).then(|| {
        let spread: Vec<String> = log_zones
            .iter()
            .map(|(hall, zones)| format!("{hall}: {}", zones.len()))
            .collect();
        format!(
            "three_data_hall's logs need log processes in 2 zones of each of 2 data halls; zones with log processes per hall: {}",
            if spread.is_empty() { "none".to_owned() } else { spread.join(", ") }
        )
    })
}

impl Subreconciler for UpdateDatabaseConfiguration {
    fn name(&self) -> &'static str {
        "UpdateDatabaseConfiguration"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    fn decide(&self, snapshot: &ClusterSnapshot, facts: &PassFacts) -> Result<Verdict, StepError> {
        Ok(match decide_ordered(snapshot, facts.rules.region_order) {
            ConfigurationAction::None => Verdict::Continue,
            ConfigurationAction::Wait(reason) => Verdict::Wait(Wait::new(WaitOn::Database, reason)),
            ConfigurationAction::WaitForHalls(reason) => {
                Verdict::Wait(Wait::independent(WaitOn::Database, reason))
            }
            ConfigurationAction::Refused(error) => Verdict::plain([Action::Event {
                reason: EventReason::InvalidSpec,
                action: "Configure".to_owned(),
                note: format!(
                    "the database configuration is not changed until the spec is fixed: {error}"
                ),
            }])
            .then(Some(Wait::independent(WaitOn::Database, error))),
            ConfigurationAction::MarkConfigured => Verdict::Act(Plan::new(
                vec![Planned::plain(Action::StageStatus(vec![
                    StatusMutation::MarkConfigured,
                ]))],
                "",
            )),
            ConfigurationAction::ConfigureNew(desired) => {
                let note = format!("configure new {}", configuration_string(&desired));
                // The first recovery of the database; nothing to pace it after.
                let configure = Planned::plain(Action::Configure {
                    configuration: Box::new(desired),
                    new: true,
                });
                Verdict::Act(Plan::new(
                    vec![
                        configure,
                        // Staged, not written at once: a crash before the end of the
                        // pass repeats `configure new`, which answers "already exists".
                        Planned::plain(Action::StageStatus(vec![StatusMutation::MarkConfigured])),
                        Planned::plain(Action::Event {
                            reason: EventReason::DatabaseConfigured,
                            action: "ConfigureNew".to_owned(),
                            note,
                        }),
                    ],
                    "",
                ))
            }
            ConfigurationAction::Change(desired) => {
                let command = snapshot
                    .database_status()
                    .and_then(|db| {
                        let running = db.cluster.running_version();
                        let live = db.cluster.configuration.as_ref()?;
                        configure_change_command(live, &desired, running.as_ref())
                    })
                    .unwrap_or_default();
                let configure = Planned::locked(
                    Action::Configure {
                        configuration: Box::new(desired),
                        new: false,
                    },
                    LockedAction::ConfigureDatabase,
                )
                .recovering(Some(format!("configure {command}")));
                Verdict::Act(Plan::new(
                    vec![
                        configure,
                        Planned::plain(Action::Event {
                            reason: EventReason::ConfigurationChanged,
                            action: "Configure".to_owned(),
                            note: command,
                        }),
                    ],
                    "the database configuration must change, but ",
                ))
            }
        })
    }
}

#[cfg(test)]
mod tests {
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
}

#[cfg(test)]
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
}
