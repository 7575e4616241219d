//! Scenario files for `fdb-operator simulate` (the contract is `spec/simulation.md`).
//!
//! A scenario names a world (nodes, zones, delays, clients), a FoundationDBCluster manifest
//! and a list of steps. Parsing keeps YAML line numbers in its errors, and validation names
//! the offending field, so a user can fix a scenario without reading our code.
//!
//! Everything that can be known before the run is checked up front: the input limits of
//! [`fdb_shared::yaml_input`] (4 MiB, 64 levels, no duplicate keys or `.nan`), the bounds
//! of [`limits`], the cluster manifest as the operator will read it, and that what the
//! steps name can exist at that point ([`references`]).

mod act_exec;
mod act_step;
mod expect_step;
mod faults;
pub mod go_v2;
pub mod limits;
pub(crate) mod objects;
pub mod operator_flags;
mod references;
mod resources;
pub mod safe_write;
pub mod snapshot;
pub mod snapshot_secrets;
pub mod snapshot_write;
mod steps;
pub mod storage_classes;
mod targets;
mod validate;

use std::collections::BTreeMap;

use fdb_shared::yaml_input::{self, InputError, ReadError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use faults::Fault;
pub use steps::{
    ActPatch, ActStep, Action, Actor, DeleteCollection, DeleteStep, EvictTarget, ExecAct,
    ExecCommand, ExecTarget, ExpectStep, Heal, MaintenanceAct, MaintenanceZone, ObjectKind,
    ObjectRef, PodChoice, ReconcileStep, ResourceExpectation, ResourceKind, ResourceTarget,
    RestartOperatorStep, Step, StepSpec, apply_cluster_target, apply_target,
};

/// The scenario's seed when it does not set one.
pub const DEFAULT_SEED: u64 = 1;
/// Default delay before the simulated kubelet projects a ConfigMap change into pods.
pub const DEFAULT_CONFIG_MAP_DELAY_SECONDS: u64 = 60;
/// Default time to move a fully loaded storage process's data away (`exclusionSeconds`).
pub const DEFAULT_EXCLUSION_SECONDS: u64 = 60;
/// Default data per storage process at creation, in GiB.
pub const DEFAULT_STORAGE_GIB: f64 = 1.0;
/// Default number of shards.
pub const DEFAULT_SHARDS: u32 = 256;
/// Default data movement rate per source process, in MiB/s.
pub const DEFAULT_MOVE_MIB_PER_SECOND: f64 = 50.0;
/// Default failure detection delay of FoundationDB.
pub const DEFAULT_FAILURE_DETECTION_SECONDS: u64 = 60;
/// Default duration of a recovery.
pub const DEFAULT_RECOVERY_SECONDS: u64 = 5;
/// Default delay before fdbmonitor restarts a killed process.
pub const DEFAULT_RESTART_SECONDS: u64 = 5;

/// A parsed and validated scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    /// Free text naming the scenario.
    #[serde(default)]
    pub name: String,
    /// Seed of every random choice in the run (default 1).
    #[serde(default)]
    pub seed: Option<u64>,
    /// The simulated world.
    #[serde(default)]
    pub world: WorldSettings,
    /// The FoundationDBCluster manifest the scenario starts with (with `snapshot`: the
    /// captured cluster's manifest, filled in when the scenario is read).
    #[serde(default)]
    pub cluster: Value,
    /// Start the world as a live cluster was captured instead of empty
    /// ([`snapshot::SnapshotSpec`]); its files are read (made inline) with the scenario.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<snapshot::SnapshotSpec>,
    /// More FoundationDBCluster manifests sharing the first cluster's database, each
    /// with its own operator instance (several Kubernetes clusters, one database). Each
    /// is created once the first cluster's database is configured, with
    /// `spec.seedConnectionString` set to it unless the manifest sets one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<Value>,
    /// More FoundationDBCluster manifests, each its own database (unlike `clusters`),
    /// created with the first and reconciled by the same single operator (one set of
    /// tools, caches and concurrency), as one `fdb-operator run` reconciles every
    /// cluster it watches. Steps name them as they name `clusters` members.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fleet: Vec<Value>,
    /// FoundationDBBackup manifests, created (as a user) when the scenario starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backups: Vec<Value>,
    /// Secrets and ConfigMaps (`apiVersion: v1`) the pods mount besides what the operator
    /// makes, created (as a user) in the cluster's namespace when the scenario starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<Value>,
    /// FoundationDBRestore manifests, each created by the first `apply` step that targets
    /// it (a restore acts once, so the scenario says when).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restores: Vec<Value>,
    /// What happens, in order.
    #[serde(default)]
    pub steps: Vec<StepSpec>,
}

/// The simulated world's shape.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorldSettings {
    /// Number of simulated nodes `node-1..node-N` (default: one per pod).
    #[serde(default)]
    pub nodes: Option<u32>,
    /// When set, node-i gets `topology.kubernetes.io/zone=zone-(i mod zones)`.
    #[serde(default)]
    pub zones: Option<u32>,
    /// Kubelet ConfigMap projection delay in seconds (default 60).
    #[serde(default)]
    pub config_map_delay_seconds: Option<u64>,
    /// Seconds to move a fully loaded storage process's data; when set, it defines the
    /// data movement rate instead of `moveMiBPerSecond`.
    #[serde(default)]
    pub exclusion_seconds: Option<u64>,
    /// Data per storage process when the database is created, in GiB (default 1).
    #[serde(default, rename = "storageGiB")]
    pub storage_gib: Option<f64>,
    /// Shards the data is split into (default 256).
    #[serde(default)]
    pub shards: Option<u32>,
    /// Data movement rate per source process, in MiB/s (default 50).
    #[serde(default, rename = "moveMiBPerSecond")]
    pub move_mib_per_second: Option<f64>,
    /// Seconds of silence after which FoundationDB declares a process failed (default 60).
    #[serde(default)]
    pub failure_detection_seconds: Option<u64>,
    /// Seconds one recovery takes, the database unavailable meanwhile (default 5).
    #[serde(default)]
    pub recovery_seconds: Option<u64>,
    /// Seconds before fdbmonitor brings a killed fdbserver back (default 5).
    #[serde(default)]
    pub restart_seconds: Option<u64>,
    /// Image -> the fdbserver version it contains (default: the version in the image tag).
    #[serde(default)]
    pub images: BTreeMap<String, String>,
    /// FoundationDB clients connected to the database from the start.
    #[serde(default)]
    pub clients: Vec<ClientSpec>,
    /// TLS between the operator and the sidecars: the run generates a CA, a certificate
    /// for the pods in this Secret and a client certificate for the operator.
    #[serde(default)]
    pub tls: Option<TlsSettings>,
    /// The minor versions (`7.1`) whose tools the operator's image holds (default
    /// `["7.1", "7.3", "7.4"]`, the operator image's): the operator cannot read a
    /// cluster, nor upgrade one, to a version missing here.
    #[serde(default)]
    pub operator_tools: Option<Vec<String>>,
    /// The storage classes (default: `standard`, the default class, WaitForFirstConsumer,
    /// reachable from every node).
    #[serde(default)]
    pub storage_classes: Option<Vec<storage_classes::StorageClassSettings>>,
    /// The address families the pod network offers, primary first: `[4]` (default),
    /// `[6]`, `[4, 6]` or `[6, 4]`. A pod asking for a family missing here stays
    /// Pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_families: Option<Vec<i64>>,
    /// Flags of `fdb-operator run` the operator runs with, written as on its command
    /// line (`[--restrict-pod-templates, --allow-host-network]`); only the flags that
    /// change what a pass decides ([`operator_flags::OperatorFlags`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operator_flags: Vec<String>,
}

/// `world.tls`: the run's generated TLS material.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TlsSettings {
    /// The Secret (in the cluster's namespace) that receives the pods' certificate
    /// (`cert.pem`), key (`key.pem`) and the CA (`ca.pem`); the cluster's pod template
    /// mounts it and points `FDB_TLS_*` at it, as in the TLS manual.
    pub secret: String,
}

/// A FoundationDB client connected to the database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientSpec {
    /// The client's address (`IP:port`).
    pub address: String,
    /// The client library version.
    pub version: String,
    /// The client's trace log group.
    #[serde(default)]
    pub log_group: String,
}

/// Why a scenario file cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read scenario {path}")]
    Read {
        /// The file.
        path: String,
        /// The IO error.
        source: std::io::Error,
    },
    /// The file is not a valid scenario document (syntax, unknown field, wrong type).
    #[error("{path}: {message}")]
    Yaml {
        /// The file.
        path: String,
        /// serde's message, with the field path and line.
        message: String,
        /// The 1-based line, when known.
        line: Option<usize>,
    },
    /// The document parsed but a value is not acceptable.
    #[error("{path}: {field}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// The offending field (`steps[2].fault.rate`).
        field: String,
        /// What is wrong.
        message: String,
    },
}

impl Scenario {
    /// Reads (at most 4 MiB), parses and validates a scenario file.
    pub fn from_file(path: &std::path::Path) -> Result<Self, ScenarioError> {
        let display = path.display().to_string();
        let text = yaml_input::read_file(path).map_err(|error| match error {
            ReadError::Io { source, .. } => ScenarioError::Read {
                path: display.clone(),
                source,
            },
            ReadError::Input { source, .. } => input_error(&display, &source),
        })?;
        Self::parse(&text, &display)
    }

    /// Parses and validates scenario text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, ScenarioError> {
        let text = yaml_input::prepare(text).map_err(|error| input_error(origin, &error))?;
        // Duplicate keys and `.nan`/`.inf` first: the typed parse below would keep the
        // last of two keys, and read `.nan` in the cluster manifest as null.
        yaml_input::single_document(text).map_err(|error| input_error(origin, &error))?;
        let mut scenario: Scenario =
            serde_yaml_ng::from_str(text).map_err(|error| ScenarioError::Yaml {
                path: origin.to_owned(),
                line: error.location().map(|location| location.line()),
                message: error.to_string(),
            })?;
        scenario.load_snapshot(origin)?;
        scenario.validate(origin, text)?;
        Ok(scenario)
    }

    /// Reads the snapshot's files (relative to the scenario file), checks the capture and
    /// takes the captured cluster's manifest as the scenario's cluster.
    fn load_snapshot(&mut self, origin: &str) -> Result<(), ScenarioError> {
        let Some(spec) = &self.snapshot else {
            return Ok(());
        };
        let invalid = |(field, message): snapshot::Problem| ScenarioError::Invalid {
            path: origin.to_owned(),
            field,
            message,
        };
        if !self.cluster.is_null() {
            return Err(invalid((
                "cluster".to_owned(),
                "a scenario with `snapshot` takes its cluster from the capture".to_owned(),
            )));
        }
        let base = std::path::Path::new(origin)
            .parent()
            .unwrap_or_else(|| std::path::Path::new(""));
        let loaded = spec.load(base).map_err(invalid)?;
        let captured = loaded.check().map_err(invalid)?;
        self.cluster = snapshot::manifest_of(&captured.cluster);
        self.snapshot = Some(loaded);
        Ok(())
    }

    /// The seed of the run (`--seed` overrides it).
    pub fn seed(&self) -> u64 {
        self.seed.unwrap_or(DEFAULT_SEED)
    }

    /// The validated steps, in order.
    pub fn steps(&self) -> Vec<Step> {
        self.steps.iter().filter_map(StepSpec::to_step).collect()
    }

    /// Checks everything that can be known before the run (see [`limits`]); `text` is
    /// the scenario's file, to give lines.
    fn validate(&self, origin: &str, text: &str) -> Result<(), ScenarioError> {
        self.check(text)
            .map_err(|(field, message)| ScenarioError::Invalid {
                path: origin.to_owned(),
                field,
                message,
            })
    }
}

/// A scenario file beyond the input limits, or not readable YAML.
fn input_error(origin: &str, error: &InputError) -> ScenarioError {
    ScenarioError::Yaml {
        path: origin.to_owned(),
        message: error.to_string(),
        line: error.line(),
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_acts;
#[cfg(test)]
mod tests_bounds;
