//! The status of the pass: staged edits, and the one write that sends only what differs
//! from the API server's status.

use fdb_shared::api::{FoundationDBCluster, FoundationDBClusterStatus};
use kube::api::{Patch, PatchParams};

use super::PassIo;
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::merge_patch::merge_diff;
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::status::mutations::{StatusMutation, apply};

impl PassIo {
    /// The status the next edit starts from: the staged one, else the one this pass
    /// last wrote, else the snapshot's.
    pub(super) fn live_status(&self, snapshot: &ClusterSnapshot) -> FoundationDBClusterStatus {
        self.live_status_ref(snapshot).clone()
    }

    /// [`PassIo::live_status`], borrowed (comparing needs no copy of a large status).
    pub(super) fn live_status_ref<'a>(
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
    pub(crate) fn stage_status(
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
    pub(crate) fn stage_status_if_changed(
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
    pub(crate) fn stage_mutations(
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
    pub(crate) async fn flush_status(&mut self, ctx: &Context) -> Result<bool, StepError> {
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

    /// Applies `mutations` to the pass's status and writes it now, with whatever earlier
    /// steps staged: for edits that must be stored before the step (or a later one)
    /// acts on them, e.g. a removal mark before an exclusion, or a connection string
    /// before the database or the pods get it. Returns whether the mutations changed
    /// anything.
    pub(crate) async fn apply_status(
        &mut self,
        ctx: &Context,
        snapshot: &ClusterSnapshot,
        mutations: &[StatusMutation],
    ) -> Result<bool, StepError> {
        let changed = self.stage_mutations(snapshot, mutations)?;
        self.flush_status(ctx).await?;
        Ok(changed)
    }
}
