//! `act` steps: a user, or a deliberately broken operator, acting on the world through
//! the same Kubernetes API and admin interface the operator uses.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Service};
use kube::api::{Api, DeleteParams, EvictParams, ListParams, Patch, PatchParams};

use crate::event_log::Actor as LogActor;
use crate::recording_admin::RecordingAdmin;
use crate::result::EventSource;
use crate::scenario::{Action, Actor, DeleteCollection, ObjectKind, ObjectRef, PodChoice};
use fdb_operator::fdb::{AdminClient, AdminError, ExclusionTarget};
use fdb_shared::api::cluster::settings::{CLUSTER_NAME_LABEL, PROCESS_CLASS_LABEL};

use super::steps::StepOutcomeSummary;
use super::{RunError, Runner};

/// The API actor of `act` steps as the operator (not the operator's own client, so its
/// requests are told apart in the request counts).
pub const ACT_AS_OPERATOR_ACTOR: &str = "act-as-operator";

/// Why an `act` step could not be carried out (the scenario names something that does
/// not exist, or the API refused).
fn act_failed(action: &Action, reason: impl std::fmt::Display) -> RunError {
    RunError::Act(format!("{action:?}: {reason}"))
}

impl Runner {
    /// Carries out one `act` step, then judges it like an operator action when it is
    /// done as the operator.
    pub(super) async fn act(
        &mut self,
        actor: Actor,
        action: &Action,
        cluster: Option<&str>,
    ) -> Result<StepOutcomeSummary, RunError> {
        let before = self.track()?;
        let events_before = self.log.len();
        if actor == Actor::User {
            self.disrupted_by_others();
        }
        self.log.set_actor(match actor {
            Actor::Operator => LogActor::ActAsOperator,
            Actor::User => LogActor::User,
        });
        let outcome = self.perform(actor, action, cluster).await;
        self.log.set_actor(LogActor::Operator);
        outcome?;
        self.report_noted_violations();
        let by = match actor {
            Actor::Operator => "operator",
            Actor::User => "user",
        };
        self.judge_action(&before, events_before, by, actor == Actor::Operator)
            .await?;
        self.wake_operator();
        Ok(StepOutcomeSummary::default())
    }

    async fn perform(
        &mut self,
        actor: Actor,
        action: &Action,
        cluster: Option<&str>,
    ) -> Result<(), RunError> {
        match action {
            Action::Delete(_)
            | Action::DeleteCollection(_)
            | Action::Patch(..)
            | Action::Evict(_)
            | Action::EvictChosen(_)
            | Action::Drain(_)
            | Action::AddNodes(_) => self.perform_on_kubernetes(actor, action).await,
            Action::Exec(exec) => self.run_exec(exec).await,
            Action::KubectlFdb(args) => self
                .run_kubectl_fdb(args)
                .await
                .map_err(|e| act_failed(action, fdb_shared::error_chain::ErrorChain(&e))),
            _ => {
                // As the operator, admin commands are issued by an operator instance: the
                // one of the named cluster, else the first cluster's.
                let issuer =
                    (actor == Actor::Operator).then(|| cluster.unwrap_or(&self.name).to_owned());
                self.perform_on_database(issuer.as_deref(), action).await
            }
        }
    }

    /// The acts on Kubernetes objects and nodes.
    async fn perform_on_kubernetes(
        &mut self,
        actor: Actor,
        action: &Action,
    ) -> Result<(), RunError> {
        let actor_name = match actor {
            Actor::Operator => ACT_AS_OPERATOR_ACTOR,
            Actor::User => super::USER_ACTOR,
        };
        let client = self.api.client(actor_name);
        let namespace = self.namespace.clone();
        match action {
            Action::Delete(target) => {
                self.delete_one(&client, target)
                    .await
                    .map_err(|e| act_failed(action, e))?;
                self.log.record(
                    EventSource::K8s,
                    "delete",
                    &format!("{}/{}", target.kind.as_str(), target.name),
                    "",
                );
            }
            Action::DeleteCollection(collection) => {
                self.delete_labelled(&client, collection)
                    .await
                    .map_err(|e| act_failed(action, e))?;
            }
            Action::Patch(target, patch) => {
                self.patch_one(&client, target, patch)
                    .await
                    .map_err(|e| act_failed(action, e))?;
                self.log.record(
                    EventSource::K8s,
                    "patch",
                    &format!("{}/{}", target.kind.as_str(), target.name),
                    &patch.to_string(),
                );
            }
            Action::Evict(pod) => {
                let pods: Api<Pod> = Api::namespaced(client, &namespace);
                self.evict(&pods, pod, "")
                    .await
                    .map_err(|e| act_failed(action, e))?;
            }
            Action::EvictChosen(choice) => {
                let pods: Api<Pod> = Api::namespaced(client, &namespace);
                let pod = self
                    .chosen_pod(&pods, *choice)
                    .await
                    .map_err(|e| act_failed(action, e))?;
                let detail = format!(
                    "chosen as live {} pod number {}",
                    choice.process_class, choice.nth
                );
                self.evict(&pods, &pod, &detail)
                    .await
                    .map_err(|e| act_failed(action, e))?;
            }
            Action::Drain(node) => self
                .drain(actor_name, node)
                .map_err(|e| act_failed(action, fdb_shared::error_chain::ErrorChain(&e)))?,
            Action::AddNodes(count) => {
                let added = self
                    .world
                    .add_nodes(*count)
                    .map_err(|e| act_failed(action, fdb_shared::error_chain::ErrorChain(&e)))?;
                for node in added {
                    self.log
                        .record(EventSource::K8s, "create", &format!("node/{node}"), "");
                }
            }
            _ => return Err(act_failed(action, "not an act on Kubernetes objects")),
        }
        Ok(())
    }

    /// Evicts one pod through the eviction API and records it.
    async fn evict(&mut self, pods: &Api<Pod>, pod: &str, detail: &str) -> Result<(), kube::Error> {
        pods.evict(pod, &EvictParams::default()).await?;
        self.log
            .record(EventSource::K8s, "evict", &format!("pod/{pod}"), detail);
        Ok(())
    }

    /// The acts on the database, through the admin interface the operator uses.
    async fn perform_on_database(
        &mut self,
        issuer: Option<&str>,
        action: &Action,
    ) -> Result<(), RunError> {
        match action {
            Action::Kill(groups) => {
                let addresses = self.group_addresses(groups);
                if addresses.is_empty() {
                    return Err(act_failed(
                        action,
                        "no running process belongs to these process groups",
                    ));
                }
                // The recording admin logs the command like the operator's own.
                self.admin(issuer)
                    .kill(&addresses)
                    .await
                    .map_err(|e| act_failed(action, e))?;
            }
            Action::Exclude(groups) => {
                let targets = instance_targets(groups).map_err(|e| act_failed(action, e))?;
                self.admin(issuer)
                    .exclude(&targets, false)
                    .await
                    .map_err(|e| act_failed(action, e))?;
            }
            Action::ClearData => {
                self.fdb
                    .clear_user_data()
                    .map_err(|e| act_failed(action, e))?;
                self.log.record(
                    EventSource::Fdb,
                    "clear-data",
                    "database",
                    "every user key cleared; the user stopped writing",
                );
            }
            Action::Configure(configuration) => {
                self.admin(issuer)
                    .configure(configuration, false)
                    .await
                    .map_err(|e| act_failed(action, e))?;
            }
            Action::Coordinators(groups) => {
                let addresses = self
                    .coordinator_addresses(groups)
                    .map_err(|e| act_failed(action, e))?;
                self.admin(issuer)
                    .change_coordinators(&addresses)
                    .await
                    .map_err(|e| act_failed(action, e))?;
            }
            Action::Maintenance(Some((zone, seconds))) => {
                // The recording admin logs the command like the operator's own.
                self.admin(issuer)
                    .set_maintenance_zone(zone, *seconds)
                    .await
                    .map_err(|e| act_failed(action, e))?;
            }
            Action::Maintenance(None) => {
                self.admin(issuer)
                    .reset_maintenance_zone()
                    .await
                    .map_err(|e| act_failed(action, e))?;
            }
            Action::IncludeAll => self
                .include_all(issuer)
                .await
                .map_err(|e| act_failed(action, e))?,
            _ => return Err(act_failed(action, "not an act on the database")),
        }
        Ok(())
    }

    /// Deletes every object of the collection's kind that its label selector matches,
    /// one deletion each, as `kubectl delete -l` does.
    async fn delete_labelled(
        &self,
        client: &kube::Client,
        collection: &DeleteCollection,
    ) -> Result<(), kube::Error> {
        let namespace = &self.namespace;
        let params = ListParams::default().labels(&collection.label_selector);
        let names = match collection.kind {
            ObjectKind::Pod => delete_collection::<Pod>(client, namespace, &params).await,
            ObjectKind::Pvc => {
                delete_collection::<PersistentVolumeClaim>(client, namespace, &params).await
            }
            ObjectKind::Service => delete_collection::<Service>(client, namespace, &params).await,
        }?;
        for name in names {
            self.log.record(
                EventSource::K8s,
                "delete",
                &format!("{}/{name}", collection.kind.as_str()),
                &format!(
                    "deletecollection labelSelector={}",
                    collection.label_selector
                ),
            );
        }
        Ok(())
    }

    /// `kubectl drain`: the node cordoned, then each pod evicted (a refusal is logged).
    fn drain(&mut self, actor_name: &str, node: &str) -> Result<(), crate::world::WorldError> {
        let report = self.world.drain(actor_name, node)?;
        self.log
            .record(EventSource::K8s, "patch", &format!("node/{node}"), "cordon");
        for pod in &report.evicted {
            self.log
                .record(EventSource::K8s, "evict", &format!("pod/{pod}"), "drain");
        }
        for (pod, reason) in &report.refused {
            self.log.record(
                EventSource::K8s,
                "evict",
                &format!("pod/{pod}"),
                &format!("drain: refused: {reason}"),
            );
        }
        Ok(())
    }

    /// The pod an `evict: {processClass, nth}` step names now: among the first
    /// cluster's pods of that class that are not terminating.
    async fn chosen_pod(&self, pods: &Api<Pod>, choice: PodChoice) -> Result<String, String> {
        let selector = format!(
            "{CLUSTER_NAME_LABEL}={},{PROCESS_CLASS_LABEL}={}",
            self.name, choice.process_class
        );
        let alive: Vec<String> = pods
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .filter(|pod| pod.metadata.deletion_timestamp.is_none())
            .filter_map(|pod| pod.metadata.name)
            .collect();
        choice.choose(&alive).map(str::to_owned).ok_or_else(|| {
            format!(
                "no {} pod of cluster {} is alive to evict",
                choice.process_class, self.name
            )
        })
    }

    /// `include all`: every target the database lists, as it lists them.
    async fn include_all(&self, issuer: Option<&str>) -> Result<(), AdminError> {
        let targets: Vec<ExclusionTarget> = self
            .fdb
            .snapshot()
            .excluded
            .iter()
            .filter_map(|target| ExclusionTarget::parse(target))
            .collect();
        if targets.is_empty() {
            self.log.record(
                EventSource::Fdb,
                "include",
                "database",
                "include all: nothing was excluded",
            );
            return Ok(());
        }
        self.admin(issuer).include(&targets).await
    }

    /// Each group's first process (the one a coordinator runs on).
    fn coordinator_addresses(
        &self,
        groups: &[String],
    ) -> Result<Vec<fdb_shared::address::ProcessAddress>, String> {
        let mut addresses = Vec::new();
        for group in groups {
            let mut own = self.group_addresses(std::slice::from_ref(group));
            own.sort_by_key(|a| a.port);
            let Some(first) = own.into_iter().next() else {
                return Err(format!(
                    "no running process belongs to process group {group}"
                ));
            };
            addresses.push(first);
        }
        Ok(addresses)
    }

    fn admin(&self, issuer: Option<&str>) -> RecordingAdmin {
        let admin = RecordingAdmin::new(Arc::new(self.fdb.clone()), self.log.clone());
        match issuer {
            Some(issuer) => admin.issued_by(issuer, self.operators.lock_judge()),
            None => admin,
        }
    }

    /// The addresses of the running processes of these process groups.
    fn group_addresses(&self, groups: &[String]) -> Vec<fdb_shared::address::ProcessAddress> {
        self.fdb
            .snapshot()
            .processes
            .iter()
            .filter(|process| {
                process
                    .locality
                    .get("instance_id")
                    .is_some_and(|id| groups.contains(id))
            })
            .filter_map(|process| process.address.parse().ok())
            .collect()
    }

    async fn delete_one(
        &self,
        client: &kube::Client,
        target: &ObjectRef,
    ) -> Result<(), kube::Error> {
        let params = DeleteParams::default();
        let namespace = self.namespace.as_str();
        match target.kind {
            ObjectKind::Pod => {
                Api::<Pod>::namespaced(client.clone(), namespace)
                    .delete(&target.name, &params)
                    .await?;
            }
            ObjectKind::Pvc => {
                Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace)
                    .delete(&target.name, &params)
                    .await?;
            }
            ObjectKind::Service => {
                Api::<Service>::namespaced(client.clone(), namespace)
                    .delete(&target.name, &params)
                    .await?;
            }
        }
        Ok(())
    }

    async fn patch_one(
        &self,
        client: &kube::Client,
        target: &ObjectRef,
        patch: &serde_json::Value,
    ) -> Result<(), kube::Error> {
        let params = PatchParams::default();
        let namespace = self.namespace.as_str();
        match target.kind {
            ObjectKind::Pod => {
                Api::<Pod>::namespaced(client.clone(), namespace)
                    .patch(&target.name, &params, &Patch::Strategic(patch))
                    .await?;
            }
            ObjectKind::Pvc => {
                Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace)
                    .patch(&target.name, &params, &Patch::Merge(patch))
                    .await?;
            }
            ObjectKind::Service => {
                Api::<Service>::namespaced(client.clone(), namespace)
                    .patch(&target.name, &params, &Patch::Merge(patch))
                    .await?;
            }
        }
        Ok(())
    }
}

/// One `deletecollection` request; the names of the objects it deleted.
async fn delete_collection<K>(
    client: &kube::Client,
    namespace: &str,
    params: &ListParams,
) -> Result<Vec<String>, kube::Error>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    // Left: the deleted objects; Right: a bare Status (nothing listed).
    Ok(api
        .delete_collection(&DeleteParams::default(), params)
        .await?
        .left()
        .map(|list| {
            list.items
                .iter()
                .filter_map(|object| object.meta().name.clone())
                .collect()
        })
        .unwrap_or_default())
}

/// The exclusion targets of process groups (by their instance IDs), refused as an admin
/// command would refuse them.
fn instance_targets(groups: &[String]) -> Result<Vec<ExclusionTarget>, AdminError> {
    groups
        .iter()
        .map(|group| ExclusionTarget::instance_id(group))
        .collect::<Result<_, _>>()
        .map_err(|e| AdminError::Rejected {
            command: "exclude".to_owned(),
            reason: e.to_string(),
        })
}
