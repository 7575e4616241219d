//! What the runner looks at: the objects around each pass (for the invariants), and the
//! state of the world after each step (for the result).

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::FdbVersion;
use fdb_shared::api::{FoundationDBCluster, ProcessClass};
use fdb_shared::cluster_math::fault_tolerance;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::ResourceExt;
use serde_json::Value;

use crate::simulation::invariants::{Deletion, GroupInfo, PassObservation};
use crate::simulation::result::{EventSource, StepResult};
use crate::simulation::scenario::StepSpec;
use crate::simulation::world::PROCESS_GROUP_LABEL;

use super::steps::StepOutcomeSummary;
use super::{RunError, Runner};

const PROCESS_CLASS_LABEL: &str = "foundationdb.org/fdb-process-class";

/// The objects of the cluster as they were before a pass.
pub(super) struct BeforePass {
    pods: BTreeMap<String, GroupInfo>,
    pvcs: BTreeMap<String, GroupInfo>,
}

fn group_of(labels: &BTreeMap<String, String>) -> Option<(String, ProcessClass)> {
    let group = labels.get(PROCESS_GROUP_LABEL)?.clone();
    let class = labels.get(PROCESS_CLASS_LABEL)?.parse().ok()?;
    Some((group, class))
}

impl Runner {
    fn cluster_object(&self) -> Option<FoundationDBCluster> {
        self.api
            .get_typed::<FoundationDBCluster>(Some(&self.namespace), &self.name)
            .ok()
            .flatten()
    }

    pub(super) fn observe_before_pass(&self) -> Result<BeforePass, RunError> {
        let snapshot = self.fdb.snapshot();
        let zone_of_group: BTreeMap<&str, &str> = snapshot
            .processes
            .iter()
            .filter_map(|process| {
                Some((
                    process.locality.get("instance_id")?.as_str(),
                    process.locality.get("zoneid")?.as_str(),
                ))
            })
            .collect();
        let pods: Vec<Pod> = self
            .api
            .list_typed(Some(&self.namespace))
            .map_err(|error| RunError::World(error.into()))?;
        let mut pod_groups = BTreeMap::new();
        let mut zones = BTreeMap::new();
        for pod in &pods {
            let Some((group, class)) = group_of(pod.labels()) else {
                continue;
            };
            let zone = zone_of_group
                .get(group.as_str())
                .map(|zone| (*zone).to_owned())
                .or_else(|| pod.spec.as_ref().and_then(|spec| spec.node_name.clone()));
            zones.insert(group.clone(), zone.clone());
            pod_groups.insert(
                pod.name_any(),
                GroupInfo {
                    group,
                    class,
                    zone,
                    pod_ip: pod.status.as_ref().and_then(|status| status.pod_ip.clone()),
                },
            );
        }
        let pvcs: Vec<PersistentVolumeClaim> = self
            .api
            .list_typed(Some(&self.namespace))
            .map_err(|error| RunError::World(error.into()))?;
        let pvc_groups = pvcs
            .iter()
            .filter_map(|pvc| {
                let (group, class) = group_of(pvc.labels())?;
                let zone = zones.get(&group).cloned().flatten();
                Some((
                    pvc.name_any(),
                    GroupInfo {
                        group,
                        class,
                        zone,
                        pod_ip: None,
                    },
                ))
            })
            .collect();
        Ok(BeforePass {
            pods: pod_groups,
            pvcs: pvc_groups,
        })
    }

    pub(super) fn observe_after_pass(
        &mut self,
        before: &BeforePass,
        events_before: usize,
    ) -> Result<(), RunError> {
        let deletions: Vec<Deletion> = self
            .log
            .events_since(events_before)
            .into_iter()
            .filter(|event| event.source == EventSource::K8s && event.action == "delete")
            .filter_map(|event| {
                if let Some(name) = event.target.strip_prefix("pod/") {
                    Some(Deletion::Pod(name.to_owned()))
                } else {
                    event
                        .target
                        .strip_prefix("persistentvolumeclaim/")
                        .map(|name| Deletion::Pvc(name.to_owned()))
                }
            })
            .collect();
        let deleted_groups: BTreeSet<&str> = deletions
            .iter()
            .filter_map(|deletion| match deletion {
                Deletion::Pod(name) => before.pods.get(name),
                Deletion::Pvc(name) => before.pvcs.get(name),
            })
            .map(|info| info.group.as_str())
            .collect();
        let cluster = self.cluster_object();
        let tolerance = cluster.as_ref().map_or(1, |cluster| {
            fault_tolerance(&cluster.spec.redundancy_mode())
        });
        let removed_without_exclusion: BTreeSet<String> = cluster
            .as_ref()
            .map(|cluster| {
                cluster
                    .spec
                    .process_groups_to_remove_without_exclusion
                    .iter()
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let pods: Vec<Pod> = self
            .api
            .list_typed(Some(&self.namespace))
            .map_err(|error| RunError::World(error.into()))?;
        let live_groups: BTreeSet<String> = pods
            .iter()
            .filter(|pod| pod.metadata.deletion_timestamp.is_none())
            .filter_map(|pod| group_of(pod.labels()).map(|(group, _)| group))
            .collect();
        let snapshot = self.fdb.snapshot();
        let reporting_groups: BTreeSet<String> = snapshot
            .processes
            .iter()
            .filter_map(|process| process.locality.get("instance_id"))
            .filter(|group| {
                live_groups.contains(*group) && !deleted_groups.contains(group.as_str())
            })
            .cloned()
            .collect();
        let running_versions: Vec<FdbVersion> = snapshot
            .processes
            .iter()
            .map(|process| process.version)
            .collect();
        let fdb = self.fdb.clone();
        let risk = move |group: &str| fdb.removal_risk(group);
        self.monitor.check_pass(&PassObservation {
            time: self.elapsed(),
            pass: self.total_passes,
            deletions: &deletions,
            pods: &before.pods,
            pvcs: &before.pvcs,
            removal_risk: &risk,
            removed_without_exclusion: &removed_without_exclusion,
            coordinators: &snapshot.coordinators,
            fault_tolerance: usize::try_from(tolerance).unwrap_or(0),
            reporting_groups: &reporting_groups,
            running_versions: &running_versions,
        });
        Ok(())
    }

    pub(super) fn step_result(
        &self,
        index: usize,
        spec: &StepSpec,
        outcome: StepOutcomeSummary,
    ) -> Result<StepResult, RunError> {
        let cluster = self.api.get(&self.cluster_key()).unwrap_or(Value::Null);
        Ok(StepResult {
            index,
            step: serde_json::to_value(spec).unwrap_or(Value::Null),
            time: self.elapsed(),
            passes: outcome.passes,
            reconciled: outcome.reconciled,
            stopped_because: outcome.stopped_because,
            cluster,
            pods: self.world.pod_summaries()?,
            pvcs: self.world.pvc_summaries()?,
            services: self.world.service_summaries()?,
            config_maps: self.world.config_map_summaries()?,
            sidecars: self.world.sidecar_summaries(),
            fdb: serde_json::to_value(self.fdb.snapshot()).unwrap_or(Value::Null),
        })
    }
}
