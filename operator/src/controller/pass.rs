//! State of one reconcile pass: the cluster (re-read after our own status writes), the
//! owned objects (listed lazily by the cluster's label selector, forgotten after writes),
//! the database status (read at most once per pass) and the pass's "now".

use std::sync::Arc;

use fdb_shared::api::{FoundationDBCluster, FoundationDBClusterStatus};
use fdb_shared::status_json::DatabaseStatus;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::context::Context;
use super::errors::StepError;
use super::merge_patch::merge_diff;
use crate::fdb::{AdminClient, PassScopedAdmin};

/// What a pass knows about the database status.
#[derive(Debug, Clone)]
enum StatusMemo {
    /// Not read yet (or invalidated by a write).
    Unread,
    /// Read.
    Read(Arc<DatabaseStatus>),
    /// Reading failed; the message says why.
    Failed(String),
}

/// The per-pass state handed to every step.
#[derive(Debug)]
pub struct PassState {
    namespace: String,
    name: String,
    cluster: FoundationDBCluster,
    now: Timestamp,
    pods: Option<Vec<Pod>>,
    pvcs: Option<Vec<PersistentVolumeClaim>>,
    services: Option<Vec<Service>>,
    config_map: Option<Option<ConfigMap>>,
    admin: Option<(String, PassScopedAdmin)>,
    status: StatusMemo,
    /// What the last UpdateStatus of this pass judged: Reconciled or not.
    judged_reconciled: Option<bool>,
}

impl PassState {
    /// A pass over `cluster` at `now`.
    pub fn new(cluster: FoundationDBCluster, now: Timestamp) -> Self {
        Self {
            namespace: cluster.namespace().unwrap_or_default(),
            name: cluster.name_any(),
            cluster,
            now,
            pods: None,
            pvcs: None,
            services: None,
            config_map: None,
            admin: None,
            status: StatusMemo::Unread,
            judged_reconciled: None,
        }
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

    /// The cluster as last read or written.
    pub fn cluster(&self) -> &FoundationDBCluster {
        &self.cluster
    }

    /// The cluster's status (default when it has none yet).
    pub fn status(&self) -> FoundationDBClusterStatus {
        self.cluster.status.clone().unwrap_or_default()
    }

    /// The namespace of the cluster.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The name of the cluster.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pass's time.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The pass's time in unix seconds.
    pub fn now_unix(&self) -> i64 {
        self.now.as_second()
    }

    /// `metadata.generation` of the cluster.
    pub fn generation(&self) -> i64 {
        self.cluster.metadata.generation.unwrap_or(0)
    }

    /// A namespaced API of `K`.
    pub fn api<K>(&self, ctx: &Context) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(ctx.kube.clone(), &self.namespace)
    }

    /// The label selector of the cluster's resources.
    pub fn label_selector(&self) -> String {
        self.cluster
            .spec
            .labels
            .match_labels(&self.name)
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    async fn list<K>(&self, ctx: &Context, what: &str) -> Result<Vec<K>, StepError>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug,
    {
        let params = ListParams::default().labels(&self.label_selector());
        let mut items = self
            .api::<K>(ctx)
            .list(&params)
            .await
            .map_err(StepError::kube(format!(
                "list {what} of {}/{}",
                self.namespace, self.name
            )))?
            .items;
        items.sort_by_key(|item| item.name_any());
        Ok(items)
    }

    /// The cluster's pods, by name.
    pub async fn pods(&mut self, ctx: &Context) -> Result<&[Pod], StepError> {
        if self.pods.is_none() {
            self.pods = Some(self.list(ctx, "pods").await?);
        }
        Ok(self.pods.as_deref().unwrap_or_default())
    }

    /// The cluster's PVCs, by name.
    pub async fn pvcs(&mut self, ctx: &Context) -> Result<&[PersistentVolumeClaim], StepError> {
        if self.pvcs.is_none() {
            self.pvcs = Some(self.list(ctx, "persistentvolumeclaims").await?);
        }
        Ok(self.pvcs.as_deref().unwrap_or_default())
    }

    /// The cluster's services, by name.
    pub async fn services(&mut self, ctx: &Context) -> Result<&[Service], StepError> {
        if self.services.is_none() {
            self.services = Some(self.list(ctx, "services").await?);
        }
        Ok(self.services.as_deref().unwrap_or_default())
    }

    /// The cluster's ConfigMap (`<cluster>-config`), if it exists.
    pub async fn config_map(
        &mut self,
        ctx: &Context,
        name: &str,
    ) -> Result<Option<&ConfigMap>, StepError> {
        if self.config_map.is_none() {
            let found = self
                .api::<ConfigMap>(ctx)
                .get_opt(name)
                .await
                .map_err(StepError::kube(format!(
                    "get configmap {}/{name}",
                    self.namespace
                )))?;
            self.config_map = Some(found);
        }
        Ok(self.config_map.as_ref().and_then(Option::as_ref))
    }

    /// Forgets the listed pods (after writing pods).
    pub fn invalidate_pods(&mut self) {
        self.pods = None;
    }

    /// Forgets the listed PVCs.
    pub fn invalidate_pvcs(&mut self) {
        self.pvcs = None;
    }

    /// Forgets the listed services.
    pub fn invalidate_services(&mut self) {
        self.services = None;
    }

    /// Forgets the ConfigMap.
    pub fn invalidate_config_map(&mut self) {
        self.config_map = None;
    }

    /// The admin client of the database, built for the current connection string.
    pub fn admin(&mut self, ctx: &Context) -> Result<PassScopedAdmin, StepError> {
        let connection = self
            .cluster
            .status
            .as_ref()
            .and_then(|s| s.connection_string.clone())
            .unwrap_or_default();
        if let Some((known, admin)) = &self.admin
            && *known == connection
        {
            return Ok(admin.clone());
        }
        let inner = ctx
            .admin
            .admin_for(&self.cluster)
            .map_err(StepError::admin("open the admin client"))?;
        let admin = PassScopedAdmin::new(inner);
        self.admin = Some((connection, admin.clone()));
        self.status = StatusMemo::Unread;
        Ok(admin)
    }

    /// The database status, read at most once per pass (again only after an admin write,
    /// see [`Self::note_admin_write`]). Errors are remembered for the rest of the pass.
    pub async fn database_status(&mut self, ctx: &Context) -> Result<Arc<DatabaseStatus>, String> {
        match &self.status {
            StatusMemo::Read(status) => return Ok(status.clone()),
            StatusMemo::Failed(message) => return Err(message.clone()),
            StatusMemo::Unread => {}
        }
        let result = match self.admin(ctx) {
            Ok(admin) => admin.status().await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        self.status = match &result {
            Ok(status) => StatusMemo::Read(Arc::new(status.clone())),
            Err(message) => StatusMemo::Failed(message.clone()),
        };
        result.map(Arc::new)
    }

    /// The database status when it was already read this pass.
    pub fn cached_database_status(&self) -> Option<Arc<DatabaseStatus>> {
        match &self.status {
            StatusMemo::Read(status) => Some(status.clone()),
            _ => None,
        }
    }

    /// Records that the database was changed: the next status read goes to the database.
    pub fn note_admin_write(&mut self) {
        self.status = StatusMemo::Unread;
    }

    /// Writes `status` through the status subresource when it differs from the live one
    /// (a JSON merge patch of exactly the differences). Returns whether it wrote.
    pub async fn write_status(
        &mut self,
        ctx: &Context,
        status: &FoundationDBClusterStatus,
    ) -> Result<bool, StepError> {
        let what = format!("status of {}/{}", self.namespace, self.name);
        let to_json = |s: &FoundationDBClusterStatus| {
            serde_json::to_value(s).map_err(|source| StepError::Json {
                what: what.clone(),
                source,
            })
        };
        let live = to_json(&self.status())?;
        let desired = to_json(status)?;
        let Some(diff) = merge_diff(&live, &desired) else {
            return Ok(false);
        };
        let patch = serde_json::json!({ "status": diff });
        let updated = self
            .api::<FoundationDBCluster>(ctx)
            .patch_status(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(StepError::kube(format!("patch {what}")))?;
        self.cluster = updated;
        Ok(true)
    }

    /// Applies `change` to a copy of the status and writes it when it differs.
    pub async fn update_status(
        &mut self,
        ctx: &Context,
        change: impl FnOnce(&mut FoundationDBClusterStatus),
    ) -> Result<bool, StepError> {
        let mut status = self.status();
        change(&mut status);
        self.write_status(ctx, &status).await
    }
}
