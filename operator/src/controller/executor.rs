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
//! pass stops, or goes on when the step is not a barrier
//! ([`super::barriers::holds_later_steps`]).

use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};

use super::barriers::holds_later_steps;
use super::context::Context;
use super::errors::StepError;
use super::events::EventReason;
use super::locks;
use super::object_kind::{NewObject, ObjectKind};
use super::outcome::StepOutcome;
use super::pass_io::{PassIo, publish};
use super::plan::{Action, PassFacts, Plan, Planned, Verdict, Wait, WaitOn};
use super::safety::{self, LockNeed, Refusal};
use super::snapshot::ClusterSnapshot;
use super::status_mutations::StatusMutation;
use crate::fdb::{AdminClient as _, AdminError};

/// What the shared rules say about one action, before the lock.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
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
pub fn admit(
    snapshot: &ClusterSnapshot,
    facts: &PassFacts,
    planned: &Planned,
    in_plan: &PlanProgress,
) -> Admission {
    if planned.disrupts && !in_plan.disrupted && facts.rules.one_disruption {
        if let Err(refusal) = safety::sole_disruption(&facts.deleted_pods) {
            return Admission::Refused(refusal);
        }
        if let Some(earlier) = &facts.disrupted {
            return Admission::Refused(Refusal::DisruptedThisPass {
                action: earlier.clone(),
            });
        }
    }
    if planned.recovery.is_some() && !in_plan.recovered && facts.rules.pacing {
        let caused = facts.recovery_caused.as_deref();
        if let Err(refusal) = safety::paced(snapshot, caused) {
            return Admission::Refused(refusal);
        }
    }
    let lock = planned.lock.filter(|action| {
        !facts.lock_held
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
pub struct PlanProgress {
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
        WaitOn::After(delay) => delay,
    }
}

/// The requeue of `step` waiting: it ends the pass when the step is a barrier.
pub fn requeue(ctx: &Context, step: &'static str, wait: Wait) -> StepOutcome {
    let delay = delay(ctx, wait.waits_on);
    if holds_later_steps(step) && !wait.goes_on {
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

/// Takes the global lock for `action` once per pass (nothing to do when this pass holds
/// it or locks are not in use): for the steps whose I/O is not a plan yet (the upgrade's
/// pending-upgrade list).
pub async fn take_lock(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    facts: &mut PassFacts,
    action: safety::LockedAction,
) -> Result<Result<(), Refusal>, StepError> {
    if facts.lock_held {
        return Ok(Ok(()));
    }
    let taken = locks::acquire(ctx, snapshot, io, action).await?;
    if taken.is_ok()
        && matches!(
            safety::lock_needed(snapshot, action),
            LockNeed::Needed { .. }
        )
    {
        facts.lock_held = true;
    }
    Ok(taken)
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

/// Runs `verdict` of `step`: see the module documentation.
pub async fn execute(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    facts: &mut PassFacts,
    step: &'static str,
    verdict: Verdict,
) -> Result<StepOutcome, StepError> {
    match verdict {
        Verdict::Continue => Ok(StepOutcome::Continue),
        Verdict::Wait(wait) => Ok(requeue(ctx, step, wait)),
        Verdict::Act(plan) => match run_plan(ctx, snapshot, io, facts, plan).await? {
            None => Ok(StepOutcome::Continue),
            Some(wait) => Ok(requeue(ctx, step, wait)),
        },
    }
}

/// Runs the actions of `plan` under the rules; the wait the step ends with, if any.
pub async fn run_plan(
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
            Admission::Refused(refusal) => {
                return Ok(Some(Wait::new(
                    waits_on(&refusal),
                    format!("{}{refusal}", plan.refused),
                )));
            }
        };
        if let Some(action) = lock {
            if let Err(refusal) = locks::acquire(ctx, snapshot, io, action).await? {
                return Ok(Some(Wait::new(
                    WaitOn::Database,
                    format!("{}{refusal}", plan.refused),
                )));
            }
            facts.lock_held = true;
        }
        let what = perform(ctx, snapshot, io, facts, planned.action).await?;
        if planned.disrupts {
            progress.disrupted = true;
            facts.disrupted.get_or_insert(what);
        }
        if let Some(recovery) = planned.recovery {
            progress.recovered = true;
            facts.recovery_caused.get_or_insert(recovery);
        }
    }
    Ok(plan.then)
}

fn already_configured(error: &AdminError) -> bool {
    matches!(error, AdminError::Failed { stderr, .. } if stderr.contains("already exists"))
}

fn joined(items: &[impl ToString]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Performs one action; returns what it did, in words.
async fn perform(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    facts: &mut PassFacts,
    action: Action,
) -> Result<String, StepError> {
    match action {
        Action::Configure {
            configuration,
            new: true,
        } => {
            match io
                .admin(ctx, snapshot)?
                .configure(&configuration, true)
                .await
            {
                Ok(()) => {}
                Err(error) if already_configured(&error) => {}
                Err(error) => return Err(StepError::admin("configure the new database")(error)),
            }
            Ok("configure new".to_owned())
        }
        Action::Configure {
            configuration,
            new: false,
        } => {
            io.admin(ctx, snapshot)?
                .configure(&configuration, false)
                .await
                .map_err(StepError::admin("change the database configuration"))?;
            Ok("configure".to_owned())
        }
        Action::Exclude(targets) => {
            let text = joined(&targets);
            tracing::info!(targets = %text, "excluding");
            io.admin(ctx, snapshot)?
                .exclude(&targets, false)
                .await
                .map_err(StepError::admin(format!("exclude {text}")))?;
            Ok(format!("exclude {text}"))
        }
        Action::Include(targets) => {
            let text = joined(&targets);
            io.admin(ctx, snapshot)?
                .include(&targets)
                .await
                .map_err(StepError::admin(format!("include {text}")))?;
            Ok(format!("include {text}"))
        }
        Action::ChangeCoordinators {
            coordinators,
            reason,
        } => {
            tracing::info!(%reason, ?coordinators, "changing coordinators");
            let connection = io
                .admin(ctx, snapshot)?
                .change_coordinators(&coordinators)
                .await
                .map_err(StepError::admin("change the coordinators"))?;
            let text = connection.to_string();
            io.apply_status(
                ctx,
                snapshot,
                &[StatusMutation::SetConnectionString(text.clone())],
            )
            .await?;
            publish(
                ctx,
                snapshot.cluster(),
                EventReason::CoordinatorsChanged,
                "ChangeCoordinators",
                format!("{reason}; new connection string {text}"),
            )
            .await;
            Ok("coordinators change".to_owned())
        }
        Action::Kill(addresses) => {
            tracing::info!(processes = addresses.len(), "killing processes");
            io.admin(ctx, snapshot)?
                .kill(&addresses)
                .await
                .map_err(StepError::admin(format!("kill {}", joined(&addresses))))?;
            Ok(format!("kill of {} processes", addresses.len()))
        }
        Action::SetMaintenanceZone { zone, seconds } => {
            tracing::info!(%zone, seconds, "setting the maintenance zone");
            io.admin(ctx, snapshot)?
                .set_maintenance_zone(&zone, seconds)
                .await
                .map_err(StepError::admin(format!("set maintenance zone {zone}")))?;
            Ok(format!("maintenance zone {zone}"))
        }
        Action::ResetMaintenanceZone => {
            io.admin(ctx, snapshot)?
                .reset_maintenance_zone()
                .await
                .map_err(StepError::admin("reset the maintenance zone"))?;
            Ok("maintenance off".to_owned())
        }
        Action::DeletePod(name) => {
            io.delete::<Pod>(ctx, &name, format!("delete pod {name}"))
                .await?;
            facts.deleted_pods.push(name.clone());
            Ok(format!("deleted pod {name}"))
        }
        Action::Create(object) => {
            let what = format!("created {} {}", object.kind().noun(), object.name());
            match object {
                NewObject::Pod(pod) => io.create_all(ctx, vec![*pod], "pod").await?,
                NewObject::Pvc(pvc) => io.create_all(ctx, vec![*pvc], "PVC").await?,
                NewObject::Service(service) => {
                    io.create_all(ctx, vec![*service], "service").await?
                }
                NewObject::ConfigMap(map) => io.create_all(ctx, vec![*map], "configmap").await?,
            };
            Ok(what)
        }
        Action::Patch { kind, name, patch } => {
            let what = format!("patch {} {name}", kind.noun());
            tracing::info!(%name, kind = kind.noun(), "patching");
            match kind {
                ObjectKind::Pods => io.patch::<Pod>(ctx, &name, &patch, what.clone()).await?,
                ObjectKind::Pvcs => {
                    io.patch::<PersistentVolumeClaim>(ctx, &name, &patch, what.clone())
                        .await?;
                }
                ObjectKind::Services => {
                    io.patch::<Service>(ctx, &name, &patch, what.clone())
                        .await?;
                }
                ObjectKind::ConfigMap => {
                    io.patch::<ConfigMap>(ctx, &name, &patch, what.clone())
                        .await?;
                }
            }
            Ok(what)
        }
        Action::Delete { kind, name } => {
            let what = format!("delete {} {name}", kind.noun());
            tracing::info!(%name, kind = kind.noun(), "deleting");
            match kind {
                ObjectKind::Pods => {
                    io.delete::<Pod>(ctx, &name, what.clone()).await?;
                    facts.deleted_pods.push(name);
                }
                ObjectKind::Pvcs => {
                    io.delete::<PersistentVolumeClaim>(ctx, &name, what.clone())
                        .await?;
                }
                ObjectKind::Services => io.delete::<Service>(ctx, &name, what.clone()).await?,
                ObjectKind::ConfigMap => io.delete::<ConfigMap>(ctx, &name, what.clone()).await?,
            }
            Ok(what)
        }
        Action::UpdateDenyList { stage } => update_deny_list(ctx, snapshot, io, stage).await,
        Action::WriteStatus(mutations) => {
            io.apply_status(ctx, snapshot, &mutations).await?;
            Ok("status written".to_owned())
        }
        Action::StageStatusDecision(decision) => {
            io.stage_status_if_changed(snapshot, &decision.status);
            io.set_judged_reconciled(decision.reconciled);
            Ok("status decided".to_owned())
        }
        Action::StageStatus(mutations) => {
            io.stage_mutations(snapshot, &mutations)?;
            Ok("status staged".to_owned())
        }
        Action::Event {
            reason,
            action,
            note,
        } => {
            publish(ctx, snapshot.cluster(), reason, &action, note).await;
            Ok("event".to_owned())
        }
    }
}

/// Reads the deny list, changes what the spec asks, stages the list as it then is.
async fn update_deny_list(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    stage: bool,
) -> Result<String, StepError> {
    let admin = io.admin(ctx, snapshot)?;
    let live = admin
        .deny_list()
        .await
        .map_err(StepError::admin("read the operator lock deny list"))?;
    let (add, remove) = locks::deny_list_changes(snapshot, &live);
    let mut listed: Vec<String> = live
        .iter()
        .filter(|id| !remove.contains(id))
        .chain(&add)
        .cloned()
        .collect();
    listed.sort();
    listed.dedup();
    if stage {
        io.stage_mutations(snapshot, &[StatusMutation::SetLockDenyList(listed)])?;
    }
    if add.is_empty() && remove.is_empty() {
        return Ok("deny list unchanged".to_owned());
    }
    tracing::info!(?add, ?remove, "updating the operator lock deny list");
    admin
        .update_deny_list(&add, &remove)
        .await
        .map_err(StepError::admin("update the operator lock deny list"))?;
    publish(
        ctx,
        snapshot.cluster(),
        EventReason::LockDenyListChanged,
        "UpdateLockConfiguration",
        format!("deny list: added {add:?}, removed {remove:?}"),
    )
    .await;
    Ok("deny list updated".to_owned())
}

#[cfg(test)]
#[path = "executor_tests.rs"]
mod tests;
