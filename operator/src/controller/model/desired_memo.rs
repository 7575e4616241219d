//! The desired pod's spec hash and annotations, PVC and service need of each process
//! group, and the command lines its monitor conf describes, built once and
//! kept while their inputs stay the same: a steady pass then builds none (building
//! them was most of a pass over a large cluster: several builds per group per pass).
//!
//! They depend on the cluster (metadata, spec, the status fields apart from the process
//! groups) and on the group's ID and class only. The memo is keyed by a fingerprint of
//! exactly that cluster part, so any change of it starts afresh; within one
//! fingerprint, by group ID and class.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::api::{FoundationDBCluster, ProcessClass};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PersistentVolumeClaimSpec, Pod};

use fdb_shared::monitor_conf::parse::command_lines;

use super::super::snapshot::clean_memo::CleanMemo;
use super::super::snapshot::observe_memo::ObservationMemo;

use super::config_map::expected_monitor_conf;
use super::desired::pod_options;
use super::pod::{
    LAST_APPLIED_SPEC_ANNOTATION, PodModelError, build_pod, build_process_group_service, build_pvc,
    pod_spec_hash,
};

/// The desired objects of one process group. The pod itself is not kept (it is most
/// of the memory): its spec hash tells whether a live pod has the desired spec, and
/// [`DesiredObjects::pod`] builds it again when one does not.
#[derive(Debug, Clone)]
pub struct DesiredObjects {
    /// The pod's annotations.
    pub pod_annotations: std::collections::BTreeMap<String, String>,
    /// [`pod_spec_hash`] of the pod.
    pub pod_spec_hash: String,
    /// What is read of its PVC, when its class has one.
    pub pvc: Option<DesiredPvc>,
    /// Whether it has a Service of its own.
    pub service_needed: bool,
}

/// What a pass reads of a group's desired PVC (kept instead of the whole claim: its
/// metadata is rebuilt when the claim is made).
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredPvc {
    /// Its `foundationdb.org/last-applied-spec` annotation.
    pub spec_hash: Option<String>,
    /// Its spec.
    pub spec: Option<PersistentVolumeClaimSpec>,
}

impl DesiredPvc {
    /// What is kept of `pvc`.
    pub fn of(pvc: PersistentVolumeClaim) -> Self {
        Self {
            spec_hash: pvc
                .metadata
                .annotations
                .and_then(|mut annotations| annotations.remove(LAST_APPLIED_SPEC_ANNOTATION)),
            spec: pvc.spec,
        }
    }
}

impl DesiredObjects {
    /// Builds them.
    pub fn build(
        cluster: &FoundationDBCluster,
        group: &ProcessGroupStatus,
    ) -> Result<Self, PodModelError> {
        let pod = Self::pod(cluster, group)?;
        Ok(Self {
            pod_spec_hash: pod_spec_hash(&pod),
            pod_annotations: pod.metadata.annotations.unwrap_or_default(),
            pvc: build_pvc(cluster, group)?.map(DesiredPvc::of),
            service_needed: build_process_group_service(cluster, group)?.is_some(),
        })
    }
}

impl DesiredObjects {
    /// The desired pod of `group`, built.
    pub fn pod(
        cluster: &FoundationDBCluster,
        group: &ProcessGroupStatus,
    ) -> Result<Pod, PodModelError> {
        build_pod(cluster, group, &pod_options(cluster, group))
    }
}

/// A fingerprint of what the desired objects depend on besides the group.
pub(crate) fn fingerprint(cluster: &FoundationDBCluster) -> u64 {
    let mut hasher = DefaultHasher::new();
    let meta = &cluster.metadata;
    (
        &meta.namespace,
        &meta.name,
        &meta.uid,
        &meta.generation,
        &meta.labels,
        &meta.annotations,
    )
        .hash(&mut hasher);
    // The spec and the status without its process groups, as JSON (they hold no `Hash`
    // of their own); the groups are the memo's keys.
    let spec = serde_json::to_string(&cluster.spec).unwrap_or_default();
    spec.hash(&mut hasher);
    if let Some(status) = &cluster.status {
        // Without the groups: serialising them was most of the cost on a large cluster.
        let rest = serde_json::to_string(&status.without_process_groups()).unwrap_or_default();
        rest.hash(&mut hasher);
    }
    hasher.finish()
}

/// The command lines fdbmonitor runs for a group with these substitutions.
type CommandLines = Arc<std::collections::BTreeMap<u32, String>>;

/// Command lines of a group's conf: the servers per pod and substitutions they were
/// rendered with, and the lines.
type RenderedCommandLines = (
    u32,
    std::collections::BTreeMap<String, String>,
    CommandLines,
);

#[derive(Debug, Default)]
struct ClusterMemo {
    fingerprint: u64,
    /// By group ID, with the class they were built for (looked up by the borrowed ID:
    /// a steady pass asks once per group, issue 37).
    groups: HashMap<String, (ProcessClass, Arc<DesiredObjects>)>,
    /// By group ID, with the class, as `groups`: the servers per pod and substitutions
    /// they were rendered with, and the lines.
    command_lines: HashMap<String, (ProcessClass, RenderedCommandLines)>,
}

/// The memo's key of `cluster` (`namespace/name`).
pub(crate) fn cluster_key(cluster: &FoundationDBCluster) -> String {
    key_of(
        cluster.metadata.namespace.as_deref().unwrap_or_default(),
        cluster.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// The memo's key of the cluster `namespace/name`.
fn key_of(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// See the module documentation. Shared by the passes of one operator.
#[derive(Debug, Default)]
pub struct DesiredMemo {
    clusters: Mutex<HashMap<String, ClusterMemo>>,
    /// The groups' last observations, which live as long (kept here so that every
    /// holder of the memo, the operator's passes and the tests', has them too).
    observations: ObservationMemo,
    /// The groups each step last found clean (as long-lived, for the same reason).
    clean: CleanMemo,
}

impl DesiredMemo {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, ClusterMemo>> {
        self.clusters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The desired objects of `group` of `cluster` (whose [`fingerprint`] is
    /// `fingerprint`), built when not known yet.
    pub fn get(
        &self,
        cluster: &FoundationDBCluster,
        fingerprint: u64,
        group: &ProcessGroupStatus,
    ) -> Result<Arc<DesiredObjects>, PodModelError> {
        let key = cluster_key(cluster);
        {
            let clusters = self.lock();
            if let Some(memo) = clusters.get(&key)
                && memo.fingerprint == fingerprint
                && let Some((class, known)) = memo.groups.get(&group.process_group_id)
                && *class == group.process_class
            {
                return Ok(known.clone());
            }
        }
        // Built outside the lock: other clusters' passes go on meanwhile.
        let built = Arc::new(DesiredObjects::build(cluster, group)?);
        let mut clusters = self.lock();
        let memo = clusters.entry(key).or_default();
        if memo.fingerprint != fingerprint {
            memo.fingerprint = fingerprint;
            memo.groups.clear();
            memo.command_lines.clear();
        }
        memo.groups.insert(
            group.process_group_id.clone(),
            (group.process_class, built.clone()),
        );
        Ok(built)
    }

    /// The command lines the monitor conf of `group` describes with `substitutions`
    /// (`None` when it cannot be rendered or parsed), rendered when not known yet.
    pub fn command_lines(
        &self,
        cluster: &FoundationDBCluster,
        fingerprint: u64,
        group: &ProcessGroupStatus,
        servers: u32,
        substitutions: &std::collections::BTreeMap<String, String>,
    ) -> Option<CommandLines> {
        let key = cluster_key(cluster);
        {
            let clusters = self.lock();
            if let Some(memo) = clusters.get(&key)
                && memo.fingerprint == fingerprint
                && let Some((class, (known_servers, known, lines))) =
                    memo.command_lines.get(&group.process_group_id)
                && *class == group.process_class
                && *known_servers == servers
                && known == substitutions
            {
                return Some(lines.clone());
            }
        }
        let conf =
            expected_monitor_conf(cluster, group.process_class, servers, substitutions).ok()?;
        let lines: CommandLines = Arc::new(command_lines(&conf).ok()?);
        let mut clusters = self.lock();
        let memo = clusters.entry(key).or_default();
        if memo.fingerprint != fingerprint {
            memo.fingerprint = fingerprint;
            memo.groups.clear();
            memo.command_lines.clear();
        }
        memo.command_lines.insert(
            group.process_group_id.clone(),
            (
                group.process_class,
                (servers, substitutions.clone(), lines.clone()),
            ),
        );
        Some(lines)
    }

    /// The groups' last observations.
    pub(crate) fn observations(&self) -> &ObservationMemo {
        &self.observations
    }

    /// The groups each step last found clean.
    pub(crate) fn clean_groups(&self) -> &CleanMemo {
        &self.clean
    }

    /// Forgets a cluster (it was deleted).
    pub fn forget(&self, namespace: &str, name: &str) {
        let key = key_of(namespace, name);
        self.observations.forget(&key);
        self.clean.forget(&key);
        self.lock().remove(&key);
    }
}
