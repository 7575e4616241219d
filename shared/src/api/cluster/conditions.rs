//! Conditions of a process group (`status.processGroups[].processGroupConditions[]`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::open_enum::open_string_enum;

open_string_enum! {
    /// Something the operator has noticed about a process group. Every condition other
    /// than `Ready` means the group is not as desired.
    ProcessGroupConditionType {
        /// The pod spec differs from the desired one.
        IncorrectPodSpec => "IncorrectPodSpec",
        /// The pod labels or annotations differ from the desired ones.
        IncorrectPodMetadata => "IncorrectPodMetadata",
        /// The sidecar has not confirmed the current config map.
        IncorrectConfigMap => "IncorrectConfigMap",
        /// The process runs with a command line other than the rendered monitor conf.
        IncorrectCommandLine => "IncorrectCommandLine",
        /// The sidecar container runs the wrong image.
        IncorrectSidecarImage => "IncorrectSidecarImage",
        /// The pod is failing (crash loop, failed containers).
        PodFailing => "PodFailing",
        /// The pod cannot be scheduled or started.
        PodPending => "PodPending",
        /// The pod does not exist.
        MissingPod => "MissingPod",
        /// The data volume claim does not exist.
        MissingPvc => "MissingPVC",
        /// The per-group Service does not exist.
        MissingService => "MissingService",
        /// The processes are not reported by the database.
        MissingProcesses => "MissingProcesses",
        /// The sidecar does not answer.
        SidecarUnreachable => "SidecarUnreachable",
        /// Resources of the group are being deleted.
        ResourcesTerminating => "ResourcesTerminating",
        /// The node of the pod has a taint that leads to replacement.
        NodeTaintDetected => "NodeTaintDetected",
        /// The taint has been present long enough to replace the group.
        NodeTaintReplacing => "NodeTaintReplacing",
        /// The process is excluded in the database although not marked for removal.
        ProcessIsMarkedAsExcluded => "ProcessIsMarkedAsExcluded",
        /// The process reports an I/O error.
        ProcessHasIoError => "ProcessHasIOError",
        /// The process's run loop is too busy.
        ProcessHasHighRunLoopBusy => "ProcessHasHighRunLoopBusy",
        /// Everything is as desired.
        Ready => "Ready",
    }
}

impl ProcessGroupConditionType {
    /// Whether a group with this condition, for longer than the failure detection time,
    /// is replaced automatically.
    pub fn is_eligible_for_automatic_replacement(&self) -> bool {
        matches!(
            self,
            Self::MissingProcesses
                | Self::PodFailing
                | Self::MissingPod
                | Self::MissingPvc
                | Self::MissingService
                | Self::PodPending
                | Self::SidecarUnreachable
                | Self::NodeTaintReplacing
                | Self::ProcessIsMarkedAsExcluded
                | Self::ProcessHasIoError
                | Self::ProcessHasHighRunLoopBusy
        )
    }

    /// The conditions a new process group starts with.
    pub fn initial_conditions(stateful: bool) -> Vec<Self> {
        let mut conditions = vec![Self::MissingProcesses, Self::MissingPod];
        if stateful {
            conditions.push(Self::MissingPvc);
        }
        conditions
    }
}

/// A condition of a process group and when it was first seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProcessGroupCondition {
    /// The condition.
    #[serde(rename = "type")]
    pub condition_type: ProcessGroupConditionType,
    /// When the condition was first seen, in seconds since the unix epoch.
    #[serde(default)]
    pub timestamp: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_api_and_eligibility_is_as_documented() {
        let condition: ProcessGroupCondition =
            serde_json::from_str(r#"{"type": "ProcessHasIOError", "timestamp": 1700000000}"#)
                .unwrap();
        assert_eq!(
            condition.condition_type,
            ProcessGroupConditionType::ProcessHasIoError
        );
        assert!(
            condition
                .condition_type
                .is_eligible_for_automatic_replacement()
        );
        assert!(
            !ProcessGroupConditionType::IncorrectCommandLine
                .is_eligible_for_automatic_replacement()
        );
        assert!(!ProcessGroupConditionType::Ready.is_eligible_for_automatic_replacement());
        assert_eq!(ProcessGroupConditionType::MissingPvc.as_str(), "MissingPVC");
        assert_eq!(
            ProcessGroupConditionType::initial_conditions(true),
            [
                ProcessGroupConditionType::MissingProcesses,
                ProcessGroupConditionType::MissingPod,
                ProcessGroupConditionType::MissingPvc
            ]
        );
    }
}
