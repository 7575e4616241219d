//! UpdateStatus (first and last step): observes pods, PVCs, services, the ConfigMap and
//! `status json`, and writes the status built from them (operator-behavior §7) — only
//! when something differs.

use std::collections::BTreeMap;

use async_trait::async_trait;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::monitor_conf::parse::command_lines;
use fdb_shared::status_json::{DatabaseStatus, ProcessStatus};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Service};
use kube::ResourceExt;

use super::Subreconciler;
use crate::controller::config_map::{
    build_config_map, config_map_name, dynamic_conf_hash, expected_monitor_conf,
    monitor_conf_template,
};
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::objects::{object_of_group, pod_is_failing, pod_phase, public_ip};
use crate::controller::outcome::StepOutcome;
use crate::controller::pass::PassState;
use crate::controller::pod_model::{
    LAST_APPLIED_CONFIG_MAP_ANNOTATION, LAST_APPLIED_SPEC_ANNOTATION, PodOptions, build_pod,
    build_process_group_service, build_pvc, default_distribution_key, expected_substitutions,
    parse_any_process_group_id, pod_spec_hash, process_group_labels, servers_per_pod,
};
use crate::controller::process_groups::{GroupFacts, PodFacts, Presence, ProcessFacts, pod_zone};
use crate::controller::status::{
    DatabaseView, GroupObservation, StatusInputs, build_status_judged,
};

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct UpdateStatus;

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
/// the class's monitor conf template, as the ConfigMap holds them.
pub fn desired_config_hash(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
) -> Result<Option<String>, StepError> {
    let Some(connection_string) = cluster
        .status
        .as_ref()
        .and_then(|s| s.connection_string.as_deref())
    else {
        return Ok(None);
    };
    let template =
        monitor_conf_template(cluster, group.process_class).map_err(|e| StepError::Build {
            what: format!("monitor conf of {}", group.process_group_id),
            message: e.to_string(),
        })?;
    Ok(Some(dynamic_conf_hash(connection_string, &template)))
}

fn build_error(
    what: String,
) -> impl FnOnce(crate::controller::pod_model::PodModelError) -> StepError {
    move |e| StepError::Build {
        what,
        message: e.to_string(),
    }
}

fn presence<K: ResourceExt>(needed: bool, object: Option<&K>) -> Presence {
    match (needed, object) {
        (false, _) => Presence::NotNeeded,
        (true, None) => Presence::Missing,
        (true, Some(o)) if o.meta().deletion_timestamp.is_some() => Presence::Terminating,
        (true, Some(_)) => Presence::Present,
    }
}

/// Whether each reporting process of the group runs the command line that the conf its
/// pod has now (the class's template with the pod's substitutions) describes: fdbmonitor
/// does not restart processes when the conf changes, so a difference means the process
/// still runs an older configuration and needs a bounce (operator-behavior §5). `None`
/// when the expected command line cannot be known from the pod and the status.
fn command_lines_match(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
    pod: &Pod,
    processes: &[&ProcessStatus],
) -> Option<bool> {
    let substitutions = expected_substitutions(pod)?;
    let conf = expected_monitor_conf(cluster, group.process_class, &substitutions).ok()?;
    let expected = command_lines(&conf).ok()?;
    let several = expected.len() > 1;
    let instance = &group.process_group_id;
    for process in processes {
        let actual = process.command_line.as_deref()?;
        // With several servers per pod, `locality_process_id` is `<instance>-<i>`.
        let index = if several {
            process
                .locality
                .process_id
                .as_deref()?
                .strip_prefix(instance.as_str())?
                .strip_prefix('-')?
                .parse::<u32>()
                .ok()?
        } else {
            1
        };
        if expected.get(&index).map(String::as_str) != Some(actual) {
            return Some(false);
        }
    }
    Some(true)
}

/// Observes one process group.
pub fn observe_group(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
    pods: &[Pod],
    pvcs: &[PersistentVolumeClaim],
    services: &[Service],
    db: Option<&DatabaseStatus>,
) -> Result<GroupObservation, StepError> {
    let id = &group.process_group_id;
    let pod = object_of_group(cluster, pods, id);
    let pod_facts = match pod {
        None => None,
        Some(pod) => {
            let desired = build_pod(cluster, group, &pod_options(cluster, group))
                .map_err(build_error(format!("pod of {id}")))?;
            let annotations = pod.annotations();
            let labels = pod.labels();
            let config_hash = desired_config_hash(cluster, group)?;
            Some(PodFacts {
                terminating: pod.metadata.deletion_timestamp.is_some(),
                pending: pod_phase(pod) == "Pending",
                failing: pod_is_failing(pod),
                spec_matches: annotations.get(LAST_APPLIED_SPEC_ANNOTATION)
                    == Some(&pod_spec_hash(&desired)),
                labels_match: process_group_labels(cluster, group)
                    .iter()
                    .all(|(k, v)| labels.get(k) == Some(v)),
                config_confirmed: config_hash.is_some()
                    && annotations.get(LAST_APPLIED_CONFIG_MAP_ANNOTATION) == config_hash.as_ref(),
            })
        }
    };
    let pvc_needed = build_pvc(cluster, group)
        .map_err(build_error(format!("PVC of {id}")))?
        .is_some();
    let service_needed = build_process_group_service(cluster, group)
        .map_err(build_error(format!("service of {id}")))?
        .is_some();
    let processes: Vec<_> = db
        .map(|db| db.processes_of_instance(id).map(|(_, p)| p).collect())
        .unwrap_or_default();
    let process_facts = match db {
        None => ProcessFacts::Unknown,
        Some(_) => ProcessFacts::Reported {
            reporting: processes.len(),
            excluded: processes.iter().any(|p| p.excluded),
        },
    };
    let command_lines_match = match (pod, &pod_facts) {
        (Some(pod), Some(facts)) if facts.config_confirmed && !processes.is_empty() => {
            command_lines_match(cluster, group, pod, &processes)
        }
        _ => None,
    };
    let fault_domain = processes
        .iter()
        .find_map(|p| p.locality.zoneid.clone())
        .or_else(|| pod.and_then(|pod| pod_zone(cluster, pod)));
    Ok(GroupObservation {
        facts: GroupFacts {
            marked_for_removal: group.is_marked_for_removal(),
            pod: pod_facts,
            pvc: presence(pvc_needed, object_of_group(cluster, pvcs, id)),
            service: presence(service_needed, object_of_group(cluster, services, id)),
            processes: process_facts,
            expected_processes: usize::try_from(servers_per_pod(cluster, group.process_class))
                .unwrap_or(1),
            command_lines_match,
        },
        address: pod
            .and_then(|pod| public_ip(cluster, pod))
            .map(str::to_owned),
        fault_domain,
    })
}

#[async_trait]
impl Subreconciler for UpdateStatus {
    fn name(&self) -> &'static str {
        "UpdateStatus"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        pass: &mut PassState,
    ) -> Result<StepOutcome, StepError> {
        let cluster = pass.cluster().clone();
        let previous = pass.status();
        let pods = pass.pods(ctx).await?.to_vec();
        let pvcs = pass.pvcs(ctx).await?.to_vec();
        let services = pass.services(ctx).await?.to_vec();
        let desired_config_map =
            build_config_map(&cluster, previous.connection_string.as_deref(), None).map_err(
                |e| StepError::Build {
                    what: "ConfigMap".to_owned(),
                    message: e.to_string(),
                },
            )?;
        let live_config_map = pass
            .config_map(ctx, &config_map_name(&cluster))
            .await?
            .cloned();
        let config_map_in_sync = live_config_map.is_some_and(|live| {
            live.data.unwrap_or_default() == desired_config_map.data.clone().unwrap_or_default()
        });
        let db = if previous.connection_string.is_some() {
            match pass.database_status(ctx).await {
                Ok(db) => Some(db),
                Err(message) => {
                    tracing::warn!(%message, "cannot read the database status");
                    None
                }
            }
        } else {
            None
        };
        let mut observations = BTreeMap::new();
        for group in &previous.process_groups {
            let observation =
                observe_group(&cluster, group, &pods, &pvcs, &services, db.as_deref())?;
            observations.insert(group.process_group_id.clone(), observation);
        }
        let database = match (&previous.connection_string, &db) {
            (None, _) => DatabaseView::NotCreated,
            (Some(_), None) => DatabaseView::Unreachable,
            (Some(_), Some(db)) => DatabaseView::Status(db),
        };
        let (status, reconciled) = build_status_judged(&StatusInputs {
            cluster: &cluster,
            previous: &previous,
            observations: &observations,
            database,
            config_map_in_sync,
            now_unix: pass.now_unix(),
        });
        pass.write_status(ctx, &status).await?;
        pass.set_judged_reconciled(reconciled);
        Ok(StepOutcome::Continue)
    }
}
