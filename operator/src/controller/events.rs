//! Kubernetes Events for what users must see: the database configured, coordinators
//! changed, steps failing. Reasons are fixed words; details go in the note.

use fdb_shared::api::FoundationDBCluster;
use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use super::context::Context;

/// Reasons of the Events the operator publishes (a fixed, bounded set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventReason {
    /// The initial connection string was written.
    ConnectionStringGenerated,
    /// `configure new` ran.
    DatabaseConfigured,
    /// The database configuration was changed.
    ConfigurationChanged,
    /// The coordinators were changed.
    CoordinatorsChanged,
    /// A step failed.
    StepFailed,
    /// The spec is invalid.
    InvalidSpec,
    /// Processes were restarted with `kill` (BounceProcesses).
    ProcessesBounced,
    /// Pods were deleted to roll out a pod spec change (UpdatePods).
    PodsUpdated,
    /// Process groups were marked for replacement to roll out a pod spec change.
    ProcessGroupsReplaced,
    /// The maintenance zone was set or reset.
    MaintenanceZoneChanged,
    /// Pods were deleted to apply buggify settings.
    BuggifyApplied,
    /// The operator lock deny list was changed.
    LockDenyListChanged,
    /// `spec.version` asks for a version change that is refused (an incompatible
    /// downgrade).
    UnsupportedVersionChange,
    /// Connected clients do not support the upgrade's target version.
    IncompatibleClients,
    /// Every process was killed at once to restart on the upgrade's binary.
    UpgradeBounce,
    /// A pod whose processes missed the upgrade's restart was deleted.
    IncompatibleProcessRemoved,
    /// Process groups were marked for removal (shrink or requested removal).
    RemovalChosen,
    /// Processes were excluded.
    ProcessesExcluded,
    /// A process group was fully excluded.
    ExclusionComplete,
    /// A removal or exclusion waits for something (the note names it).
    RemovalBlocked,
    /// A removed group's resources were deleted.
    ResourcesDeleted,
    /// A removed group was included again and dropped from the status.
    ProcessGroupRemoved,
    /// A process group was marked for replacement.
    ReplacementChosen,
    /// A pod in a terminal phase (Failed, Evicted) was deleted to be recreated.
    TerminalPodDeleted,
    /// Replacements wait for `maxConcurrentReplacements` (the note names the groups in
    /// flight).
    ReplacementBlocked,
    /// Pods of a manifest asking for `imageType: unified` were created with the split
    /// model (main container plus sidecar), the only one this operator builds.
    UnifiedImageRunsSplit,
    /// Pods need a deletion to take a spec change, but `automationOptions.deletionMode`
    /// is `None` (the Go operator's reason, spelled as it spells it).
    NeedsPodsDeletion,
}

impl EventReason {
    /// The Event's reason text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ConnectionStringGenerated => "ConnectionStringGenerated",
            Self::DatabaseConfigured => "DatabaseConfigured",
            Self::ConfigurationChanged => "ConfigurationChanged",
            Self::CoordinatorsChanged => "CoordinatorsChanged",
            Self::StepFailed => "StepFailed",
            Self::InvalidSpec => "InvalidSpec",
            Self::ProcessesBounced => "ProcessesBounced",
            Self::PodsUpdated => "PodsUpdated",
            Self::ProcessGroupsReplaced => "ProcessGroupsReplaced",
            Self::MaintenanceZoneChanged => "MaintenanceZoneChanged",
            Self::BuggifyApplied => "BuggifyApplied",
            Self::LockDenyListChanged => "LockDenyListChanged",
            Self::UnsupportedVersionChange => "UnsupportedVersionChange",
            Self::IncompatibleClients => "IncompatibleClients",
            Self::UpgradeBounce => "UpgradeBounce",
            Self::IncompatibleProcessRemoved => "IncompatibleProcessRemoved",
            Self::RemovalChosen => "RemovalChosen",
            Self::ProcessesExcluded => "ProcessesExcluded",
            Self::ExclusionComplete => "ExclusionComplete",
            Self::RemovalBlocked => "RemovalBlocked",
            Self::ResourcesDeleted => "ResourcesDeleted",
            Self::ProcessGroupRemoved => "ProcessGroupRemoved",
            Self::ReplacementChosen => "ReplacementChosen",
            Self::TerminalPodDeleted => "TerminalPodDeleted",
            Self::ReplacementBlocked => "ReplacementBlocked",
            Self::UnifiedImageRunsSplit => "UnifiedImageRunsSplit",
            Self::NeedsPodsDeletion => "NeedsPodsDeletion",
        }
    }

    fn event_type(self) -> EventType {
        match self {
            Self::StepFailed
            | Self::InvalidSpec
            | Self::UnsupportedVersionChange
            | Self::IncompatibleClients
            | Self::RemovalBlocked
            | Self::UnifiedImageRunsSplit => EventType::Warning,
            _ => EventType::Normal,
        }
    }
}

/// Publishes an Event about `cluster`. Failing to publish is logged, never fatal: an
/// Event is information, not state.
pub async fn publish(
    ctx: &Context,
    cluster: &FoundationDBCluster,
    reason: EventReason,
    action: &str,
    note: String,
) {
    if !ctx.settings.publish_events {
        return;
    }
    let reporter = Reporter {
        controller: ctx.settings.controller_name.clone(),
        instance: None,
    };
    let recorder = Recorder::new(ctx.kube.clone(), reporter);
    let event = Event {
        type_: reason.event_type(),
        reason: reason.as_str().to_owned(),
        note: Some(note.chars().take(1000).collect()),
        action: action.to_owned(),
        secondary: None,
    };
    let reference = cluster.object_ref(&());
    if let Err(error) = recorder.publish(&event, &reference).await {
        tracing::warn!(reason = reason.as_str(), %error, "cannot publish event");
    }
}
