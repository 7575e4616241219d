//! One process group of a cluster's snapshot and what belongs to it:
//! its status entry, pod, PVC, service and reporting processes. The pod's metadata,
//! status and spec facts are read without decoding it; [`GroupView::pod`] decodes it
//! (once per snapshot) for the steps that need its spec.

use std::collections::BTreeMap;

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::status_json::{DatabaseStatus, ProcessStatus};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Service};

use super::super::model::pod::servers_per_pod;
use super::super::model::process_groups::zone_of;
use super::pod::SnapshotPod;
use super::pod_head::PodHead;
use super::pod_spec_facts::SpecFacts;

/// One process group and what belongs to it.
#[derive(Debug, Clone, Copy)]
pub struct GroupView<'a> {
    /// Its status entry.
    pub status: &'a ProcessGroupStatus,
    /// Its pod (a non-terminating one first, when there are several).
    pub(in crate::controller) pod: Option<&'a SnapshotPod>,
    /// Its data PVC.
    pub pvc: Option<&'a PersistentVolumeClaim>,
    /// Its Service.
    pub service: Option<&'a Service>,
    pub(in crate::controller) process_keys: &'a [String],
    pub(in crate::controller) database: Option<&'a DatabaseStatus>,
    pub(in crate::controller) cluster: &'a FoundationDBCluster,
    /// Its place among the snapshot's groups (what the snapshot's per-group records,
    /// such as the inputs' epochs, are indexed by).
    pub(in crate::controller) slot: usize,
}

impl<'a> GroupView<'a> {
    /// The process group ID.
    pub fn id(&self) -> &'a str {
        &self.status.process_group_id
    }

    /// Whether the group is marked for removal.
    pub fn is_marked_for_removal(&self) -> bool {
        self.status.is_marked_for_removal()
    }

    /// Its processes in `status json` (none when the status was not read).
    pub fn processes(&self) -> impl Iterator<Item = &'a ProcessStatus> + 'a {
        let database = self.database;
        self.process_keys
            .iter()
            .filter_map(move |key| database?.cluster.processes.get(key))
    }

    /// Whether any process of the group reports.
    pub fn is_reporting(&self) -> bool {
        !self.process_keys.is_empty()
    }

    /// Whether the group has a pod.
    pub fn has_pod(&self) -> bool {
        self.pod.is_some()
    }

    /// Its pod's metadata and status, nothing decoded (read [`GroupView::pod_facts`],
    /// or [`GroupView::pod`] for the whole pod).
    pub fn pod_head(&self) -> Option<&'a PodHead> {
        self.pod.map(SnapshotPod::head)
    }

    /// What the steps read from its pod's spec, nothing decoded.
    pub fn pod_facts(&self) -> Option<&'a SpecFacts> {
        self.pod.map(SnapshotPod::facts)
    }

    /// Its whole pod, spec included: decoded the first time a step asks (once per
    /// snapshot). A pod that does not decode (not expected: the cache checked it) reads
    /// as `None` here; the snapshot records why and the pass fails after the step
    /// (`ClusterSnapshot::decode_failure`).
    pub fn pod(&self) -> Option<&'a Pod> {
        self.pod?.pod().ok()
    }

    /// The zone of the group's pod (`None` without a pod), as
    /// [`super::super::model::process_groups::pod_zone`] tells it, nothing decoded.
    pub fn pod_zone(&self) -> Option<&'a str> {
        let pod = self.pod?;
        let name = pod.head().metadata.name.as_deref().unwrap_or_default();
        zone_of(self.cluster, name, pod.facts())
    }

    /// The servers per pod the group's pod runs (the spec's without a pod), see
    /// [`super::super::model::pod::pod_servers_per_pod`]; nothing decoded.
    pub fn servers_per_pod(&self) -> u32 {
        self.pod_facts()
            .and_then(|facts| facts.mounted_servers)
            .unwrap_or_else(|| servers_per_pod(self.cluster, self.status.process_class))
    }

    /// [`super::super::model::pod::expected_substitutions`] of the group's pod (`None` without a
    /// pod); nothing decoded.
    pub fn pod_substitutions(&self) -> Option<&'a BTreeMap<String, String>> {
        self.pod_facts()?.substitutions.as_ref()
    }
}
