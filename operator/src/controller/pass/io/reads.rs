//! Reads: the cluster's objects (LIST, GET), the nodes of its pods, and the database's
//! status through the admin handle of the pass.

use std::sync::Arc;

use fdb_shared::api::FoundationDBCluster;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::ListParams;
use kube::{Api, ResourceExt};

use super::{PassIo, SnapshotObject, checked_name};
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::snapshot::{ClusterSnapshot, DatabaseState, StatusReadError};
use crate::fdb::{AdminError, PassScopedAdmin};

impl PassIo {
    /// Lists the cluster's objects of kind `K` by `selector`, sorted by name.
    pub(crate) async fn list<K: SnapshotObject>(
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
    pub(crate) async fn get_config_map(
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
    pub(crate) async fn get_nodes(
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

    pub(super) fn open_admin(
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
    pub(crate) fn admin(
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
    pub(crate) async fn read_database(
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
                tracing::warn!(message = %fdb_shared::error_chain::ErrorChain(&error), "cannot read the database status");
                DatabaseState::Unreadable(Arc::new(error))
            }
        }
    }
}
