//! What the steps of a steady pass read from a pod's spec, derived once per version of
//! the pod (issue 20): the pods' cache computes them when it stores a pod (its
//! compact form keeps them), so that a pass with nothing to change decodes no
//! pod spec. Each fact is what the helper named on it answers for the pod; the steps
//! read the fact instead of calling the helper on the decoded pod.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use super::super::model::pod::buggify::{BuggifyState, pod_state};
use super::super::model::pod::{
    MAIN_CONTAINER, expected_substitutions, expected_zone, has_sidecar, live_sidecar_image,
    mounted_servers_per_pod,
};

/// A ConfigMap the pod mounts, not optionally (a kubelet refuses a version of it that
/// lacks one of these keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigMapMount {
    /// The ConfigMap's name.
    pub name: String,
    /// The keys the pod mounts.
    pub keys: Vec<String>,
}

/// See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpecFacts {
    /// [`mounted_servers_per_pod`].
    pub mounted_servers: Option<u32>,
    /// [`expected_substitutions`].
    pub substitutions: Option<BTreeMap<String, String>>,
    /// [`expected_zone`].
    pub expected_zone: Option<String>,
    /// [`has_sidecar`].
    pub has_sidecar: bool,
    /// `spec.nodeName`.
    pub node_name: Option<String>,
    /// [`live_sidecar_image`].
    pub sidecar_image: Option<String>,
    /// The main container's image.
    pub main_image: Option<String>,
    /// The ConfigMaps the pod mounts, not optionally, in volume order.
    pub config_map_mounts: Vec<ConfigMapMount>,
    /// [`pod_state`]: what buggify does to the pod.
    pub buggify: BuggifyState,
}

impl SpecFacts {
    /// The facts of `pod`.
    pub fn of(pod: &Pod) -> Self {
        let spec = pod.spec.as_ref();
        let config_map_mounts = spec
            .and_then(|s| s.volumes.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|v| v.config_map.as_ref())
            .filter(|cm| cm.optional != Some(true))
            .map(|cm| ConfigMapMount {
                name: cm.name.clone(),
                keys: cm.items.iter().flatten().map(|i| i.key.clone()).collect(),
            })
            .collect();
        Self {
            mounted_servers: mounted_servers_per_pod(pod),
            substitutions: expected_substitutions(pod),
            expected_zone: expected_zone(pod),
            has_sidecar: has_sidecar(pod),
            node_name: spec.and_then(|s| s.node_name.clone()),
            sidecar_image: live_sidecar_image(pod).map(str::to_owned),
            main_image: spec
                .and_then(|s| s.containers.iter().find(|c| c.name == MAIN_CONTAINER))
                .and_then(|c| c.image.clone()),
            config_map_mounts,
            buggify: pod_state(pod),
        }
    }
}

#[cfg(test)]
#[path = "pod_spec_facts_tests.rs"]
mod tests;
