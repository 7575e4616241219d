//! The world as the divergence check sees it: what the cluster's spec asks of the world
//! (the desired world) and what runs (the actual world), and the label keys that tie
//! pods to their process groups.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::FdbVersion;
use fdb_shared::api::{FoundationDBCluster, ProcessClass};
use fdb_shared::cluster_math::{
    desired_database_configuration, desired_process_counts, main_image, sidecar_image,
    unified_image,
};
use kube::ResourceExt;

use crate::invariants::{ActualWorld, DesiredWorld, LivePod};
use crate::world::PROCESS_GROUP_LABEL;
use fdb_operator::controller::CLUSTER_NAME_LABEL;

use super::{RunError, Runner};

const PROCESS_CLASS_LABEL: &str = "foundationdb.org/fdb-process-class";
/// The main container's name in every FoundationDB pod.
pub(super) const MAIN_CONTAINER: &str = "foundationdb";
/// The sidecar container's name.
pub(super) const SIDECAR_CONTAINER: &str = "foundationdb-kubernetes-sidecar";

/// The label keys naming a pod's process group and class: the cluster's
/// `labels.processGroupIDLabels` / `processClassLabels` (the defaults without a cluster).
pub(super) struct GroupLabels {
    group: Vec<String>,
    class: Vec<String>,
}

impl GroupLabels {
    pub(super) fn of(cluster: Option<&FoundationDBCluster>) -> Self {
        match cluster {
            Some(cluster) => Self {
                group: cluster.spec.labels.process_group_id_labels(),
                class: cluster.spec.labels.process_class_labels(),
            },
            None => Self {
                group: vec![PROCESS_GROUP_LABEL.to_owned()],
                class: vec![PROCESS_CLASS_LABEL.to_owned()],
            },
        }
    }

    /// The process group and class the labels name, by the first key present.
    pub(super) fn group_of(
        &self,
        labels: &BTreeMap<String, String>,
    ) -> Option<(String, ProcessClass)> {
        let first = |keys: &[String]| keys.iter().find_map(|key| labels.get(key));
        let group = first(&self.group)?.clone();
        let class = first(&self.class)?.parse().ok()?;
        Some((group, class))
    }
}

impl Runner {
    /// Whether the world holds more clusters than the first (`clusters:` members with
    /// instances of their own, or a `fleet:`, whose instances an operator outside
    /// replaces): each is then judged on its own objects.
    pub(super) fn several_clusters(&self) -> bool {
        self.operators.has_instances() || !self.fleet.is_empty()
    }

    /// The world as the divergence check sees it.
    pub(super) fn actual_world(&self) -> Result<ActualWorld, RunError> {
        match self.cluster_object() {
            Some(cluster) if self.several_clusters() => self.actual_world_of(&cluster),
            _ => self.actual_world_of_objects(None),
        }
    }

    /// The world of one cluster among several sharing the database: its own pods and
    /// PVCs (by the cluster name label) and the exclusions of its own process groups (by
    /// its `processGroupIDPrefix`); the processes and configuration are the database's.
    pub(super) fn actual_world_of(
        &self,
        cluster: &FoundationDBCluster,
    ) -> Result<ActualWorld, RunError> {
        self.actual_world_of_objects(Some(cluster))
    }

    fn actual_world_of_objects(
        &self,
        only: Option<&FoundationDBCluster>,
    ) -> Result<ActualWorld, RunError> {
        let owned = |labels: &BTreeMap<String, String>| {
            only.is_none_or(|cluster| {
                labels.get(CLUSTER_NAME_LABEL).map(String::as_str)
                    == cluster.metadata.name.as_deref()
            })
        };
        let prefix = only
            .map(|cluster| cluster.spec.process_group_id_prefix().to_owned())
            .filter(|prefix| !prefix.is_empty())
            .map(|prefix| format!("{prefix}-"));
        let own_group = |group: &String| prefix.as_ref().is_none_or(|p| group.starts_with(p));
        let keys = match only {
            Some(cluster) => GroupLabels::of(Some(cluster)),
            None => GroupLabels::of(self.cluster_object().as_ref()),
        };
        let snapshot = match only {
            Some(cluster) => self.fdb_of(cluster.metadata.name.as_deref().unwrap_or_default()),
            None => &self.fdb,
        }
        .snapshot();
        let pods = self
            .pods()?
            .into_iter()
            .filter(|pod| pod.metadata.deletion_timestamp.is_none())
            .filter(|pod| owned(pod.labels()))
            .filter_map(|pod| {
                let (group, class) = keys.group_of(pod.labels())?;
                let spec = pod.spec.as_ref()?;
                Some(LivePod {
                    name: pod.name_any(),
                    group,
                    class,
                    images: spec
                        .containers
                        .iter()
                        .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
                        .collect(),
                    claim: spec.volumes.iter().flatten().find_map(|volume| {
                        Some(volume.persistent_volume_claim.as_ref()?.claim_name.clone())
                    }),
                })
            })
            .collect();
        let pvcs = self
            .pvcs()?
            .into_iter()
            .filter(|pvc| pvc.metadata.deletion_timestamp.is_none())
            .filter(|pvc| owned(pvc.labels()))
            .map(|pvc| pvc.name_any())
            .collect();
        let mut excluded_groups: BTreeSet<String> = snapshot
            .excluded
            .iter()
            .filter_map(|target| target.strip_prefix("locality_instance_id:"))
            .map(str::to_owned)
            .collect();
        excluded_groups.extend(
            snapshot
                .processes
                .iter()
                .filter(|process| process.excluded)
                .filter_map(|process| process.locality.get("instance_id").cloned()),
        );
        excluded_groups.retain(|group| own_group(group));
        Ok(ActualWorld {
            pods,
            pvcs,
            process_versions: snapshot
                .processes
                .iter()
                .map(|process| (process.address.clone(), process.version))
                .collect(),
            configuration: snapshot.configuration.clone(),
            excluded_groups,
        })
    }
}

/// What the cluster's spec asks of the world.
pub(super) fn desired_world(cluster: &FoundationDBCluster) -> DesiredWorld {
    let spec = &cluster.spec;
    let version = spec.version.parse().unwrap_or(FdbVersion {
        major: 0,
        minor: 0,
        patch: 0,
        release_candidate: None,
    });
    let marked_for_removal = cluster
        .status
        .iter()
        .flat_map(|status| status.process_groups.iter())
        .filter(|group| group.is_marked_for_removal())
        .map(|group| group.process_group_id.clone())
        .collect();
    DesiredWorld {
        counts: desired_process_counts(spec).positive(),
        version,
        // A unified pod runs the monitor image in both containers.
        images: match cluster.image_type() {
            fdb_shared::api::cluster::ImageType::Unified => [
                (
                    MAIN_CONTAINER.to_owned(),
                    unified_image(spec, &spec.version),
                ),
                (
                    SIDECAR_CONTAINER.to_owned(),
                    unified_image(spec, &spec.version),
                ),
            ],
            _ => [
                (MAIN_CONTAINER.to_owned(), main_image(spec, &spec.version)),
                (
                    SIDECAR_CONTAINER.to_owned(),
                    sidecar_image(spec, &spec.version),
                ),
            ],
        }
        .into(),
        configuration: desired_database_configuration(spec),
        marked_for_removal,
        ever_marked: BTreeSet::new(),
    }
}

/// Adds the groups `cluster`'s status marks for removal to `ever_marked` (the world
/// judges a Reconciled cluster against every group it ever marked).
pub(super) fn note_marked_groups(
    ever_marked: &mut BTreeSet<String>,
    cluster: Option<&FoundationDBCluster>,
) {
    if let Some(status) = cluster.and_then(|cluster| cluster.status.as_ref()) {
        ever_marked.extend(
            status
                .process_groups
                .iter()
                .filter(|group| group.is_marked_for_removal())
                .map(|group| group.process_group_id.clone()),
        );
    }
}
