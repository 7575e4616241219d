//! The executor's routing of actions, checked by the compiler: [`route`] sorts every
//! [`Action`] into exactly one family (one exhaustive match, no catch-all), and each
//! family's performer in `perform.rs` matches its own enum, so an action can reach no
//! performer that does not handle it. A new `Action` variant does not build until it
//! is given a family here.

use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::DatabaseConfiguration;

use crate::controller::events::EventReason;
use crate::controller::object_kind::{NewObject, ObjectKind};
use crate::controller::pass::plan::Action;
use crate::controller::pod_agent::config_query::PodConfigQuery;
use crate::controller::status::StatusDecision;
use crate::controller::status::mutations::StatusMutation;
use crate::fdb::{ExclusionTarget, RestartEntry};

/// An action as the executor performs it: its family, or one that is its own.
pub(super) enum Routed {
    /// A database command.
    Command(Command),
    /// A write of a Kubernetes object of the cluster.
    Write(ObjectWrite),
    /// A status edit or an Event.
    Record(Record),
    /// The upgrade's shared bookkeeping and the lock's release.
    Upgrade(UpgradeBookkeeping),
    /// The restart and exclusion lists of a database shared by several instances.
    SharedList(SharedList),
    /// [`Action::AskPodAgents`].
    AskPodAgents(PodConfigQuery),
    /// [`Action::NudgeMonitor`].
    NudgeMonitor(String),
    /// [`Action::UpdateDenyList`].
    UpdateDenyList {
        /// Whether the list goes into the status.
        stage: bool,
    },
}

/// The database commands, as in [`Action`].
pub(super) enum Command {
    Configure {
        configuration: Box<DatabaseConfiguration>,
        new: bool,
    },
    Exclude(Vec<ExclusionTarget>),
    Include(Vec<ExclusionTarget>),
    ChangeCoordinators {
        coordinators: Vec<ProcessAddress>,
        reason: String,
    },
    Kill(Vec<ProcessAddress>),
    SetMaintenanceZone {
        zone: String,
        seconds: u64,
    },
    ResetMaintenanceZone,
}

/// The object writes, as in [`Action`].
pub(super) enum ObjectWrite {
    DeletePod(String),
    Create(NewObject),
    Patch {
        kind: ObjectKind,
        name: String,
        patch: serde_json::Value,
    },
    SetContainerImage {
        pod: String,
        container: String,
        image: String,
    },
    Delete {
        kind: ObjectKind,
        name: String,
    },
}

/// The status edits and Events, as in [`Action`].
pub(super) enum Record {
    WriteStatus(Vec<StatusMutation>),
    StageStatus(Vec<StatusMutation>),
    StageStatusDecision(Box<StatusDecision>),
    Event {
        reason: EventReason,
        action: String,
        note: String,
    },
}

/// The upgrade's bookkeeping, as in [`Action`].
pub(super) enum UpgradeBookkeeping {
    JoinPendingUpgrades {
        target: FdbVersion,
        groups: Vec<String>,
    },
    ClearPendingUpgrades,
    RememberUpgradeCleanup,
    RememberUpgradeKill(FdbVersion),
    ReleaseLock,
}

/// The shared restart and exclusion lists, as in [`Action`].
pub(super) enum SharedList {
    SyncRestartLists {
        pending: Vec<String>,
        ready: Vec<String>,
    },
    ClearReadyForRestart(Vec<RestartEntry>),
    SyncExclusionLists {
        pending: Vec<String>,
        ready: Vec<String>,
    },
    ClearExclusionEntries(Vec<RestartEntry>),
}

/// The family of `action`.
pub(super) fn route(action: Action) -> Routed {
    use Routed as R;
    match action {
        Action::Configure { configuration, new } => {
            R::Command(Command::Configure { configuration, new })
        }
        Action::Exclude(targets) => R::Command(Command::Exclude(targets)),
        Action::Include(targets) => R::Command(Command::Include(targets)),
        Action::ChangeCoordinators {
            coordinators,
            reason,
        } => R::Command(Command::ChangeCoordinators {
            coordinators,
            reason,
        }),
        Action::Kill(addresses) => R::Command(Command::Kill(addresses)),
        Action::SetMaintenanceZone { zone, seconds } => {
            R::Command(Command::SetMaintenanceZone { zone, seconds })
        }
        Action::ResetMaintenanceZone => R::Command(Command::ResetMaintenanceZone),
        Action::DeletePod(name) => R::Write(ObjectWrite::DeletePod(name)),
        Action::Create(object) => R::Write(ObjectWrite::Create(object)),
        Action::Patch { kind, name, patch } => R::Write(ObjectWrite::Patch { kind, name, patch }),
        Action::SetContainerImage {
            pod,
            container,
            image,
        } => R::Write(ObjectWrite::SetContainerImage {
            pod,
            container,
            image,
        }),
        Action::Delete { kind, name } => R::Write(ObjectWrite::Delete { kind, name }),
        Action::WriteStatus(mutations) => R::Record(Record::WriteStatus(mutations)),
        Action::StageStatus(mutations) => R::Record(Record::StageStatus(mutations)),
        Action::StageStatusDecision(decision) => R::Record(Record::StageStatusDecision(decision)),
        Action::Event {
            reason,
            action,
            note,
        } => R::Record(Record::Event {
            reason,
            action,
            note,
        }),
        Action::JoinPendingUpgrades { target, groups } => {
            R::Upgrade(UpgradeBookkeeping::JoinPendingUpgrades { target, groups })
        }
        Action::ClearPendingUpgrades => R::Upgrade(UpgradeBookkeeping::ClearPendingUpgrades),
        Action::RememberUpgradeCleanup => R::Upgrade(UpgradeBookkeeping::RememberUpgradeCleanup),
        Action::RememberUpgradeKill(target) => {
            R::Upgrade(UpgradeBookkeeping::RememberUpgradeKill(target))
        }
        Action::ReleaseLock => R::Upgrade(UpgradeBookkeeping::ReleaseLock),
        Action::SyncRestartLists { pending, ready } => {
            R::SharedList(SharedList::SyncRestartLists { pending, ready })
        }
        Action::ClearReadyForRestart(entries) => {
            R::SharedList(SharedList::ClearReadyForRestart(entries))
        }
        Action::SyncExclusionLists { pending, ready } => {
            R::SharedList(SharedList::SyncExclusionLists { pending, ready })
        }
        Action::ClearExclusionEntries(entries) => {
            R::SharedList(SharedList::ClearExclusionEntries(entries))
        }
        Action::AskPodAgents(query) => R::AskPodAgents(query),
        Action::NudgeMonitor(pod) => R::NudgeMonitor(pod),
        Action::UpdateDenyList { stage } => R::UpdateDenyList { stage },
    }
}
