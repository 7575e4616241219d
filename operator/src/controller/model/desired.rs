//! What the operator wants for a process group beyond its objects' specs: the options
//! its pod is built with, the configuration hash its pod must confirm, and the
//! ConfigMap. Shared by the steps that create pods, confirm configurations and judge the
//! status.

use std::collections::BTreeMap;

use fdb_shared::api::cluster::{ImageType, ProcessGroupStatus};
use fdb_shared::api::{FoundationDBCluster, ProcessClass};
use k8s_openapi::api::core::v1::ConfigMap;

use super::super::errors::StepError;
use super::super::snapshot::pod_spec_facts::SpecFacts;
use super::config_map::{build_config_map, dynamic_conf_hash, monitor_conf_template};
use super::pod::{PodOptions, default_distribution_key, parse_any_process_group_id};

/// The pod options of a group: its distribution key when fault domains are bin packed.
pub fn pod_options(cluster: &FoundationDBCluster, group: &ProcessGroupStatus) -> PodOptions {
    let distribution_key = parse_any_process_group_id(&group.process_group_id)
        .and_then(|(_, n)| default_distribution_key(cluster, n));
    PodOptions {
        distribution_key,
        ..PodOptions::default()
    }
}

/// The hash a pod's `last-applied-config-map` annotation must carry: the cluster file and
/// the class's monitor conf template, as the ConfigMap holds them, and, while an
/// incompatible upgrade is pending, the staged binary of its target (see
/// [`upgrade_staging_hash`]). `servers`: the servers per pod of the group's pod (see
/// [`super::pod::pod_servers_per_pod`]). `None` before the connection string is
/// known.
///
/// For a unified pod (`image_type`), the monitor conf is the class's process
/// configuration JSON, whatever the density.
pub(crate) fn desired_config_hash(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
    servers: u32,
    image_type: &ImageType,
) -> Result<Option<String>, StepError> {
    let Some(connection_string) = cluster
        .status
        .as_ref()
        .and_then(|s| s.connection_string.as_deref())
    else {
        return Ok(None);
    };
    let build_error = |message: String| StepError::Build {
        what: format!("monitor conf of {}", group.process_group_id),
        message,
    };
    let template = match image_type {
        ImageType::Unified => {
            let config = super::process_config::desired_process_configuration(
                cluster,
                group.process_class,
                true,
            );
            serde_json::to_string(&config).map_err(|e| build_error(e.to_string()))?
        }
        _ => monitor_conf_template(cluster, group.process_class, servers)
            .map_err(|e| build_error(fdb_shared::error_chain::chain_text(&e)))?,
    };
    let hash = dynamic_conf_hash(connection_string, &template);
    Ok(Some(upgrade_staging_hash(cluster, hash)))
}

/// During an incompatible upgrade, a pod's dynamic configuration also includes the
/// target's staged `fdbserver` (sidecar-api.md: UpdatePodConfig requires
/// `is_present/bin/<target>/fdbserver`), so a pod confirmed before the upgrade is asked
/// again and stays IncorrectConfigMap until its sidecar has staged the binary. Outside an
/// upgrade the hash is unchanged.
pub(crate) fn upgrade_staging_hash(cluster: &FoundationDBCluster, hash: String) -> String {
    match super::super::versions::change::pending_upgrade_target(cluster) {
        Some(target) => {
            let staged = super::super::versions::change::staged_fdbserver(&target);
            super::config_map::sha256_hex(format!("{hash}\0{staged}").as_bytes())
        }
        None => hash,
    }
}

/// [`desired_config_hash`] computed once per class and servers per pod (it depends on
/// nothing else), for steps that ask for every group.
#[derive(Debug, Default)]
pub struct ConfigHashes {
    by_shape: BTreeMap<(ProcessClass, u32, ImageType), Option<String>>,
}

impl ConfigHashes {
    /// The desired hash of the pod of `group` running `servers` processes, of the pod
    /// model `image_type`.
    pub fn of(
        &mut self,
        cluster: &FoundationDBCluster,
        group: &ProcessGroupStatus,
        servers: u32,
        image_type: ImageType,
    ) -> Result<Option<String>, StepError> {
        let shape = (group.process_class, servers, image_type.clone());
        if let Some(known) = self.by_shape.get(&shape) {
            return Ok(known.clone());
        }
        let hash = desired_config_hash(cluster, group, servers, &image_type)?;
        self.by_shape.insert(shape, hash.clone());
        Ok(hash)
    }
}

/// [`desired_config_map`], keeping every key a live pod still mounts (with the live
/// ConfigMap's value) that the spec no longer asks for (e.g. `ca-file` after `trustedCAs`
/// was emptied): a kubelet refuses a ConfigMap version missing a key a pod mounts, so
/// dropping it would freeze those pods' configuration until they are replaced. The
/// pods are given by their [`SpecFacts`] (their ConfigMap mounts).
pub(crate) fn desired_config_map_for<'a>(
    cluster: &FoundationDBCluster,
    live_config_map: Option<&ConfigMap>,
    live_pods: impl IntoIterator<Item = &'a SpecFacts>,
) -> Result<ConfigMap, StepError> {
    let mut desired = desired_config_map(cluster)?;
    let Some(live) = live_config_map.and_then(|cm| cm.data.as_ref()) else {
        return Ok(desired);
    };
    let name = super::config_map::config_map_name(cluster);
    let data = desired.data.get_or_insert_with(BTreeMap::new);
    for pod in live_pods {
        for mount in pod.config_map_mounts.iter().filter(|m| m.name == name) {
            for key in &mount.keys {
                if !data.contains_key(key)
                    && let Some(value) = live.get(key)
                {
                    data.insert(key.clone(), value.clone());
                }
            }
        }
    }
    Ok(desired)
}

/// The ConfigMap as it should be now (the cluster file from the status).
pub fn desired_config_map(cluster: &FoundationDBCluster) -> Result<ConfigMap, StepError> {
    let connection_string = cluster
        .status
        .as_ref()
        .and_then(|s| s.connection_string.as_deref());
    build_config_map(cluster, connection_string, None).map_err(|e| StepError::Build {
        what: "ConfigMap".to_owned(),
        message: fdb_shared::error_chain::chain_text(&e),
    })
}
