//! What a pass knows about one cluster, read once and indexed once: the validated cluster
//! (spec and status), its pods, PVCs and services, its ConfigMap, the database's
//! `status json` (or why it could not be read), and for every process group its status
//! entry, pod, PVC, service and reporting processes.
//!
//! Steps decide from a `&ClusterSnapshot` alone; it never changes under them.
//!
//! # Refresh rule
//! Steps write only through `pass::io::PassIo` (Kubernetes objects, the cluster
//! status) and its admin handle (the database); both record what they changed. Before the
//! next step runs, the pass refreshes exactly those parts (see `pass/state.rs`): it reads
//! again the kinds that were written (from the watch caches once they show the writes,
//! see [`super::cache`], else by LIST), takes the status written or staged, and
//! reads `status json` again when the database was written or the connection string
//! changed (the admin memo already dropped the old document). The index is then rebuilt.
//! So every step sees what the steps before it did, and a pass that writes nothing reads
//! everything exactly once.
//!
//! # Cost
//! Building the index is one pass over the objects and processes, keyed by process group
//! ID: O((groups + objects + processes) · log n). Nothing here scans all objects per group.

pub(crate) mod clean_memo;
pub(crate) mod group;
pub(crate) mod observe;
pub(crate) mod observe_memo;
pub(crate) mod pod;
pub(crate) mod pod_head;
pub(crate) mod pod_spec_facts;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock, OnceLock};

use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::api::{FoundationDBCluster, FoundationDBClusterSpec, FoundationDBClusterStatus};
use fdb_shared::status_json::DatabaseStatus;
use fdb_shared::validation::ValidatedCluster;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ConfigMap, Node, PersistentVolumeClaim, Pod, Service};
use kube::Resource;
use kube::api::ObjectMeta;

pub(crate) use self::group::GroupView;
pub(crate) use self::pod::{PodSource, SnapshotPod};
use self::pod_head::PodHead;
use self::pod_spec_facts::SpecFacts;
use super::model::desired_memo::{self, DesiredMemo, DesiredObjects};
use super::model::pod::PodModelError;
use super::objects::group_labelled;
use super::status::DatabaseView;
use crate::fdb::AdminError;

/// Why `status json` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StatusReadError {
    /// No admin client could be opened for the cluster.
    #[error("open the admin client")]
    Open(#[source] AdminError),
    /// The read failed (the admin memo hands the same failure to every reader).
    #[error(transparent)]
    Read(Arc<AdminError>),
}

/// What the pass knows about the database. Steps decide themselves how to treat a
/// database whose status cannot be read.
#[derive(Debug, Clone)]
pub enum DatabaseState {
    /// There is no connection string yet: no database to ask.
    NotCreated,
    /// `status json` failed.
    Unreadable(Arc<StatusReadError>),
    /// `status json` answered.
    Read(Arc<DatabaseStatus>),
}

impl DatabaseState {
    /// The status document, when it was read.
    pub fn status(&self) -> Option<&DatabaseStatus> {
        match self {
            Self::Read(status) => Some(status),
            Self::NotCreated | Self::Unreadable(_) => None,
        }
    }

    /// The view the status builder takes.
    pub fn view(&self) -> DatabaseView<'_> {
        match self {
            Self::NotCreated => DatabaseView::NotCreated,
            Self::Unreadable(_) => DatabaseView::Unreachable,
            Self::Read(status) => DatabaseView::Status(status),
        }
    }
}

/// Everything a snapshot is built from.
#[derive(Debug, Clone)]
pub struct SnapshotParts {
    /// The cluster (spec as validated at the start of the pass, latest status).
    pub cluster: ValidatedCluster,
    /// The pass's time.
    pub now: Timestamp,
    /// The cluster's pods (shared with the watch cache: a pass copies none).
    pub pods: Vec<PodSource>,
    /// The cluster's PVCs.
    pub pvcs: Vec<Arc<PersistentVolumeClaim>>,
    /// The cluster's services.
    pub services: Vec<Arc<Service>>,
    /// `<cluster>-config`, if it exists.
    pub config_map: Option<ConfigMap>,
    /// The database.
    pub database: DatabaseState,
    /// The Nodes of the cluster's pods by name, read at the start of the pass, only
    /// when `taintReplacementOptions` are set (`None`: not read). A node that could not
    /// be read is absent.
    pub nodes: Option<BTreeMap<String, Node>>,
}

/// Where one process group's objects are in the snapshot.
#[derive(Debug, Clone, Default)]
struct GroupIndex {
    /// Position in `status.processGroups`.
    position: usize,
    pod: Option<usize>,
    pvc: Option<usize>,
    service: Option<usize>,
    /// Keys in `status json` `cluster.processes` of the processes whose
    /// `locality_instance_id` is the group's ID, in key order.
    processes: Vec<String>,
}

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct ClusterSnapshot {
    /// The parts, but for the pods (in `pods`).
    parts: SnapshotParts,
    /// The pods, by name.
    pods: Vec<SnapshotPod>,
    groups: Vec<GroupIndex>,
    by_id: HashMap<String, usize>,
    /// The desired objects of the groups, kept across passes by the operator.
    desired: Arc<DesiredMemo>,
    /// [`desired_memo::fingerprint`] of the cluster, once asked.
    fingerprint: OnceLock<u64>,
    /// The desired objects of each group (by status position) taken from the memo.
    desired_slots: Vec<OnceLock<Arc<DesiredObjects>>>,
    /// How many times the snapshot was refreshed.
    version: u64,
    /// The epoch of each group's inputs (by slot), as this version's observation found
    /// them (`clean_memo.rs`).
    epochs: OnceLock<Vec<Option<u64>>>,
}

static NO_STATUS: LazyLock<FoundationDBClusterStatus> =
    LazyLock::new(FoundationDBClusterStatus::default);

/// An object the snapshot indexes by its metadata.
trait Indexed {
    fn object_meta(&self) -> &ObjectMeta;
}

impl<K: Resource> Indexed for Arc<K> {
    fn object_meta(&self) -> &ObjectMeta {
        self.meta()
    }
}

impl Indexed for SnapshotPod {
    fn object_meta(&self) -> &ObjectMeta {
        &self.head().metadata
    }
}

/// The position of each object's group, preferring the first non-terminating object
/// (objects in name order), like a scan for "the object of this group" would.
fn index_by_group<'a, K: Indexed>(keys: &[String], objects: &'a [K]) -> HashMap<&'a str, usize> {
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(objects.len());
    for (position, object) in objects.iter().enumerate() {
        let meta = object.object_meta();
        let Some(group) = group_labelled(keys, meta) else {
            continue;
        };
        let terminating = meta.deletion_timestamp.is_some();
        match index.get(group) {
            None => {
                index.insert(group, position);
            }
            Some(&known) => {
                let known_terminating = objects
                    .get(known)
                    .is_some_and(|o| o.object_meta().deletion_timestamp.is_some());
                if known_terminating && !terminating {
                    index.insert(group, position);
                }
            }
        }
    }
    index
}

fn sort_by_name<K: Indexed>(objects: &mut [K]) {
    objects.sort_by(|a, b| a.object_meta().name.cmp(&b.object_meta().name));
}

fn has_named<K: Indexed>(objects: &[K], name: &str) -> bool {
    objects
        .binary_search_by(|object| object.object_meta().name.as_deref().cmp(&Some(name)))
        .is_ok()
}

/// The snapshot's pods of `sources`, by name.
fn snapshot_pods(sources: Vec<PodSource>) -> Vec<SnapshotPod> {
    let mut pods: Vec<SnapshotPod> = sources.into_iter().map(SnapshotPod::new).collect();
    sort_by_name(&mut pods);
    pods
}

/// What a refresh read again; `None` keeps the snapshot's part.
#[derive(Debug, Default)]
pub struct Fresh {
    /// The cluster with the status a status write returned.
    pub cluster: Option<ValidatedCluster>,
    /// The pods, read again.
    pub pods: Option<Vec<PodSource>>,
    /// The PVCs, listed again.
    pub pvcs: Option<Vec<Arc<PersistentVolumeClaim>>>,
    /// The services, listed again.
    pub services: Option<Vec<Arc<Service>>>,
    /// The ConfigMap, read again.
    pub config_map: Option<Option<ConfigMap>>,
    /// The database, read again.
    pub database: Option<DatabaseState>,
}

/// The group index of `parts` and `pods` (whose lists are sorted by name).
fn index(parts: &SnapshotParts, pods: &[SnapshotPod]) -> (Vec<GroupIndex>, HashMap<String, usize>) {
    let cluster = parts.cluster.cluster();
    // The label keys are read once, and the IDs borrowed from the objects: this index
    // is built every pass (issue 37).
    let keys = cluster.spec.labels.process_group_id_labels();
    let mut pods = index_by_group(&keys, pods);
    let mut pvcs = index_by_group(&keys, &parts.pvcs);
    let mut services = index_by_group(&keys, &parts.services);
    let mut processes: HashMap<&str, Vec<String>> = HashMap::new();
    if let Some(database) = parts.database.status() {
        for (key, process) in &database.cluster.processes {
            if let Some(instance) = process.locality.instance_id.as_deref() {
                processes.entry(instance).or_default().push(key.clone());
            }
        }
    }
    let status_groups = cluster
        .status
        .as_ref()
        .map(|s| s.process_groups.as_slice())
        .unwrap_or_default();
    let mut groups = Vec::with_capacity(status_groups.len());
    let mut by_id = HashMap::with_capacity(status_groups.len());
    for (position, group) in status_groups.iter().enumerate() {
        let id = group.process_group_id.as_str();
        // A duplicated ID (never written by the operator) shares the objects of the
        // first entry.
        let first = *by_id.entry(id.to_owned()).or_insert(position);
        let entry = if first == position {
            GroupIndex {
                position,
                pod: pods.remove(id),
                pvc: pvcs.remove(id),
                service: services.remove(id),
                processes: processes.remove(id).unwrap_or_default(),
            }
        } else {
            let shared = groups.get(first).cloned().unwrap_or_default();
            GroupIndex { position, ..shared }
        };
        groups.push(entry);
    }
    (groups, by_id)
}

impl ClusterSnapshot {
    /// Indexes `parts` (lists are sorted by name first).
    pub fn new(mut parts: SnapshotParts) -> Self {
        let pods = snapshot_pods(std::mem::take(&mut parts.pods));
        sort_by_name(&mut parts.pvcs);
        sort_by_name(&mut parts.services);
        let (groups, by_id) = index(&parts, &pods);
        let desired_slots = groups.iter().map(|_| OnceLock::new()).collect();
        Self {
            parts,
            pods,
            groups,
            by_id,
            desired: Arc::default(),
            fingerprint: OnceLock::new(),
            desired_slots,
            version: 0,
            epochs: OnceLock::new(),
        }
    }

    /// Counts the refreshes: a step's decision made from version `v` still holds
    /// while the version is `v`.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// [`desired_memo::fingerprint`] of the cluster.
    pub(crate) fn fingerprint(&self) -> u64 {
        *self
            .fingerprint
            .get_or_init(|| desired_memo::fingerprint(self.cluster()))
    }

    /// The groups' observations remembered across passes (with the desired objects'
    /// memo, see [`Self::with_desired_memo`]).
    pub(crate) fn observation_memo(&self) -> &observe_memo::ObservationMemo {
        self.desired.observations()
    }

    /// Records the epoch of each group's inputs (by slot), once per snapshot version:
    /// the observation of all groups does.
    pub(crate) fn record_epochs(&self, epochs: Vec<Option<u64>>) {
        let _ = self.epochs.set(epochs);
    }

    /// The groups `step` last found clean, to ask again only about the others (see
    /// `clean_memo.rs`); none before this version's groups were observed.
    pub(crate) fn clean_groups(&self, step: &'static str) -> clean_memo::CleanGroups<'_> {
        let epochs = self.epochs.get().map_or(&[][..], Vec::as_slice);
        self.desired
            .clean_groups()
            .take(desired_memo::cluster_key(self.cluster()), step, epochs)
    }

    /// The command lines the monitor conf of `group` describes with `substitutions`.
    pub fn expected_command_lines(
        &self,
        group: &ProcessGroupStatus,
        servers: u32,
        substitutions: &BTreeMap<String, String>,
    ) -> Option<Arc<BTreeMap<u32, String>>> {
        self.desired.command_lines(
            self.cluster(),
            self.fingerprint(),
            group,
            servers,
            substitutions,
        )
    }

    /// The snapshot taking the groups' desired objects from `memo` (kept by the
    /// operator across passes) instead of building them anew.
    #[must_use]
    pub fn with_desired_memo(mut self, memo: Arc<DesiredMemo>) -> Self {
        self.desired = memo;
        self
    }

    /// The desired pod, its spec hash, PVC and service need of `group` (a group of
    /// this cluster's status).
    pub fn desired(
        &self,
        group: &ProcessGroupStatus,
    ) -> Result<Arc<DesiredObjects>, PodModelError> {
        // The slot of this group, when the snapshot's group of that ID is of its class.
        let slot = self.by_id.get(&group.process_group_id).and_then(|&slot| {
            self.view(slot)
                .filter(|known| known.status.process_class == group.process_class)
                .and_then(|_| self.desired_slots.get(slot))
        });
        if let Some(known) = slot.and_then(OnceLock::get) {
            return Ok(known.clone());
        }
        let built = self
            .desired
            .get(self.cluster(), self.fingerprint(), group)?;
        if let Some(slot) = slot {
            let _ = slot.set(built.clone());
        }
        Ok(built)
    }

    /// Replaces the parts that were read again and rebuilds the index (the pass does
    /// this between steps; steps only ever see `&ClusterSnapshot`).
    pub fn refresh(&mut self, fresh: Fresh) {
        let parts = &mut self.parts;
        if let Some(cluster) = fresh.cluster {
            parts.cluster = cluster;
            self.fingerprint = OnceLock::new();
        }
        self.version += 1;
        if let Some(pods) = fresh.pods {
            self.pods = snapshot_pods(pods);
        }
        if let Some(mut pvcs) = fresh.pvcs {
            sort_by_name(&mut pvcs);
            parts.pvcs = pvcs;
        }
        if let Some(mut services) = fresh.services {
            sort_by_name(&mut services);
            parts.services = services;
        }
        if let Some(config_map) = fresh.config_map {
            parts.config_map = config_map;
        }
        if let Some(database) = fresh.database {
            parts.database = database;
        }
        (self.groups, self.by_id) = index(&self.parts, &self.pods);
        self.desired_slots = self.groups.iter().map(|_| OnceLock::new()).collect();
        // Observed again with the new parts before a step may reuse an answer.
        self.epochs = OnceLock::new();
    }

    /// The validated cluster.
    pub fn validated(&self) -> &ValidatedCluster {
        &self.parts.cluster
    }

    /// The cluster (spec and metadata of the pass, latest status).
    pub fn cluster(&self) -> &FoundationDBCluster {
        self.parts.cluster.cluster()
    }

    /// The spec.
    pub fn spec(&self) -> &FoundationDBClusterSpec {
        &self.cluster().spec
    }

    /// The cluster's status (empty when it has none yet).
    pub fn status(&self) -> &FoundationDBClusterStatus {
        self.cluster().status.as_ref().unwrap_or(&NO_STATUS)
    }

    /// The cluster's name.
    pub fn name(&self) -> &str {
        self.cluster().metadata.name.as_deref().unwrap_or_default()
    }

    /// The cluster's namespace.
    pub fn namespace(&self) -> &str {
        self.cluster()
            .metadata
            .namespace
            .as_deref()
            .unwrap_or_default()
    }

    /// `metadata.generation`.
    pub fn generation(&self) -> i64 {
        self.cluster().metadata.generation.unwrap_or(0)
    }

    /// The pass's time.
    pub fn now(&self) -> Timestamp {
        self.parts.now
    }

    /// The pass's time in unix seconds.
    pub fn now_unix(&self) -> i64 {
        self.parts.now.as_second()
    }

    /// The cluster's pods, by name, whole: each decoded (once per snapshot) as it is
    /// read; a pod that does not decode is left out and recorded
    /// ([`ClusterSnapshot::decode_failure`]). Steps that read only metadata and status
    /// read [`ClusterSnapshot::pod_heads`], and the spec's facts
    /// [`ClusterSnapshot::pod_entries`].
    pub fn pods(&self) -> impl Iterator<Item = &Pod> + Clone + '_ {
        self.pods.iter().filter_map(|pod| pod.pod().ok())
    }

    /// The cluster's pods, by name, as the snapshot holds them (nothing decoded).
    pub fn pod_entries(&self) -> impl ExactSizeIterator<Item = &SnapshotPod> + Clone + '_ {
        self.pods.iter()
    }

    /// What the steps read from each pod's spec, by name (nothing decoded).
    pub fn pod_spec_facts(&self) -> impl ExactSizeIterator<Item = &SpecFacts> + Clone + '_ {
        self.pods.iter().map(SnapshotPod::facts)
    }

    /// The cluster's pods' metadata and status, by name (nothing decoded).
    pub fn pod_heads(&self) -> impl ExactSizeIterator<Item = &PodHead> + Clone + '_ {
        self.pods.iter().map(SnapshotPod::head)
    }

    /// Why a pod a step asked for did not decode (not expected: the cache checks each
    /// pod's spec when it stores it). The pass fails after a step that met one.
    pub fn decode_failure(&self) -> Option<&str> {
        self.pods.iter().find_map(SnapshotPod::decode_failure)
    }

    /// The cluster's PVCs, by name.
    pub fn pvcs(&self) -> impl ExactSizeIterator<Item = &PersistentVolumeClaim> + Clone + '_ {
        self.parts.pvcs.iter().map(Arc::as_ref)
    }

    /// The cluster's services, by name.
    pub fn services(&self) -> impl ExactSizeIterator<Item = &Service> + Clone + '_ {
        self.parts.services.iter().map(Arc::as_ref)
    }

    /// Whether a pod of the cluster has this name.
    pub fn has_pod(&self, name: &str) -> bool {
        has_named(&self.pods, name)
    }

    /// Whether a PVC of the cluster has this name.
    pub fn has_pvc(&self, name: &str) -> bool {
        has_named(&self.parts.pvcs, name)
    }

    /// Whether a service of the cluster has this name.
    pub fn has_service(&self, name: &str) -> bool {
        has_named(&self.parts.services, name)
    }

    /// The ConfigMap, if it exists.
    pub fn config_map(&self) -> Option<&ConfigMap> {
        self.parts.config_map.as_ref()
    }

    /// The database.
    pub fn database(&self) -> &DatabaseState {
        &self.parts.database
    }

    /// `status json`, when it was read.
    pub fn database_status(&self) -> Option<&DatabaseStatus> {
        self.parts.database.status()
    }

    /// The Nodes read for this pass (`None`: nodes were not read, no taint options).
    pub fn nodes(&self) -> Option<&BTreeMap<String, Node>> {
        self.parts.nodes.as_ref()
    }

    fn view(&self, slot: usize) -> Option<GroupView<'_>> {
        let index = self.groups.get(slot)?;
        Some(GroupView {
            slot,
            status: self.status().process_groups.get(index.position)?,
            pod: index.pod.and_then(|i| self.pods.get(i)),
            pvc: index
                .pvc
                .and_then(|i| self.parts.pvcs.get(i))
                .map(Arc::as_ref),
            service: index
                .service
                .and_then(|i| self.parts.services.get(i))
                .map(Arc::as_ref),
            process_keys: &index.processes,
            database: self.database_status(),
            cluster: self.cluster(),
        })
    }

    /// Every process group, in status order.
    pub fn groups(&self) -> impl Iterator<Item = GroupView<'_>> + '_ {
        (0..self.groups.len()).filter_map(|slot| self.view(slot))
    }

    /// The process groups not marked for removal, in status order.
    pub fn live_groups(&self) -> impl Iterator<Item = GroupView<'_>> + '_ {
        self.groups().filter(|group| !group.is_marked_for_removal())
    }

    /// Whether `group` is listed in `buggify.ignoreDuringRestart` (process group IDs, as
    /// in the Go operator's API): its processes are never killed.
    pub fn ignored_during_restart(&self, group: &str) -> bool {
        self.spec()
            .buggify
            .ignore_during_restart
            .iter()
            .any(|id| id == group)
    }

    /// The process group with this ID.
    pub fn group(&self, id: &str) -> Option<GroupView<'_>> {
        self.view(*self.by_id.get(id)?)
    }
}

#[cfg(test)]
mod tests;
