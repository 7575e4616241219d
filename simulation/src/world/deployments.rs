//! The Deployment controller and garbage collector of the simulated world, and the
//! backup agents they run.
//!
//! Each Deployment gets `spec.replicas` pods from its template (named
//! `<deployment>-<template hash>-<n>`, owned by the Deployment, labelled
//! `pod-template-hash`); pods of an older template are deleted and replaced at once, the
//! extra pods of a scale-down deleted, and `status` (`replicas`, `readyReplicas`,
//! `updatedReplicas`, `availableReplicas`) kept up to date. Pods whose owning Deployment
//! is gone are deleted, as Kubernetes' garbage collector does. The scheduler and the
//! kubelet then treat these pods like any other.
//!
//! A running pod whose `foundationdb` container runs `backup_agent` is a backup agent:
//! the world tells the database how many run ([`super::ProcessHost::set_backup_agents`]).

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::World;
use super::error::WorldError;
use super::lifecycle::CONTROLLER_MANAGER_ACTOR;
use super::pod_runtime::PodPhase;
use crate::kube::{DeleteOptions, PatchType, ResourceKey};
use fdb_operator::backup::deployment::{AGENT_CONTAINER, AGENT_PROGRAM};

/// The label carrying the hash of the template a pod was made from.
const TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

fn template_hash(deployment: &Deployment) -> String {
    let template = deployment.spec.as_ref().map(|s| &s.template);
    let text = serde_json::to_string(&template).unwrap_or_default();
    hex::encode(&Sha256::digest(text.as_bytes())[..5])
}

/// The uid of the Deployment that owns `pod`, if one does.
fn owner_uid(pod: &Pod) -> Option<&str> {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|owner| owner.kind == "Deployment")
        .map(|owner| owner.uid.as_str())
}

fn api_error(
    action: &'static str,
    target: String,
) -> impl FnOnce(crate::kube::ApiError) -> WorldError {
    move |source| WorldError::Api {
        actor: CONTROLLER_MANAGER_ACTOR,
        action,
        target,
        source,
    }
}

impl World {
    /// Brings every Deployment's pods and status in line with its spec, and collects the
    /// pods of Deployments that are gone.
    pub(super) fn sync_deployments(&mut self, pods: &[Arc<Pod>]) -> Result<(), WorldError> {
        let mut deployments: Vec<Deployment> = self.api.list_typed(None)?;
        deployments.sort_by_key(|d| (d.metadata.namespace.clone(), d.metadata.name.clone()));
        let live_owners: BTreeSet<String> = deployments
            .iter()
            .filter_map(|d| d.metadata.uid.clone())
            .collect();
        for pod in pods {
            if let Some(owner) = owner_uid(pod)
                && !live_owners.contains(owner)
                && pod.metadata.deletion_timestamp.is_none()
            {
                self.delete_pod(pod, "its deployment is gone")?;
            }
        }
        for deployment in &deployments {
            self.sync_deployment(deployment, pods)?;
        }
        Ok(())
    }

    fn delete_pod(&mut self, pod: &Pod, why: &str) -> Result<(), WorldError> {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let key = ResourceKey::new("", "v1", "pods", &namespace, &name);
        match self
            .api
            .delete_as(CONTROLLER_MANAGER_ACTOR, &key, DeleteOptions::default())
        {
            Ok(_) => {}
            Err(e) if e.code == 404 => return Ok(()),
            Err(e) => return Err(api_error("delete", format!("pod/{namespace}/{name}"))(e)),
        }
        self.record(
            "delete-pod",
            format!("pod/{namespace}/{name}"),
            why.to_owned(),
        );
        Ok(())
    }

    fn sync_deployment(
        &mut self,
        deployment: &Deployment,
        pods: &[Arc<Pod>],
    ) -> Result<(), WorldError> {
        if deployment.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let Some(uid) = deployment.metadata.uid.clone() else {
            return Ok(());
        };
        let name = deployment.metadata.name.clone().unwrap_or_default();
        let hash = template_hash(deployment);
        let replicas = deployment
            .spec
            .as_ref()
            .and_then(|s| s.replicas)
            .unwrap_or(1)
            .max(0);
        let replicas = usize::try_from(replicas).unwrap_or(0);
        // Only active pods count: a Failed or Succeeded pod (evicted, say) stays until
        // the pod garbage collector removes it, and the ReplicaSet creates another
        // (`IsPodActive` in kubernetes/kubernetes pkg/controller/controller_utils.go).
        let owned: Vec<&Pod> = pods
            .iter()
            .map(|pod| &**pod)
            .filter(|pod| owner_uid(pod) == Some(uid.as_str()))
            .filter(|pod| pod.metadata.deletion_timestamp.is_none())
            .filter(|pod| {
                !matches!(
                    pod.status.as_ref().and_then(|s| s.phase.as_deref()),
                    Some("Failed" | "Succeeded")
                )
            })
            .collect();
        let is_current = |pod: &Pod| {
            pod.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(TEMPLATE_HASH_LABEL))
                == Some(&hash)
        };
        let mut current: Vec<&Pod> = Vec::new();
        for pod in &owned {
            if is_current(pod) {
                current.push(pod);
            } else {
                self.delete_pod(pod, "its deployment's template changed")?;
            }
        }
        for pod in current.iter().skip(replicas) {
            self.delete_pod(pod, "its deployment scaled down")?;
        }
        // Names of every pod still in the API (a terminal or deleting one too) are taken.
        let used: BTreeSet<String> = pods
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        let mut index = 0;
        for _ in current.len()..replicas {
            let pod_name = loop {
                index += 1;
                let candidate = format!("{name}-{hash}-{index}");
                if !used.contains(&candidate) {
                    break candidate;
                }
            };
            self.create_pod(deployment, &uid, &hash, &pod_name)?;
        }
        self.write_deployment_status(deployment, &current, replicas)
    }

    /// Writes the Deployment's status (replicas, ready) when it changed, as its
    /// controller does.
    fn write_deployment_status(
        &mut self,
        deployment: &Deployment,
        current: &[&Pod],
        replicas: usize,
    ) -> Result<(), WorldError> {
        let namespace = deployment.metadata.namespace.clone().unwrap_or_default();
        let name = deployment.metadata.name.clone().unwrap_or_default();
        let ready = current
            .iter()
            .take(replicas)
            .filter(|pod| {
                pod.metadata.uid.as_ref().is_some_and(|uid| {
                    self.pods.get(uid).is_some_and(|runtime| {
                        runtime.phase == PodPhase::Running && !self.nodes.is_down(&runtime.node)
                    })
                })
            })
            .count();
        let live = current.len().min(replicas);
        let status = json!({
            "observedGeneration": deployment.metadata.generation,
            "replicas": live,
            "updatedReplicas": live,
            "readyReplicas": ready,
            "availableReplicas": ready,
        });
        let existing = deployment
            .status
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or(Value::Null);
        let differs = ["observedGeneration", "replicas", "readyReplicas"]
            .iter()
            .any(|field| {
                existing.get(field).unwrap_or(&json!(0)) != status.get(field).unwrap_or(&json!(0))
            });
        if differs {
            let key = ResourceKey::new("apps", "v1", "deployments", &namespace, &name);
            match self.api.patch_as(
                CONTROLLER_MANAGER_ACTOR,
                &key,
                PatchType::Merge,
                &json!({ "status": status }),
                true,
            ) {
                Ok(_) => self.record(
                    "status",
                    format!("deployment/{namespace}/{name}"),
                    format!("{ready}/{replicas} ready"),
                ),
                Err(e) if e.code == 404 => {}
                Err(e) => {
                    return Err(api_error(
                        "patch status of",
                        format!("deployment/{namespace}/{name}"),
                    )(e));
                }
            }
        }
        Ok(())
    }

    fn create_pod(
        &mut self,
        deployment: &Deployment,
        uid: &str,
        hash: &str,
        pod_name: &str,
    ) -> Result<(), WorldError> {
        let namespace = deployment.metadata.namespace.clone().unwrap_or_default();
        let name = deployment.metadata.name.clone().unwrap_or_default();
        let template = deployment
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        let mut labels = template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        labels.insert(TEMPLATE_HASH_LABEL.to_owned(), hash.to_owned());
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": namespace,
                "labels": labels,
                "annotations": template.metadata.as_ref().and_then(|m| m.annotations.clone()),
                "ownerReferences": [{
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": name,
                    "uid": uid,
                    "controller": true,
                    "blockOwnerDeletion": true,
                }],
            },
            "spec": template.spec,
        });
        self.api
            .create_as(CONTROLLER_MANAGER_ACTOR, pod)
            .map_err(api_error("create", format!("pod/{namespace}/{pod_name}")))?;
        self.record(
            "create-pod",
            format!("pod/{namespace}/{pod_name}"),
            format!("for deployment {name}"),
        );
        Ok(())
    }

    /// The uids of the backup agent pods that run now.
    pub(super) fn running_backup_agents(&self) -> Vec<String> {
        let Ok(pods) = self.list_pods() else {
            return Vec::new();
        };
        pods.iter()
            .filter(|pod| is_backup_agent(pod))
            .filter_map(|pod| pod.metadata.uid.clone())
            .filter(|uid| {
                self.pods
                    .get(uid)
                    .is_some_and(|runtime| runtime.phase == PodPhase::Running)
            })
            .collect()
    }

    /// Counts the running backup agent pods and tells the database.
    pub(super) fn report_backup_agents(&mut self, pods: &[Arc<Pod>]) {
        let count = pods
            .iter()
            .filter(|pod| pod.metadata.deletion_timestamp.is_none())
            .filter(|pod| is_backup_agent(pod))
            .filter(|pod| {
                pod.metadata.uid.as_ref().is_some_and(|uid| {
                    self.pods.get(uid).is_some_and(|runtime| {
                        runtime.phase == PodPhase::Running && !self.nodes.is_down(&runtime.node)
                    })
                })
            })
            .count();
        if self.fdb.report_backup_agents(count) {
            self.record(
                "backup-agents",
                "database".to_owned(),
                format!("{count} backup agents running"),
            );
        }
    }
}

/// Whether the pod runs a backup agent (its agent container runs `backup_agent`).
fn is_backup_agent(pod: &Pod) -> bool {
    pod.spec.as_ref().is_some_and(|spec| {
        spec.containers.iter().any(|c| {
            c.name == AGENT_CONTAINER
                && c.command
                    .as_ref()
                    .and_then(|cmd| cmd.first())
                    .map(String::as_str)
                    == Some(AGENT_PROGRAM)
        })
    })
}
