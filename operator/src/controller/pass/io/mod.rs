//! The pass's only door to the outside: reading the cluster's objects and the database
//! (for the snapshot), and every write a step makes. Writes go through here (Kubernetes)
//! or through the admin handle it gives out (the database), and both record what they
//! changed, which is what the pass refreshes before the next step (see
//! [`super::super::snapshot`]). Split by concern: reads (`reads`), object writes
//! (`writes`), the status (`status`), Events (`events`).

mod events;
mod reads;
mod status;
mod writes;

use fdb_shared::api::{FoundationDBCluster, FoundationDBClusterStatus};
use kube::{Api, Resource, ResourceExt};

use super::super::cache::Expectation;
use super::super::context::Context;
use super::super::model::pod::checked_object_name as checked_name;
use crate::fdb::PassScopedAdmin;

pub(crate) use super::super::object_kind::{ObjectKind, SnapshotObject};
pub(crate) use events::publish;

/// What changed since the snapshot was last refreshed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Changes {
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
    pub(crate) fn is_empty(&self) -> bool {
        self.objects.is_empty() && self.status.is_none() && !self.database
    }
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct PassIo {
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
}

impl PassIo {
    /// The I/O of a pass over `cluster`.
    pub(crate) fn new(cluster: &FoundationDBCluster) -> Self {
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
        }
    }

    /// A namespaced API of `K`.
    pub(crate) fn api<K>(&self, ctx: &Context) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(ctx.kube.clone(), &self.namespace)
    }

    /// Takes what changed since the last call.
    pub(crate) fn take_changes(&mut self) -> Changes {
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
    pub(crate) fn written_cluster(&self) -> Option<&FoundationDBCluster> {
        self.written.as_ref()
    }

    /// The latest status of the pass: the staged one, else the API server's.
    pub(crate) fn latest_status(&self) -> &FoundationDBClusterStatus {
        self.staged.as_ref().unwrap_or(&self.server_status)
    }

    /// Records UpdateStatus's judgement of this pass's observation.
    pub(crate) fn set_judged_reconciled(&mut self, reconciled: bool) {
        self.judged_reconciled = Some(reconciled);
    }

    /// Whether the last UpdateStatus of this pass judged the cluster Reconciled (`None`
    /// when it did not run).
    pub(crate) fn judged_reconciled(&self) -> Option<bool> {
        self.judged_reconciled
    }
}
