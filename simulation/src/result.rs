//! The result document of `fdb-operator simulate` (`spec/simulation.md`, "Result JSON").
//!
//! Field names are part of the contract: tools and tests read them. New fields may be
//! added; existing ones keep their names and meanings.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The whole result of a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SimulationResult {
    /// The scenario's name.
    pub name: String,
    /// The seed the run used.
    pub seed: u64,
    /// Every invariant breach, in the order they were seen.
    pub violations: Vec<Violation>,
    /// One entry per scenario step, taken after the step.
    pub steps: Vec<StepResult>,
    /// Every operator write, admin command and sidecar request, in order.
    pub events: Vec<Event>,
    /// Counters over the whole run.
    pub metrics: RunMetrics,
    /// Every run of the operator's FoundationDB tools other than a `status json` that
    /// reached its database: which tool of which version ran each admin command, on
    /// which database (a fleet has several).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_runs: Vec<ToolRunRecord>,
}

/// One run of a FoundationDB tool (`fdbcli`, `fdbbackup`, `fdbrestore`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRunRecord {
    /// Index of the scenario step during which it ran.
    pub step: usize,
    /// Simulated seconds since the start of the run.
    pub time: u64,
    /// The operator pass (0 when outside a pass).
    pub pass: u64,
    /// The cluster whose database the tool's cluster file leads to (the first
    /// cluster's for its `clusters:` members too; empty when it leads to none of a
    /// fleet's databases, e.g. before the database's first process started).
    pub database: String,
    /// `fdbcli`, `fdbbackup` or `fdbrestore`.
    pub tool: String,
    /// The tool's version (`7.3.43`).
    pub version: String,
    /// What it was asked: fdbcli's `--exec` text, else the subcommand and its options.
    pub command: String,
    /// Whether it reached the database (a tool of another protocol waits to its
    /// timeout and reaches nothing).
    pub reached: bool,
    /// Its exit code.
    pub exit_code: i32,
}

/// An invariant breach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    /// Which invariant (`data-loss-risk`, `fault-tolerance-exceeded`, `coordinator-deleted`,
    /// `mixed-version-bounce`, `unavailable-at-rest`).
    pub invariant: String,
    /// Simulated time in seconds since the run started.
    pub time: u64,
    /// The operator pass during which it happened.
    pub pass: u64,
    /// What happened, in words.
    pub detail: String,
}

/// The world after one scenario step.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepResult {
    /// Index of the step in the scenario.
    pub index: usize,
    /// The step as written.
    pub step: Value,
    /// Simulated seconds since the start of the run.
    pub time: u64,
    /// Operator passes run during this step.
    pub passes: u64,
    /// For `reconcile` steps: whether the cluster reached Reconciled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconciled: Option<bool>,
    /// For `reconcile` steps that stopped early: why (pass or time budget, last requeue).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_because: Option<String>,
    /// Every wait of the operator's last pass in this step: the one that ended the pass,
    /// then every step that waited while the pass went on (`Step: reason (in Ns)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waits: Vec<String>,
    /// The FoundationDBCluster object (metadata, spec, status).
    pub cluster: Value,
    /// The cluster's pods.
    pub pods: Vec<PodSummary>,
    /// The cluster's PVCs.
    pub pvcs: Vec<PvcSummary>,
    /// The cluster's services.
    pub services: Vec<ServiceSummary>,
    /// The cluster's config maps.
    pub config_maps: Vec<ConfigMapSummary>,
    /// Per pod: the files and staged binaries in its sidecar's output directory.
    pub sidecars: BTreeMap<String, SidecarSummary>,
    /// The simulated database.
    pub fdb: Value,
    /// The FoundationDBBackup objects (metadata, spec, status).
    #[serde(default)]
    pub backups: Vec<Value>,
    /// The FoundationDBRestore objects (metadata, spec, status).
    #[serde(default)]
    pub restores: Vec<Value>,
    /// The simulated blob store: per backup URL, the completed snapshots (the database
    /// version each holds and the data's digest there), the mutation log's end and the
    /// latest restorable version.
    #[serde(default)]
    pub blob_store: BTreeMap<String, Value>,
}

/// A pod as the result shows it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSummary {
    /// Pod name.
    pub name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    pub annotations: BTreeMap<String, String>,
    /// The node it is scheduled on, if any.
    pub node: Option<String>,
    /// Pod IP, once running.
    pub ip: Option<String>,
    /// Pod phase.
    pub phase: String,
    /// Whether the pod has a deletion timestamp.
    pub terminating: bool,
    /// Containers (init containers first).
    pub containers: Vec<ContainerSummary>,
}

/// A container of a pod.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerSummary {
    /// Container name.
    pub name: String,
    /// Image.
    pub image: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Restarts so far (`restartCount` of the container's status).
    #[serde(default)]
    pub restart_count: i32,
    /// The image ID the container runs (`imageID` of its status; empty before it ran).
    #[serde(default, rename = "imageID")]
    pub image_id: String,
}

/// A PVC as the result shows it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PvcSummary {
    /// PVC name.
    pub name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Requested storage (`16G`).
    pub storage: String,
    /// Whether the PVC has a deletion timestamp.
    pub terminating: bool,
}

/// A service as the result shows it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSummary {
    /// Service name.
    pub name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
}

/// A config map as the result shows it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapSummary {
    /// Config map name.
    pub name: String,
    /// Its data.
    pub data: BTreeMap<String, String>,
}

/// What a pod's sidecar has written to the shared volume.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSummary {
    /// SHA-256 of each copied file (`fdb.cluster`, `fdbmonitor.conf`).
    pub files: BTreeMap<String, String>,
    /// Staged binaries, relative to the output directory (`bin/7.3.43/fdbserver`).
    pub binaries: Vec<String>,
}

/// Where an event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventSource {
    /// A Kubernetes API write by the operator.
    K8s,
    /// An admin command to the database.
    Fdb,
    /// A request to a sidecar.
    Sidecar,
    /// Something the operator reported (a Kubernetes Event it emitted).
    Operator,
}

/// One entry of the events log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Index of the scenario step during which it happened.
    pub step: usize,
    /// Simulated seconds since the start of the run.
    pub time: u64,
    /// The operator pass (0 when outside a pass).
    pub pass: u64,
    /// Where it came from.
    pub source: EventSource,
    /// What was done (`create`, `patch`, `exclude`, `kill`, `http`, ...).
    pub action: String,
    /// What it was done to (`pod/sample-storage-1`, `status json`, `sidecar/sample-log-1`).
    pub target: String,
    /// More about it.
    pub detail: String,
    /// Who did it: `operator` (the operator, or an `act` step as the operator) or `user`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// For admin commands of an operator: the operator instance that issued it, by the
    /// name of the cluster it manages (several clusters can share one database).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
}

/// Counters over the whole run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunMetrics {
    /// Operator passes.
    pub passes: u64,
    /// The operator's Kubernetes API requests by verb.
    pub api_requests: ApiRequestCounts,
    /// `status json` reads.
    pub status_json_calls: u64,
    /// Admin commands other than `status json`.
    pub admin_commands: u64,
    /// Requests to sidecars.
    pub sidecar_requests: u64,
    /// Wall-clock milliseconds the run took (not part of the deterministic output).
    pub wall_millis: u64,
    /// Passes of the backup and restore controllers (one per resource each time they
    /// ran).
    #[serde(default)]
    pub backup_restore_passes: u64,
}

/// The operator's Kubernetes API requests by verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiRequestCounts {
    /// get
    pub get: u64,
    /// list
    pub list: u64,
    /// watch
    pub watch: u64,
    /// create
    pub create: u64,
    /// update (replace)
    pub update: u64,
    /// patch
    pub patch: u64,
    /// delete
    pub delete: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_with_the_contract_names() {
        let result = SimulationResult {
            name: "scale-down".into(),
            seed: 7,
            events: vec![Event {
                step: 0,
                time: 12,
                pass: 3,
                source: EventSource::K8s,
                action: "create".into(),
                target: "pod/sample-storage-1".into(),
                detail: String::new(),
                by: Some("operator".into()),
                issuer: None,
            }],
            steps: vec![StepResult {
                reconciled: Some(true),
                ..StepResult::default()
            }],
            ..SimulationResult::default()
        };
        let json = serde_json::to_value(&result).unwrap();
        for pointer in [
            "/violations",
            "/steps/0/configMaps",
            "/steps/0/reconciled",
            "/steps/0/sidecars",
            "/events/0/source",
            "/metrics/apiRequests/watch",
            "/metrics/statusJsonCalls",
            "/metrics/adminCommands",
            "/metrics/sidecarRequests",
            "/metrics/wallMillis",
        ] {
            assert!(
                json.pointer(pointer).is_some(),
                "missing {pointer} in {json}"
            );
        }
        assert_eq!(json.pointer("/events/0/source").unwrap(), "k8s");
    }
}
