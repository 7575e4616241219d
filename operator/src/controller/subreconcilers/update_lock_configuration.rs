//! UpdateLockConfiguration (operator-behavior §8): applies `spec.lockOptions.denyList` to
//! the database's lock deny list when locks are in use (multi-region,
//! `faultDomain.zoneCount` > 1, three_data_hall; not with `lockOptions.disableLocks`).
//!
//! An entry is added when the spec lists it without `allow: true`, and removed only by a
//! spec entry with `allow: true` ([`locks::deny_list_changes`]); entries the spec does not
//! mention stay. The global lock itself is taken by the steps that act
//! ([`locks::acquire`]); a denied lock ID never gets it.
//!
//! `status.locks.lockDenyList` shows the database's deny list as read (after this
//! step's changes), as the Go operator reports it: only when locks are in use, the spec
//! has a deny list and the database is configured; empty otherwise.

use async_trait::async_trait;
use tracing::Instrument;

use super::Subreconciler;
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::events::{EventReason, publish};
use crate::controller::locks;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass_io::PassIo;
use crate::controller::snapshot::{ClusterSnapshot, DatabaseState};
use crate::controller::status_mutations::StatusMutation;
use crate::fdb::AdminClient as _;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct UpdateLockConfiguration;

#[async_trait]
impl Subreconciler for UpdateLockConfiguration {
    fn name(&self) -> &'static str {
        "UpdateLockConfiguration"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        snapshot: &ClusterSnapshot,
        io: &mut PassIo,
        _facts: &mut crate::controller::plan::PassFacts,
    ) -> Result<StepOutcome, StepError> {
        let wanted = locks::locks_in_use(snapshot)
            && !snapshot.spec().lock_options.deny_list.is_empty()
            && matches!(snapshot.database(), DatabaseState::Read(_));
        if !wanted {
            if !io.latest_status().locks.lock_deny_list.is_empty() {
                io.stage_mutations(snapshot, &[StatusMutation::SetLockDenyList(Vec::new())])?;
            }
            return Ok(StepOutcome::Continue);
        }
        async {
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
            if snapshot.status().configured {
                io.stage_mutations(snapshot, &[StatusMutation::SetLockDenyList(listed)])?;
            }
            if add.is_empty() && remove.is_empty() {
                return Ok(StepOutcome::Continue);
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
            Ok(StepOutcome::Continue)
        }
        .instrument(tracing::info_span!("UpdateLockConfiguration"))
        .await
    }
}
