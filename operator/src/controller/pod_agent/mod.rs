//! The agent of a pod: what reports a pod's dynamic configuration and takes a new one.
//!
//! - Split pods: the HTTP sidecar (sidecar-api.md): substitutions, `check_hash`,
//!   `copy_*`, `is_present`.
//! - Unified pods: fdb-kubernetes-monitor, through the Kubernetes API only. It publishes
//!   the configuration it runs (`foundationdb.org/launcher-current-configuration`, the
//!   JSON as read) and the environment its arguments use
//!   (`foundationdb.org/launcher-environment`, with `BINARY_DIR`); the operator asks it to
//!   read its file again with `foundationdb.org/outdated-config-map-seen` (a Unix
//!   timestamp). It accepts a configuration only when the binary of its version is
//!   there (its image's, or the one the sidecar-mode container copied), so "it runs the
//!   desired configuration" also answers what `is_present` answers for split pods
//!   during an upgrade.
//!
//! Steps ask [`PodAgent::of`] and never look at which it is beyond that.

pub(crate) mod config_memo;
pub(crate) mod config_query;

use std::collections::BTreeMap;

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::{ImageType, ProcessGroupStatus};
use fdb_shared::monitor_conf::process_config::{
    CURRENT_CONFIGURATION_ANNOTATION, ENVIRONMENT_ANNOTATION, ProcessConfiguration,
};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use super::model::pod::pod_image_type;
use super::model::process_config::desired_process_configuration;

/// Who answers for a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PodAgent {
    /// The HTTP sidecar of a split pod.
    Sidecar,
    /// The fdb-kubernetes-monitor of a unified pod (pod annotations).
    Monitor,
}

impl PodAgent {
    /// The agent of `pod`, from the pod model it was made with.
    pub(crate) fn of(pod: &impl kube::Resource) -> Self {
        match pod_image_type(pod) {
            ImageType::Unified => Self::Monitor,
            _ => Self::Sidecar,
        }
    }
}

/// A monitor annotation that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AnnotationProblem {
    /// The monitor has not written it (yet).
    #[error("pod {pod} has no {annotation} annotation (its monitor has not reported)")]
    Missing {
        /// The pod.
        pod: String,
        /// The annotation.
        annotation: &'static str,
    },
    /// It does not parse.
    #[error("pod {pod}: annotation {annotation} is malformed: {message}")]
    Malformed {
        /// The pod.
        pod: String,
        /// The annotation.
        annotation: &'static str,
        /// The parser's message.
        message: String,
    },
}

/// What a unified pod's monitor reports it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MonitorReport {
    /// The configuration it accepted last.
    pub configuration: ProcessConfiguration,
    /// The environment its arguments use (with `BINARY_DIR`).
    pub environment: BTreeMap<String, String>,
}

fn annotation<'a, T: serde::Deserialize<'a>>(
    pod: &'a impl kube::Resource<DynamicType = ()>,
    name: &'static str,
) -> Result<T, AnnotationProblem> {
    let text = pod
        .annotations()
        .get(name)
        .ok_or_else(|| AnnotationProblem::Missing {
            pod: pod.name_any(),
            annotation: name,
        })?;
    serde_json::from_str(text).map_err(|error| AnnotationProblem::Malformed {
        pod: pod.name_any(),
        annotation: name,
        message: error.to_string(),
    })
}

/// The monitor's report, read from the pod's annotations.
pub(crate) fn monitor_report(
    pod: &impl kube::Resource<DynamicType = ()>,
) -> Result<MonitorReport, AnnotationProblem> {
    Ok(MonitorReport {
        configuration: annotation(pod, CURRENT_CONFIGURATION_ANNOTATION)?,
        environment: annotation(pod, ENVIRONMENT_ANNOTATION)?,
    })
}

/// What the monitor of a unified pod says about the configuration it must run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MonitorCheck {
    /// It runs the desired configuration.
    Confirmed,
    /// It runs another one (the kubelet has not projected the ConfigMap, or the binary
    /// of the desired version is not copied yet).
    Outdated(String),
    /// Its annotations cannot be read.
    Unreadable(AnnotationProblem),
}

/// Compares what the monitor of `pod` reports with the class's desired configuration
/// (parsed values, so the JSON's spacing and key order do not matter).
pub(crate) fn check_monitor(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
    pod: &Pod,
) -> MonitorCheck {
    let report = match monitor_report(pod) {
        Ok(report) => report,
        Err(problem) => return MonitorCheck::Unreadable(problem),
    };
    let desired = desired_process_configuration(cluster, group.process_class, true);
    if report.configuration == desired {
        return MonitorCheck::Confirmed;
    }
    let why = if report.configuration.version == desired.version {
        "runs an older configuration".to_owned()
    } else {
        format!(
            "runs version {} rather than {} (binary not copied yet, or the ConfigMap not projected)",
            report.configuration.version, desired.version
        )
    };
    MonitorCheck::Outdated(format!("monitor of pod {} {why}", pod.name_any()))
}

/// The command lines the processes of a unified pod must run (the desired configuration
/// with the environment its monitor reports), by process number; `None` when the
/// monitor has not reported or an argument cannot be generated.
pub(crate) fn monitor_command_lines(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
    pod: &impl kube::Resource<DynamicType = ()>,
    servers: u32,
) -> Option<BTreeMap<u32, String>> {
    let report = monitor_report(pod).ok()?;
    let desired = desired_process_configuration(cluster, group.process_class, true);
    (1..=servers.max(1))
        .map(|n| Some((n, desired.command_line(n, &report.environment).ok()?)))
        .collect()
}

#[cfg(test)]
mod tests;
