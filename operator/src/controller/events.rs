//! Kubernetes Events for what users must see: the database configured, coordinators
//! changed, steps failing. Reasons are fixed words; details go in the note.

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::validation::names::{MAX_SUBDOMAIN_LENGTH, dns1123_subdomain_error};
use jiff::Timestamp;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Resource;
use sha2::{Digest, Sha256};

/// Reasons of the Events the operator publishes (a fixed, bounded set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventReason {
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
    /// A pod template asks for more than `run --restrict-pod-templates` allows; nothing
    /// is created for the object.
    PodTemplateRefused,
    /// Processes were restarted with `kill` (BounceProcesses).
    ProcessesBounced,
    /// Pods were deleted to roll out a pod spec change (UpdatePods).
    PodsUpdated,
    /// Process groups were marked for replacement to roll out a pod spec change.
    ProcessGroupsReplaced,
    /// The maintenance zone was set or reset.
    MaintenanceZoneChanged,
    /// The operator lock deny list was changed.
    LockDenyListChanged,
    /// `spec.version` asks for a version change that is refused (an incompatible
    /// downgrade).
    UnsupportedVersionChange,
    /// Connected clients do not support the upgrade's target version.
    IncompatibleClients,
    /// The operator has no fdbcli of a version the cluster runs or is upgraded to (the
    /// note names the version and the missing path).
    MissingFdbTools,
    /// Every process was killed at once to restart on the upgrade's binary.
    UpgradeBounce,
    /// The upgrade's cluster-wide kill is refused: it could not bring the database back
    /// (the note names the coordinators that keep the old version's quorum).
    UpgradeKillRefused,
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
    /// Pods need a deletion to take a spec change, but `automationOptions.deletionMode`
    /// is `None` (the Go operator's reason, spelled as it spells it).
    NeedsPodsDeletion,
    /// A unified pod's monitor annotations are missing or malformed (the note names the
    /// pod and the annotation); nothing is deleted because of it.
    MonitorAnnotationsUnreadable,
    /// A process group's claim is not bound and cannot be before its pod is placed (its
    /// storage class does not exist, or it binds immediately and has not yet).
    VolumeClaimUnbound,
    /// A process group's pod, made for `routing.podIPFamily`, was placed and got no IP
    /// (the cluster network lacks the family, as the pod's events say).
    PodIpFamilyUnavailable,
}

impl EventReason {
    /// The Event's reason text.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::ConnectionStringGenerated => "ConnectionStringGenerated",
            Self::DatabaseConfigured => "DatabaseConfigured",
            Self::ConfigurationChanged => "ConfigurationChanged",
            Self::CoordinatorsChanged => "CoordinatorsChanged",
            Self::StepFailed => "StepFailed",
            Self::InvalidSpec => "InvalidSpec",
            Self::PodTemplateRefused => "PodTemplateRefused",
            Self::ProcessesBounced => "ProcessesBounced",
            Self::PodsUpdated => "PodsUpdated",
            Self::ProcessGroupsReplaced => "ProcessGroupsReplaced",
            Self::MaintenanceZoneChanged => "MaintenanceZoneChanged",
            Self::LockDenyListChanged => "LockDenyListChanged",
            Self::UnsupportedVersionChange => "UnsupportedVersionChange",
            Self::IncompatibleClients => "IncompatibleClients",
            Self::MissingFdbTools => "MissingFdbTools",
            Self::UpgradeBounce => "UpgradeBounce",
            Self::UpgradeKillRefused => "UpgradeKillRefused",
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
            Self::NeedsPodsDeletion => "NeedsPodsDeletion",
            Self::MonitorAnnotationsUnreadable => "MonitorAnnotationsUnreadable",
            Self::VolumeClaimUnbound => "VolumeClaimUnbound",
            Self::PodIpFamilyUnavailable => "PodIPFamilyUnavailable",
        }
    }

    fn event_type(self) -> &'static str {
        match self {
            Self::StepFailed
            | Self::InvalidSpec
            | Self::PodTemplateRefused
            | Self::UnsupportedVersionChange
            | Self::IncompatibleClients
            | Self::MissingFdbTools
            | Self::UpgradeKillRefused
            | Self::RemovalBlocked
            | Self::MonitorAnnotationsUnreadable
            | Self::VolumeClaimUnbound
            | Self::PodIpFamilyUnavailable => "Warning",
            _ => "Normal",
        }
    }
}

/// The Event about `cluster` (in the cluster's namespace, `default` when it has none),
/// reported by `controller`, at `now`. Pure: the pass's I/O posts it
/// (`pass::io::publish`); an Event is an action of a plan like any write.
///
/// The Event is named `<cluster>.<nanoseconds in hex>` like kube's recorder names it, but
/// from [`event_name_prefix`], so that a cluster whose name is too long or malformed (the
/// very cluster an InvalidSpec Event explains) still gets an Event the API server accepts;
/// `regarding` names the cluster as it is.
pub(crate) fn build_event(
    controller: &str,
    cluster: &FoundationDBCluster,
    reason: EventReason,
    action: &str,
    note: &str,
    now: Timestamp,
) -> K8sEvent {
    let reference = cluster.object_ref(&());
    let namespace = reference
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_owned());
    let prefix = event_name_prefix(reference.name.as_deref().unwrap_or_default());
    K8sEvent {
        action: Some(action.to_owned()),
        reason: Some(reason.as_str().to_owned()),
        note: Some(note.chars().take(1000).collect()),
        event_time: Some(MicroTime(now)),
        regarding: Some(reference),
        reporting_controller: Some(controller.to_owned()),
        reporting_instance: Some(controller.to_owned()),
        type_: Some(reason.event_type().to_owned()),
        metadata: ObjectMeta {
            name: Some(format!("{prefix}.{:x}", now.as_nanosecond())),
            namespace: Some(namespace),
            ..ObjectMeta::default()
        },
        ..K8sEvent::default()
    }
}

/// Room left for `.` and the nanoseconds in hex (at most 16 digits) after the prefix.
const EVENT_SUFFIX_ROOM: usize = 17;

/// The start of an Event name about the object `name`: the name itself when it is a
/// DNS-1123 subdomain short enough for the suffix, else a cleaned, cut copy ending in a
/// hash of the whole name (so two long names sharing a start stay apart).
pub(crate) fn event_name_prefix(name: &str) -> String {
    let most = MAX_SUBDOMAIN_LENGTH - EVENT_SUFFIX_ROOM;
    if name.len() <= most && dns1123_subdomain_error(name).is_none() {
        return name.to_owned();
    }
    let hash = hex::encode(&Sha256::digest(name.as_bytes())[..4]);
    let cleaned: String = name
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(most - hash.len() - 1)
        .collect();
    let cleaned = cleaned.trim_matches('-');
    if cleaned.is_empty() {
        format!("fdb-{hash}")
    } else {
        format!("{cleaned}-{hash}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_names_its_cluster_reason_and_type() {
        let cluster = crate::controller::fixtures::cluster("version: 7.1.57");
        let now = Timestamp::UNIX_EPOCH;
        let event = build_event(
            "fdb-operator",
            &cluster,
            EventReason::IncompatibleClients,
            "CheckClientCompatibility",
            &"x".repeat(2000),
            now,
        );
        assert_eq!(event.reason.as_deref(), Some("IncompatibleClients"));
        assert_eq!(event.type_.as_deref(), Some("Warning"));
        assert_eq!(event.note.as_ref().map(String::len), Some(1000));
        assert_eq!(event.metadata.name.as_deref(), Some("sample.0"));
        assert_eq!(
            event.regarding.and_then(|r| r.name).as_deref(),
            Some("sample")
        );
        let normal = build_event("op", &cluster, EventReason::PodsUpdated, "a", "b", now);
        assert_eq!(normal.type_.as_deref(), Some("Normal"));
    }

    #[test]
    fn event_names_are_valid_whatever_the_cluster_name() {
        assert_eq!(event_name_prefix("sample"), "sample");
        assert_eq!(event_name_prefix("a.b"), "a.b");
        let long = "a".repeat(300);
        for name in [
            long.as_str(),
            "UPPER_case name",
            "",
            "-",
            "../x",
            "é",
            &"b".repeat(237),
        ] {
            let prefix = event_name_prefix(name);
            let full = format!("{prefix}.{:x}", u64::MAX);
            assert_eq!(dns1123_subdomain_error(&full), None, "{name:?} gave {full}");
        }
        assert_ne!(
            event_name_prefix(&format!("{long}x")),
            event_name_prefix(&format!("{long}y"))
        );
    }
}
