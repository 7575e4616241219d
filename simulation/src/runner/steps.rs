//! Executing scenario steps, and the passage of virtual time between operator passes.
//!
//! One scheduler drives every step: the operator runs a pass when one is due (its
//! requeue, or a watch event: the world changed), otherwise the clock jumps to the next
//! moment something is due (a pass, a world timer, the step's deadline). Passes are at
//! least `MIN_PASS_SPACING_SECONDS` (`pass_schedule.rs`) apart in virtual time, so a loop
//! in which every pass makes the world change again still moves the clock forward
//! instead of running hundreds of passes at one frozen instant.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use crate::event_log::RunPosition;
use crate::kube::PatchType;
use crate::result::EventSource;
use crate::scenario::{ExpectStep, Fault, Heal, ReconcileStep, Step};
use fdb_operator::controller::{PassOutcome, run_pass};
use fdb_operator::fdb::ClientInfo;

use super::harness::{SIDECAR_REQUEST_WATCHDOG, USER_ACTOR};
pub(super) use super::pass_judge::{PassEnd, judge_pass};
use super::{ADVANCE_PASS_LIMIT, RunError, Runner};
use fdb_operator::controller::ObjectKind;

/// A `reconcile` step without `maxPasses` stops after this many passes...
pub const RECONCILE_PASS_BUDGET: u64 = 500;
/// ...or this much simulated time.
pub const RECONCILE_TIME_BUDGET_SECONDS: i64 = 24 * 3600;

/// What a step did, for its entry in the result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepOutcomeSummary {
    /// Passes run during the step.
    pub passes: u64,
    /// For `reconcile` steps: whether Reconciled was reached; for `expect`: whether the
    /// conditions held.
    pub reconciled: Option<bool>,
    /// For steps that stopped early or failed: why.
    pub stopped_because: Option<String>,
}

impl Runner {
    /// Records what the operator reported about `cluster` (an Event it emitted).
    pub(super) fn record_cluster_event(&self, cluster: &str, detail: &str) {
        self.log.record(
            EventSource::Operator,
            "event",
            &format!("foundationdbcluster/{cluster}"),
            detail,
        );
    }

    pub(super) async fn run_step(
        &mut self,
        index: usize,
        step: &Step,
    ) -> Result<StepOutcomeSummary, RunError> {
        self.say(&format!("step {index}: {}", describe(step)));
        match step {
            Step::Reconcile(settings) => self.reconcile(index, *settings).await,
            Step::Apply(patch) => {
                let key = self.cluster_key();
                self.api
                    .patch_as(USER_ACTOR, &key, PatchType::Merge, patch, false)?;
                self.wake_operator();
                self.settle().await?;
                Ok(StepOutcomeSummary::default())
            }
            Step::Advance(seconds) => self.advance(index, *seconds).await,
            Step::Fault(fault) => {
                self.inject(fault).await?;
                Ok(StepOutcomeSummary::default())
            }
            Step::Heal(heal) => {
                self.heal(heal).await?;
                Ok(StepOutcomeSummary::default())
            }
            Step::RestartOperator { after: None } => {
                self.restart_operator();
                Ok(StepOutcomeSummary::default())
            }
            Step::RestartOperator {
                after: Some(action),
            } => {
                self.log.arm_crash(action);
                Ok(StepOutcomeSummary::default())
            }
            Step::Act {
                actor,
                action,
                cluster,
            } => self.act(*actor, action, cluster.as_deref()).await,
            Step::ApplyCluster { name, patch } => {
                self.apply_cluster(name, patch)?;
                self.settle().await?;
                Ok(StepOutcomeSummary::default())
            }
            Step::Expect(expect) => self.expect(index, expect).await,
            Step::ApplyTo { target, patch } => {
                self.apply_to(target, patch)?;
                self.settle().await?;
                Ok(StepOutcomeSummary::default())
            }
            Step::Delete(target) => {
                self.delete_resource(target)?;
                self.settle().await?;
                Ok(StepOutcomeSummary::default())
            }
        }
    }

    /// Drops all in-memory operator state: nothing survives but what Kubernetes and the
    /// database store.
    pub(super) fn restart_operator(&mut self) {
        let identity = self.identity(self.first_name());
        match self.operator_context(&identity) {
            Ok(context) => self.operators.context = context,
            // The sidecar client factory has no inputs that can change between restarts.
            Err(error) => self.say(&format!("operator restart failed: {error}")),
        }
        // Every instance is an operator process of its own; a restart step restarts all.
        self.restart_instances();
        self.api.close_watches();
        self.wake_operator();
    }

    /// Runs passes until Reconciled (or `maxPasses`, or the budgets).
    async fn reconcile(
        &mut self,
        index: usize,
        settings: ReconcileStep,
    ) -> Result<StepOutcomeSummary, RunError> {
        let started = self.now();
        let mut summary = StepOutcomeSummary {
            reconciled: Some(false),
            ..StepOutcomeSummary::default()
        };
        // A reconcile step always runs the operator, even if it has nothing due.
        self.wake_operator();
        loop {
            self.settle().await?;
            if self.resource_passes().await? || self.instance_passes(index).await? {
                continue;
            }
            if let Some(max) = settings.max_passes
                && summary.passes >= u64::from(max)
            {
                summary.stopped_because = Some(format!("maxPasses ({max}) reached"));
                break;
            }
            if settings.max_passes.is_none() && summary.passes >= RECONCILE_PASS_BUDGET {
                summary.stopped_because =
                    Some(format!("pass budget ({RECONCILE_PASS_BUDGET}) exhausted"));
                break;
            }
            if (self.now().as_second() - started.as_second()) >= RECONCILE_TIME_BUDGET_SECONDS {
                summary.stopped_because = Some("time budget (24 simulated hours) exhausted".into());
                break;
            }
            let now = self.now();
            match self.passes.cluster.next_due() {
                Some(due) if due <= now => {
                    summary.passes += 1;
                    if self.pass(index).await? == PassEnd::Reconciled {
                        summary.reconciled = Some(true);
                        break;
                    }
                }
                due => {
                    let Some(next) = self.next_moment(due, None) else {
                        // Nothing will ever happen: the operator waits for nothing.
                        self.wake_operator();
                        continue;
                    };
                    self.move_clock_to(next);
                }
            }
        }
        self.settle().await?;
        Ok(summary)
    }

    /// Lets `seconds` of simulated time pass, the operator reconciling as its requeues
    /// fall due and as the world wakes it.
    pub(super) async fn advance(
        &mut self,
        index: usize,
        seconds: u64,
    ) -> Result<StepOutcomeSummary, RunError> {
        let target = self.now() + SignedDuration::from_secs(clamp_seconds(seconds));
        let mut summary = StepOutcomeSummary::default();
        loop {
            self.settle().await?;
            if self.resource_passes().await? || self.instance_passes(index).await? {
                continue;
            }
            let now = self.now();
            if self.passes.cluster.is_due(now) && summary.passes < ADVANCE_PASS_LIMIT {
                self.pass(index).await?;
                summary.passes += 1;
                continue;
            }
            if now >= target {
                break;
            }
            let next = self.next_moment(self.passes.cluster.next_due(), Some(target));
            self.move_clock_to(next.unwrap_or(target));
        }
        self.check_outages();
        self.check_fleet_outages();
        Ok(summary)
    }

    /// Runs the world and the operator until every condition of `expect` holds, or its
    /// `within` seconds have passed (then an `expectation-failed` violation); with
    /// `throughout`, the conditions must then keep holding at every moment for that long
    /// (the first moment they do not is the violation).
    async fn expect(
        &mut self,
        index: usize,
        expect: &ExpectStep,
    ) -> Result<StepOutcomeSummary, RunError> {
        let mut deadline = self.now() + SignedDuration::from_secs(clamp_seconds(expect.within));
        // Set once the conditions held: from then on they must hold until this moment.
        let mut holding_until: Option<Timestamp> = None;
        let mut summary = StepOutcomeSummary::default();
        loop {
            self.settle().await?;
            if self.resource_passes().await? || self.instance_passes(index).await? {
                continue;
            }
            let failed = self.unmet(expect)?;
            let now = self.now();
            if failed.is_empty() {
                let until = *holding_until.get_or_insert_with(|| {
                    now + SignedDuration::from_secs(clamp_seconds(expect.throughout))
                });
                if now >= until {
                    summary.reconciled = Some(true);
                    break;
                }
                deadline = until;
            }
            let broken = holding_until.is_some() && !failed.is_empty();
            if broken || now >= deadline || summary.passes >= ADVANCE_PASS_LIMIT {
                let detail = match holding_until {
                    Some(until) if broken => format!(
                        "held, then not {} s before the end of its {} s throughout: {}",
                        until.as_second() - now.as_second(),
                        expect.throughout,
                        failed.join("; ")
                    ),
                    _ => format!("after {} s: {}", expect.within, failed.join("; ")),
                };
                self.say(&format!("expectation failed {detail}"));
                self.judged.monitor.violate(
                    crate::invariants::EXPECTATION_FAILED,
                    self.elapsed(),
                    self.passes.total(),
                    detail.clone(),
                );
                summary.reconciled = Some(false);
                summary.stopped_because = Some(detail);
                break;
            }
            if self.passes.cluster.is_due(now) {
                self.pass(index).await?;
                summary.passes += 1;
                continue;
            }
            let next = self.next_moment(self.passes.cluster.next_due(), Some(deadline));
            self.move_clock_to(next.unwrap_or(deadline));
        }
        self.check_outages();
        self.check_fleet_outages();
        Ok(summary)
    }

    /// The earliest future moment anything is due: `due` (a pass), a world timer, or
    /// `deadline`.
    fn next_moment(
        &self,
        due: Option<Timestamp>,
        deadline: Option<Timestamp>,
    ) -> Option<Timestamp> {
        let now = self.now();
        [
            due,
            self.world.next_due(),
            deadline,
            self.resource_pass_due(),
            self.operators.instance_pass_due(),
        ]
        .into_iter()
        .flatten()
        .filter(|at| *at > now)
        .min()
    }

    /// Runs one operator pass, schedules the next, and checks the invariants around it.
    async fn pass(&mut self, index: usize) -> Result<PassEnd, RunError> {
        let pass = self.passes.begin();
        self.log.set_position(RunPosition { step: index, pass });
        let before = self.track()?;
        let events_before = self.log.len();
        let now = self.now();
        self.passes.cluster.started(now);
        let result = if self.operators.disabled() {
            Ok(fdb_operator::controller::PassReport::new(
                PassOutcome::Completed,
                false,
            ))
        } else {
            self.sync_operator_cache().await?;
            run_pass(&self.operators.context, &self.namespace, &self.name).await
        };
        if let Some(detail) = self.log.take_stall() {
            return Err(RunError::Stalled(detail));
        }
        if self.log.take_crash() {
            self.say(&format!(
                "pass {pass}: the operator crashed (restartOperator) and restarts"
            ));
            self.record_cluster_event(
                &self.name,
                "the operator crashed right after its action and restarted",
            );
            self.restart_operator();
        }
        let result = result.map_err(|error| fdb_shared::error_chain::chain_text(&error));
        let verdict = judge_pass(result, &format!("pass {pass}"));
        self.say(&verdict.message);
        if let Some(detail) = &verdict.failure {
            self.record_cluster_event(&self.name, &format!("pass failed: {detail}"));
        }
        let end = verdict.end;
        self.passes.last_waits = verdict.waits;
        self.passes.cluster.ended(now, end);
        self.report_rollout()?;
        // The world sees the pass's writes at once (the kubelet watches); what it does in
        // answer is a watch event that wakes the operator again.
        self.judge_action(&before, events_before, "operator", true)
            .await?;
        self.report_noted_violations();
        self.check_after_pass(end == PassEnd::Reconciled)?;
        Ok(end)
    }

    /// Lets the operator's watch caches apply every event the API server sent them, so
    /// that a pass sees the world as it is now (as a real watch would shortly after),
    /// whatever the machine's speed: the result must not depend on it. A cache that does
    /// not catch up within [`SIDECAR_REQUEST_WATCHDOG`] (real time) stops the run.
    async fn sync_operator_cache(&self) -> Result<(), RunError> {
        self.sync_cache_of(&self.operators.context).await
    }

    /// Lets `context`'s watch caches catch up (see [`Self::sync_operator_cache`]).
    pub(super) async fn sync_cache_of(
        &self,
        context: &fdb_operator::controller::Context,
    ) -> Result<(), RunError> {
        let Some(cache) = context.cache.clone() else {
            return Ok(());
        };
        let kinds = [
            (ObjectKind::Pods, "pods"),
            (ObjectKind::Pvcs, "persistentvolumeclaims"),
            (ObjectKind::Services, "services"),
            (ObjectKind::ConfigMap, "configmaps"),
        ];
        let started = std::time::Instant::now();
        for (kind, plural) in kinds {
            loop {
                let applied = cache.applied(kind);
                let caught_up = applied.ready
                    && self
                        .api
                        .watch_position("", plural)
                        .is_some_and(|sent| applied.resource_version >= sent);
                if caught_up {
                    break;
                }
                if started.elapsed() > SIDECAR_REQUEST_WATCHDOG {
                    return Err(RunError::Stalled(format!(
                        "the operator's watch cache of {plural} did not catch up"
                    )));
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        Ok(())
    }

    /// Settles the world; true when it did anything (which wakes the operator).
    pub(super) async fn settle(&mut self) -> Result<bool, RunError> {
        let report = self.world.settle().await?;
        let changed = !report.events.is_empty();
        if changed {
            self.wake_operator();
        }
        Ok(changed)
    }

    /// A watch event: the operator runs as soon as it may (passes take time).
    pub(super) fn wake_operator(&mut self) {
        self.wake_resources();
        let now = self.now();
        self.operators.wake_instances(now);
        if self.operators.external() {
            // The operator outside watches the served API itself.
            return;
        }
        self.passes.cluster.wake(now);
    }

    fn move_clock_to(&self, at: Timestamp) {
        let by = at.duration_since(self.now());
        self.clock.advance(by);
    }

    async fn inject(&mut self, fault: &Fault) -> Result<(), RunError> {
        if !matches!(
            fault,
            Fault::ApiConflicts { .. }
                | Fault::FdbcliTimeouts { .. }
                | Fault::ClientConnected { .. }
                | Fault::ClientDisconnected { .. }
                | Fault::SlowRecovery { .. }
                | Fault::StorageMetricsMissing { .. }
                | Fault::StatusProcessesMissing { .. }
        ) {
            self.disrupted_by_others();
        }
        match fault {
            Fault::ApiConflicts { rate } => {
                self.api
                    .set_write_conflict_rate(super::OPERATOR_ACTOR, *rate);
            }
            Fault::FdbcliTimeouts { rate } => self.fdb.set_timeout_rate(*rate),
            Fault::ClientConnected {
                address,
                version,
                log_group,
            } => {
                if let Ok(version) = version.parse() {
                    let client = ClientInfo {
                        address: address.clone(),
                        version,
                        protocol_version: None,
                        log_group: log_group.clone(),
                    };
                    self.fdb.connect_client(client.clone());
                    self.judged.clients.push(client);
                }
            }
            Fault::ClientDisconnected { address } => {
                self.fdb.disconnect_client(address);
                self.judged
                    .clients
                    .retain(|client| &client.address != address);
            }
            Fault::IoError { process_group } => self.fdb.set_io_error(process_group, true),
            Fault::StorageMetricsMissing { process_group } => {
                self.fdb.set_storage_metrics_missing(process_group, true);
            }
            Fault::StatusProcessesMissing {
                process_group,
                data_center,
            } => self.fdb.set_status_processes_missing(
                process_group.as_deref(),
                data_center.as_deref(),
                true,
            ),
            Fault::IgnoreKill { process_group } => self.fdb.set_ignore_kill(process_group, true),
            Fault::IoLatency {
                process_group,
                milliseconds,
            } => self.fdb.set_io_latency(process_group, Some(*milliseconds)),
            Fault::SlowRecovery { seconds } => {
                self.fdb.set_recovery_override(Some(*seconds));
                self.recovery.slow_recovery(*seconds);
            }
            Fault::DataCenterDown { data_center } => {
                // The datacenter's nodes, found through the pods its processes run in.
                let pods = self.fdb.pods_in_dc(data_center);
                if pods.is_empty() {
                    return Err(RunError::Act(format!(
                        "dataCenterDown: no process runs in datacenter {data_center:?}"
                    )));
                }
                for node in self.world.nodes_of_pods(&pods) {
                    self.world.apply_fault(&Fault::NodeDown { node }).await?;
                }
            }
            world_fault => {
                self.world.apply_fault(world_fault).await?;
            }
        }
        self.wake_operator();
        Ok(())
    }

    async fn heal(&mut self, heal: &Heal) -> Result<(), RunError> {
        if heal.all == Some(true) {
            self.api.clear_faults();
            self.fdb.heal_all();
            self.recovery.heal();
        }
        if let Some(group) = &heal.process_group {
            self.fdb.heal_group(group);
        }
        self.world.heal(heal).await?;
        self.wake_operator();
        Ok(())
    }
}

fn clamp_seconds(seconds: u64) -> i64 {
    // Far beyond any scenario's horizon, and within what timestamps can represent.
    i64::try_from(seconds)
        .unwrap_or(i64::MAX)
        .min(100 * 365 * 24 * 3600)
}

fn describe(step: &Step) -> String {
    match step {
        Step::Reconcile(ReconcileStep {
            max_passes: Some(max),
        }) => {
            format!("reconcile (at most {max} passes)")
        }
        Step::Reconcile(_) => "reconcile until Reconciled".to_owned(),
        Step::Apply(patch) => format!("apply {patch}"),
        Step::Advance(seconds) => format!("advance {seconds}s"),
        Step::Fault(fault) => format!("fault {}", serde_json::to_string(fault).unwrap_or_default()),
        Step::Heal(heal) => format!("heal {}", serde_json::to_string(heal).unwrap_or_default()),
        Step::RestartOperator { after: None } => "restart the operator".to_owned(),
        Step::RestartOperator {
            after: Some(action),
        } => {
            format!("crash the operator right after its next {action}")
        }
        Step::Act {
            actor,
            action,
            cluster,
        } => match cluster {
            Some(cluster) => format!("act as {actor:?} of {cluster}: {action:?}"),
            None => format!("act as {actor:?}: {action:?}"),
        },
        Step::ApplyCluster { name, patch } => format!("apply to cluster {name}: {patch}"),
        Step::Expect(expect) => format!(
            "expect {}",
            serde_json::to_string(expect).unwrap_or_default()
        ),
        Step::ApplyTo { target, patch } => {
            format!("apply to {}/{}: {patch}", target.kind.as_str(), target.name)
        }
        Step::Delete(target) => format!("delete {}/{}", target.kind.as_str(), target.name),
    }
}
