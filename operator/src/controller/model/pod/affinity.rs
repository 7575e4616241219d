//! Fault-domain scheduling rules of a pod (docs/controller-model.md, "The pod", seed design
//! "Support bin packing of fault domains").
//!
//! - Default: a *preferred* pod anti-affinity on the fault domain key
//!   (`kubernetes.io/hostname`) between pods of the same cluster and class, so the
//!   scheduler spreads each class over as many fault domains as it can.
//! - `foundationdb.org/none` and `foundationdb.org/kubernetes-cluster`: no rule (every pod
//!   is its own zone, or the whole Kubernetes cluster is one zone).
//! - Bin packing (a distribution key in [`PodOptions`]): the pod is labelled
//!   `foundationdb.org/distribution-key=<key>`, its FDB zone is the key (a logical fault
//!   domain), a *preferred* pod affinity packs the pods of the same key into the same
//!   physical fault domain, and a *required* pod anti-affinity keeps pods of other keys of
//!   the cluster out of it. The anti-affinity spans every class of the cluster: two
//!   logical zones sharing a node would make one node failure take out two FDB zones
//!   (e.g. two coordinators).
//!
//! The user's own affinity terms are kept; ours are appended.

use std::collections::BTreeMap;

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::api::cluster::settings::{
    KUBERNETES_CLUSTER_FAULT_DOMAIN_KEY, NO_FAULT_DOMAIN_KEY,
};
use k8s_openapi::api::core::v1::{
    Affinity, PodAffinity, PodAffinityTerm, PodAntiAffinity, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use super::labels::{cluster_labels, process_class_selector};
use super::{DISTRIBUTION_KEY_LABEL, PodOptions};

/// Weight of the operator's preferred terms (the same for every pod, so only relative to
/// the user's own terms).
pub(crate) const PREFERRED_TERM_WEIGHT: i32 = 1;

/// The distribution key the operator assigns to the `n`-th group of a class when bin
/// packing is on: `<n mod spec.faultDomain.zoneCount>`. Bin packing is on when
/// `spec.faultDomain.zoneCount` is positive and the fault domain key is a real node label
/// (not `foundationdb.org/none` or `foundationdb.org/kubernetes-cluster`, where
/// `zoneCount` counts Kubernetes clusters instead). The API has no separate field for it.
pub(crate) fn default_distribution_key(cluster: &FoundationDBCluster, n: u32) -> Option<String> {
    let fault_domain = &cluster.spec.fault_domain;
    let zones = u32::try_from(fault_domain.zone_count?)
        .ok()
        .filter(|z| *z > 0)?;
    match fault_domain.key() {
        NO_FAULT_DOMAIN_KEY | KUBERNETES_CLUSTER_FAULT_DOMAIN_KEY => None,
        _ => Some((n % zones).to_string()),
    }
}

fn term(topology_key: &str, selector: LabelSelector) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(selector),
        topology_key: topology_key.to_owned(),
        ..PodAffinityTerm::default()
    }
}

fn match_labels(labels: BTreeMap<String, String>) -> LabelSelector {
    LabelSelector {
        match_labels: Some(labels),
        match_expressions: None,
    }
}

/// The pod's affinity: the user's terms plus the operator's fault-domain terms.
pub(crate) fn pod_affinity(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
    options: &PodOptions,
    user: Option<&Affinity>,
) -> Option<Affinity> {
    let mut affinity = user.cloned().unwrap_or_default();
    let key = cluster.spec.fault_domain.key();
    if key == NO_FAULT_DOMAIN_KEY || key == KUBERNETES_CLUSTER_FAULT_DOMAIN_KEY {
        return user.cloned();
    }
    match &options.distribution_key {
        None => {
            let anti = affinity
                .pod_anti_affinity
                .get_or_insert_with(PodAntiAffinity::default);
            anti.preferred_during_scheduling_ignored_during_execution
                .get_or_insert_with(Vec::new)
                .push(WeightedPodAffinityTerm {
                    weight: PREFERRED_TERM_WEIGHT,
                    pod_affinity_term: term(
                        key,
                        match_labels(process_class_selector(cluster, group)),
                    ),
                });
        }
        Some(distribution_key) => {
            let mut same_key = cluster_labels(cluster);
            same_key.insert(DISTRIBUTION_KEY_LABEL.to_owned(), distribution_key.clone());
            affinity
                .pod_affinity
                .get_or_insert_with(PodAffinity::default)
                .preferred_during_scheduling_ignored_during_execution
                .get_or_insert_with(Vec::new)
                .push(WeightedPodAffinityTerm {
                    weight: PREFERRED_TERM_WEIGHT,
                    pod_affinity_term: term(key, match_labels(same_key)),
                });
            let other_keys = LabelSelector {
                match_labels: Some(cluster_labels(cluster)),
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: DISTRIBUTION_KEY_LABEL.to_owned(),
                    operator: "NotIn".to_owned(),
                    values: Some(vec![distribution_key.clone()]),
                }]),
            };
            affinity
                .pod_anti_affinity
                .get_or_insert_with(PodAntiAffinity::default)
                .required_during_scheduling_ignored_during_execution
                .get_or_insert_with(Vec::new)
                .push(term(key, other_keys));
        }
    }
    Some(affinity)
}
