//! Executing scenario steps, and the passage of virtual time between operator passes.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use crate::controller::{PassOutcome, run_pass};
use crate::fdb::ClientInfo;
use crate::simulation::event_log::RunPosition;
use crate::simulation::kube::PatchType;
use crate::simulation::scenario::{Fault, Heal, ReconcileStep, Step};

use super::harness::{USER_ACTOR, new_operator_context};
use super::{ADVANCE_PASS_LIMIT, RunError, Runner};

/// A `reconcile` step without `maxPasses` stops after this many passes...
pub const RECONCILE_PASS_BUDGET: u64 = 500;
/// ...or this much simulated time.
pub const RECONCILE_TIME_BUDGET_SECONDS: i64 = 24 * 3600;
/// When a pass completed without reaching Reconciled and asked for nothing, the
/// operator looks again after this long (the periodic resync of a real controller).
const RESYNC_SECONDS: u64 = 30;
/// After a failed pass, the operator retries after this long.
const ERROR_BACKOFF_SECONDS: u64 = 5;

/// What a step did, for its entry in the result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepOutcomeSummary {
    /// Passes run during the step.
    pub passes: u64,
    /// For `reconcile`: whether Reconciled was reached.
    pub reconciled: Option<bool>,
    /// For `reconcile` steps that stopped early: why.
    pub stopped_because: Option<String>,
}

/// What one pass ended with, as the scheduler of passes sees it.
enum PassEnd {
    Reconciled,
    /// Run again after this long.
    After(Duration),
}

impl Runner {
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
            Step::RestartOperator { after: Some(_) } | Step::Act { .. } | Step::Expect(_) => {
                Err(RunError::InvalidCluster(format!(
                    "step {index}: {} is not supported yet",
                    describe(step)
                )))
            }
            Step::RestartOperator { after: None } => {
                // Nothing survives but what Kubernetes and the database store.
                self.context = new_operator_context(
                    self.api.client(super::OPERATOR_ACTOR),
                    &self.fdb,
                    &self.clock,
                    &self.log,
                    self.world.network(),
                )?;
                self.api.close_watches();
                self.wake_operator();
                Ok(StepOutcomeSummary::default())
            }
        }
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
        loop {
            self.settle().await?;
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
            let end = self.pass(index).await?;
            summary.passes += 1;
            match end {
                PassEnd::Reconciled => {
                    summary.reconciled = Some(true);
                    self.next_pass_due = None;
                    break;
                }
                PassEnd::After(delay) => self.wait(delay).await?,
            }
        }
        self.settle().await?;
        let available = self.fdb.snapshot().available;
        self.monitor.check_reconcile_end(
            self.elapsed(),
            self.total_passes,
            summary.reconciled == Some(true),
            available,
        );
        Ok(summary)
    }

    /// Lets `seconds` of simulated time pass, the operator reconciling as its requeues
    /// fall due and as the world wakes it.
    async fn advance(
        &mut self,
        index: usize,
        seconds: u64,
    ) -> Result<StepOutcomeSummary, RunError> {
        let target =
            self.now() + SignedDuration::from_secs(i64::try_from(seconds).unwrap_or(i64::MAX / 2));
        let mut summary = StepOutcomeSummary::default();
        loop {
            self.settle().await?;
            let now = self.now();
            if let Some(due) = self.next_pass_due
                && due <= now
                && summary.passes < ADVANCE_PASS_LIMIT
            {
                let end = self.pass(index).await?;
                summary.passes += 1;
                self.next_pass_due = match end {
                    PassEnd::Reconciled => None,
                    PassEnd::After(delay) => Some(now + signed(delay)),
                };
                continue;
            }
            if now >= target {
                break;
            }
            let mut next = target;
            for candidate in [self.next_pass_due, self.world.next_due()]
                .into_iter()
                .flatten()
            {
                if candidate > now && candidate < next {
                    next = candidate;
                }
            }
            self.move_clock_to(next);
        }
        Ok(summary)
    }

    /// Runs one operator pass and checks the invariants around it.
    async fn pass(&mut self, index: usize) -> Result<PassEnd, RunError> {
        self.total_passes += 1;
        self.log.set_position(RunPosition {
            step: index,
            pass: self.total_passes,
        });
        let before = self.observe_before_pass()?;
        let events_before = self.log.len();
        let result = run_pass(&self.context, &self.namespace, &self.name).await;
        self.observe_after_pass(&before, events_before)?;
        let pass = self.total_passes;
        Ok(match result {
            Ok(report) => match report.outcome {
                PassOutcome::Completed if report.reconciled => {
                    self.say(&format!("pass {pass}: reconciled"));
                    PassEnd::Reconciled
                }
                PassOutcome::Completed => {
                    self.say(&format!("pass {pass}: completed, not reconciled yet; looking again in {RESYNC_SECONDS}s"));
                    PassEnd::After(Duration::from_secs(RESYNC_SECONDS))
                }
                PassOutcome::Requeue {
                    delay,
                    reason,
                    step,
                } => {
                    self.say(&format!(
                        "pass {pass}: {step}: {reason} (requeue in {}s)",
                        delay.as_secs()
                    ));
                    PassEnd::After(delay)
                }
            },
            Err(error) => {
                let detail = error.to_string();
                self.say(&format!(
                    "pass {pass}: failed: {detail}; retrying in {ERROR_BACKOFF_SECONDS}s"
                ));
                self.log.record(
                    crate::simulation::result::EventSource::Operator,
                    "event",
                    &format!("foundationdbcluster/{}", self.name),
                    &format!("pass failed: {detail}"),
                );
                PassEnd::After(Duration::from_secs(ERROR_BACKOFF_SECONDS))
            }
        })
    }

    /// Waits `delay` of simulated time for the next pass, returning early when the world
    /// does something (a watch event would wake a real controller).
    async fn wait(&mut self, delay: Duration) -> Result<(), RunError> {
        // The world sees the pass's writes at once (the kubelet watches); what it does in
        // answer is a watch event for the operator, which then runs again right away.
        if self.settle().await? {
            return Ok(());
        }
        let target = self.now() + signed(delay);
        while let Some(due) = self.world.next_due().filter(|due| *due < target) {
            self.move_clock_to(due);
            if !self.settle().await? {
                continue;
            }
            return Ok(());
        }
        self.move_clock_to(target);
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

    fn wake_operator(&mut self) {
        let now = self.now();
        if self.next_pass_due.is_none_or(|due| due > now) {
            self.next_pass_due = Some(now);
        }
    }

    fn move_clock_to(&self, at: Timestamp) {
        let by = at.duration_since(self.now());
        self.clock.advance(by);
    }

    async fn inject(&mut self, fault: &Fault) -> Result<(), RunError> {
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
                    self.fdb.connect_client(ClientInfo {
                        address: address.clone(),
                        version,
                        protocol_version: None,
                        log_group: log_group.clone(),
                    });
                }
            }
            Fault::ClientDisconnected { address } => self.fdb.disconnect_client(address),
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
            self.fdb.set_timeout_rate(0.0);
        }
        self.world.heal(heal).await?;
        self.wake_operator();
        Ok(())
    }
}

fn signed(duration: Duration) -> SignedDuration {
    SignedDuration::try_from(duration).unwrap_or(SignedDuration::MAX)
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
        Step::Act { actor, action } => format!("act as {actor:?}: {action:?}"),
        Step::Expect(expect) => format!(
            "expect {}",
            serde_json::to_string(expect).unwrap_or_default()
        ),
    }
}
