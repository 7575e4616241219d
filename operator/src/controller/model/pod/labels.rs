//! Labels of the cluster's objects (docs/controller-model.md, "Names, labels,
//! annotations"): the match labels that select everything of the cluster, plus the class
//! and process group labels of one group.

use std::collections::BTreeMap;

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ProcessGroupStatus;

use super::names::cluster_name;

/// The labels selecting every object of the cluster: `spec.labels.matchLabels`, default
/// `foundationdb.org/fdb-cluster-name: <cluster>`.
pub(crate) fn cluster_labels(cluster: &FoundationDBCluster) -> BTreeMap<String, String> {
    cluster.spec.labels.match_labels(cluster_name(cluster))
}

/// The labels of one process group's objects: the cluster labels plus every configured
/// process class label key set to the class and every configured process group ID label
/// key set to the ID.
pub(crate) fn process_group_labels(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
) -> BTreeMap<String, String> {
    let mut labels = cluster_labels(cluster);
    for key in cluster.spec.labels.process_class_labels() {
        labels.insert(key, group.process_class.as_str().to_owned());
    }
    for key in cluster.spec.labels.process_group_id_labels() {
        labels.insert(key, group.process_group_id.clone());
    }
    labels
}

/// The labels of the group's pods' class only (cluster labels + class labels): what the
/// fault-domain anti-affinity selects.
pub(crate) fn process_class_selector(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
) -> BTreeMap<String, String> {
    let mut labels = cluster_labels(cluster);
    for key in cluster.spec.labels.process_class_labels() {
        labels.insert(key, group.process_class.as_str().to_owned());
    }
    labels
}

/// The labels of an object: `user` labels (from a template), overridden by
/// `spec.labels.resourceLabels`, overridden by the operator's `own` labels (selectors
/// depend on them, so nothing may change them).
pub(crate) fn merged_labels(
    cluster: &FoundationDBCluster,
    user: Option<&BTreeMap<String, String>>,
    own: BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut labels = user.cloned().unwrap_or_default();
    if let Some(resource_labels) = &cluster.spec.labels.resource_labels {
        labels.extend(resource_labels.clone());
    }
    labels.extend(own);
    labels
}
