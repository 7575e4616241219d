//! What the steps name (process groups, nodes, pods, PVCs) must be able to exist at that
//! point of the scenario, and `apply` steps must keep the cluster's identity.
//!
//! Process groups are created by the operator, not by the scenario, so a name is checked
//! against what the spec can produce rather than against a list:
//! - an ID is `[prefix-]<class>-<n>` with a prefix the cluster has had
//!   (`processGroupIDPrefix`, initially or through an earlier `apply`), a class whose
//!   desired count was above zero at some point up to the step, and `n >= 1`;
//! - the operator numbers new groups above the highest number in use, so a number above
//!   the class's peak count is reached only by replacements (each takes the next number,
//!   at most one per group of the class for what one step sets off). Every replacement follows something that happens to
//!   the cluster: an `apply`, `fault` or `act` step, or (once) the operator's own
//!   automatic replacement of failed groups. So `n` is at most
//!   `peak count of the class x (1 + earlier apply, fault and act steps)`: lenient when the
//!   scenario changes things, strict when it does not (`storage-99` with 4 storage groups
//!   and nothing else going on can never exist).
//!
//! Nodes are `node-1..node-N`: N is `world.nodes` plus earlier `addNodes`; without
//! `world.nodes` one node is made per pod, so N is bounded like the process groups.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::api::process_class::ALL_PROCESS_CLASSES;
use fdb_shared::api::{FoundationDBCluster, ProcessClass};
use serde_json::Value;

use super::limits::{GroupCounts, MAX_NODES, Problem, check_count};
use super::steps::{ActStep, ObjectKind, ObjectRef, StepSpec};

/// The cluster's state along the steps, as far as names are concerned.
pub(super) struct References {
    cluster_name: String,
    namespace: String,
    /// The manifest as `apply` steps have patched it so far.
    manifest: Value,
    /// `processGroupIDPrefix` values the cluster has had ("" for none).
    prefixes: BTreeSet<String>,
    /// Highest desired count per class so far.
    peak: BTreeMap<ProcessClass, u32>,
    /// Highest total of desired groups so far.
    peak_groups: u32,
    /// Earlier `apply`, `fault` and `act` steps.
    disruptions: u32,
    /// `world.nodes`, when set.
    world_nodes: Option<u32>,
    /// Nodes added by `addNodes` so far.
    added_nodes: u32,
}

fn namespace_of(manifest: &Value) -> String {
    manifest
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_owned()
}

impl References {
    pub(super) fn new(
        manifest: &Value,
        cluster: &FoundationDBCluster,
        counts: &GroupCounts,
        world_nodes: Option<u32>,
    ) -> Self {
        let mut references = Self {
            cluster_name: cluster.metadata.name.clone().unwrap_or_default(),
            namespace: namespace_of(manifest),
            manifest: manifest.clone(),
            prefixes: BTreeSet::new(),
            peak: BTreeMap::new(),
            peak_groups: 0,
            disruptions: 0,
            world_nodes,
            added_nodes: 0,
        };
        references.observe(cluster, counts);
        references
    }

    /// Takes in a (valid) state of the cluster.
    pub(super) fn observe(&mut self, cluster: &FoundationDBCluster, counts: &GroupCounts) {
        self.prefixes
            .insert(cluster.spec.process_group_id_prefix().to_owned());
        for (class, count) in &counts.per_class {
            let peak = self.peak.entry(*class).or_default();
            *peak = (*peak).max(*count);
        }
        self.peak_groups = self.peak_groups.max(counts.groups);
    }

    /// The manifest after an `apply` patch, refused when the patch changes what
    /// identifies the cluster (Kubernetes objects are never renamed or moved).
    pub(super) fn patched(&self, patch: &Value) -> Result<Value, Problem> {
        let mut manifest = self.manifest.clone();
        json_patch::merge(&mut manifest, patch);
        for (pointer, field) in [
            ("/apiVersion", "apiVersion"),
            ("/kind", "kind"),
            ("/metadata/name", "metadata.name"),
        ] {
            let before = self.manifest.pointer(pointer);
            let after = manifest.pointer(pointer);
            if before != after {
                return Err((
                    format!("apply.{field}"),
                    format!(
                        "would change the cluster's {field} from {} to {}: an apply step patches the scenario's cluster and cannot turn it into another object; start another scenario for another cluster",
                        before.map_or_else(|| "nothing".to_owned(), Value::to_string),
                        after.map_or_else(|| "nothing".to_owned(), Value::to_string),
                    ),
                ));
            }
        }
        let namespace = namespace_of(&manifest);
        if namespace != self.namespace {
            return Err((
                "apply.metadata.namespace".into(),
                format!(
                    "would move the cluster from namespace {:?} to {namespace:?}: an apply step cannot move the scenario's cluster",
                    self.namespace
                ),
            ));
        }
        Ok(manifest)
    }

    /// Keeps the patched manifest for the next `apply`.
    pub(super) fn set_manifest(&mut self, manifest: Value) {
        self.manifest = manifest;
    }

    /// Counts what the step does to the world once it has been checked.
    pub(super) fn after(&mut self, step: &StepSpec) {
        if step.apply.is_some() || step.fault.is_some() || step.act.is_some() {
            self.disruptions = self.disruptions.saturating_add(1);
        }
        if let Some(ActStep {
            add_nodes: Some(count),
            ..
        }) = &step.act
        {
            self.added_nodes = self.added_nodes.saturating_add(*count);
        }
    }

    fn ceiling(&self, peak: u32) -> u32 {
        peak.saturating_mul(self.disruptions.saturating_add(1))
    }

    /// How many nodes there can be now, and how that was reckoned.
    fn node_ceiling(&self) -> (u32, String) {
        match self.world_nodes {
            Some(nodes) => (
                nodes.saturating_add(self.added_nodes),
                format!(
                    "world.nodes: {nodes}, plus {} from addNodes",
                    self.added_nodes
                ),
            ),
            None => (
                self.ceiling(self.peak_groups)
                    .saturating_add(self.added_nodes),
                format!(
                    "one node per pod without world.nodes: at most {} pods by now, plus {} from addNodes",
                    self.ceiling(self.peak_groups),
                    self.added_nodes
                ),
            ),
        }
    }

    /// Checks an `addNodes` count against [`MAX_NODES`].
    pub(super) fn check_add_nodes(&self, count: u32) -> Result<(), Problem> {
        let (now, _) = self.node_ceiling();
        check_count(
            "act.addNodes",
            u64::from(now) + u64::from(count),
            u64::from(MAX_NODES),
            "simulated nodes (this step would bring the world to that many)",
        )
    }

    /// Checks a node name.
    pub(super) fn check_node(&self, field: &str, name: &str) -> Result<(), Problem> {
        let (ceiling, reckoning) = self.node_ceiling();
        let number = name
            .strip_prefix("node-")
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|n| *n >= 1);
        match number {
            None => Err((
                field.to_owned(),
                format!("{name:?} is not a simulated node: nodes are named node-1, node-2, ..."),
            )),
            Some(n) if n > ceiling => Err((
                field.to_owned(),
                format!(
                    "{name} cannot exist at this step: the world has at most node-1..node-{ceiling} ({reckoning})"
                ),
            )),
            Some(_) => Ok(()),
        }
    }

    /// Checks a class and group number against what the spec can produce.
    fn check_number(&self, what: &str, class: ProcessClass, number: u32) -> Result<(), String> {
        let peak = self.peak.get(&class).copied().unwrap_or(0);
        if peak == 0 {
            return Err(format!(
                "{what} cannot exist: the cluster has no {class} process groups up to this step (spec.processCounts gives {class} none)"
            ));
        }
        let ceiling = self.ceiling(peak);
        if number == 0 || number > ceiling {
            return Err(format!(
                "{what} cannot exist at this step: {class} groups are numbered from 1 to at most {ceiling} here (at most {peak} {class} groups so far, times 1 + the {} earlier apply, fault and act steps, since replacements take the next free numbers)",
                self.disruptions
            ));
        }
        Ok(())
    }

    /// Checks a process group ID.
    pub(super) fn check_group(&self, field: &str, id: &str) -> Result<(), Problem> {
        let parsed = self.prefixes.iter().find_map(|prefix| {
            let rest = if prefix.is_empty() {
                id
            } else {
                id.strip_prefix(prefix.as_str())?.strip_prefix('-')?
            };
            let (class, number) = rest.rsplit_once('-')?;
            Some((
                class.parse::<ProcessClass>().ok()?,
                number.parse::<u32>().ok()?,
            ))
        });
        let Some((class, number)) = parsed else {
            let forms: Vec<String> = self
                .prefixes
                .iter()
                .map(|prefix| {
                    if prefix.is_empty() {
                        "<class>-<number>".to_owned()
                    } else {
                        format!("{prefix}-<class>-<number>")
                    }
                })
                .collect();
            let classes: Vec<&str> = ALL_PROCESS_CLASSES.iter().map(|c| c.as_str()).collect();
            return Err((
                field.to_owned(),
                format!(
                    "{id:?} is not a process group ID this cluster can have: IDs are {} (e.g. {}), with a class among {}",
                    forms.join(" or "),
                    forms.first().map_or_else(String::new, |form| form
                        .replace("<class>-<number>", "storage-1")),
                    classes.join(", "),
                ),
            ));
        };
        self.check_number(&format!("{id:?}"), class, number)
            .map_err(|message| (field.to_owned(), message))
    }

    /// Checks the name of a pod (`<cluster>-<class>-<n>`) or PVC (`<pod>-data`) an `act`
    /// step names; services are not checked.
    pub(super) fn check_object(&self, field: &str, target: &ObjectRef) -> Result<(), Problem> {
        let name = match target.kind {
            ObjectKind::Service => return Ok(()),
            ObjectKind::Pod => target.name.as_str(),
            ObjectKind::Pvc => match target.name.strip_suffix("-data") {
                Some(pod) => pod,
                None => {
                    return Err((
                        field.to_owned(),
                        format!(
                            "pvc/{} is not a PVC of the cluster: PVCs are named <cluster>-<class>-<number>-data (e.g. {}-storage-1-data)",
                            target.name, self.cluster_name
                        ),
                    ));
                }
            },
        };
        let parsed = name
            .strip_prefix(self.cluster_name.as_str())
            .and_then(|rest| rest.strip_prefix('-'))
            .and_then(|rest| rest.rsplit_once('-'))
            .and_then(|(class, number)| {
                let class = ALL_PROCESS_CLASSES
                    .into_iter()
                    .find(|c| c.dns_name() == class)?;
                Some((class, number.parse::<u32>().ok()?))
            })
            .filter(|(class, _)| target.kind == ObjectKind::Pod || class.is_stateful());
        let Some((class, number)) = parsed else {
            return Err((
                field.to_owned(),
                format!(
                    "{}/{} is not a {} of the cluster {:?}: they are named {}-<class>-<number>{} with the class spelled with dashes (e.g. {}-storage-1{})",
                    target.kind.as_str(),
                    target.name,
                    target.kind.as_str(),
                    self.cluster_name,
                    self.cluster_name,
                    if target.kind == ObjectKind::Pvc {
                        "-data"
                    } else {
                        ""
                    },
                    self.cluster_name,
                    if target.kind == ObjectKind::Pvc {
                        "-data"
                    } else {
                        ""
                    },
                ),
            ));
        };
        self.check_number(
            &format!("{}/{}", target.kind.as_str(), target.name),
            class,
            number,
        )
        .map_err(|message| (field.to_owned(), message))
    }
}
