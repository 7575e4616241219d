//! The world's state as the result JSON shows it.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Service};
use sha2::{Digest, Sha256};

use super::World;
use super::error::WorldError;
use crate::result::{
    ConfigMapSummary, ContainerSummary, PodSummary, PvcSummary, ServiceSummary, SidecarSummary,
};

impl World {
    /// Every pod, by namespace and name.
    pub fn pod_summaries(&self) -> Result<Vec<PodSummary>, WorldError> {
        Ok(self
            .list_pods()?
            .into_iter()
            .map(|pod| {
                let spec = pod.spec.clone().unwrap_or_default();
                let status = pod.status.clone().unwrap_or_default();
                let statuses: Vec<_> = status
                    .init_container_statuses
                    .iter()
                    .flatten()
                    .chain(status.container_statuses.iter().flatten())
                    .collect();
                let containers = spec
                    .init_containers
                    .iter()
                    .flatten()
                    .chain(spec.containers.iter())
                    .map(|c| {
                        let state = statuses.iter().find(|s| s.name == c.name);
                        ContainerSummary {
                            name: c.name.clone(),
                            image: c.image.clone().unwrap_or_default(),
                            args: c.args.clone().unwrap_or_default(),
                            restart_count: state.map_or(0, |s| s.restart_count),
                            image_id: state.map(|s| s.image_id.clone()).unwrap_or_default(),
                        }
                    })
                    .collect();
                PodSummary {
                    name: pod.metadata.name.clone().unwrap_or_default(),
                    labels: pod.metadata.labels.clone().unwrap_or_default(),
                    annotations: pod.metadata.annotations.clone().unwrap_or_default(),
                    node: spec.node_name.clone(),
                    ip: status.pod_ip.clone(),
                    phase: status.phase.clone().unwrap_or_else(|| "Pending".to_owned()),
                    terminating: pod.metadata.deletion_timestamp.is_some(),
                    containers,
                }
            })
            .collect())
    }

    /// Every PVC, by namespace and name.
    pub fn pvc_summaries(&self) -> Result<Vec<PvcSummary>, WorldError> {
        let mut pvcs: Vec<PersistentVolumeClaim> = self.api.list_typed(None)?;
        pvcs.sort_by_key(|p| (p.metadata.namespace.clone(), p.metadata.name.clone()));
        Ok(pvcs
            .into_iter()
            .map(|pvc| PvcSummary {
                name: pvc.metadata.name.clone().unwrap_or_default(),
                labels: pvc.metadata.labels.clone().unwrap_or_default(),
                storage: pvc
                    .spec
                    .as_ref()
                    .and_then(|s| {
                        s.resources
                            .as_ref()?
                            .requests
                            .as_ref()?
                            .get("storage")
                            .cloned()
                    })
                    .map(|q| q.0)
                    .unwrap_or_default(),
                terminating: pvc.metadata.deletion_timestamp.is_some(),
            })
            .collect())
    }

    /// Every service, by namespace and name.
    pub fn service_summaries(&self) -> Result<Vec<ServiceSummary>, WorldError> {
        let mut services: Vec<Service> = self.api.list_typed(None)?;
        services.sort_by_key(|s| (s.metadata.namespace.clone(), s.metadata.name.clone()));
        Ok(services
            .into_iter()
            .map(|s| ServiceSummary {
                name: s.metadata.name.clone().unwrap_or_default(),
                labels: s.metadata.labels.clone().unwrap_or_default(),
            })
            .collect())
    }

    /// Every ConfigMap, by namespace and name.
    pub fn config_map_summaries(&self) -> Result<Vec<ConfigMapSummary>, WorldError> {
        let mut maps: Vec<ConfigMap> = self.api.list_typed(None)?;
        maps.sort_by_key(|m| (m.metadata.namespace.clone(), m.metadata.name.clone()));
        Ok(maps
            .into_iter()
            .map(|m| ConfigMapSummary {
                name: m.metadata.name.clone().unwrap_or_default(),
                data: m.data.clone().unwrap_or_default(),
            })
            .collect())
    }

    /// What each running pod's sidecar wrote to its output dir, by pod name: SHA-256 of
    /// the top-level files and the staged binaries (`bin/<version>/<name>`).
    pub fn sidecar_summaries(&self) -> BTreeMap<String, SidecarSummary> {
        let mut out = BTreeMap::new();
        for runtime in self.pods.values() {
            let Some(dir) = runtime.sidecar.as_ref().and_then(|s| s.output_dir.as_ref()) else {
                continue;
            };
            out.insert(runtime.name.clone(), summarize_output(dir));
        }
        out
    }
}

fn summarize_output(dir: &Path) -> SidecarSummary {
    let mut summary = SidecarSummary::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return summary;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if path.is_file() && !name.starts_with('.') && !name.ends_with(".lockfile") {
            if let Ok(bytes) = std::fs::read(&path) {
                summary
                    .files
                    .insert(name, hex::encode(Sha256::digest(&bytes)));
            }
        } else if path.is_dir() && name == "bin" {
            let Ok(versions) = std::fs::read_dir(&path) else {
                continue;
            };
            for version in versions.flatten() {
                let Ok(binaries) = std::fs::read_dir(version.path()) else {
                    continue;
                };
                for binary in binaries.flatten() {
                    summary.binaries.push(format!(
                        "bin/{}/{}",
                        version.file_name().to_string_lossy(),
                        binary.file_name().to_string_lossy()
                    ));
                }
            }
        }
    }
    summary.binaries.sort();
    summary
}
