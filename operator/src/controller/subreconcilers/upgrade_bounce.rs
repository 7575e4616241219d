//! The cluster-wide kill of an incompatible upgrade (operator-behavior §9 step 4), run
//! by BounceProcesses before anything else: while an incompatible upgrade is pending,
//! BounceProcesses does only this (a partial bounce of IncorrectCommandLine processes
//! would restart some processes on the new binary and split the cluster). The decision is
//! [`crate::controller::upgrade::decide_bounce`].

use std::time::Duration;

use super::super::context::Context;
use super::super::errors::StepError;
use super::super::events::{EventReason, publish};
use super::super::outcome::StepOutcome;
use super::super::pass_io::PassIo;
use super::super::snapshot::ClusterSnapshot;
use super::super::upgrade::{UpgradeBounce, decide_bounce};
use crate::fdb::AdminClient as _;

/// Runs the upgrade's kill when one is pending: `None` when no incompatible upgrade is
/// pending (BounceProcesses goes on with its own work), else how the step ends (it always
/// ends the pass: waiting for the pods, or for the killed processes to come back).
pub async fn reconcile(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
) -> Result<Option<StepOutcome>, StepError> {
    match decide_bounce(snapshot)? {
        UpgradeBounce::NotUpgrading => Ok(None),
        UpgradeBounce::Wait(wait) => Ok(Some(StepOutcome::Requeue {
            delay: super::bounce_processes::wait_delay(ctx, snapshot),
            reason: wait.to_string(),
        })),
        UpgradeBounce::KillAll { target, addresses } => {
            let listed: Vec<String> = addresses.iter().map(ToString::to_string).collect();
            tracing::info!(
                %target,
                processes = addresses.len(),
                "killing every process of the cluster for the upgrade"
            );
            let admin = io.admin(ctx, snapshot)?;
            admin
                .kill(&addresses)
                .await
                .map_err(StepError::admin(format!(
                    "kill every process for the upgrade to {target}"
                )))?;
            publish(
                ctx,
                snapshot.cluster(),
                EventReason::UpgradeBounce,
                "BounceProcesses",
                format!(
                    "killed all {} processes at once to restart them on {target}: {}",
                    listed.len(),
                    listed.join(" ")
                ),
            )
            .await;
            Ok(Some(StepOutcome::Requeue {
                delay: Duration::max(ctx.settings.database_wait, Duration::from_secs(1)),
                reason: format!(
                    "killed {} processes for the upgrade to {target}; waiting for them to restart on it",
                    listed.len()
                ),
            }))
        }
    }
}
