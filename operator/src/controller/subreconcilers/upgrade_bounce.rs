//! The cluster-wide kill of an incompatible upgrade (operator-behavior §9 step 4), run
//! by BounceProcesses before anything else: while an incompatible upgrade is pending,
//! BounceProcesses does only this (a partial bounce of IncorrectCommandLine processes
//! would restart some processes on the new binary and split the cluster). The decision is
//! [`crate::controller::upgrade::decide_bounce`]. `automationOptions.killProcesses:
//! false` holds the kill back, as it holds back every other restart.
//!
//! With locks in use, several operator instances may share the database: each takes the
//! lock, adds its ready process groups to the pending-upgrade list, and kills only when
//! every process group of the database still on the old version is on the list
//! ([`crate::controller::upgrade::check_agreement`]). An instance that has to wait for
//! the others gives the lock up, so they can take it and add theirs. The one that kills
//! clears the list afterwards, retrying in later passes while the database recovers from
//! the kill ([`crate::controller::upgrade_cleanup`]); if it crashes first, the entries
//! left behind name the old target and are dropped by the next upgrade's first write.

use std::time::Duration;

use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;

use super::super::context::Context;
use super::super::errors::StepError;
use super::super::events::EventReason;
use super::super::executor;
use super::super::locks;
use super::super::outcome::StepOutcome;
use super::super::pass_io::PassIo;
use super::super::plan::{Action, PassFacts, Plan, Planned, Wait, WaitOn};
use super::super::safety::{self, LockedAction, Refusal};
use super::super::snapshot::ClusterSnapshot;
use super::super::upgrade::{
    Agreement, UpgradeBounce, UpgradeWait, check_agreement, decide_bounce, plan_pending_list,
};
use crate::fdb::AdminClient as _;
use kube::ResourceExt as _;

/// Runs the upgrade's kill when one is pending: `None` when no incompatible upgrade is
/// pending (BounceProcesses goes on with its own work), else how the step ends (it always
/// ends the pass: waiting for the pods, for the other instances, or for the killed
/// processes to come back).
pub async fn reconcile(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    facts: &mut PassFacts,
) -> Result<Option<StepOutcome>, StepError> {
    clear_after_kill(ctx, snapshot, io).await?;
    let (target, addresses, agreement) = match decide_bounce(snapshot)? {
        UpgradeBounce::NotUpgrading => return Ok(None),
        UpgradeBounce::Wait(wait) => return Ok(Some(wait_outcome(ctx, snapshot, &wait))),
        UpgradeBounce::KillAll {
            target,
            addresses,
            agreement,
        } => (target, addresses, agreement),
    };
    if !snapshot.spec().automation_options.kill_processes() {
        // The user turned the operator's restarts off: the upgrade stays staged (every
        // group IncorrectCommandLine) until they turn them on or restart the processes
        // themselves. The rest of the pass goes on.
        let reason = format!(
            "the upgrade to {target} is ready to restart every process, but automationOptions.killProcesses is false"
        );
        tracing::info!(%reason);
        // Only the user can change this, and their change wakes the operator: no need to
        // look often.
        return Ok(Some(StepOutcome::DelayedRequeue {
            delay: Duration::from_secs(300),
            reason,
        }));
    }
    let refused = format!("the upgrade to {target} is ready to restart every process: ");
    let kill = kill_all(&target, &addresses);
    // The shared rules first (one disruption, pacing), before the pending-upgrade list
    // is touched; the executor checks them again when it runs the kill.
    let progress = executor::PlanProgress::default();
    for planned in &kill.actions {
        if let executor::Admission::Refused(refusal) =
            executor::admit(snapshot, facts, planned, &progress)
        {
            let waits_on = match refusal {
                Refusal::PodDeletedThisPass { .. } | Refusal::DisruptedThisPass { .. } => {
                    WaitOn::Kubernetes
                }
                _ => WaitOn::Database,
            };
            let wait = Wait::new(waits_on, format!("{refused}{refusal}"));
            return Ok(Some(executor::requeue(ctx, "BounceProcesses", wait)));
        }
    }
    if let Some(agreement) = &agreement
        && let Some(outcome) = agree(ctx, snapshot, io, facts, &target, agreement).await?
    {
        return Ok(Some(outcome));
    }
    if let Some(wait) = executor::run_plan(ctx, snapshot, io, facts, kill).await? {
        return Ok(Some(executor::requeue(ctx, "BounceProcesses", wait)));
    }
    if agreement.is_some() {
        // The kill happened: the list has served its purpose. The database is down for
        // the restart now, so the clear is tried once it is available again.
        ctx.upgrade_cleanup.mark(&cluster_key(snapshot));
    }
    Ok(Some(StepOutcome::Requeue {
        delay: Duration::max(ctx.settings.database_wait, Duration::from_secs(1)),
        reason: format!(
            "killed {} processes for the upgrade to {target}; waiting for them to restart on it",
            addresses.len()
        ),
    }))
}

fn cluster_key(snapshot: &ClusterSnapshot) -> String {
    let cluster = snapshot.cluster();
    format!(
        "{}/{}",
        cluster.namespace().unwrap_or_default(),
        cluster.name_any()
    )
}

/// Clears the pending-upgrade list this instance's kill left, once the database is
/// available again. A failure is only logged: it is tried again next pass, and entries
/// left behind never block a later upgrade.
async fn clear_after_kill(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
) -> Result<(), StepError> {
    let key = cluster_key(snapshot);
    if !ctx.upgrade_cleanup.is_marked(&key) || safety::available(snapshot).is_err() {
        return Ok(());
    }
    match io.admin(ctx, snapshot)?.clear_pending_upgrades().await {
        Ok(()) => {
            tracing::info!("cleared the pending-upgrade list after the upgrade's kill");
            ctx.upgrade_cleanup.done(&key);
        }
        Err(error) => {
            tracing::warn!(%error, "could not clear the pending-upgrade list yet");
        }
    }
    Ok(())
}

fn wait_outcome(ctx: &Context, snapshot: &ClusterSnapshot, wait: &UpgradeWait) -> StepOutcome {
    StepOutcome::Requeue {
        delay: crate::controller::requeue::kill_wait_delay(ctx.settings.database_wait, snapshot),
        reason: wait.to_string(),
    }
}

/// Takes the lock, adds this instance's groups to the pending-upgrade list and checks
/// that every group of the database agreed: `None` when the kill may go ahead.
async fn agree(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    facts: &mut PassFacts,
    target: &FdbVersion,
    agreement: &Agreement,
) -> Result<Option<StepOutcome>, StepError> {
    if let Err(refusal) =
        executor::take_lock(ctx, snapshot, io, facts, LockedAction::Bounce).await?
    {
        return Ok(Some(StepOutcome::Requeue {
            delay: ctx.settings.database_wait,
            reason: format!(
                "the upgrade to {target} waits to join the pending-upgrade list: {refusal}"
            ),
        }));
    }
    let admin = io.admin(ctx, snapshot)?;
    let listed = admin
        .pending_upgrades()
        .await
        .map_err(StepError::admin("read the pending-upgrade list"))?;
    let update = plan_pending_list(&listed, target, &agreement.groups);
    if !update.add.is_empty() || !update.stale.is_empty() {
        tracing::info!(
            lock_id = %agreement.lock_id,
            added = update.add.len(),
            stale = update.stale.len(),
            "adding the ready process groups to the pending-upgrade list"
        );
        admin
            .update_pending_upgrades(&update.add, &update.stale)
            .await
            .map_err(StepError::admin(format!(
                "add {} process groups to the pending-upgrade list for {target}",
                update.add.len()
            )))?;
    }
    let Some(status) = snapshot.database_status() else {
        return Ok(Some(StepOutcome::Requeue {
            delay: ctx.settings.database_wait,
            reason: format!("the upgrade to {target} waits for the database status"),
        }));
    };
    match check_agreement(status, target, &update.agreed) {
        Ok(()) => Ok(None),
        Err(wait) => {
            // The instances still missing need the lock to add their groups.
            locks::release(ctx, snapshot, io).await?;
            facts.lock_held = false;
            Ok(Some(wait_outcome(ctx, snapshot, &wait)))
        }
    }
}

/// The plan of the cluster-wide kill: locked, one disruption, a recovery.
fn kill_all(target: &FdbVersion, addresses: &[ProcessAddress]) -> Plan {
    let listed: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    tracing::info!(
        %target,
        processes = addresses.len(),
        "killing every process of the cluster for the upgrade"
    );
    let note = format!(
        "killed all {} processes at once to restart them on {target}: {}",
        listed.len(),
        listed.join(" ")
    );
    let kill = Planned::locked(Action::Kill(addresses.to_vec()), LockedAction::Bounce)
        .disrupting()
        .recovering(Some(format!(
            "killed every process for the upgrade to {target}"
        )));
    Plan::new(
        vec![
            kill,
            Planned::plain(Action::Event {
                reason: EventReason::UpgradeBounce,
                action: "BounceProcesses".to_owned(),
                note,
            }),
        ],
        format!("the upgrade to {target} is ready to restart every process: "),
    )
}
