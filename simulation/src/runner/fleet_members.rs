//! The scenario's fleet (`fleet:`): more FoundationDBClusters, each its own database,
//! created with the first and reconciled by the same single operator (the first
//! cluster's [`fdb_operator::controller::Context`]: one set of tools, caches and
//! concurrency), as one `fdb-operator run` reconciles every cluster it watches. Each
//! member has its own pass schedule, as each object of a controller's work queue has
//! its own requeue.
//!
//! Every database is judged on its own, by the same checks as the first: around a
//! member's pass the runner looks at the world through that member's view (its cluster,
//! its database, its invariant monitor and action history), then back through the
//! first's. The member's violations join the result, each naming the member.

use std::sync::Arc;

use fdb_operator::controller::{Context, PassOutcome, connection_string_description, run_pass};
use fdb_shared::connection_string::ConnectionString;
use serde_json::Value;

use crate::event_log::{EventLog, RunPosition};
use crate::fdb::SimulatedFdb;
use crate::invariants::lock_judge::{AdminWriteJudge, LockJudge};
use crate::kube::FakeApiServer;
use crate::recording_admin::RecordingAdmin;
use crate::result::Violation;
use crate::scenario::Scenario;
use crate::serve::exec_database::ExecDatabase;

use super::database_judge::DatabaseJudge;
use super::databases::WorldDatabase;
use super::harness::FleetRoute;
use super::steps::{PassEnd, judge_pass};
use super::{RunError, Runner};

/// What the runner judges one database by: swapped with the runner's own fields around
/// the member's passes ([`Runner::enter_fleet_view`]).
pub(super) struct FleetView {
    /// The member cluster's name (the runner's `name` while in the view).
    name: String,
    fdb: SimulatedFdb,
    /// Its invariant monitor and history (the scenario's clients connect to the first
    /// database; a member has none).
    judged: DatabaseJudge,
    /// The description its database's connection string has.
    description: String,
    judge: Arc<dyn AdminWriteJudge>,
    /// The view is the runner's now (its fields hold the first cluster's).
    entered: bool,
    /// With an external operator: the member's cluster object's resourceVersion when
    /// the world last judged it (`Runner::judge_external_fleet`).
    judged_version: Option<String>,
}

impl FleetView {
    /// One database per `fleet:` member, with the first's `settings` but seeded apart.
    pub(super) fn all(
        scenario: &Scenario,
        settings: &crate::fdb::SimFdbSettings,
        clock: &fdb_operator::clock::VirtualClock,
        api: &FakeApiServer,
        namespace: &str,
        log: &EventLog,
    ) -> Vec<Self> {
        (0_u64..)
            .zip(&scenario.fleet)
            .map(|(index, manifest)| {
                let name = manifest
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let description = manifest
                    .pointer("/spec/seedConnectionString")
                    .and_then(Value::as_str)
                    .and_then(|seed| seed.parse::<ConnectionString>().ok())
                    .map_or_else(|| connection_string_description(&name), |c| c.description);
                let settings = crate::fdb::SimFdbSettings {
                    seed: settings.seed.wrapping_add(index + 1),
                    ..settings.clone()
                };
                let fdb = SimulatedFdb::new(Arc::new(clock.clone()), settings);
                super::status_check::check_statuses(&fdb, log);
                let judge: Arc<dyn AdminWriteJudge> =
                    Arc::new(LockJudge::new(api.clone(), fdb.clone(), namespace));
                Self {
                    name,
                    fdb,
                    judged: DatabaseJudge::default(),
                    description,
                    judge,
                    entered: false,
                    judged_version: None,
                }
            })
            .collect()
    }

    /// The world's handle on this database.
    pub(super) fn world_database(&self) -> WorldDatabase {
        WorldDatabase {
            cluster: self.name.clone(),
            description: self.description.clone(),
            fdb: self.fdb.clone(),
        }
    }

    /// How the one operator's tools reach this database.
    pub(super) fn route(&self) -> FleetRoute {
        FleetRoute {
            cluster: self.name.clone(),
            fdb: self.fdb.clone(),
            judge: self.judge.clone(),
        }
    }

    /// This database as the served containers of the member reach it (`pods/exec`),
    /// their commands recorded and judged as the user's.
    pub(super) fn exec_database(&self, log: &EventLog) -> ExecDatabase {
        ExecDatabase {
            description: self.description.clone(),
            admin: Arc::new(RecordingAdmin::for_user(
                Arc::new(self.fdb.clone()),
                log.clone(),
            )),
            fdb: self.fdb.clone(),
        }
    }

    /// The member's violations, each naming it.
    fn violations(&self) -> Vec<Violation> {
        self.judged
            .monitor
            .violations()
            .iter()
            .map(|v| Violation {
                detail: format!("fleet member {}: {}", self.name, v.detail),
                ..v.clone()
            })
            .collect()
    }
}

impl Runner {
    /// The fleet's databases, as the one operator's tools reach them.
    pub(super) fn fleet_routes(&self) -> Vec<FleetRoute> {
        self.fleet.iter().map(FleetView::route).collect()
    }

    /// The fleet's databases as the served containers reach them (`pods/exec`).
    pub(super) fn exec_fleet(&self) -> Vec<ExecDatabase> {
        self.fleet
            .iter()
            .map(|view| view.exec_database(&self.log))
            .collect()
    }

    /// The database of cluster `name`: a fleet member's own, else the first's.
    pub(super) fn fdb_of(&self, name: &str) -> &SimulatedFdb {
        self.fleet
            .iter()
            .find(|view| view.name == name && !view.entered)
            .map_or(&self.fdb, |view| &view.fdb)
    }

    /// The first cluster's name, whichever view the runner is in.
    pub(super) fn first_name(&self) -> &str {
        self.fleet
            .iter()
            .find(|view| view.entered)
            .map_or(&self.name, |view| &view.name)
    }

    /// Looks at the world through member `member`'s view.
    fn enter_fleet_view(&mut self, member: usize) {
        let view = &mut self.fleet[member];
        std::mem::swap(&mut self.name, &mut view.name);
        std::mem::swap(&mut self.fdb, &mut view.fdb);
        std::mem::swap(&mut self.judged, &mut view.judged);
        view.entered = !view.entered;
    }

    /// Back to the first cluster's view (the swap undone).
    fn leave_fleet_view(&mut self, member: usize) {
        self.enter_fleet_view(member);
    }

    /// Creates the fleet's clusters, as the user, with the first.
    pub(super) fn create_fleet(&mut self) -> Result<(), RunError> {
        for manifest in self.scenario.fleet.clone() {
            let mut manifest = manifest;
            if let Some(metadata) = manifest.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata
                    .entry("namespace")
                    .or_insert_with(|| Value::from(self.namespace.clone()));
            }
            self.api.create_as(super::USER_ACTOR, manifest)?;
        }
        Ok(())
    }

    /// Runs the pass of fleet member `member` (instance `index`), judged in its view.
    pub(super) async fn fleet_pass(
        &mut self,
        step: usize,
        index: usize,
        member: usize,
    ) -> Result<(), RunError> {
        let pass = self.passes.begin();
        self.log.set_position(RunPosition { step, pass });
        let now = self.now();
        let instance = &mut self.operators.instances[index];
        instance.last_pass_at_now(now);
        let context = self.operators.context.clone();
        self.enter_fleet_view(member);
        let judged = self.fleet_pass_in_view(&context, pass, index).await;
        self.leave_fleet_view(member);
        let crashed = judged?;
        if crashed {
            self.restart_operator();
        }
        Ok(())
    }

    /// The member's pass and its judgement, in its view; true when the operator crashed.
    async fn fleet_pass_in_view(
        &mut self,
        context: &Context,
        pass: u64,
        index: usize,
    ) -> Result<bool, RunError> {
        let before = self.track()?;
        let events_before = self.log.len();
        let now = self.now();
        let name = self.name.clone();
        let result = if self.operators.disabled() {
            Ok(fdb_operator::controller::PassReport::new(
                PassOutcome::Completed,
                false,
            ))
        } else {
            self.sync_cache_of(context).await?;
            run_pass(context, &self.namespace, &name).await
        };
        if let Some(detail) = self.log.take_stall() {
            return Err(RunError::Stalled(detail));
        }
        let crashed = self.log.take_crash();
        if crashed {
            self.record_cluster_event(
                &name,
                "the operator crashed right after its action and restarted",
            );
        }
        let result = result.map_err(|error| fdb_shared::error_chain::chain_text(&error));
        let verdict = judge_pass(result, &format!("pass {pass} ({name})"));
        self.say(&verdict.message);
        if let Some(detail) = &verdict.failure {
            self.record_cluster_event(&name, &format!("pass failed: {detail}"));
        }
        let reconciled = verdict.end == PassEnd::Reconciled;
        self.operators.instances[index].pass_ended(now, verdict.end);
        self.judge_action(&before, events_before, "operator", true)
            .await?;
        self.report_noted_violations();
        self.check_after_pass(reconciled)?;
        Ok(crashed)
    }

    /// Judges every member's outages up to now (an outage that begins after its last
    /// pass is judged all the same).
    pub(super) fn check_fleet_outages(&mut self) {
        for member in 0..self.fleet.len() {
            self.enter_fleet_view(member);
            self.check_outages();
            self.leave_fleet_view(member);
        }
    }

    /// With an external operator, judges each member whose cluster object changed since
    /// its last judgement (a pass of the operator ends by writing its status), in the
    /// member's view, by the checks after a pass: versions, clients, outages, and the
    /// world against the spec when its status says Reconciled. `reconciled` tells from
    /// a cluster object whether it does.
    pub(super) fn judge_external_fleet(
        &mut self,
        reconciled: impl Fn(&Value) -> bool,
    ) -> Result<(), RunError> {
        for member in 0..self.fleet.len() {
            let cluster = self.api.get(&self.cluster_key_of(&self.fleet[member].name));
            let version = cluster
                .as_ref()
                .and_then(|c| c.pointer("/metadata/resourceVersion"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            if version == self.fleet[member].judged_version {
                continue;
            }
            self.fleet[member].judged_version = version;
            let reconciled = cluster.as_ref().is_some_and(&reconciled);
            self.enter_fleet_view(member);
            let judged = self.check_after_pass(reconciled);
            self.leave_fleet_view(member);
            judged?;
        }
        Ok(())
    }

    /// Every member's violations, each naming its member.
    pub(super) fn fleet_violations(&self) -> Vec<Violation> {
        self.fleet.iter().flat_map(FleetView::violations).collect()
    }
}
