//! UpdateLockConfiguration (docs/operator.md, "The steps"): applies
//! `spec.lockOptions.denyList` to the database's lock deny list when locks are in use
//! (multi-region, `faultDomain.zoneCount` > 1, three_data_hall; not with
//! `lockOptions.disableLocks`).
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

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict};
use crate::controller::safety::locks;
use crate::controller::snapshot::{ClusterSnapshot, DatabaseState};
use crate::controller::status::mutations::StatusMutation;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct UpdateLockConfiguration;

/// Decides from the snapshot: the deny list brought to the spec (read, changed and
/// staged into the status by the executor: the list lives in the database, not in the
/// snapshot), or a stale status list cleared when locks or the list are not in use.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> Verdict {
    let wanted = locks::locks_in_use(snapshot)
        && !snapshot.spec().lock_options.deny_list.is_empty()
        && matches!(snapshot.database(), DatabaseState::Read(_));
    if wanted {
        return Verdict::plain([Action::UpdateDenyList {
            stage: snapshot.status().configured,
        }]);
    }
    if snapshot.status().locks.lock_deny_list.is_empty() {
        return Verdict::Continue;
    }
    Verdict::plain([Action::StageStatus(vec![StatusMutation::SetLockDenyList(
        Vec::new(),
    )])])
}

#[async_trait]
impl Subreconciler for UpdateLockConfiguration {
    fn name(&self) -> &'static str {
        "UpdateLockConfiguration"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        Ok(decide(snapshot))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, reporting};

    const LOCKED: &str = "{version: 7.1.57, faultDomain: {zoneCount: 3}, lockOptions: {denyList: [{id: a}, {id: b, allow: true}]}}";

    #[test]
    fn the_deny_list_is_brought_to_the_spec_only_when_locks_are_in_use() {
        let read = Fixture::new(LOCKED)
            .connection_string("s:abc@10.0.0.1:4501")
            .database(reporting(&["storage-1"]))
            .status(|s| s.configured = true)
            .build();
        assert_eq!(
            decide(&read).actions(),
            [&Action::UpdateDenyList { stage: true }]
        );
        let unreadable = Fixture::new(LOCKED)
            .connection_string("s:abc@10.0.0.1:4501")
            .unreadable()
            .build();
        assert_eq!(decide(&unreadable), Verdict::Continue);
        let stale = Fixture::new("version: 7.1.57")
            .status(|s| s.locks.lock_deny_list = vec!["a".into()])
            .build();
        assert_eq!(
            decide(&stale).actions(),
            [&Action::StageStatus(vec![StatusMutation::SetLockDenyList(
                Vec::new()
            )])]
        );
    }
}
