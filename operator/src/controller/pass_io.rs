//! The pass's only door to the outside: reading the cluster's objects and the database
//! (for the snapshot), and every write a step makes. Writes go through here (Kubernetes)
//! or through the admin handle it gives out (the database), and both record what they
//! changed, which is what the pass refreshes before the next step (see
//! [`super::snapshot`]).

use std::sync::Arc;

use fdb_shared::api::{FoundationDBCluster, FoundationDBClusterStatus};
use k8s_openapi::api::core::v1::{ConfigMap, Node, PersistentVolumeClaim, Pod, Service};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::cache::Expectation;
use super::context::Context;
use super::errors::StepError;
use super::merge_patch::merge_diff;
use super::pod_model::checked_object_name as checked_name;
use super::snapshot::{ClusterSnapshot, DatabaseState, StatusReadError};
use super::status_mutations::{StatusMutation, apply};
use super::subreconcilers::update_status::StatusDecision;
use crate::fdb::{AdminError, PassScopedAdmin};

/// The kinds of objects a snapshot holds, as the pass refreshes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ObjectKind {
    /// Pods.
    Pods,
    /// PersistentVolumeClaims.
    Pvcs,
    /// Services.
    Services,
    /// The ConfigMap.
    ConfigMap,
}

/// A namespaced object kind of the snapshot.
pub trait SnapshotObject:
    Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
    + Clone
    + std::fmt::Debug
    + Serialize
    + DeserializeOwned
{
    /// Which part of the snapshot holds it.
    const KIND: ObjectKind;
}

impl SnapshotObject for Pod {
    const KIND: ObjectKind = ObjectKind::Pods;
}
impl SnapshotObject for PersistentVolumeClaim {
    const KIND: ObjectKind = ObjectKind::Pvcs;
}
impl SnapshotObject for Service {
    const KIND: ObjectKind = ObjectKind::Services;
}
impl SnapshotObject for ConfigMap {
    const KIND: ObjectKind = ObjectKind::ConfigMap;
}

/// What changed since the snapshot was last refreshed.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    /// Object kinds that were created or patched.
    pub objects: std::collections::BTreeSet<ObjectKind>,
    /// The status as steps last wrote or staged it (see [`PassIo::stage_status`]).
    pub status: Option<FoundationDBClusterStatus>,
    /// Whether the database was written (the admin's write count moved).
    pub database: bool,
    /// The writes of each kind the watch cache must show before the kind is read again.
    pub expectations: std::collections::BTreeMap<ObjectKind, Vec<Expectation>>,
}

impl Changes {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty() && self.status.is_none() && !self.database
    }
}

/// See the module documentation.
#[derive(Debug)]
pub struct PassIo {
    namespace: String,
    name: String,
    /// The admin handle for a connection string, with its write count at the last refresh.
    admin: Option<(String, PassScopedAdmin, u64)>,
    objects: std::collections::BTreeSet<ObjectKind>,
    expectations: std::collections::BTreeMap<ObjectKind, Vec<Expectation>>,
    /// The status as the API server has it: the pass's starting one, then each write's
    /// answer. Writes send only what differs from it.
    server_status: FoundationDBClusterStatus,
    /// The cluster as the last status write returned it.
    written: Option<FoundationDBCluster>,
    /// The status steps built but did not write yet (written at the end of the pass, or
    /// by the next step that must persist before it acts).
    staged: Option<FoundationDBClusterStatus>,
    /// Whether the status changed (written or staged) since the last refresh.
    status_changed: bool,
    judged_reconciled: Option<bool>,
    /// UpdateStatus's decision and the snapshot version it was made from.
    status_decision: Option<(u64, StatusDecision)>,
    /// The pods this pass asked to delete, in order.
    deleted_pods: Vec<String>,
}

/// A create that found the object already there (a stale list or cache) is not an
/// error: the object exists, which is what the step wanted.
fn create_ignoring_conflict<T>(result: Result<T, kube::Error>) -> Result<Option<T>, kube::Error> {
    match result {
        Ok(created) => Ok(Some(created)),
        Err(kube::Error::Api(status)) if status.code == 409 && status.reason == "AlreadyExists" => {
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// The resourceVersion of a written object (0 when it has none).
fn written_version<K: Resource>(object: &K) -> u64 {
    object
        .meta()
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

impl PassIo {
    /// The I/O of a pass over `cluster`.
    pub fn new(cluster: &FoundationDBCluster) -> Self {
        Self {
            namespace: cluster.namespace().unwrap_or_default(),
            name: cluster.name_any(),
            admin: None,
            objects: Default::default(),
            expectations: Default::default(),
            server_status: cluster.status.clone().unwrap_or_default(),
            written: None,
            staged: None,
            status_changed: false,
            judged_reconciled: None,
            status_decision: None,
            deleted_pods: Vec::new(),
        }
    }

    /// Records that the cache must show `object` (as written) before `K` is read again.
    fn expect_written<K: SnapshotObject>(&mut self, object: &K) {
        self.expectations
            .entry(K::KIND)
            .or_default()
            .push(Expectation::AtLeast {
                name: object.name_any(),
                resource_version: written_version(object),
            });
    }

    /// Records that the cache must show `name` gone before `K` is read again.
    fn expect_gone<K: SnapshotObject>(&mut self, name: &str) {
        self.expectations
            .entry(K::KIND)
            .or_default()
            .push(Expectation::Gone {
                name: name.to_owned(),
            });
    }

    /// A namespaced API of `K`.
    pub fn api<K>(&self, ctx: &Context) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(ctx.kube.clone(), &self.namespace)
    }

    /// Lists the cluster's objects of kind `K` by `selector`, sorted by name.
    pub async fn list<K: SnapshotObject>(
        &self,
        ctx: &Context,
        selector: &str,
        what: &str,
    ) -> Result<Vec<Arc<K>>, StepError> {
        let params = ListParams::default().labels(selector);
        let mut items = self
            .api::<K>(ctx)
            .list(&params)
            .await
            .map_err(StepError::kube(format!(
                "list {what} of {}/{}",
                self.namespace, self.name
            )))?
            .items;
        items.sort_by_key(ResourceExt::name_any);
        Ok(items.into_iter().map(Arc::new).collect())
    }

    /// The ConfigMap `name`, if it exists.
    pub async fn get_config_map(
        &self,
        ctx: &Context,
        name: &str,
    ) -> Result<Option<ConfigMap>, StepError> {
        checked_name(name, "get configmap")?;
        self.api::<ConfigMap>(ctx)
            .get_opt(name)
            .await
            .map_err(StepError::kube(format!(
                "get configmap {}/{name}",
                self.namespace
            )))
    }

    /// The Nodes with these names, one GET each. A node that cannot be read is left out
    /// (logged): its pods' taint conditions then stay as they were, and a missing
    /// permission to read nodes never stops the rest of the pass.
    pub async fn get_nodes(
        &self,
        ctx: &Context,
        names: &std::collections::BTreeSet<String>,
    ) -> std::collections::BTreeMap<String, Node> {
        let api: Api<Node> = Api::all(ctx.kube.clone());
        let mut nodes = std::collections::BTreeMap::new();
        for name in names {
            match api.get_opt(name).await {
                Ok(Some(node)) => {
                    nodes.insert(name.clone(), node);
                }
                Ok(None) => tracing::debug!(node = %name, "node of a pod not found"),
                Err(error) => tracing::warn!(node = %name, %error, "cannot read node"),
            }
        }
        nodes
    }

    fn open_admin(
        &mut self,
        ctx: &Context,
        cluster: &FoundationDBCluster,
    ) -> Result<PassScopedAdmin, AdminError> {
        let connection = cluster
            .status
            .as_ref()
            .and_then(|s| s.connection_string.clone())
            .unwrap_or_default();
        if let Some((known, admin, _)) = &self.admin
            && *known == connection
        {
            return Ok(admin.clone());
        }
        let admin = PassScopedAdmin::new(ctx.admin.admin_for(cluster)?);
        self.admin = Some((connection, admin.clone(), 0));
        Ok(admin)
    }

    /// The admin handle of the database of the snapshot's cluster (the cluster of the
    /// last status write, when a step wrote the status), for the current connection
    /// string. Its writes are seen by the next refresh.
    pub fn admin(
        &mut self,
        ctx: &Context,
        snapshot: &ClusterSnapshot,
    ) -> Result<PassScopedAdmin, StepError> {
        let mut cluster = snapshot.cluster().clone();
        cluster.status = Some(self.live_status(snapshot));
        self.open_admin(ctx, &cluster)
            .map_err(StepError::admin("open the admin client"))
    }

    /// The database of `cluster`: not created without a connection string, else its
    /// status through the admin memo (a failure is logged and kept).
    pub async fn read_database(
        &mut self,
        ctx: &Context,
        cluster: &FoundationDBCluster,
    ) -> DatabaseState {
        let has_connection = cluster
            .status
            .as_ref()
            .is_some_and(|s| s.connection_string.is_some());
        if !has_connection {
            return DatabaseState::NotCreated;
        }
        let result = match self.open_admin(ctx, cluster) {
            Ok(admin) => admin.shared_status().await.map_err(StatusReadError::Read),
            Err(error) => Err(StatusReadError::Open(error)),
        };
        match result {
            Ok(status) => DatabaseState::Read(status),
            Err(error) => {
                tracing::warn!(message = %error, "cannot read the database status");
                DatabaseState::Unreadable(Arc::new(error))
            }
        }
    }

    /// Takes what changed since the last call.
    pub fn take_changes(&mut self) -> Changes {
        let database = match &mut self.admin {
            Some((_, admin, seen)) => {
                let now = admin.write_count();
                std::mem::replace(seen, now) != now
            }
            None => false,
        };
        let status = std::mem::take(&mut self.status_changed).then(|| self.latest_status().clone());
        Changes {
            objects: std::mem::take(&mut self.objects),
            status,
            database,
            expectations: std::mem::take(&mut self.expectations),
        }
    }

    /// The cluster as the last status write of this pass returned it.
    pub fn written_cluster(&self) -> Option<&FoundationDBCluster> {
        self.written.as_ref()
    }

    /// The latest status of the pass: the staged one, else the API server's.
    pub fn latest_status(&self) -> &FoundationDBClusterStatus {
        self.staged.as_ref().unwrap_or(&self.server_status)
    }

    /// Whether a staged status still waits to be written.
    pub fn has_staged_status(&self) -> bool {
        self.staged
            .as_ref()
            .is_some_and(|staged| *staged != self.server_status)
    }

    /// Creates, in order, each of `objects` (a conflict means it exists: fine); returns
    /// how many it created. `kind` names them in logs and errors.
    pub async fn create_all<K: SnapshotObject>(
        &mut self,
        ctx: &Context,
        objects: Vec<K>,
        kind: &str,
    ) -> Result<usize, StepError> {
        let api = self.api::<K>(ctx);
        let mut created = 0;
        for object in objects {
            let name = object.name_any();
            tracing::info!(%name, "creating {kind}");
            let answer =
                create_ignoring_conflict(api.create(&PostParams::default(), &object).await)
                    .map_err(StepError::kube(format!("create {kind} {name}")))?;
            if let Some(answer) = &answer {
                self.expect_written(answer);
            }
            self.objects.insert(K::KIND);
            created += 1;
        }
        Ok(created)
    }

    /// Creates one object; a conflict is an error. `action` names it in errors.
    pub async fn create<K: SnapshotObject>(
        &mut self,
        ctx: &Context,
        object: &K,
        action: String,
    ) -> Result<(), StepError> {
        let created = self
            .api::<K>(ctx)
            .create(&PostParams::default(), object)
            .await
            .map_err(StepError::kube(action))?;
        self.expect_written(&created);
        self.objects.insert(K::KIND);
        Ok(())
    }

    /// Merge-patches the object `name`. `action` names it in errors.
    pub async fn patch<K: SnapshotObject>(
        &mut self,
        ctx: &Context,
        name: &str,
        patch: &serde_json::Value,
        action: String,
    ) -> Result<(), StepError> {
        self.send_patch::<K>(ctx, name, &Patch::Merge(patch), action)
            .await
    }

    /// Strategic-merge-patches the object `name` (lists of containers merge by name, so
    /// one container's field can change alone). `action` names it in errors.
    pub async fn patch_strategic<K: SnapshotObject>(
        &mut self,
        ctx: &Context,
        name: &str,
        patch: &serde_json::Value,
        action: String,
    ) -> Result<(), StepError> {
        self.send_patch::<K>(ctx, name, &Patch::Strategic(patch), action)
            .await
    }

    /// Sends one patch of either kind.
    async fn send_patch<K: SnapshotObject>(
        &mut self,
        ctx: &Context,
        name: &str,
        patch: &Patch<&serde_json::Value>,
        action: String,
    ) -> Result<(), StepError> {
        checked_name(name, &action)?;
        // Counted before the call: a failed patch may still have been applied.
        self.objects.insert(K::KIND);
        let patched = self
            .api::<K>(ctx)
            .patch(name, &PatchParams::default(), patch)
            .await
            .map_err(StepError::kube(action))?;
        self.expect_written(&patched);
        Ok(())
    }

    /// The status the next edit starts from: the staged one, else the one this pass
    /// last wrote, else the snapshot's.
    fn live_status(&self, snapshot: &ClusterSnapshot) -> FoundationDBClusterStatus {
        self.live_status_ref(snapshot).clone()
    }

    /// [`PassIo::live_status`], borrowed (comparing needs no copy of a large status).
    fn live_status_ref<'a>(
        &'a self,
        snapshot: &'a ClusterSnapshot,
    ) -> &'a FoundationDBClusterStatus {
        match (&self.staged, &self.written) {
            (Some(staged), _) => staged,
            (None, Some(_)) => &self.server_status,
            (None, None) => snapshot.status(),
        }
    }

    /// Stages `status` as the cluster's status without writing it: later steps see it
    /// (the snapshot refresh takes it), and it is written at the end of the pass
    /// ([`PassIo::flush_status`]) or by the next step that persists before it acts
    /// ([`PassIo::write_status`], [`PassIo::apply_status`]). A pass then makes at most
    /// one status write unless a step must persist first. Returns whether it changed the
    /// pass's status.
    pub fn stage_status(
        &mut self,
        snapshot: &ClusterSnapshot,
        status: FoundationDBClusterStatus,
    ) -> bool {
        if *self.live_status_ref(snapshot) == status {
            return false;
        }
        self.staged = Some(status);
        self.status_changed = true;
        true
    }

    /// [`PassIo::stage_status`] of a borrowed status, copied only when it differs from
    /// the pass's (a steady pass stages nothing and copies nothing).
    pub fn stage_status_if_changed(
        &mut self,
        snapshot: &ClusterSnapshot,
        status: &FoundationDBClusterStatus,
    ) -> bool {
        if self.live_status_ref(snapshot) == status {
            return false;
        }
        self.stage_status(snapshot, status.clone())
    }

    /// Applies `mutations` to the pass's status and stages it (see
    /// [`PassIo::stage_status`]). For edits that may wait for the end of the pass: what
    /// follows them in the pass does not depend on their being stored.
    pub fn stage_mutations(
        &mut self,
        snapshot: &ClusterSnapshot,
        mutations: &[StatusMutation],
    ) -> Result<bool, StepError> {
        let mut status = self.live_status(snapshot);
        if !apply(&mut status, mutations, snapshot.now())? {
            return Ok(false);
        }
        Ok(self.stage_status(snapshot, status))
    }

    /// Writes the staged status, when it differs from the API server's (a JSON merge
    /// patch of exactly the differences). Returns whether it wrote.
    pub async fn flush_status(&mut self, ctx: &Context) -> Result<bool, StepError> {
        let Some(staged) = self.staged.take() else {
            return Ok(false);
        };
        let what = format!("status of {}/{}", self.namespace, self.name);
        let to_json = |s: &FoundationDBClusterStatus| {
            serde_json::to_value(s).map_err(|source| StepError::Json {
                what: what.clone(),
                source,
            })
        };
        let live = to_json(&self.server_status)?;
        let desired = to_json(&staged)?;
        let Some(diff) = merge_diff(&live, &desired) else {
            return Ok(false);
        };
        let patch = serde_json::json!({ "status": diff });
        let result = self
            .api::<FoundationDBCluster>(ctx)
            .patch_status(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await;
        let updated = match result {
            Ok(updated) => updated,
            Err(error) => {
                // Kept: a retry (or the end of the pass) writes it again.
                self.staged = Some(staged);
                return Err(StepError::kube(format!("patch {what}"))(error));
            }
        };
        self.server_status = updated.status.clone().unwrap_or_default();
        self.written = Some(updated);
        self.status_changed = true;
        Ok(true)
    }

    /// Writes `status` now, with whatever earlier steps staged (for a step that must
    /// persist before it acts). Returns whether it wrote.
    pub async fn write_status(
        &mut self,
        ctx: &Context,
        snapshot: &ClusterSnapshot,
        status: &FoundationDBClusterStatus,
    ) -> Result<bool, StepError> {
        self.stage_status(snapshot, status.clone());
        self.flush_status(ctx).await
    }

    /// Applies `mutations` to the pass's status and writes it now, with whatever earlier
    /// steps staged: for edits that must be stored before the step (or a later one)
    /// acts on them, e.g. a removal mark before an exclusion, or a connection string
    /// before the database or the pods get it. Returns whether the mutations changed
    /// anything.
    pub async fn apply_status(
        &mut self,
        ctx: &Context,
        snapshot: &ClusterSnapshot,
        mutations: &[StatusMutation],
    ) -> Result<bool, StepError> {
        let changed = self.stage_mutations(snapshot, mutations)?;
        self.flush_status(ctx).await?;
        Ok(changed)
    }

    /// Deletes the object `name` (gracefully, for pods); an object already gone is fine.
    /// `action` names it in errors.
    pub async fn delete<K: SnapshotObject>(
        &mut self,
        ctx: &Context,
        name: &str,
        action: String,
    ) -> Result<(), StepError> {
        checked_name(name, &action)?;
        // Counted before the call: a failed delete may still have been applied.
        self.objects.insert(K::KIND);
        if K::KIND == ObjectKind::Pods {
            self.deleted_pods.push(name.to_owned());
        }
        match self
            .api::<K>(ctx)
            .delete(name, &kube::api::DeleteParams::default())
            .await
        {
            Ok(outcome) => {
                match outcome.left() {
                    // Terminating: still there, at a newer resourceVersion.
                    Some(terminating) => self.expect_written(&terminating),
                    None => self.expect_gone::<K>(name),
                }
                Ok(())
            }
            Err(kube::Error::Api(status)) if status.code == 404 => {
                self.expect_gone::<K>(name);
                Ok(())
            }
            Err(error) => Err(StepError::kube(action)(error)),
        }
    }

    /// The pods this pass asked to delete so far (whether or not they were still there).
    pub fn deleted_pods(&self) -> &[String] {
        &self.deleted_pods
    }

    /// Takes UpdateStatus's decision of this pass, when it was made from snapshot
    /// `version` (else it is dropped: it no longer holds).
    pub fn take_status_decision(&mut self, version: u64) -> Option<StatusDecision> {
        self.status_decision
            .take()
            .filter(|(made_from, _)| *made_from == version)
            .map(|(_, decision)| decision)
    }

    /// Keeps UpdateStatus's decision made from snapshot `version`.
    pub fn remember_status_decision(&mut self, version: u64, decision: StatusDecision) {
        self.status_decision = Some((version, decision));
    }

    /// Records UpdateStatus's judgement of this pass's observation.
    pub fn set_judged_reconciled(&mut self, reconciled: bool) {
        self.judged_reconciled = Some(reconciled);
    }

    /// Whether the last UpdateStatus of this pass judged the cluster Reconciled (`None`
    /// when it did not run).
    pub fn judged_reconciled(&self) -> Option<bool> {
        self.judged_reconciled
    }
}
