//! Faults a scenario injects into the world, and their validation.

use serde::{Deserialize, Serialize};

/// A fault injected into the world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum Fault {
    /// The group's fdbserver processes vanish (the pod stays).
    #[serde(rename_all = "camelCase")]
    ProcessMissing {
        /// The process group ID as in the status.
        process_group: String,
    },
    /// The group's pod cannot be scheduled (stays Pending when recreated).
    #[serde(rename_all = "camelCase")]
    PodPending {
        /// The process group ID as in the status.
        process_group: String,
    },
    /// The group's pod fails (phase Failed).
    #[serde(rename_all = "camelCase")]
    PodFailed {
        /// The process group ID as in the status.
        process_group: String,
    },
    /// The group's pod never finishes terminating once deleted.
    #[serde(rename_all = "camelCase")]
    PodStuckTerminating {
        /// The process group ID as in the status.
        process_group: String,
    },
    /// The group's sidecar stops answering.
    #[serde(rename_all = "camelCase")]
    SidecarUnreachable {
        /// The process group ID as in the status.
        process_group: String,
    },
    /// A node goes down: its pods' processes vanish and its pods turn unready.
    NodeDown {
        /// The node's name (`node-2`).
        node: String,
    },
    /// Every node labelled `topology.kubernetes.io/zone=<zone>` goes down at once (as
    /// `nodeDown` for each): a whole data hall of a three_data_hall cluster whose
    /// processes take their `data_hall` from that label.
    ZoneDown {
        /// The value of the nodes' `topology.kubernetes.io/zone` label (`zone-1`).
        zone: String,
    },
    /// A whole datacenter goes down: every node running a pod whose processes have that
    /// `locality_dcid` goes down (as `nodeDown`). Pods created later may land on the
    /// other nodes. `heal: {all: true}` brings the nodes back.
    #[serde(rename_all = "camelCase")]
    DataCenterDown {
        /// The datacenter ID (`spec.dataCenter`).
        data_center: String,
    },
    /// A node gets a taint.
    NodeTaint {
        /// The node's name.
        node: String,
        /// The taint key.
        key: String,
    },
    /// That share of the operator's Kubernetes writes answer 409 Conflict.
    ApiConflicts {
        /// Share of writes, between 0 and 1.
        rate: f64,
    },
    /// That share of admin calls time out.
    FdbcliTimeouts {
        /// Share of calls, between 0 and 1.
        rate: f64,
    },
    /// A FoundationDB client connects.
    #[serde(rename_all = "camelCase")]
    ClientConnected {
        /// The client's address.
        address: String,
        /// The client library version.
        version: String,
        /// The client's trace log group.
        #[serde(default)]
        log_group: String,
    },
    /// A FoundationDB client goes away.
    ClientDisconnected {
        /// The client's address.
        address: String,
    },
    /// The group's processes report an `io_error` message in `status json`.
    #[serde(rename_all = "camelCase")]
    IoError {
        /// The process group ID as in the status.
        process_group: String,
    },
    /// The group's storage servers do not answer the cluster controller's metrics
    /// requests: `status json` lists their storage roles without their metrics
    /// (`kvstore_*`, `stored_bytes`), as fdbserver/Status.actor.cpp renders a storage
    /// server whose `StorageMetrics` it could not fetch, until healed. fdbcli's
    /// `exclude` then cannot check the free space and refuses every exclusion.
    #[serde(rename_all = "camelCase")]
    StorageMetricsMissing {
        /// The process group ID as in the status.
        process_group: String,
    },
    /// The running processes of a process group, or of a datacenter, are missing from
    /// `status json` (as when the cluster controller lost them: fdbserver/Status.actor.cpp
    /// lists the workers the cluster controller knows), while they keep serving.
    #[serde(rename_all = "camelCase")]
    StatusProcessesMissing {
        /// The process group ID as in the status.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        process_group: Option<String>,
        /// The datacenter (`locality_dcid`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data_center: Option<String>,
    },
    /// The group's fdbserver processes exit right after each start.
    #[serde(rename_all = "camelCase")]
    ProcessCrashLoop {
        /// The process group ID as in the status.
        process_group: String,
    },
    /// The group's sidecar cannot stage that version's binaries.
    #[serde(rename_all = "camelCase")]
    BinaryMissing {
        /// The process group ID as in the status.
        process_group: String,
        /// The FoundationDB version whose binaries are missing.
        version: String,
    },
    /// The group's sidecar cannot write its output directory.
    #[serde(rename_all = "camelCase")]
    OutputNotWritable {
        /// The process group ID as in the status.
        process_group: String,
    },
    /// Recoveries take this long until healed (`heal: {all: true}`).
    SlowRecovery {
        /// Seconds one recovery takes.
        seconds: u64,
    },
    /// The group's processes survive `kill` commands (the kill never reaches them).
    #[serde(rename_all = "camelCase")]
    IgnoreKill {
        /// The process group ID as in the status.
        process_group: String,
    },
    /// The group's disks turn slow: every I/O takes `milliseconds`. FoundationDB reports
    /// its processes as degraded, with that latency in their storage roles' statistics,
    /// and data moves off them at a tenth of the usual rate.
    #[serde(rename_all = "camelCase")]
    IoLatency {
        /// The process group ID as in the status.
        process_group: String,
        /// The latency of one I/O.
        milliseconds: u64,
    },
    /// Every running backup agent pod is evicted once, as the kubelet evicts a pod over
    /// its ephemeral-storage limit: phase Failed, reason Evicted; the pod objects stay
    /// (their Deployment's ReplicaSet creates others).
    BackupAgentsEvicted,
    /// The group's pod cannot reach the Kubernetes API: its agent (the unified image's
    /// fdb-kubernetes-monitor) cannot update the pod's annotations. The database and the
    /// kubelet are not affected.
    #[serde(rename_all = "camelCase")]
    KubeApiUnreachable {
        /// The process group ID as in the status.
        process_group: String,
    },
}

impl Fault {
    /// The process group the fault targets, if it targets one.
    pub fn process_group(&self) -> Option<&str> {
        match self {
            Self::ProcessMissing { process_group }
            | Self::PodPending { process_group }
            | Self::PodFailed { process_group }
            | Self::PodStuckTerminating { process_group }
            | Self::SidecarUnreachable { process_group }
            | Self::IoError { process_group }
            | Self::StorageMetricsMissing { process_group }
            | Self::ProcessCrashLoop { process_group }
            | Self::BinaryMissing { process_group, .. }
            | Self::OutputNotWritable { process_group }
            | Self::IgnoreKill { process_group }
            | Self::IoLatency { process_group, .. }
            | Self::KubeApiUnreachable { process_group } => Some(process_group),
            Self::StatusProcessesMissing {
                process_group: Some(process_group),
                ..
            } => Some(process_group),
            _ => None,
        }
    }

    /// The node the fault targets, if it targets one.
    pub fn node(&self) -> Option<&str> {
        match self {
            Self::NodeDown { node } | Self::NodeTaint { node, .. } => Some(node),
            _ => None,
        }
    }
}

/// Checks a fault's values; the error names the field inside the fault.
pub(super) fn validate_fault(fault: &Fault) -> Result<(), (&'static str, String)> {
    let non_empty = |name: &'static str, value: &str| {
        if value.trim().is_empty() {
            Err((name, "must not be empty".to_owned()))
        } else {
            Ok(())
        }
    };
    match fault {
        Fault::ProcessMissing { process_group }
        | Fault::PodPending { process_group }
        | Fault::PodFailed { process_group }
        | Fault::PodStuckTerminating { process_group }
        | Fault::SidecarUnreachable { process_group }
        | Fault::IoError { process_group }
        | Fault::StorageMetricsMissing { process_group }
        | Fault::ProcessCrashLoop { process_group }
        | Fault::OutputNotWritable { process_group }
        | Fault::IgnoreKill { process_group }
        | Fault::KubeApiUnreachable { process_group } => non_empty("processGroup", process_group),
        Fault::IoLatency {
            process_group,
            milliseconds,
        } => {
            non_empty("processGroup", process_group)?;
            if *milliseconds == 0 {
                Err(("milliseconds", "must be at least 1".to_owned()))
            } else {
                Ok(())
            }
        }
        Fault::BinaryMissing {
            process_group,
            version,
        } => {
            non_empty("processGroup", process_group)?;
            parse_version(version)
        }
        Fault::ClientDisconnected { address } => non_empty("address", address),
        Fault::SlowRecovery { seconds } => {
            if *seconds == 0 {
                Err(("seconds", "must be at least 1".to_owned()))
            } else {
                Ok(())
            }
        }
        Fault::BackupAgentsEvicted => Ok(()),
        Fault::NodeDown { node } => non_empty("node", node),
        Fault::ZoneDown { zone } => non_empty("zone", zone),
        Fault::DataCenterDown { data_center } => non_empty("dataCenter", data_center),
        Fault::StatusProcessesMissing {
            process_group,
            data_center,
        } => match (process_group, data_center) {
            (Some(group), None) => non_empty("processGroup", group),
            (None, Some(dc)) => non_empty("dataCenter", dc),
            _ => Err((
                "processGroup",
                "name either processGroup or dataCenter (one of them)".to_owned(),
            )),
        },
        Fault::NodeTaint { node, key } => {
            non_empty("node", node)?;
            non_empty("key", key)
        }
        Fault::ApiConflicts { rate } | Fault::FdbcliTimeouts { rate } => {
            if rate.is_finite() && (0.0..=1.0).contains(rate) {
                Ok(())
            } else {
                Err(("rate", format!("{rate} is not between 0 and 1")))
            }
        }
        Fault::ClientConnected {
            address, version, ..
        } => {
            non_empty("address", address)?;
            parse_version(version)
        }
    }
}

fn parse_version(version: &str) -> Result<(), (&'static str, String)> {
    version
        .parse::<fdb_shared::FdbVersion>()
        .map(|_| ())
        .map_err(|error| ("version", error.to_string()))
}
