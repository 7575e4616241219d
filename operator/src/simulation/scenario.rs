//! Scenario files for `fdb-operator simulate` (the contract is `spec/simulation.md`).
//!
//! A scenario names a world (nodes, zones, delays, clients), a FoundationDBCluster manifest
//! and a list of steps. Parsing keeps YAML line numbers in its errors, and validation names
//! the offending field, so a user can fix a scenario without reading our code.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The scenario's seed when it does not set one.
pub const DEFAULT_SEED: u64 = 1;
/// Default delay before the simulated kubelet projects a ConfigMap change into pods.
pub const DEFAULT_CONFIG_MAP_DELAY_SECONDS: u64 = 60;
/// Default time to move a fully loaded storage process's data away during exclusion.
pub const DEFAULT_EXCLUSION_SECONDS: u64 = 60;

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
    /// The FoundationDBCluster manifest the scenario starts with.
    pub cluster: Value,
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
    /// Seconds to move a fully loaded storage process's data (default 60).
    #[serde(default)]
    pub exclusion_seconds: Option<u64>,
    /// FoundationDB clients connected to the database from the start.
    #[serde(default)]
    pub clients: Vec<ClientSpec>,
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

/// One scenario step as written: exactly one of the fields is set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepSpec {
    /// Run reconcile passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconcile: Option<ReconcileStep>,
    /// JSON merge patch applied to the cluster object, as a user would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply: Option<Value>,
    /// Advance the clock this many seconds, the world and the operator running meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advance: Option<u64>,
    /// Inject a fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// Undo faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heal: Option<Heal>,
    /// Drop all in-memory operator state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_operator: Option<Empty>,
}

/// An empty mapping (`{}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// Settings of a `reconcile` step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReconcileStep {
    /// Stop after this many passes instead of running until reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_passes: Option<u32>,
}

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
}

/// What a `heal` step undoes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Heal {
    /// Undo the faults on this process group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_group: Option<String>,
    /// Undo the faults on this node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Undo every fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all: Option<bool>,
}

/// A step, once validated: exactly one action.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Run reconcile passes until reconciled, or at most `max_passes`.
    Reconcile(ReconcileStep),
    /// Apply a JSON merge patch to the cluster object.
    Apply(Value),
    /// Advance the clock.
    Advance(u64),
    /// Inject a fault.
    Fault(Fault),
    /// Undo faults.
    Heal(Heal),
    /// Drop the operator's in-memory state.
    RestartOperator,
}

/// Why a scenario file cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read scenario {path}: {source}")]
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
    /// Reads, parses and validates a scenario file.
    pub fn from_file(path: &std::path::Path) -> Result<Self, ScenarioError> {
        let display = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
            path: display.clone(),
            source,
        })?;
        Self::parse(&text, &display)
    }

    /// Parses and validates scenario text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, ScenarioError> {
        let scenario: Scenario =
            serde_yaml_ng::from_str(text).map_err(|error| ScenarioError::Yaml {
                path: origin.to_owned(),
                line: error.location().map(|location| location.line()),
                message: error.to_string(),
            })?;
        scenario.validate(origin)?;
        Ok(scenario)
    }

    /// The seed of the run (`--seed` overrides it).
    pub fn seed(&self) -> u64 {
        self.seed.unwrap_or(DEFAULT_SEED)
    }

    /// The validated steps, in order.
    pub fn steps(&self) -> Vec<Step> {
        self.steps.iter().filter_map(StepSpec::to_step).collect()
    }

    fn validate(&self, origin: &str) -> Result<(), ScenarioError> {
        let invalid = |field: String, message: &dyn fmt::Display| ScenarioError::Invalid {
            path: origin.to_owned(),
            field,
            message: message.to_string(),
        };
        if !self.cluster.is_object() {
            return Err(invalid(
                "cluster".into(),
                &"must be a FoundationDBCluster manifest (a mapping)",
            ));
        }
        let kind = self.cluster.get("kind").and_then(Value::as_str);
        if kind != Some("FoundationDBCluster") {
            return Err(invalid(
                "cluster.kind".into(),
                &format!("must be FoundationDBCluster, found {kind:?}"),
            ));
        }
        if self
            .cluster
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(invalid("cluster.metadata.name".into(), &"is required"));
        }
        if let Some(nodes) = self.world.nodes
            && nodes == 0
        {
            return Err(invalid("world.nodes".into(), &"must be at least 1"));
        }
        if let Some(zones) = self.world.zones
            && zones == 0
        {
            return Err(invalid("world.zones".into(), &"must be at least 1"));
        }
        if self.world.exclusion_seconds == Some(0) {
            return Err(invalid(
                "world.exclusionSeconds".into(),
                &"must be at least 1",
            ));
        }
        for (index, step) in self.steps.iter().enumerate() {
            let field = format!("steps[{index}]");
            if step.action_count() != 1 {
                return Err(invalid(
                    field,
                    &"must have exactly one of reconcile, apply, advance, fault, heal, restartOperator",
                ));
            }
            if let Some(patch) = &step.apply
                && !patch.is_object()
            {
                return Err(invalid(
                    format!("{field}.apply"),
                    &"must be a mapping (a JSON merge patch of the cluster)",
                ));
            }
            if let Some(ReconcileStep {
                max_passes: Some(0),
            }) = step.reconcile
            {
                return Err(invalid(
                    format!("{field}.reconcile.maxPasses"),
                    &"must be at least 1",
                ));
            }
            if let Some(fault) = &step.fault {
                validate_fault(fault).map_err(|(name, message)| {
                    invalid(format!("{field}.fault.{name}"), &message)
                })?;
            }
            if let Some(heal) = &step.heal {
                let targets = usize::from(heal.process_group.is_some())
                    + usize::from(heal.node.is_some())
                    + usize::from(heal.all == Some(true));
                if targets != 1 {
                    return Err(invalid(
                        format!("{field}.heal"),
                        &"must name exactly one of processGroup, node, or all: true",
                    ));
                }
            }
        }
        Ok(())
    }
}

impl StepSpec {
    fn action_count(&self) -> usize {
        [
            self.reconcile.is_some(),
            self.apply.is_some(),
            self.advance.is_some(),
            self.fault.is_some(),
            self.heal.is_some(),
            self.restart_operator.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }

    /// The step's single action (None only for an unvalidated step with no action).
    pub fn to_step(&self) -> Option<Step> {
        if let Some(reconcile) = self.reconcile {
            return Some(Step::Reconcile(reconcile));
        }
        if let Some(patch) = &self.apply {
            return Some(Step::Apply(patch.clone()));
        }
        if let Some(seconds) = self.advance {
            return Some(Step::Advance(seconds));
        }
        if let Some(fault) = &self.fault {
            return Some(Step::Fault(fault.clone()));
        }
        if let Some(heal) = &self.heal {
            return Some(Step::Heal(heal.clone()));
        }
        self.restart_operator.map(|_| Step::RestartOperator)
    }
}

/// Checks a fault's values; the error names the field inside the fault.
fn validate_fault(fault: &Fault) -> Result<(), (&'static str, String)> {
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
        | Fault::SidecarUnreachable { process_group } => non_empty("processGroup", process_group),
        Fault::NodeDown { node } => non_empty("node", node),
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
            version
                .parse::<fdb_shared::FdbVersion>()
                .map(|_| ())
                .map_err(|error| ("version", error.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLUSTER: &str = "cluster:\n  apiVersion: apps.foundationdb.org/v1beta2\n  kind: FoundationDBCluster\n  metadata: {name: sample, namespace: default}\n  spec: {version: 7.1.57}\n";

    fn parse(body: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse(&format!("name: test\n{CLUSTER}{body}"), "test.yaml")
    }

    #[test]
    fn parses_every_step_kind_of_the_contract() {
        let scenario = parse(
            "seed: 7\nworld: {nodes: 6, zones: 3, configMapDelaySeconds: 60, exclusionSeconds: 60,\n  clients: [{address: \"10.9.0.1:4000\", version: \"7.1.57\", logGroup: app}]}\nsteps:\n  - reconcile: {}\n  - reconcile: {maxPasses: 5}\n  - apply: {spec: {processCounts: {storage: 3}}}\n  - advance: 3600\n  - fault: {kind: processMissing, processGroup: storage-2}\n  - fault: {kind: podPending, processGroup: log-1}\n  - fault: {kind: podFailed, processGroup: log-1}\n  - fault: {kind: podStuckTerminating, processGroup: storage-1}\n  - fault: {kind: sidecarUnreachable, processGroup: stateless-3}\n  - fault: {kind: nodeDown, node: node-2}\n  - fault: {kind: nodeTaint, node: node-2, key: example.com/maintenance}\n  - fault: {kind: apiConflicts, rate: 0.2}\n  - fault: {kind: fdbcliTimeouts, rate: 0.2}\n  - fault: {kind: clientConnected, address: \"10.9.0.2:4000\", version: \"7.1.0\", logGroup: app}\n  - heal: {processGroup: storage-2}\n  - heal: {node: node-2}\n  - heal: {all: true}\n  - restartOperator: {}\n",
        )
        .unwrap();
        assert_eq!(scenario.seed(), 7);
        assert_eq!(scenario.world.clients.len(), 1);
        let steps = scenario.steps();
        assert_eq!(steps.len(), 18);
        assert_eq!(
            steps[1],
            Step::Reconcile(ReconcileStep {
                max_passes: Some(5)
            })
        );
        assert_eq!(steps[3], Step::Advance(3600));
        assert_eq!(steps[11], Step::Fault(Fault::ApiConflicts { rate: 0.2 }));
        assert_eq!(steps[17], Step::RestartOperator);
    }

    #[test]
    fn defaults_apply_when_unset() {
        let scenario = parse("").unwrap();
        assert_eq!(scenario.seed(), DEFAULT_SEED);
        assert!(scenario.steps().is_empty());
    }

    #[test]
    fn yaml_errors_name_the_field_and_line() {
        let error = parse("steps:\n  - fault: {kind: podPendin, processGroup: a}\n").unwrap_err();
        let ScenarioError::Yaml { message, line, .. } = &error else {
            panic!("{error}")
        };
        assert!(message.contains("steps[0].fault.kind"), "{message}");
        assert!(message.contains("podPendin"), "{message}");
        assert_eq!(*line, Some(8));

        let error = parse("steps:\n  - reconcile: {maxPasss: 3}\n").unwrap_err();
        assert!(error.to_string().contains("maxPasss"), "{error}");
    }

    #[test]
    fn semantic_errors_name_the_field() {
        let cases = [
            (
                "steps:\n  - fault: {kind: apiConflicts, rate: 1.5}\n",
                "steps[0].fault.rate",
            ),
            ("steps:\n  - {advance: 3, reconcile: {}}\n", "steps[0]"),
            ("steps:\n  - heal: {}\n", "steps[0].heal"),
            (
                "steps:\n  - reconcile: {maxPasses: 0}\n",
                "steps[0].reconcile.maxPasses",
            ),
            ("steps:\n  - apply: 3\n", "steps[0].apply"),
            (
                "steps:\n  - fault: {kind: clientConnected, address: a, version: x}\n",
                "steps[0].fault.version",
            ),
            ("world: {nodes: 0}\n", "world.nodes"),
        ];
        for (body, field) in cases {
            match parse(body) {
                Err(ScenarioError::Invalid { field: got, .. }) => assert_eq!(got, field, "{body}"),
                other => panic!("{body}: expected an invalid {field}, got {other:?}"),
            }
        }
    }

    #[test]
    fn the_cluster_must_be_a_named_foundationdb_cluster() {
        let error = Scenario::parse("cluster: {kind: Pod, metadata: {name: x}}\n", "test.yaml")
            .unwrap_err();
        assert!(error.to_string().contains("cluster.kind"), "{error}");
        let error = Scenario::parse(
            "cluster: {kind: FoundationDBCluster, metadata: {}}\n",
            "test.yaml",
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("cluster.metadata.name"),
            "{error}"
        );
    }
}
