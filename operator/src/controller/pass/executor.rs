//! The one executor of plans (see [`super::plan`]): it applies the shared rules to each
//! action, in this order, and performs the I/O through the pass's [`PassIo`]:
//!
//! 1. **one disruption per pass**: an action that takes processes down (a kill, a pod
//!    deletion) runs only when no earlier plan of the pass disrupted
//!    ([`safety::sole_disruption`]); the actions of one plan are one disruption (a zone's
//!    pods deleted together);
//! 2. **recovery pacing**: an action that causes a recovery runs only when nothing
//!    earlier in the pass caused one, the database is available, its last recovery is at
//!    least [`safety::MINIMUM_SECONDS_SINCE_RECOVERY`] old and no recovery is still
//!    coming ([`safety::paced`]); the actions of one plan are one recovery;
//! 3. **the global lock**, taken at most once per pass, before the first action that
//!    needs it ([`locks::acquire`]).
//!
//! A refusal ends the plan where it stands (earlier actions stay done) with a wait whose
//! reason is the plan's `refused` prefix and the refusal. Waits become requeues: the
//! pass stops, or goes on, as the step's [`Barrier`] says.

mod perform;
mod pod_agents;
mod refused_exclusion;
mod restart_lists;
mod route;

use perform::perform;

use super::super::context::Context;
use super::super::errors::StepError;
use super::super::safety::locks;
use super::super::safety::{self, LockNeed, Refusal};
use super::super::snapshot::ClusterSnapshot;
use super::io::PassIo;
use super::outcome::StepOutcome;
use super::plan::{Action, Barrier, PassFacts, Plan, Planned, Verdict, Wait, WaitOn};

/// What the shared rules say about one action, before the lock.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Admission {
    /// It may run (after taking the lock, when `lock` is set).
    Go {
        /// The lock to take first (locks in use, not yet held this pass).
        lock: Option<safety::LockedAction>,
    },
    /// A rule refuses it.
    Refused(Refusal),
}

/// The rules for `planned`, as the `earlier` actions of its own plan leave the pass
/// (`facts`): pure, so each rule is tested once, on plans.
pub(crate) fn admit(
    snapshot: &ClusterSnapshot,
    facts: &PassFacts,
    planned: &Planned,
    in_plan: &PlanProgress,
) -> Admission {
    if planned.disrupts && !in_plan.disrupted && facts.rules.one_disruption {
        if let Err(refusal) = safety::sole_disruption(&facts.record.deleted_pods) {
            return Admission::Refused(refusal);
        }
        if let Some(earlier) = &facts.record.disrupted {
            return Admission::Refused(Refusal::DisruptedThisPass {
                action: earlier.clone(),
            });
        }
    }
    if planned.recovery.is_some() && !in_plan.recovered && facts.rules.pacing {
        let caused = facts.record.recovery_caused.as_deref();
        if let Err(refusal) = safety::paced(snapshot, caused, planned.ends_mixed_versions) {
            return Admission::Refused(refusal);
        }
    }
    let lock = planned.lock.filter(|action| {
        !facts.record.lock_held
            && matches!(
                safety::lock_needed(snapshot, *action),
                LockNeed::Needed { .. }
            )
    });
    Admission::Go { lock }
}

/// What the actions of the running plan did so far: a plan's deletions are one
/// disruption, and its recovery-causing actions one recovery.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PlanProgress {
    /// An action of this plan disrupted.
    pub disrupted: bool,
    /// An action of this plan caused a recovery.
    pub recovered: bool,
}

/// When a wait looks again.
fn delay(ctx: &Context, waits_on: WaitOn) -> std::time::Duration {
    match waits_on {
        WaitOn::Kubernetes => ctx.settings.kube_wait,
        WaitOn::KubernetesLong => ctx.settings.kube_wait * 6,
        WaitOn::Database => ctx.settings.database_wait,
        WaitOn::ConfigMap => ctx.settings.config_map_wait,
        WaitOn::After(delay) => delay,
    }
}

/// The requeue of a step waiting: it ends the pass when the step's `barrier` says so.
fn requeue(ctx: &Context, barrier: Barrier, wait: Wait) -> StepOutcome {
    let delay = delay(ctx, wait.waits_on);
    if barrier.ends_pass(&wait) {
        StepOutcome::Requeue {
            delay,
            reason: wait.reason,
        }
    } else {
        StepOutcome::DelayedRequeue {
            delay,
            reason: wait.reason,
        }
    }
}

/// What a refusal waits on.
fn waits_on(refusal: &Refusal) -> WaitOn {
    match refusal {
        Refusal::DisruptedThisPass { .. } | Refusal::PodDeletedThisPass { .. } => {
            WaitOn::Kubernetes
        }
        _ => WaitOn::Database,
    }
}

/// The wait of a plan refused by a shared rule: the plan's prefix and the refusal.
fn refused(prefix: &str, refusal: &Refusal) -> Wait {
    Wait::new(waits_on(refusal), format!("{prefix}{refusal}"))
}

/// The wait a shared rule would end `plan` with before any of its actions ran, if one
/// refuses an action of it: for a step that must know before it commits to something
/// the plan depends on (the upgrade's pending-upgrade list before its kill).
pub(crate) fn refused_before_start(
    snapshot: &ClusterSnapshot,
    facts: &PassFacts,
    plan: &Plan,
) -> Option<Wait> {
    let progress = PlanProgress::default();
    plan.actions
        .iter()
        .find_map(|planned| match admit(snapshot, facts, planned, &progress) {
            Admission::Refused(refusal) => Some(refused(&plan.refused, &refusal)),
            Admission::Go { .. } => None,
        })
}

/// Runs `verdict` of a step with `barrier`: see the module documentation.
pub(crate) async fn execute(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    facts: &mut PassFacts,
    barrier: Barrier,
    verdict: Verdict,
) -> Result<StepOutcome, StepError> {
    match verdict {
        Verdict::Continue => Ok(StepOutcome::Continue),
        Verdict::Wait(wait) => Ok(requeue(ctx, barrier, wait)),
        Verdict::Act(plan) => match run_plan(ctx, snapshot, io, facts, plan).await? {
            None => Ok(StepOutcome::Continue),
            Some(wait) => Ok(requeue(ctx, barrier, wait)),
        },
    }
}

/// Runs the actions of `plan` under the rules; the wait the step ends with, if any.
async fn run_plan(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    facts: &mut PassFacts,
    plan: Plan,
) -> Result<Option<Wait>, StepError> {
    let mut progress = PlanProgress::default();
    for planned in plan.actions {
        let lock = match admit(snapshot, facts, &planned, &progress) {
            Admission::Go { lock } => lock,
            Admission::Refused(refusal) => return Ok(Some(refused(&plan.refused, &refusal))),
        };
        if let Some(action) = lock {
            if let Err(refusal) = locks::acquire(ctx, snapshot, io, action).await? {
                return Ok(Some(Wait::new(
                    WaitOn::Database,
                    format!("{}{refusal}", plan.refused),
                )));
            }
            facts.record.lock_held = true;
        }
        let excludes = matches!(planned.action, Action::Exclude(_));
        let what = match perform(ctx, snapshot, io, facts, planned.action).await {
            Err(error) if excludes => {
                // FoundationDB refused it: the step waits, the pass goes on.
                let wait =
                    refused_exclusion::wait_after(ctx, snapshot, facts, &plan.refused, error)?;
                perform(ctx, snapshot, io, facts, refused_exclusion::event(&wait)).await?;
                return Ok(Some(wait));
            }
            result => result?,
        };
        if excludes {
            ctx.exclusion_refusals
                .forget(snapshot.namespace(), snapshot.name());
            facts.remembered.exclusion_refusal = None;
            facts.record.excluded.get_or_insert_with(|| what.clone());
        }
        if planned.disrupts {
            progress.disrupted = true;
            facts.record.disrupted.get_or_insert(what);
        }
        if let Some(recovery) = planned.recovery {
            progress.recovered = true;
            facts.record.recovery_caused.get_or_insert(recovery);
        }
    }
    Ok(plan.then)
}

#[cfg(test)]
#[path = "executor_tests.rs"]
mod tests;
