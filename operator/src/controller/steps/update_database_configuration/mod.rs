//! UpdateDatabaseConfiguration: `configure new <desired>` once, when every live process
//! group reports to the database (then `status.configured`); later `configure` the
//! differences between the live and the desired configuration, only while the database
//! is available and healthy (a fall back from three_data_hall to its fallback, the remedy
//! for a lost hall, only available). A configuration of three_data_hall or its fallback
//! (new, or a change to it) waits until every process reports a `data_hall` locality, in
//! three halls (two for the fallback). Region
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
    // A configuration change causes a recovery itself: not right after another one. The
    // fall back from three_data_hall is the remedy for the unhealthy data distribution a
    // lost hall leaves (its teams cannot get their third hall): it needs availability,
    // not health, or it would wait for the hall it stands in for.
    let health = if falls_back_to_two_halls(live, &desired, running.as_ref()) {
        safety::available(snapshot)
    } else {
        available_and_healthy(snapshot)
    };
    let safe = health.and_then(|()| recovered_for(snapshot, MINIMUM_SECONDS_SINCE_RECOVERY));
    match safe {
        Ok(()) if region_order => {
            ConfigurationAction::Change(next_configuration_change(live, &desired))
        }
        Ok(()) => ConfigurationAction::Change(desired),
        Err(refusal) => wait_for(&refusal),
    }
}

/// Whether going from `live` to `desired` only drops three_data_hall to its fallback:
/// the same log policy (4 replicas, 2 zones in each of 2 halls) and 2 storage replicas in
/// distinct halls instead of 3, which starts no data movement; FoundationDB documents it
/// as the way to unblock data distribution while a data hall is unavailable
/// (apple/foundationdb `documentation/sphinx/source/configuration.rst`,
/// "three_data_hall_fallback mode"). Nothing else may change in the same `configure`.
pub(crate) fn falls_back_to_two_halls(
    live: &DatabaseConfiguration,
    desired: &DatabaseConfiguration,
    running: Option<&fdb_shared::version::FdbVersion>,
) -> bool {
    if live.redundancy_mode != Some(RedundancyMode::ThreeDataHall)
        || desired.redundancy_mode != Some(RedundancyMode::ThreeDataHallFallback)
    {
        return false;
    }
    let mut fallen_back = live.clone();
    fallen_back.redundancy_mode = desired.redundancy_mode.clone();
    configure_change_command(&fallen_back, desired, running).is_none()
}

/// Data halls the storage teams of `mode` need: three_data_hall 3, its fallback 2
/// (`fdbclient/ManagementAPI.actor.cpp`, `configForToken`); `None` for the other modes.
fn data_halls_needed(mode: Option<&RedundancyMode>) -> Option<usize> {
    match mode? {
        RedundancyMode::ThreeDataHall => Some(3),
        RedundancyMode::ThreeDataHallFallback => Some(2),
        _ => None,
    }
}

/// Why `desired` (three_data_hall) cannot be configured yet: processes that report no
/// `data_hall` locality (the localities roll out first, through the pods' process
/// configuration), fewer than three halls among them, or log processes that cannot hold
/// the mode's log team (2 zones in each of 2 halls). `None` for other modes, or when all
/// of that is there.
pub(crate) fn hall_gap(db: &DatabaseStatus, desired: &DatabaseConfiguration) -> Option<String> {
    let halls_needed = data_halls_needed(desired.redundancy_mode.as_ref())?;
    let mode = desired
        .redundancy_mode
        .as_ref()
        .map_or("three_data_hall", RedundancyMode::as_str);
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
            "waiting for {} of {} processes to report a data_hall locality ({}{}) before configuring {mode}",
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
    if halls.len() < halls_needed {
        return Some(format!(
            "{mode} needs processes in {halls_needed} data halls, but they report {} ({})",
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
            "{mode}'s logs need log processes in 2 zones of each of 2 data halls; zones with log processes per hall: {}",
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
mod tests;
