//! Scenario steps as written (`StepSpec`), as run (`Step`), and their validation.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::faults::{Fault, validate_fault};

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
    /// Drop all in-memory operator state, now or right after its next action of a kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_operator: Option<RestartOperatorStep>,
    /// Do something through the Kubernetes API or the admin interface, as the operator
    /// (judged by the invariants like an operator action) or as a user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act: Option<ActStep>,
    /// Let the world and the operator run until every condition holds (at most `within`
    /// seconds); a condition that never holds is an `expectation-failed` violation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<ExpectStep>,
    /// Delete a backup or restore resource, as a user would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<DeleteStep>,
}

/// A `delete` step: the resource to delete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteStep {
    /// `foundationdbbackup/<name>` or `foundationdbrestore/<name>`.
    pub target: String,
}

/// The kinds of FoundationDB resource a scenario lists beside its cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ResourceKind {
    /// A FoundationDBBackup (`backups:`).
    Backup,
    /// A FoundationDBRestore (`restores:`).
    Restore,
}

impl ResourceKind {
    /// The name used in targets and the resource's plural.
    pub fn plural(self) -> &'static str {
        match self {
            Self::Backup => "foundationdbbackups",
            Self::Restore => "foundationdbrestores",
        }
    }

    /// The name used in targets (`foundationdbbackup`, `foundationdbrestore`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Backup => "foundationdbbackup",
            Self::Restore => "foundationdbrestore",
        }
    }

    /// The scenario's list of such manifests.
    pub fn list(self) -> &'static str {
        match self {
            Self::Backup => "backups",
            Self::Restore => "restores",
        }
    }
}

/// A parsed `foundationdbbackup/<name>` or `foundationdbrestore/<name>` target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceTarget {
    /// The kind.
    pub kind: ResourceKind,
    /// The resource's name (in the cluster's namespace).
    pub name: String,
}

impl ResourceTarget {
    /// Parses `foundationdbbackup/<name>` or `foundationdbrestore/<name>`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (kind, name) = text.split_once('/').ok_or_else(|| {
            format!(
                "{text:?} is not of the form foundationdbbackup/<name> or foundationdbrestore/<name>"
            )
        })?;
        let kind = match kind {
            "foundationdbbackup" => ResourceKind::Backup,
            "foundationdbrestore" => ResourceKind::Restore,
            other => {
                return Err(format!(
                    "{other:?} is not a kind this step can name (foundationdbbackup, foundationdbrestore)"
                ));
            }
        };
        if name.is_empty() || name.contains('/') {
            return Err(format!("{text:?} has no valid resource name"));
        }
        Ok(Self {
            kind,
            name: name.to_owned(),
        })
    }
}

/// A targeted `apply` step: the resource and the patch, or the problem (field, message).
pub type TargetedApply = Result<(ResourceTarget, Value), (&'static str, String)>;

/// The prefix of an `apply` target naming one of the scenario's FoundationDBClusters.
pub const CLUSTER_TARGET_PREFIX: &str = "foundationdbcluster/";

/// An `apply` step that targets one of the scenario's clusters by name:
/// `{target: foundationdbcluster/<name>, patch: {...}}` (the cluster and the patch).
pub fn apply_cluster_target(apply: &Value) -> Option<(String, Value)> {
    let object = apply.as_object()?;
    let name = object
        .get("target")?
        .as_str()?
        .strip_prefix(CLUSTER_TARGET_PREFIX)?;
    let patch = object
        .get("patch")
        .cloned()
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    Some((name.to_owned(), patch))
}

/// An `apply` step that targets a backup or restore: `{target: ..., patch: {...}}`
/// (`None` for a plain patch of the first cluster, or one naming a cluster).
pub fn apply_target(apply: &Value) -> Option<TargetedApply> {
    let object = apply.as_object()?;
    let target = object.get("target")?;
    if apply_cluster_target(apply).is_some() {
        return None;
    }
    Some((|| {
        let target = target
            .as_str()
            .ok_or_else(|| ("target", "must be a string".to_owned()))
            .and_then(|t| ResourceTarget::parse(t).map_err(|e| ("target", e)))?;
        if let Some(key) = object.keys().find(|k| *k != "target" && *k != "patch") {
            return Err((
                "",
                format!("has {key:?}: an apply step with a target takes only `target` and `patch`"),
            ));
        }
        let patch = object
            .get("patch")
            .cloned()
            .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
        if !patch.is_object() {
            return Err(("patch", "must be a mapping (a JSON merge patch)".to_owned()));
        }
        Ok((target, patch))
    })())
}

/// Settings of a `reconcile` step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReconcileStep {
    /// Stop after this many passes instead of running until reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_passes: Option<u32>,
}

/// Settings of a `restartOperator` step.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RestartOperatorStep {
    /// Crash the operator right after its next action of this kind (an event `action`
    /// name: `kill`, `exclude`, `delete`, `patch`, ...), mid-pass, instead of now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
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

/// Who performs an `act` step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Actor {
    /// Judged by the invariants as an operator action (a mutation test of the operator).
    Operator,
    /// A person or another controller: only `data-lost` judges it.
    User,
}

/// An `act` step: one action through the same interfaces the operator uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActStep {
    /// Who acts.
    #[serde(rename = "as")]
    pub actor: Actor,
    /// With `as: operator`: the operator instance of this cluster (by name) acts, so its
    /// admin commands are issued under that cluster's lock ID (default: the first
    /// cluster's instance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// Delete one object: `pod/<name>`, `pvc/<name>` or `service/<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<String>,
    /// Delete every object of a kind matching a label selector, in one request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_collection: Option<DeleteCollection>,
    /// `fdbcli kill` of these process groups' processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill: Option<Vec<String>>,
    /// `fdbcli exclude` of these process groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude: Option<Vec<String>>,
    /// Patch one object (a strategic merge patch for pods, a JSON merge patch otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<ActPatch>,
    /// Evict one pod (`pod/<name>`) through the eviction subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evict: Option<String>,
    /// Cordon a node and evict its pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain: Option<String>,
    /// Add this many nodes to the world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_nodes: Option<u32>,
    /// `true`: empty the database (every user key) and stop the user's writes, as before
    /// a restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_data: Option<bool>,
}

/// The target of a `deleteCollection` action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteCollection {
    /// `pod`, `pvc` or `service`.
    pub kind: ObjectKind,
    /// A Kubernetes label selector (`a=b,c in (d,e)`).
    #[serde(default)]
    pub label_selector: String,
}

/// The target and body of a `patch` action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActPatch {
    /// `pod/<name>`, `pvc/<name>` or `service/<name>`.
    pub target: String,
    /// The patch body.
    pub patch: Value,
}

/// The kinds of object an `act` step can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ObjectKind {
    /// A pod.
    Pod,
    /// A persistent volume claim.
    Pvc,
    /// A service.
    Service,
}

impl ObjectKind {
    /// The name used in targets (`pod`, `pvc`, `service`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pod => "pod",
            Self::Pvc => "pvc",
            Self::Service => "service",
        }
    }

    /// The resource's plural in the core API group.
    pub fn plural(self) -> &'static str {
        match self {
            Self::Pod => "pods",
            Self::Pvc => "persistentvolumeclaims",
            Self::Service => "services",
        }
    }
}

/// A parsed `kind/name` target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    /// The kind.
    pub kind: ObjectKind,
    /// The object's name (in the cluster's namespace).
    pub name: String,
}

impl ObjectRef {
    /// Parses `pod/<name>`, `pvc/<name>` or `service/<name>`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (kind, name) = text.split_once('/').ok_or_else(|| {
            format!(
                "{text:?} is not of the form kind/name (pod/<name>, pvc/<name>, service/<name>)"
            )
        })?;
        let kind = match kind {
            "pod" => ObjectKind::Pod,
            "pvc" => ObjectKind::Pvc,
            "service" => ObjectKind::Service,
            other => {
                return Err(format!(
                    "{other:?} is not a kind an act step can name (pod, pvc, service)"
                ));
            }
        };
        if name.is_empty() || name.contains('/') {
            return Err(format!("{text:?} has no valid object name"));
        }
        Ok(Self {
            kind,
            name: name.to_owned(),
        })
    }
}

/// What an `act` step does, once validated.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Delete one object.
    Delete(ObjectRef),
    /// Delete every object of a kind matching a label selector.
    DeleteCollection(DeleteCollection),
    /// Kill these process groups' processes.
    Kill(Vec<String>),
    /// Exclude these process groups.
    Exclude(Vec<String>),
    /// Patch one object.
    Patch(ObjectRef, Value),
    /// Evict one pod.
    Evict(String),
    /// Cordon a node and evict its pods.
    Drain(String),
    /// Add nodes.
    AddNodes(u32),
    /// Empty the database and stop writing.
    ClearData,
}

impl ActStep {
    fn action_count(&self) -> usize {
        [
            self.delete.is_some(),
            self.delete_collection.is_some(),
            self.kill.is_some(),
            self.exclude.is_some(),
            self.patch.is_some(),
            self.evict.is_some(),
            self.drain.is_some(),
            self.add_nodes.is_some(),
            self.clear_data.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }

    /// The single action, validated; the error names the field inside `act`.
    pub fn action(&self) -> Result<Action, (&'static str, String)> {
        if self.action_count() != 1 {
            return Err((
                "",
                "must have `as` and exactly one of delete, deleteCollection, kill, exclude, patch, evict, drain, addNodes, clearData".to_owned(),
            ));
        }
        let groups = |field: &'static str, groups: &[String]| {
            if groups.is_empty() || groups.iter().any(|g| g.trim().is_empty()) {
                Err((
                    field,
                    "must list at least one process group ID, none empty".to_owned(),
                ))
            } else {
                Ok(groups.to_vec())
            }
        };
        if let Some(target) = &self.delete {
            return ObjectRef::parse(target)
                .map(Action::Delete)
                .map_err(|e| ("delete", e));
        }
        if let Some(collection) = &self.delete_collection {
            return Ok(Action::DeleteCollection(collection.clone()));
        }
        if let Some(kill) = &self.kill {
            return groups("kill", kill).map(Action::Kill);
        }
        if let Some(exclude) = &self.exclude {
            return groups("exclude", exclude).map(Action::Exclude);
        }
        if let Some(patch) = &self.patch {
            let target = ObjectRef::parse(&patch.target).map_err(|e| ("patch.target", e))?;
            if !patch.patch.is_object() {
                return Err(("patch.patch", "must be a mapping".to_owned()));
            }
            return Ok(Action::Patch(target, patch.patch.clone()));
        }
        if let Some(target) = &self.evict {
            let target = ObjectRef::parse(target).map_err(|e| ("evict", e))?;
            if target.kind != ObjectKind::Pod {
                return Err(("evict", "only pods can be evicted (pod/<name>)".to_owned()));
            }
            return Ok(Action::Evict(target.name));
        }
        if let Some(node) = &self.drain {
            if node.trim().is_empty() {
                return Err(("drain", "must name a node".to_owned()));
            }
            return Ok(Action::Drain(node.clone()));
        }
        match self.clear_data {
            Some(true) => return Ok(Action::ClearData),
            Some(false) => {
                return Err((
                    "clearData",
                    "must be true (leave it out to do something else)".to_owned(),
                ));
            }
            None => {}
        }
        match self.add_nodes {
            Some(0) => Err(("addNodes", "must be at least 1".to_owned())),
            Some(count) => Ok(Action::AddNodes(count)),
            None => Err(("", "has no action".to_owned())),
        }
    }
}

/// An `expect` step: conditions on the world, awaited for at most `within` seconds.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpectStep {
    /// Seconds of simulated time to wait for the conditions (default 0: check now).
    #[serde(default)]
    pub within: u64,
    /// The cluster (by name) whose operator and object `reconciled`, `runningVersion`
    /// and `processGroups` are about, and whose pods `pods` and `images` count (default:
    /// the first cluster's, and every pod).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// The operator's last pass reported Reconciled (and nothing changed since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciled: Option<bool>,
    /// The database accepts transactions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available: Option<bool>,
    /// Every fdbserver process runs this version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The cluster's `status.runningVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_version: Option<String>,
    /// Live process groups (not marked for removal) by class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_groups: Option<BTreeMap<String, u32>>,
    /// Pods that are not terminating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<u32>,
    /// The database's exclusion list, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<Vec<String>>,
    /// Every pod's image of a container: `main`, `sidecar`, or a container's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<BTreeMap<String, String>>,
    /// Conditions on FoundationDBBackups, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backups: Option<BTreeMap<String, ResourceExpectation>>,
    /// Conditions on FoundationDBRestores, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restores: Option<BTreeMap<String, ResourceExpectation>>,
    /// The database's user data (`fdb.dataDigest`) is what it was at the latest
    /// restorable version of this FoundationDBBackup's blob store URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_matches_backup: Option<String>,
}

/// Conditions on one backup or restore resource.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceExpectation {
    /// The resource exists (`true`) or is gone (`false`); default `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    /// Every field given here equals the resource's status field (a subset match: maps
    /// compare key by key, other values exactly; `null` matches an absent field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
    /// Backups only: at least this many completed snapshots in its blob store URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshots: Option<u32>,
}

impl ExpectStep {
    fn validate(&self) -> Result<(), (&'static str, String)> {
        let conditions = [
            self.reconciled.is_some(),
            self.available.is_some(),
            self.version.is_some(),
            self.running_version.is_some(),
            self.process_groups.is_some(),
            self.pods.is_some(),
            self.excluded.is_some(),
            self.images.is_some(),
            self.backups.is_some(),
            self.restores.is_some(),
            self.data_matches_backup.is_some(),
        ];
        if !conditions.contains(&true) {
            return Err(("", "must state at least one condition (reconciled, available, version, runningVersion, processGroups, pods, excluded, images, backups, restores, dataMatchesBackup)".to_owned()));
        }
        for (field, list) in [("backups", &self.backups), ("restores", &self.restores)] {
            for (name, expectation) in list.iter().flatten() {
                if expectation.status.as_ref().is_some_and(|s| !s.is_object()) {
                    return Err((field, format!("{name}.status must be a mapping")));
                }
                if field == "restores" && expectation.snapshots.is_some() {
                    return Err((field, format!("{name}.snapshots applies to backups only")));
                }
                if expectation.exists == Some(false)
                    && (expectation.status.is_some() || expectation.snapshots.is_some())
                {
                    return Err((
                        field,
                        format!("{name}: a resource expected gone has no status or snapshots"),
                    ));
                }
            }
        }
        for (field, version) in [
            ("version", &self.version),
            ("runningVersion", &self.running_version),
        ] {
            if let Some(version) = version {
                version
                    .parse::<fdb_shared::FdbVersion>()
                    .map_err(|error| (field, error.to_string()))?;
            }
        }
        if let Some(classes) = &self.process_groups {
            for class in classes.keys() {
                class
                    .parse::<fdb_shared::api::ProcessClass>()
                    .map_err(|_| ("processGroups", format!("{class:?} is not a process class")))?;
            }
        }
        Ok(())
    }
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
    /// Drop the operator's in-memory state, now (`None`) or right after its next action
    /// of that kind.
    RestartOperator {
        /// The event action name that triggers the crash.
        after: Option<String>,
    },
    /// Act as the operator or a user.
    Act {
        /// Who acts.
        actor: Actor,
        /// What they do.
        action: Action,
        /// The operator instance acting (`as: operator`), by cluster name.
        cluster: Option<String>,
    },
    /// Apply a JSON merge patch to one of the scenario's clusters, by name.
    ApplyCluster {
        /// The cluster.
        name: String,
        /// The patch.
        patch: Value,
    },
    /// Await conditions.
    Expect(ExpectStep),
    /// Apply a JSON merge patch to a backup or restore (creating it from the scenario's
    /// manifest when it does not exist).
    ApplyTo {
        /// The resource.
        target: ResourceTarget,
        /// The patch.
        patch: Value,
    },
    /// Delete a backup or restore.
    Delete(ResourceTarget),
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
            self.act.is_some(),
            self.expect.is_some(),
            self.delete.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }

    /// The step's single action (None only for an unvalidated or invalid step).
    pub fn to_step(&self) -> Option<Step> {
        if let Some(reconcile) = self.reconcile {
            return Some(Step::Reconcile(reconcile));
        }
        if let Some(patch) = &self.apply {
            if let Some((name, patch)) = apply_cluster_target(patch) {
                return Some(Step::ApplyCluster { name, patch });
            }
            return match apply_target(patch) {
                Some(Ok((target, patch))) => Some(Step::ApplyTo { target, patch }),
                Some(Err(_)) => None,
                None => Some(Step::Apply(patch.clone())),
            };
        }
        if let Some(delete) = &self.delete {
            return ResourceTarget::parse(&delete.target).ok().map(Step::Delete);
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
        if let Some(act) = &self.act {
            return act.action().ok().map(|action| Step::Act {
                actor: act.actor,
                action,
                cluster: act.cluster.clone(),
            });
        }
        if let Some(expect) = &self.expect {
            return Some(Step::Expect(expect.clone()));
        }
        self.restart_operator
            .as_ref()
            .map(|restart| Step::RestartOperator {
                after: restart.after.clone(),
            })
    }

    /// Checks the step; the error is `(field inside the step, message)`, the field
    /// empty when the step as a whole is wrong.
    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        if self.action_count() != 1 {
            return Err((
                String::new(),
                "must have exactly one of reconcile, apply, advance, fault, heal, restartOperator, act, expect, delete".to_owned(),
            ));
        }
        let inside = |prefix: &str, (field, message): (&str, String)| {
            if field.is_empty() {
                (prefix.to_owned(), message)
            } else {
                (format!("{prefix}.{field}"), message)
            }
        };
        if let Some(Some(Err(problem))) = self.apply.as_ref().map(apply_target) {
            return Err(inside("apply", problem));
        }
        if let Some(delete) = &self.delete {
            ResourceTarget::parse(&delete.target).map_err(|e| ("delete.target".to_owned(), e))?;
        }
        if let Some(patch) = &self.apply
            && !patch.is_object()
        {
            return Err((
                "apply".into(),
                "must be a mapping (a JSON merge patch of the cluster)".into(),
            ));
        }
        if let Some(ReconcileStep {
            max_passes: Some(0),
        }) = self.reconcile
        {
            return Err(("reconcile.maxPasses".into(), "must be at least 1".into()));
        }
        if let Some(fault) = &self.fault {
            validate_fault(fault).map_err(|e| inside("fault", e))?;
        }
        if let Some(heal) = &self.heal {
            let targets = usize::from(heal.process_group.is_some())
                + usize::from(heal.node.is_some())
                + usize::from(heal.all == Some(true));
            if targets != 1 {
                return Err((
                    "heal".into(),
                    "must name exactly one of processGroup, node, or all: true".into(),
                ));
            }
        }
        if let Some(RestartOperatorStep { after: Some(after) }) = &self.restart_operator
            && after.trim().is_empty()
        {
            return Err((
                "restartOperator.after".into(),
                "must name an action (kill, exclude, delete, ...)".into(),
            ));
        }
        if let Some(act) = &self.act {
            act.action().map_err(|e| inside("act", e))?;
        }
        if let Some(expect) = &self.expect {
            expect.validate().map_err(|e| inside("expect", e))?;
        }
        Ok(())
    }
}
