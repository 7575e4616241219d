//! What a pass knows besides its snapshot, in the parts that each have one writer:
//!
//! - [`PassSettings`]: what the pass starts from (the operator's settings, the tools
//!   it lacks), set by the driver, read by the steps;
//! - [`Remembered`]: what the operator remembers of the cluster between passes, set by
//!   the driver and kept up to date by the executor;
//! - [`PassRecord`]: what the executor did so far this pass, for its shared rules;
//! - [`Answers`]: what the executor's query actions learned, until the step that asked
//!   concludes from it (and, for the exclusion lists, the steps after);
//! - [`ExecutorRules`]: switches of the shared rules, all on but in mutation tests;
//! - [`LookAhead`]: the pass's look-ahead (the pod deletions to come, UpdateStatus's
//!   decision), computed outside the steps' pure `decide`s, per snapshot version.

use std::collections::BTreeSet;
use std::time::Duration;

pub(crate) use super::super::context::ExecutorRules;
use super::super::model::replace_only::ReplacePolicy;
use super::super::pod_agent::config_query::PodConfigResult;
use super::super::safety::restart_sync::RestartLists;
use super::super::snapshot::ClusterSnapshot;
use super::super::status::StatusDecision;
use super::super::versions::retries::KillRecord;
use crate::fdb::MissingTool;

/// Groups whose pods are about to be deleted while they host a coordinator, and why
/// (the forecast of `pass/forecast.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UpcomingDeletions {
    /// The groups (none of them may keep a coordinator).
    pub groups: BTreeSet<String>,
    /// Which step deletes them, and why.
    pub reason: String,
}

/// What the pass knows besides its snapshot: see the module documentation.
#[derive(Debug, Default)]
pub(crate) struct PassFacts {
    /// What the pass starts from.
    pub settings: PassSettings,
    /// What the operator remembers of the cluster between passes.
    pub remembered: Remembered,
    /// What the executor did so far this pass.
    pub record: PassRecord,
    /// What the executor's query actions learned.
    pub answers: Answers,
    /// Which of the executor's rules apply (all of them, but in mutation tests).
    pub rules: ExecutorRules,
    /// The pass's look-ahead.
    pub look_ahead: LookAhead,
}

/// What a pass starts from: set by the driver, read by the steps.
#[derive(Debug, Default, Clone)]
pub(crate) struct PassSettings {
    /// Which changes ReplaceMisconfiguredPods owns (`--replace-on-security-context-change`).
    pub replace_policy: ReplacePolicy,
    /// The operator's wait for the database (`--database-wait`), which waits after a
    /// kill start from.
    pub database_wait: Duration,
    /// The tools the cluster needs now (its running version's, an incompatible
    /// upgrade's target's) that the operator does not have
    /// ([`crate::controller::versions::tool_choice::missing_tools`]).
    pub missing_tools: Vec<MissingTool>,
}

/// What the operator remembers of the cluster between passes: read by the driver at the
/// start of the pass, kept up to date by the executor's bookkeeping actions.
#[derive(Debug, Default, Clone)]
pub(crate) struct Remembered {
    /// This instance killed every process for an upgrade and has not cleared the
    /// pending-upgrade list since.
    pub upgrade_cleanup_pending: bool,
    /// This instance's kills for the cluster's upgrade, for the back-off between them.
    pub upgrade_kills: Option<KillRecord>,
    /// The refusals of this cluster's exclusions since the last one that went through,
    /// for the wait before the next attempt.
    pub exclusion_refusal: Option<crate::controller::removals::exclusion_retries::RefusalRecord>,
}

/// What the executor did so far this pass: what its shared rules (one disruption,
/// pacing, the lock) and the upgrade's lone kill read.
#[derive(Debug, Default, Clone)]
pub(crate) struct PassRecord {
    /// Pods this pass deleted, in order.
    pub deleted_pods: Vec<String>,
    /// The global lock was taken (or confirmed) this pass.
    pub lock_held: bool,
    /// What this pass did that disrupts the database (a kill, a pod deletion), first one.
    pub disrupted: Option<String>,
    /// What this pass did that causes a recovery, first one.
    pub recovery_caused: Option<String>,
    /// This pass's first exclusion (`exclude <targets>`): the upgrade's cluster-wide kill
    /// then waits for the next pass, so that it runs alone.
    pub excluded: Option<String>,
}

/// What the executor's query actions learned (`AskPodAgents`, `JoinPendingUpgrades`,
/// `SyncRestartLists`, `SyncExclusionLists`), for the `conclude` of the step that asked.
#[derive(Debug, Default, Clone)]
pub(crate) struct Answers {
    /// The answers of the last `AskPodAgents`, one per candidate, until the step that
    /// asked takes them.
    pub pod_config_answers: Option<Vec<PodConfigResult>>,
    /// The process groups on the pending-upgrade list for the target once
    /// `JoinPendingUpgrades` wrote this instance's, until the step takes them.
    pub pending_upgrade_agreed: Option<BTreeSet<String>>,
    /// The database's restart lists as `SyncRestartLists` left them, until the step
    /// takes them.
    pub restart_lists: Option<RestartLists>,
    /// The database's exclusion lists as `SyncExclusionLists` left them (`pending` and
    /// `ready` for exclusion), for ExcludeInstances and, after it, ChangeCoordinators.
    pub exclusion_lists: Option<RestartLists>,
}

/// The pass's look-ahead, per snapshot version: filled by the steps' `look_ahead` (see
/// `steps/mod.rs`) before their pure `decide`, which reads it, or computes the
/// same value itself when it was not filled for this snapshot (a test calling `decide`).
#[derive(Debug, Default, Clone)]
pub(crate) struct LookAhead {
    /// The forecast of pod deletions, for the snapshot version it was built from.
    upcoming: Option<(u64, Option<UpcomingDeletions>)>,
    /// UpdateStatus's decision, for the snapshot version it was made from.
    status: Option<(u64, StatusDecision)>,
}

impl LookAhead {
    /// The forecast of pod deletions for `snapshot`, when it was filled for its version.
    pub(crate) fn upcoming(
        &self,
        snapshot: &ClusterSnapshot,
    ) -> Option<&Option<UpcomingDeletions>> {
        self.upcoming
            .as_ref()
            .filter(|(version, _)| *version == snapshot.version())
            .map(|(_, upcoming)| upcoming)
    }

    /// Keeps the forecast of pod deletions for `snapshot`, made by `forecast` unless it
    /// was made for its version already.
    pub(crate) fn fill_upcoming(
        &mut self,
        snapshot: &ClusterSnapshot,
        forecast: impl FnOnce() -> Option<UpcomingDeletions>,
    ) {
        if self.upcoming(snapshot).is_none() {
            self.upcoming = Some((snapshot.version(), forecast()));
        }
    }

    /// UpdateStatus's decision for `snapshot`, when it was made for its version.
    pub(crate) fn status(&self, snapshot: &ClusterSnapshot) -> Option<&StatusDecision> {
        self.status
            .as_ref()
            .filter(|(version, _)| *version == snapshot.version())
            .map(|(_, decision)| decision)
    }

    /// Keeps UpdateStatus's decision for `snapshot`, made by `decide` unless it was made
    /// for its version already (the last UpdateStatus of a pass that changed nothing
    /// reuses the first's).
    pub(crate) fn fill_status<E>(
        &mut self,
        snapshot: &ClusterSnapshot,
        decide: impl FnOnce() -> Result<StatusDecision, E>,
    ) -> Result<(), E> {
        if self.status(snapshot).is_none() {
            self.status = Some((snapshot.version(), decide()?));
        }
        Ok(())
    }
}

impl PassFacts {
    /// The facts at the start of a pass under `policy`.
    pub(crate) fn new(replace_policy: ReplacePolicy) -> Self {
        Self {
            settings: PassSettings {
                replace_policy,
                ..PassSettings::default()
            },
            ..Self::default()
        }
    }
}
