//! The groups a step last found nothing to do for, kept across passes: a steady pass over
//! a large cluster asks the step's per-group question again only for the groups whose
//! inputs changed (issue 37: walking 1000 groups' pods and PVCs in every step was most of
//! a steady pass after the observation memo).
//!
//! A group's inputs are those of its observation (`observe_memo.rs`): the cluster
//! fingerprint, its status entry, its pod, PVC and Service by UID and resourceVersion and
//! what `status json` reports of its processes. The observation memo gives each set of
//! inputs an epoch, which the pass's observation records in the snapshot; a step may
//! reuse "nothing to do" for a group only while its epoch is the one the answer was given
//! for. Only "nothing to do" is kept, so a stale answer could only delay an action, never
//! make one; debug builds check every reuse against the step's own answer.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::group::GroupView;

/// The groups found clean, by group ID, with the epoch of their inputs then.
type CleanByGroup = HashMap<String, u64>;

/// See the module documentation. Shared by the passes of one operator, by cluster
/// (`namespace/name`) and step.
#[derive(Debug, Default)]
pub(crate) struct CleanMemo {
    clusters: Mutex<HashMap<(String, &'static str), CleanByGroup>>,
}

impl CleanMemo {
    /// The groups `step` found clean in cluster `key`, taken out of the memo until the
    /// returned value is dropped; `epochs` are the snapshot's (by group slot).
    pub(crate) fn take<'a>(
        &'a self,
        key: String,
        step: &'static str,
        epochs: &'a [Option<u64>],
    ) -> CleanGroups<'a> {
        let known = self
            .clusters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(key.clone(), step))
            .unwrap_or_default();
        let kept = HashMap::with_capacity(known.len());
        CleanGroups {
            memo: self,
            key,
            step,
            epochs,
            known,
            kept,
        }
    }

    /// Forgets cluster `key` (it was deleted).
    pub(crate) fn forget(&self, key: &str) {
        self.clusters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(cluster, _), _| cluster != key);
    }
}

/// One step's clean groups of one cluster during one `decide`: put back (only the
/// groups asked about) when dropped.
#[derive(Debug)]
pub(crate) struct CleanGroups<'a> {
    memo: &'a CleanMemo,
    key: String,
    step: &'static str,
    epochs: &'a [Option<u64>],
    known: CleanByGroup,
    kept: CleanByGroup,
}

impl CleanGroups<'_> {
    /// The epoch of `group`'s inputs in this snapshot, when its observation recorded one.
    fn epoch(&self, group: &GroupView<'_>) -> Option<u64> {
        self.epochs.get(group.slot).copied().flatten()
    }

    /// Whether the step found `group` clean with the inputs it has now (it stays so for
    /// the next pass).
    pub(crate) fn was_clean(&mut self, group: &GroupView<'_>) -> bool {
        let Some(epoch) = self.epoch(group) else {
            return false;
        };
        // The key moves from one map to the other: no copy of the ID per group and pass.
        match self.known.remove_entry(group.id()) {
            Some((id, known)) if known == epoch => {
                self.kept.insert(id, epoch);
                true
            }
            _ => false,
        }
    }

    /// Records that the step found `group` clean with the inputs it has now.
    pub(crate) fn mark_clean(&mut self, group: &GroupView<'_>) {
        if let Some(epoch) = self.epoch(group) {
            self.kept.insert(group.id().to_owned(), epoch);
        }
    }
}

impl Drop for CleanGroups<'_> {
    fn drop(&mut self) {
        let kept = std::mem::take(&mut self.kept);
        self.memo
            .clusters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((std::mem::take(&mut self.key), self.step), kept);
    }
}

#[cfg(test)]
#[path = "clean_memo_tests.rs"]
mod tests;
