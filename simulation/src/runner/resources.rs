//! Backups and restores in a run: creating the listed backups, `apply` and `delete` steps
//! that target them, the backup and restore controllers' passes (scheduled beside the
//! cluster's, on their own requeues and on watch events), their part of each step's
//! result, and the `expect` conditions on them.

use std::collections::BTreeMap;
use std::time::Duration;

use fdb_shared::api::FoundationDBBackup;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use crate::kube::{DeleteOptions, PatchType, ResourceKey};
use crate::result::EventSource;
use crate::scenario::{ExpectStep, ResourceExpectation, ResourceKind, ResourceTarget};
use fdb_operator::backup::plan::backup_url;
use fdb_operator::backup::run_backup_pass;
use fdb_operator::controller::PassOutcome;
use fdb_operator::restore::run_restore_pass;

use super::harness::USER_ACTOR;
use super::{RunError, Runner};

/// After a failed backup or restore pass, the controller retries after this long.
const ERROR_BACKOFF: Duration = Duration::from_secs(5);

/// Whether every field of `want` is in `have` with the same value (maps key by key;
/// `null` matches an absent field).
pub(super) fn subset(want: &Value, have: &Value) -> bool {
    match want {
        Value::Object(fields) => fields
            .iter()
            .all(|(key, value)| subset(value, have.get(key).unwrap_or(&Value::Null))),
        Value::Null => have.is_null(),
        other => other == have,
    }
}

impl Runner {
    fn resource_key(&self, kind: ResourceKind, name: &str) -> ResourceKey {
        ResourceKey::new(
            "apps.foundationdb.org",
            "v1beta2",
            kind.plural(),
            &self.namespace,
            name,
        )
    }

    /// The scenario's manifest of `target`, in the cluster's namespace.
    fn listed_manifest(&self, target: &ResourceTarget) -> Option<Value> {
        let list = match target.kind {
            ResourceKind::Backup => &self.scenario.backups,
            ResourceKind::Restore => &self.scenario.restores,
        };
        let mut manifest = list
            .iter()
            .find(|m| m.pointer("/metadata/name").and_then(Value::as_str) == Some(&target.name))?
            .clone();
        if let Some(metadata) = manifest.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.insert("namespace".into(), Value::from(self.namespace.clone()));
        }
        Some(manifest)
    }

    /// An `apply` step on a backup or restore: a merge patch of the live object, or the
    /// listed manifest with the patch when it does not exist.
    pub(super) fn apply_to(
        &mut self,
        target: &ResourceTarget,
        patch: &Value,
    ) -> Result<(), RunError> {
        let key = self.resource_key(target.kind, &target.name);
        if self.api.get(&key).is_some() {
            self.api
                .patch_as(USER_ACTOR, &key, PatchType::Merge, patch, false)?;
        } else {
            let mut manifest = self.listed_manifest(target).ok_or_else(|| {
                RunError::Act(format!(
                    "{}/{} is not listed",
                    target.kind.as_str(),
                    target.name
                ))
            })?;
            json_patch::merge(&mut manifest, patch);
            self.api.create_as(USER_ACTOR, manifest)?;
        }
        self.wake_resources();
        Ok(())
    }

    /// A `delete` step.
    pub(super) fn delete_resource(&mut self, target: &ResourceTarget) -> Result<(), RunError> {
        let key = self.resource_key(target.kind, &target.name);
        match self
            .api
            .delete_as(USER_ACTOR, &key, DeleteOptions::default())
        {
            Ok(_) => {}
            Err(error) if error.code == 404 => {
                return Err(RunError::Act(format!(
                    "delete {}/{}: it does not exist",
                    target.kind.as_str(),
                    target.name
                )));
            }
            Err(error) => return Err(error.into()),
        }
        self.log.record(
            EventSource::K8s,
            "delete",
            &format!("{}/{}", target.kind.as_str(), target.name),
            "by user",
        );
        self.wake_resources();
        Ok(())
    }

    /// The live objects of a kind in the cluster's namespace, by name.
    pub(super) fn resource_objects(&self, kind: ResourceKind) -> Vec<Value> {
        let mut objects = self.api.list(
            "apps.foundationdb.org",
            kind.plural(),
            Some(&self.namespace),
        );
        objects.sort_by_key(|o| {
            o.pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        objects
    }

    /// A watch event for the backup and restore controllers: they run as soon as they
    /// may (when there is anything for them).
    pub(super) fn wake_resources(&mut self) {
        let now = self.now();
        self.passes.resources.wake(now);
    }

    /// When the backup and restore controllers next want to run.
    pub(super) fn resource_pass_due(&self) -> Option<Timestamp> {
        self.passes.resources.next_due()
    }

    /// Runs the backup and restore controllers over every backup and restore when they
    /// are due; returns whether they ran.
    pub(super) async fn resource_passes(&mut self) -> Result<bool, RunError> {
        let now = self.now();
        if self.operators.disabled() {
            // No operator at all (`RunOptions::operator_disabled`): no backup controller
            // either.
            self.passes.resources.cancel();
            return Ok(false);
        }
        if !self.passes.resources.is_due(now) {
            return Ok(false);
        }
        self.passes.resources.cancel();
        let objects = self.resource_names();
        if objects.is_empty() {
            // Nothing for these controllers: a scenario without backups pays nothing.
            return Ok(false);
        }
        self.passes.resources.started(now);
        let version_before = self.api.resource_version();
        // The backup and restore controllers are the operator too: what they do is
        // judged by the invariants like a cluster pass.
        let before = self.track()?;
        let events_before = self.log.len();
        let mut next: Option<Duration> = None;
        let mut later = |delay: Duration| {
            next = Some(next.map_or(delay, |current: Duration| current.min(delay)));
        };
        for (kind, name) in objects {
            if let Some(delay) = self.resource_pass(kind, &name).await {
                later(delay);
            }
        }
        if let Some(delay) = next {
            let at = now + SignedDuration::try_from(delay).unwrap_or(SignedDuration::MAX);
            self.passes.resources.no_later_than(at);
        }
        // What the controllers wrote (a Deployment) the world answers at once.
        if self.api.resource_version() != version_before || self.log.len() != events_before {
            self.judge_action(&before, events_before, "operator", true)
                .await?;
        }
        Ok(true)
    }

    /// The backups and restores of the run, by kind and name.
    fn resource_names(&self) -> Vec<(ResourceKind, String)> {
        [ResourceKind::Backup, ResourceKind::Restore]
            .into_iter()
            .flat_map(|kind| {
                self.resource_objects(kind).into_iter().map(move |object| {
                    let name = object
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    (kind, name)
                })
            })
            .collect()
    }

    /// One backup or restore pass; returns when it wants to run again.
    async fn resource_pass(&mut self, kind: ResourceKind, name: &str) -> Option<Duration> {
        self.passes.resource_passes_run += 1;
        let result = match kind {
            ResourceKind::Backup => {
                run_backup_pass(&self.operators.context, &self.namespace, name).await
            }
            ResourceKind::Restore => {
                run_restore_pass(&self.operators.context, &self.namespace, name).await
            }
        };
        let target = format!("{}/{name}", kind.as_str());
        if self.log.take_crash() {
            // `restartOperator: {after}` fired during this pass: what the dead
            // operator would have sent after its action never reached the world.
            self.say(&format!(
                "{target}: the operator crashed (restartOperator) and restarts"
            ));
            self.log.record(
                EventSource::Operator,
                "event",
                &target,
                "the operator crashed right after its action and restarted",
            );
            self.restart_operator();
        }
        match result {
            Ok(report) => match report.outcome {
                PassOutcome::Completed => {
                    self.say(&format!("{target}: completed"));
                }
                PassOutcome::Requeue {
                    delay,
                    reason,
                    step,
                } => {
                    self.say(&format!(
                        "{target}: {step}: {reason} (requeue in {}s)",
                        delay.as_secs()
                    ));
                    return Some(delay);
                }
            },
            Err(error) => {
                let detail = fdb_shared::error_chain::chain_text(&error);
                self.say(&format!("{target}: failed: {detail}"));
                self.log.record(
                    EventSource::Operator,
                    "event",
                    &target,
                    &format!("pass failed: {detail}"),
                );
                return Some(ERROR_BACKOFF);
            }
        }
        None
    }

    /// The blob store for the result: per URL, the completed snapshots (version and
    /// digest), the log's end and the latest restorable version.
    pub(super) fn blob_store_summary(&self) -> BTreeMap<String, Value> {
        self.fdb
            .blob_store()
            .into_iter()
            .map(|(url, container)| {
                let restorable = container.restorable_range().map(|(_, last)| last);
                (
                    url,
                    json!({
                        "snapshots": container.snapshots,
                        "logEnd": container.log_end,
                        "latestRestorableVersion": restorable,
                    }),
                )
            })
            .collect()
    }

    fn unmet_resource(
        &self,
        kind: ResourceKind,
        name: &str,
        expectation: &ResourceExpectation,
        failed: &mut Vec<String>,
    ) {
        let field = format!("{}.{name}", kind.list());
        let object = self.api.get(&self.resource_key(kind, name));
        let want_exists = expectation.exists.unwrap_or(true);
        let Some(object) = object else {
            if want_exists {
                failed.push(format!("{field}: expected it to exist, but it does not"));
            }
            return;
        };
        if !want_exists {
            failed.push(format!("{field}: expected it gone, but it exists"));
            return;
        }
        let status = object.get("status").cloned().unwrap_or(Value::Null);
        if let Some(want) = &expectation.status
            && !subset(want, &status)
        {
            failed.push(format!(
                "{field}.status: expected to include {want}, found {status}"
            ));
        }
        let url = serde_json::from_value::<FoundationDBBackup>(object)
            .map(|backup| backup_url(&backup))
            .unwrap_or_default();
        if let Some(want) = expectation.encrypted {
            let have = self
                .fdb
                .blob_store()
                .get(&url)
                .is_some_and(|container| container.encryption_key_path.is_some());
            if have != want {
                failed.push(format!(
                    "{field}.encrypted: expected {want} for {url}, found {have}"
                ));
            }
        }
        if let Some(want) = expectation.snapshots {
            let have = self
                .fdb
                .blob_store()
                .get(&url)
                .map_or(0, |container| container.snapshots.len());
            if have < usize::try_from(want).unwrap_or(usize::MAX) {
                failed.push(format!(
                    "{field}.snapshots: expected at least {want} completed in {url}, found {have}"
                ));
            }
        }
    }

    /// The backup and restore conditions of `expect` that do not hold.
    pub(super) fn unmet_resources(&self, expect: &ExpectStep, failed: &mut Vec<String>) {
        for (name, expectation) in expect.backups.iter().flatten() {
            self.unmet_resource(ResourceKind::Backup, name, expectation, failed);
        }
        for (name, expectation) in expect.restores.iter().flatten() {
            self.unmet_resource(ResourceKind::Restore, name, expectation, failed);
        }
        if let Some(name) = &expect.data_matches_backup {
            let key = self.resource_key(ResourceKind::Backup, name);
            let url = self
                .api
                .get(&key)
                .and_then(|object| serde_json::from_value::<FoundationDBBackup>(object).ok())
                .map(|backup| backup_url(&backup))
                .or_else(|| {
                    let target = ResourceTarget {
                        kind: ResourceKind::Backup,
                        name: name.clone(),
                    };
                    let manifest = self.listed_manifest(&target)?;
                    serde_json::from_value::<FoundationDBBackup>(manifest)
                        .ok()
                        .map(|backup| backup_url(&backup))
                })
                .unwrap_or_default();
            let restorable = self
                .fdb
                .blob_store()
                .get(&url)
                .and_then(|container| container.restorable_range());
            let digest = self.fdb.data_digest();
            match restorable {
                None => failed.push(format!(
                    "dataMatchesBackup: {url} holds no restorable backup (data digest {digest})"
                )),
                Some((_, version)) => {
                    let backed_up = self.fdb.data_digest_at(version);
                    if backed_up != digest {
                        failed.push(format!(
                            "dataMatchesBackup: the data digest is {digest}, but at version \
                             {version} (the latest restorable of {url}) it was {backed_up}"
                        ));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subset_matching() {
        let have = json!({"a": 1, "b": {"c": true, "d": "x"}, "e": [1, 2]});
        assert!(subset(&json!({"a": 1}), &have));
        assert!(subset(&json!({"b": {"c": true}}), &have));
        assert!(subset(&json!({"e": [1, 2], "missing": null}), &have));
        assert!(!subset(&json!({"b": {"c": false}}), &have));
        assert!(!subset(&json!({"e": [1]}), &have));
        assert!(!subset(&json!({"missing": 0}), &have));
    }
}
