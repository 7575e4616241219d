//! Writes of Kubernetes objects (create, patch, delete), each recorded with what the
//! watch cache must show before the kind is read again.

use kube::api::{Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};

use super::{PassIo, SnapshotObject, checked_name};
use crate::controller::cache::Expectation;
use crate::controller::context::Context;
use crate::controller::errors::StepError;

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
    /// Records that the cache must show `object` (as written) before `K` is read again.
    pub(super) fn expect_written<K: SnapshotObject>(&mut self, object: &K) {
        self.expectations
            .entry(K::KIND)
            .or_default()
            .push(Expectation::AtLeast {
                name: object.name_any(),
                resource_version: written_version(object),
            });
    }

    /// Records that the cache must show `name` gone before `K` is read again.
    pub(super) fn expect_gone<K: SnapshotObject>(&mut self, name: &str) {
        self.expectations
            .entry(K::KIND)
            .or_default()
            .push(Expectation::Gone {
                name: name.to_owned(),
            });
    }

    /// Creates, in order, each of `objects` (a conflict means it exists: fine); returns
    /// how many it created. `kind` names them in logs and errors.
    pub(crate) async fn create_all<K: SnapshotObject>(
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

    /// Merge-patches the object `name`. `action` names it in errors.
    pub(crate) async fn patch<K: SnapshotObject>(
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
    pub(crate) async fn patch_strategic<K: SnapshotObject>(
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
    pub(super) async fn send_patch<K: SnapshotObject>(
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

    /// Deletes the object `name` (gracefully, for pods); an object already gone is fine.
    /// `action` names it in errors.
    pub(crate) async fn delete<K: SnapshotObject>(
        &mut self,
        ctx: &Context,
        name: &str,
        action: String,
    ) -> Result<(), StepError> {
        checked_name(name, &action)?;
        // Counted before the call: a failed delete may still have been applied.
        self.objects.insert(K::KIND);
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
}
