//! What a step decides, as data: a [`Verdict`] (go on, wait, or act on a [`Plan`]) made
//! from the pass's snapshot and its [`PassFacts`]. The executor
//! (`executor.rs`) is the only place a plan becomes I/O, and the only place the
//! shared rules (the global lock, one disruption per pass, recovery pacing) are applied:
//! each action declares what it needs, no step re-checks them.

use std::time::Duration;

use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::DatabaseConfiguration;

pub use super::super::context::ExecutorRules;
use super::super::events::EventReason;
use super::super::object_kind::{NewObject, ObjectKind};
use super::super::pod_agent::config_query::PodConfigQuery;
use super::super::safety::LockedAction;
use super::super::status::StatusDecision;
use super::super::status::mutations::StatusMutation;
pub(crate) use super::facts::{PassFacts, UpcomingDeletions};
use crate::fdb::ExclusionTarget;

/// What a wait waits on: the requeue delay follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitOn {
    /// Kubernetes (pods scheduled, started, terminated).
    Kubernetes,
    /// Kubernetes, for something that takes longer than a pod starting (nodes in more
    /// zones): six times the Kubernetes wait.
    KubernetesLong,
    /// The database (processes reporting, availability, a recovery).
    Database,
    /// The kubelet projecting a changed ConfigMap into the pods.
    ConfigMap,
    /// A fixed delay.
    After(Duration),
}

/// Whether a step's waits end the pass: part of each step's type
/// (`Subreconciler::barrier`, which every step must state), read by the executor through
/// [`Barrier::ends_pass`] and nowhere else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Barrier {
    /// The steps after it read what it writes (status, lock settings, ConfigMap,
    /// objects, connection string, pod configs, configuration), or must not add to what
    /// it takes down (restarts, pod updates): a wait of it ends the pass, unless the wait
    /// is on something of its own ([`Wait::independent`]).
    Holds,
    /// It waits on something of its own (one stuck group, a failed pod, coordinators that
    /// cannot be placed now, a pod still terminating): the later steps go on, and the
    /// pass ends with the earliest of the waits.
    GoesOn,
}

impl Barrier {
    /// Whether `wait` of a step with this barrier ends the pass.
    pub(crate) fn ends_pass(self, wait: &Wait) -> bool {
        self == Self::Holds && !wait.goes_on
    }
}

/// A step that cannot act now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Wait {
    /// Why, in words a user understands.
    pub reason: String,
    /// What it waits on (when to look again).
    pub waits_on: WaitOn,
    /// It waits on something of its own: the later steps go on even when the step holds
    /// them ([`Barrier::Holds`]).
    pub goes_on: bool,
}

impl Wait {
    /// A wait on `waits_on` because of `reason`.
    pub(crate) fn new(waits_on: WaitOn, reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            waits_on,
            goes_on: false,
        }
    }

    /// A wait on `waits_on` that lets the later steps act.
    pub(crate) fn independent(waits_on: WaitOn, reason: impl Into<String>) -> Self {
        Self {
            goes_on: true,
            ..Self::new(waits_on, reason)
        }
    }
}

/// One typed I/O of a plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Action {
    /// `configure` (`new` for a new database; "already exists" is then fine).
    Configure {
        /// The configuration (boxed: it is large beside the other actions).
        configuration: Box<DatabaseConfiguration>,
        /// `configure new`.
        new: bool,
    },
    /// `exclude` (non-blocking).
    Exclude(Vec<ExclusionTarget>),
    /// `include`.
    Include(Vec<ExclusionTarget>),
    /// `coordinators`, then the new connection string into the status and an Event.
    ChangeCoordinators {
        /// The new coordinators.
        coordinators: Vec<ProcessAddress>,
        /// Why they change.
        reason: String,
    },
    /// `kill`.
    Kill(Vec<ProcessAddress>),
    /// `maintenance on <zone> <seconds>`.
    SetMaintenanceZone {
        /// The zone.
        zone: String,
        /// For how long.
        seconds: u64,
    },
    /// `maintenance off`.
    ResetMaintenanceZone,
    /// Deletes a pod of the cluster.
    DeletePod(String),
    /// Creates an object of the cluster; one already there (a stale list or cache) is
    /// fine: it exists, which is what the step wanted.
    Create(NewObject),
    /// Merge-patches an object of the cluster.
    Patch {
        /// Its kind.
        kind: ObjectKind,
        /// Its name.
        name: String,
        /// The JSON merge patch.
        patch: serde_json::Value,
    },
    /// Sets the image of one container of a pod (a strategic merge patch of that
    /// container alone): the kubelet restarts that container, not the pod.
    SetContainerImage {
        /// The pod.
        pod: String,
        /// The container's name.
        container: String,
        /// The new image.
        image: String,
    },
    /// Adds this instance's process groups to the database's pending-upgrade list for
    /// `target` (dropping entries of other versions) and leaves the groups listed for it
    /// in [`super::facts::Answers::pending_upgrade_agreed`].
    JoinPendingUpgrades {
        /// The upgrade's version.
        target: FdbVersion,
        /// This instance's groups, all ready for the kill.
        groups: Vec<String>,
    },
    /// Clears the pending-upgrade list after this instance's upgrade kill.
    ClearPendingUpgrades,
    /// Brings this instance's entries of the database's restart lists to `pending` and
    /// `ready` (process group IDs; entries of other groups of this instance are
    /// removed), then reads both lists, every instance's entries, into
    /// [`super::facts::Answers::restart_lists`].
    SyncRestartLists {
        /// This instance's groups that need a restart.
        pending: Vec<String>,
        /// Those ready for it.
        ready: Vec<String>,
    },
    /// Removes these entries (of any instance) from the ready list: the processes were
    /// just killed, their instances must confirm them again before another kill.
    ClearReadyForRestart(Vec<crate::fdb::RestartEntry>),
    /// As [`Action::SyncRestartLists`] for the exclusion lists (`pendingForExclusion`:
    /// this instance's groups that need the exclude command; `readyForExclusion`: those
    /// it would exclude now), read into [`super::facts::Answers::exclusion_lists`].
    SyncExclusionLists {
        /// This instance's groups that need the exclude command.
        pending: Vec<String>,
        /// Those ready for it.
        ready: Vec<String>,
    },
    /// Removes these entries (of any instance) from both exclusion lists: their
    /// groups were just excluded.
    ClearExclusionEntries(Vec<crate::fdb::RestartEntry>),
    /// Remembers that this instance killed for an upgrade: the list is cleared once the
    /// database is available again.
    RememberUpgradeCleanup,
    /// Counts a kill for the upgrade to this target: the next one waits out the
    /// back-off ([`crate::controller::versions::retries`]).
    RememberUpgradeKill(FdbVersion),
    /// Gives the global lock up, so that other instances can take it.
    ReleaseLock,
    /// Asks the pods' agents (HTTP sidecars, unified pods' monitors) to take the desired
    /// configuration and confirm it; the answers go into
    /// [`super::facts::Answers::pod_config_answers`] for the step's conclusion.
    AskPodAgents(PodConfigQuery),
    /// Asks a unified pod's monitor to read its configuration again (the
    /// `outdated-config-map-seen` annotation, stamped with the time it is written).
    NudgeMonitor(String),
    /// Deletes an object of the cluster (not a pod: [`Action::DeletePod`] counts as a
    /// disruption); one already gone is fine.
    Delete {
        /// Its kind.
        kind: ObjectKind,
        /// Its name.
        name: String,
    },
    /// Brings the database's operator lock deny list to what `spec.lockOptions.denyList`
    /// asks (`locks::deny_list_changes` on the list as read), publishes
    /// `LockDenyListChanged` when it changed, and stages the list into
    /// `status.locks.lockDenyList` when `stage` (the database is configured).
    UpdateDenyList {
        /// Whether the list goes into the status.
        stage: bool,
    },
    /// Applies status mutations and writes the status now.
    WriteStatus(Vec<StatusMutation>),
    /// Applies status mutations to the status written at the end of the pass.
    StageStatus(Vec<StatusMutation>),
    /// Stages UpdateStatus's whole new status (when it differs) and records its
    /// judgement of whether the cluster is Reconciled.
    StageStatusDecision(Box<StatusDecision>),
    /// Publishes an Event.
    Event {
        /// Its reason.
        reason: EventReason,
        /// Its action.
        action: String,
        /// Its note.
        note: String,
    },
}

/// An action with what it needs from the shared rules.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Planned {
    /// The I/O.
    pub action: Action,
    /// The global lock it needs (when locks are in use).
    pub lock: Option<LockedAction>,
    /// Whether it takes processes down (a kill, a pod deletion): one per pass.
    pub disrupts: bool,
    /// What of it causes a recovery, if it does: paced.
    pub recovery: Option<String>,
    /// It ends mixed versions (the upgrade's kill while processes already run the
    /// target): pacing waits neither for availability nor for the last recovery to
    /// settle, since waiting keeps those processes out of the database.
    pub ends_mixed_versions: bool,
}

impl Planned {
    /// An action that needs none of the shared rules (status, Events).
    pub(crate) fn plain(action: Action) -> Self {
        Self {
            action,
            lock: None,
            disrupts: false,
            recovery: None,
            ends_mixed_versions: false,
        }
    }

    /// An action that needs the lock for `lock`.
    pub(crate) fn locked(action: Action, lock: LockedAction) -> Self {
        Self {
            lock: Some(lock),
            ..Self::plain(action)
        }
    }

    /// This action, disrupting the database.
    #[must_use]
    pub(crate) fn disrupting(mut self) -> Self {
        self.disrupts = true;
        self
    }

    /// This action, causing a recovery (of `what`) when `what` is set.
    #[must_use]
    pub(crate) fn recovering(mut self, what: Option<String>) -> Self {
        self.recovery = what;
        self
    }

    /// This action, paced without waiting for availability or the last recovery's
    /// settling when `restores` is set: it ends mixed versions.
    #[must_use]
    pub(crate) fn ends_mixed_versions(mut self, restores: bool) -> Self {
        self.ends_mixed_versions = restores;
        self
    }
}

/// Actions to run in order, and how the step ends once they ran.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// The actions.
    pub actions: Vec<Planned>,
    /// Prefix of the reason when a shared rule refuses an action ("pods of zone z need
    /// an update; "): the refusal follows it.
    pub refused: String,
    /// How the step ends after the actions: `None` to go on, else a wait (after a kill,
    /// waiting for the processes to come back).
    pub then: Option<Wait>,
}

impl Plan {
    /// A plan of `actions` that goes on afterwards.
    pub(crate) fn new(actions: Vec<Planned>, refused: impl Into<String>) -> Self {
        Self {
            actions,
            refused: refused.into(),
            then: None,
        }
    }

    /// This plan, ending the step with `wait` after its actions.
    #[must_use]
    pub(crate) fn then(mut self, wait: Wait) -> Self {
        self.then = Some(wait);
        self
    }
}

/// What a step decides.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// Nothing to do: the pass goes on.
    Continue,
    /// It must wait.
    Wait(Wait),
    /// Run this plan.
    Act(Plan),
}

impl Verdict {
    /// A plan of `actions` that need none of the shared rules (creates, patches, status,
    /// Events) and go on afterwards; `Continue` when there are none.
    pub(crate) fn plain(actions: impl IntoIterator<Item = Action>) -> Self {
        let actions: Vec<Planned> = actions.into_iter().map(Planned::plain).collect();
        if actions.is_empty() {
            Self::Continue
        } else {
            Self::Act(Plan::new(actions, ""))
        }
    }

    /// This verdict, then `wait`: a plan's `then`, a wait when there was nothing to do.
    #[must_use]
    pub(crate) fn then(self, wait: Option<Wait>) -> Self {
        match (self, wait) {
            (verdict, None) => verdict,
            (Self::Act(plan), Some(wait)) => Self::Act(plan.then(wait)),
            (_, Some(wait)) => Self::Wait(wait),
        }
    }

    /// This verdict with `first` (an action none of the shared rules refuse) run before
    /// anything else it plans or waits for.
    #[must_use]
    pub(crate) fn preceded_by(self, first: Option<Action>) -> Self {
        let Some(first) = first else {
            return self;
        };
        match self {
            Self::Continue => Self::plain([first]),
            Self::Wait(wait) => Self::plain([first]).then(Some(wait)),
            Self::Act(mut plan) => {
                plan.actions.insert(0, Planned::plain(first));
                Self::Act(plan)
            }
        }
    }

    /// The actions this verdict plans (none for `Continue` or `Wait`).
    #[cfg(test)]
    pub(crate) fn actions(&self) -> Vec<&Action> {
        match self {
            Self::Act(plan) => plan.actions.iter().map(|p| &p.action).collect(),
            _ => Vec::new(),
        }
    }
}
