//! `act` steps: who acts (the operator in a mutation test, or a user) and what they do
//! to the world.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// Evict one pod through the eviction subresource: `pod/<name>`, or
    /// `{processClass, nth}`, a pod chosen when the step runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evict: Option<EvictTarget>,
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
    /// `fdbcli configure` of this database configuration (typed, as the operator sends
    /// it: `{redundancy_mode: three_data_hall}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configure: Option<fdb_shared::api::DatabaseConfiguration>,
    /// `fdbcli coordinators` of these process groups' first processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinators: Option<Vec<String>>,
    /// `{zone, seconds}`: `fdbcli maintenance on <zone> <seconds>`; `off`: `maintenance
    /// off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<MaintenanceAct>,
    /// `true`: `fdbcli include all` (every exclusion the database lists is lifted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_all: Option<bool>,
    /// `kubectl fdb ARG...` run by a user against the world (`as: user` only): the
    /// `kubectl-fdb` binary, through a kubeconfig the world writes for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubectl_fdb: Option<Vec<String>>,
    /// A command run in a pod's container by a user (`as: user` only), as `kubectl
    /// exec` runs it (`act_exec.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<super::act_exec::ExecAct>,
}

/// The pod an `evict` action names: by name, or chosen among the pods alive when the
/// step runs (so a scenario written ahead never names a pod the operator has replaced by
/// then).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EvictTarget {
    /// `pod/<name>`.
    Named(String),
    /// The `nth` pod of a process class.
    Chosen(PodChoice),
}

/// A pod chosen when the step runs: among the cluster's pods of `processClass` that are
/// not terminating, in the order of their names (numbers compared as numbers), the
/// `nth` (from 1), counting round again when fewer are alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodChoice {
    /// The process class (`storage`, `log`, `stateless`, ...).
    pub process_class: fdb_shared::api::ProcessClass,
    /// Which of them, from 1.
    pub nth: u32,
}

impl PodChoice {
    /// The chosen pod among `alive` (the names of the live pods of the class, in any
    /// order); `None` when there is none.
    pub fn choose<'a>(&self, alive: &'a [String]) -> Option<&'a str> {
        let mut ordered: Vec<&String> = alive.iter().collect();
        ordered.sort_by(|a, b| natural_key(a).cmp(&natural_key(b)));
        let count = ordered.len();
        if count == 0 {
            return None;
        }
        let index = usize::try_from(self.nth.saturating_sub(1)).unwrap_or(0) % count;
        ordered.get(index).map(|name| name.as_str())
    }
}

/// A name split at its trailing number, so `storage-10` comes after `storage-9`.
fn natural_key(name: &str) -> (&str, u64, &str) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, number) = name.split_at(name.len() - digits);
    (stem, number.parse().unwrap_or(0), name)
}

/// The value of a `maintenance` action: a zone and a duration, or the word `off`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MaintenanceAct {
    /// Put the zone in maintenance.
    On(MaintenanceZone),
    /// Must be `off`: end maintenance.
    Word(String),
}

/// A zone put in maintenance, and for how long.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MaintenanceZone {
    /// The fault domain (FoundationDB's `zoneid`).
    pub zone: String,
    /// How long the maintenance lasts unless ended earlier.
    pub seconds: u64,
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
    /// Evict the pod chosen, when the step runs, among the live pods of a class.
    EvictChosen(PodChoice),
    /// Cordon a node and evict its pods.
    Drain(String),
    /// Add nodes.
    AddNodes(u32),
    /// Empty the database and stop writing.
    ClearData,
    /// Change the database configuration.
    Configure(Box<fdb_shared::api::DatabaseConfiguration>),
    /// Make these process groups' first processes the coordinators.
    Coordinators(Vec<String>),
    /// Set the maintenance zone (`Some((zone, seconds))`) or end maintenance (`None`).
    Maintenance(Option<(String, u64)>),
    /// `include all`.
    IncludeAll,
    /// `kubectl fdb ARG...`, run by a user.
    KubectlFdb(Vec<String>),
    /// A command a user runs in a pod's container.
    Exec(super::act_exec::ExecCommand),
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
            self.configure.is_some(),
            self.coordinators.is_some(),
            self.maintenance.is_some(),
            self.include_all.is_some(),
            self.kubectl_fdb.is_some(),
            self.exec.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }

    /// The acts on Kubernetes objects and nodes, when one is set.
    fn object_action(&self) -> Option<Result<Action, (&'static str, String)>> {
        if let Some(target) = &self.delete {
            return Some(
                ObjectRef::parse(target)
                    .map(Action::Delete)
                    .map_err(|e| ("delete", e)),
            );
        }
        if let Some(collection) = &self.delete_collection {
            return Some(Ok(Action::DeleteCollection(collection.clone())));
        }
        if let Some(patch) = &self.patch {
            let target = match ObjectRef::parse(&patch.target) {
                Ok(target) => target,
                Err(e) => return Some(Err(("patch.target", e))),
            };
            if !patch.patch.is_object() {
                return Some(Err(("patch.patch", "must be a mapping".to_owned())));
            }
            return Some(Ok(Action::Patch(target, patch.patch.clone())));
        }
        if let Some(EvictTarget::Chosen(choice)) = &self.evict {
            if choice.nth == 0 {
                return Some(Err(("evict.nth", "must be at least 1".to_owned())));
            }
            return Some(Ok(Action::EvictChosen(*choice)));
        }
        if let Some(EvictTarget::Named(target)) = &self.evict {
            let target = match ObjectRef::parse(target) {
                Ok(target) => target,
                Err(e) => return Some(Err(("evict", e))),
            };
            if target.kind != ObjectKind::Pod {
                return Some(Err((
                    "evict",
                    "only pods can be evicted (pod/<name>)".to_owned(),
                )));
            }
            return Some(Ok(Action::Evict(target.name)));
        }
        if let Some(node) = &self.drain {
            if node.trim().is_empty() {
                return Some(Err(("drain", "must name a node".to_owned())));
            }
            return Some(Ok(Action::Drain(node.clone())));
        }
        None
    }

    /// The acts on the database, when one is set.
    fn database_action(&self) -> Option<Result<Action, (&'static str, String)>> {
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
        if let Some(kill) = &self.kill {
            return Some(groups("kill", kill).map(Action::Kill));
        }
        if let Some(exclude) = &self.exclude {
            return Some(groups("exclude", exclude).map(Action::Exclude));
        }
        if let Some(coordinators) = &self.coordinators {
            return Some(groups("coordinators", coordinators).map(Action::Coordinators));
        }
        if let Some(configuration) = &self.configure {
            return Some(Ok(Action::Configure(Box::new(configuration.clone()))));
        }
        match self.clear_data {
            Some(true) => return Some(Ok(Action::ClearData)),
            Some(false) => {
                return Some(Err((
                    "clearData",
                    "must be true (leave it out to do something else)".to_owned(),
                )));
            }
            None => {}
        }
        match self.include_all {
            Some(true) => return Some(Ok(Action::IncludeAll)),
            Some(false) => {
                return Some(Err((
                    "includeAll",
                    "must be true (leave it out to do something else)".to_owned(),
                )));
            }
            None => {}
        }
        match &self.maintenance {
            Some(MaintenanceAct::On(on)) => {
                if on.zone.trim().is_empty() {
                    return Some(Err(("maintenance.zone", "must name a zone".to_owned())));
                }
                if on.seconds == 0 {
                    return Some(Err((
                        "maintenance.seconds",
                        "must be at least 1".to_owned(),
                    )));
                }
                return Some(Ok(Action::Maintenance(Some((on.zone.clone(), on.seconds)))));
            }
            Some(MaintenanceAct::Word(word)) if word == "off" => {
                return Some(Ok(Action::Maintenance(None)));
            }
            Some(MaintenanceAct::Word(word)) => {
                return Some(Err((
                    "maintenance",
                    format!("{word:?} is neither {{zone, seconds}} nor off"),
                )));
            }
            None => {}
        }
        None
    }

    /// `kubectlFdb`: a user's command line, run against the world the step acts on.
    fn plugin_action(&self, args: &[String]) -> Result<Action, (&'static str, String)> {
        if self.actor != Actor::User {
            return Err((
                "kubectlFdb",
                "runs as a user (`as: user`): the operator does not run kubectl fdb".to_owned(),
            ));
        }
        if self.cluster.is_some() {
            return Err((
                "cluster",
                "names an operator instance (`as: operator`); kubectl fdb names its cluster \
                 in its arguments (-c NAME)"
                    .to_owned(),
            ));
        }
        if args.is_empty() {
            return Err((
                "kubectlFdb",
                "must name a command and its arguments (e.g. [fix-coordinator-ips, -c, sample, --yes])"
                    .to_owned(),
            ));
        }
        // The world supplies where to connect; a scenario pointing the plugin elsewhere
        // would act outside the world it is judged in.
        if let Some(flag) = args.iter().find(|arg| {
            ["--kubeconfig", "--context"]
                .iter()
                .any(|flag| *arg == flag || arg.starts_with(&format!("{flag}=")))
        }) {
            return Err((
                "kubectlFdb",
                format!("{flag:?}: the world gives the plugin its own kubeconfig; leave it out"),
            ));
        }
        Ok(Action::KubectlFdb(args.to_vec()))
    }

    /// The single action, validated; the error names the field inside `act`.
    pub fn action(&self) -> Result<Action, (&'static str, String)> {
        if self.action_count() != 1 {
            return Err((
                "",
                "must have `as` and exactly one of delete, deleteCollection, kill, exclude, patch, evict, drain, addNodes, clearData, configure, coordinators, maintenance, includeAll, kubectlFdb, exec".to_owned(),
            ));
        }
        if let Some(args) = &self.kubectl_fdb {
            return self.plugin_action(args);
        }
        if let Some(exec) = &self.exec {
            if self.actor != Actor::User || self.cluster.is_some() {
                return Err((
                    "exec",
                    "runs as a user (`as: user`, no `cluster`): the operator runs no \
                     commands in pods"
                        .to_owned(),
                ));
            }
            return exec.validated().map(Action::Exec);
        }
        if let Some(action) = self.object_action() {
            return action;
        }
        if let Some(action) = self.database_action() {
            return action;
        }
        match self.add_nodes {
            Some(0) => Err(("addNodes", "must be at least 1".to_owned())),
            Some(count) => Ok(Action::AddNodes(count)),
            None => Err(("", "has no action".to_owned())),
        }
    }
}
