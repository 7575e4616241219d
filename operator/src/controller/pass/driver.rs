//! The reconcile driver: one pass runs the ordered subreconcilers and stops at the first
//! requeue (docs/operator.md, "The steps"), with a tracing span and metrics per step.
//! Before each step the pass's snapshot is read or refreshed (see
//! [`super::super::snapshot`]); each step decides from it and acts through the pass's I/O.

use std::time::Instant;

use fdb_shared::api::{FoundationDBCluster, FoundationDBClusterStatus};
use fdb_shared::cluster_math::desired_process_counts;
use fdb_shared::validation::ValidatedCluster;
use kube::{Api, ResourceExt};
use tracing::Instrument;

use super::super::context::Context;
use super::super::errors::{ReconcileError, StepError};
use super::super::events::EventReason;
use super::super::production::metrics::{OutcomeLabels, PassLabels, StepLabels};
use super::super::safety::lock_release;
use super::super::steps::ordered_steps;
use super::io::publish;
use super::outcome::{PassOutcome, PassReport, StepOutcome, StepWait};
use super::plan::PassFacts;
use super::state::PassState;

/// Runs one reconcile pass over the cluster `namespace/name`.
pub async fn run_pass(
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<PassReport, ReconcileError> {
    let span = tracing::info_span!("reconcile", cluster = name, namespace);
    let result = run_pass_inner(ctx, namespace, name).instrument(span).await;
    let label = match &result {
        Ok(PassReport {
            outcome: PassOutcome::Completed,
            ..
        }) => "completed",
        Ok(_) => "requeue",
        Err(_) => "error",
    };
    ctx.metrics
        .passes
        .get_or_create(&PassLabels { result: label })
        .inc();
    if let Err(ReconcileError::ClusterNotFound { .. }) = &result {
        ctx.metrics.forget_cluster(namespace, name);
        ctx.pod_config.forget(namespace, name);
        ctx.desired.forget(namespace, name);
    }
    result
}

/// Sets the cluster's desired and reconciled process group gauges from its latest
/// status: reconciled groups are live (not marked for removal) and have no condition.
fn record_groups(
    ctx: &Context,
    namespace: &str,
    cluster: &FoundationDBCluster,
    status: &FoundationDBClusterStatus,
) {
    let desired = i64::from(desired_process_counts(&cluster.spec).total());
    let reconciled = status
        .process_groups
        .iter()
        .filter(|g| !g.is_marked_for_removal() && g.process_group_conditions.is_empty())
        .count();
    let reconciled = i64::try_from(reconciled).unwrap_or(i64::MAX);
    ctx.metrics
        .record_groups(namespace, &cluster.name_any(), desired, reconciled);
}

/// The cluster to reconcile, validated; `None` when `spec.skip` asks to leave it alone.
/// An invalid spec is reported with an InvalidSpec Event and ends the pass, and so is a
/// pod template the operator's policy refuses (PodTemplateRefused).
async fn read_cluster(
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<Option<ValidatedCluster>, ReconcileError> {
    let api: Api<FoundationDBCluster> = Api::namespaced(ctx.kube.clone(), namespace);
    let cluster = api
        .get_opt(name)
        .await
        .map_err(|source| ReconcileError::ReadCluster {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source,
        })?
        .ok_or_else(|| ReconcileError::ClusterNotFound {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        })?;
    if cluster.spec.skip() {
        tracing::info!("spec.skip is set; not reconciling");
        return Ok(None);
    }
    if let Err(refused) = ctx.settings.pod_template_policy.check_cluster(&cluster) {
        // Before anything is created or changed for it: a refused template must not
        // reach a pod (issue 38 item 3, FoundationDB/fdb-kubernetes-operator#2487).
        publish(
            ctx,
            &cluster,
            EventReason::PodTemplateRefused,
            "Validate",
            refused.to_string(),
        )
        .await;
        return Err(refused.into());
    }
    match ValidatedCluster::new(cluster.clone()) {
        Ok(validated) => {
            for warning in validated.warnings() {
                tracing::warn!(%warning, "spec warning");
            }
            Ok(Some(validated))
        }
        Err(invalid) => {
            publish(
                ctx,
                &cluster,
                EventReason::InvalidSpec,
                "Validate",
                invalid.to_string(),
            )
            .await;
            Err(invalid.into())
        }
    }
}

async fn run_pass_inner(
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<PassReport, ReconcileError> {
    let Some(validated) = read_cluster(ctx, namespace, name).await? else {
        return Ok(PassReport::new(PassOutcome::Completed, false));
    };
    let mut pass = PassState::new(validated, ctx.clock.now());
    let (outcome, waits, locked) = run_steps(ctx, &mut pass, namespace, name).await?;
    finish(ctx, &mut pass, namespace, outcome, waits, locked).await
}

/// Runs the ordered steps until one ends the pass; the pass's outcome (the first
/// delayed requeue when every step went on) and every wait of the steps that let the
/// pass go on, and whether the pass took the operator lock for an action.
async fn run_steps(
    ctx: &Context,
    pass: &mut PassState,
    namespace: &str,
    name: &str,
) -> Result<(PassOutcome, Vec<StepWait>, bool), ReconcileError> {
    let mut facts = PassFacts::new(ctx.settings.replace_policy());
    facts.rules = ctx.settings.executor_rules;
    facts.settings.database_wait = ctx.settings.database_wait;
    // What the operator remembers of this cluster between passes.
    facts.remembered.upgrade_cleanup_pending = ctx.upgrade_cleanup.is_marked(namespace, name);
    facts.remembered.upgrade_kills = ctx.upgrade_kills.record(namespace, name);
    facts.remembered.exclusion_refusal = ctx.exclusion_refusals.record(namespace, name);
    facts.settings.missing_tools =
        super::super::versions::tool_choice::missing_tools(ctx.admin.as_ref(), pass.cluster());
    // Every step that waits while the pass goes on, reported all (not only the first).
    let mut waits: Vec<StepWait> = Vec::new();
    for step in ordered_steps() {
        let step_name = step.name();
        let started = Instant::now();
        let span = tracing::debug_span!("step", step = step_name, cluster = name, namespace);
        let result = async {
            let (snapshot, io) = pass.prepare(ctx).await?;
            step.reconcile(ctx, snapshot, io, &mut facts).await
        }
        .instrument(span)
        .await;
        // A cached pod the step asked for did not decode (not expected: the cache
        // checks each spec it stores): the step saw no pod there, so the pass stops.
        let result = match pass.decode_failure() {
            Some(why) => Err(StepError::InvalidState(why)),
            None => result,
        };
        ctx.metrics
            .step_seconds
            .get_or_create(&StepLabels { step: step_name })
            .observe(started.elapsed().as_secs_f64());
        match result {
            Ok(StepOutcome::Continue) => {}
            Ok(StepOutcome::DelayedRequeue { delay, reason }) => {
                tracing::info!(step = step_name, ?delay, %reason, "delayed requeue");
                waits.push(StepWait {
                    step: step_name,
                    delay,
                    reason,
                });
            }
            Ok(StepOutcome::Requeue { delay, reason }) => {
                tracing::info!(step = step_name, ?delay, %reason, "requeue");
                ctx.metrics
                    .requeues
                    .get_or_create(&OutcomeLabels {
                        step: step_name,
                        category: "waiting",
                    })
                    .inc();
                let outcome = PassOutcome::Requeue {
                    delay,
                    reason,
                    step: step_name,
                };
                return Ok((outcome, waits, facts.record.lock_held));
            }
            Err(source) => return Err(step_failed(ctx, pass, step_name, source).await),
        }
    }
    let outcome = waits
        .first()
        .map_or(PassOutcome::Completed, |first| PassOutcome::Requeue {
            delay: first.delay,
            reason: first.reason.clone(),
            step: first.step,
        });
    Ok((outcome, waits, facts.record.lock_held))
}

/// Reports a failed step (the status the steps before staged is still written: what
/// they observed and decided is still true) and ends the pass with its error.
async fn step_failed(
    ctx: &Context,
    pass: &mut PassState,
    step_name: &'static str,
    source: StepError,
) -> ReconcileError {
    tracing::warn!(step = step_name, error = %fdb_shared::error_chain::ErrorChain(&source), "step failed");
    if let Err(error) = pass.flush(ctx).await {
        tracing::warn!(error = %fdb_shared::error_chain::ErrorChain(&error), "cannot write the status after a failed step");
    }
    ctx.metrics
        .failures
        .get_or_create(&OutcomeLabels {
            step: step_name,
            category: source.category(),
        })
        .inc();
    publish(
        ctx,
        pass.cluster(),
        EventReason::StepFailed,
        step_name,
        fdb_shared::error_chain::chain_text(&source),
    )
    .await;
    ReconcileError::Step {
        step: step_name,
        source,
    }
}

/// Ends the pass: its one status write, the gauges, whether the cluster is reconciled,
/// and the operator lock given up unless an operation of this instance is under way
/// (`locked`: the pass took the lock for an action).
async fn finish(
    ctx: &Context,
    pass: &mut PassState,
    namespace: &str,
    outcome: PassOutcome,
    waits: Vec<StepWait>,
    locked: bool,
) -> Result<PassReport, ReconcileError> {
    // The pass's one status write (unless a step had to persist earlier).
    pass.flush(ctx)
        .await
        .map_err(|source| ReconcileError::Step {
            step: "UpdateStatus",
            source,
        })?;
    // Borrowed: copying a large cluster's status here was a measurable part of a pass.
    let cluster = pass.cluster();
    let status = pass.latest_status();
    record_groups(ctx, namespace, cluster, status);
    let reconciled_generation = status.generations.reconciled;
    // The final UpdateStatus must have judged this pass's observation Reconciled: the
    // reconciled generation alone stays set after a process goes missing.
    let reconciled = outcome == PassOutcome::Completed
        && pass.judged_reconciled() == Some(true)
        && reconciled_generation == Some(cluster.metadata.generation.unwrap_or(0));
    // An instance with nothing of its own under way gives the operator lock up, so the
    // other instances sharing the database need not wait for it to expire while this
    // cluster waits for something else (safety/lock_release.rs). Only logged on failure:
    // the lock expires anyway.
    let name = pass.cluster().metadata.name.clone().unwrap_or_default();
    if fdb_shared::cluster_math::uses_locks(&pass.cluster().spec)
        && !ctx.lock_releases.is_released(namespace, &name)
    {
        let released = async {
            let (snapshot, io) = pass.prepare(ctx).await?;
            let in_flight = lock_release::in_flight(snapshot, locked);
            match lock_release::decide_at_pass_end(reconciled, in_flight) {
                lock_release::PassEndLock::Release => {
                    super::super::safety::locks::release(ctx, snapshot, io).await
                }
                lock_release::PassEndLock::Keep(why) => {
                    tracing::debug!(%why, "keeping the operator lock");
                    Ok(())
                }
            }
        }
        .await;
        if let Err(error) = released {
            tracing::warn!(error = %fdb_shared::error_chain::ErrorChain(&error), "could not give the operator lock up");
        }
    }
    Ok(PassReport {
        outcome,
        reconciled,
        waits,
    })
}
