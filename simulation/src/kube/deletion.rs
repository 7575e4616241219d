//! Deletion: finalizers, graceful pod termination and preconditions.
//!
//! A pod deleted with a grace period keeps existing with `deletionTimestamp` (now + grace)
//! and `deletionGracePeriodSeconds` until the kubelet confirms with a grace period of 0.
//! Unscheduled pods and pods in a terminal phase go at once, as in the real server. Any
//! object with finalizers keeps existing with a `deletionTimestamp` until an update
//! removes the last finalizer. Starting a graceful deletion bumps `generation`.

use jiff::{SignedDuration, Timestamp};
use serde::Deserialize;
use serde_json::{Value, json};

use super::errors::{ApiError, success_status};
use super::resources::ResourceType;
use super::store::{ResourceKey, State, finalizers, meta_str, metadata_mut, rfc3339};
use super::watch::EventType;

/// Default grace period of a pod without `terminationGracePeriodSeconds`.
pub const DEFAULT_POD_GRACE_SECONDS: i64 = 30;

/// Preconditions of a delete.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// The object must have this uid.
    pub uid: Option<String>,
    /// The object must be at this resourceVersion.
    pub resource_version: Option<String>,
}

/// The `DeleteOptions` body of a DELETE request (the fields the simulation honours).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOptions {
    /// Grace period; `None` means the kind's default.
    pub grace_period_seconds: Option<i64>,
    /// `Orphan`, `Background` or `Foreground`; accepted but there is no garbage collector.
    pub propagation_policy: Option<String>,
    /// Preconditions.
    pub preconditions: Option<Preconditions>,
    /// `dryRun` of the body (`["All"]`: delete nothing).
    pub dry_run: Option<Vec<String>>,
}

impl DeleteOptions {
    /// Parses a DELETE body; an empty body means defaults.
    pub fn from_body(body: &[u8]) -> Result<Self, ApiError> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self::default());
        }
        serde_json::from_slice(body)
            .map_err(|error| ApiError::bad_request(format!("invalid DeleteOptions body: {error}")))
    }
}

/// What a delete did.
#[derive(Debug, Clone, PartialEq)]
pub enum DeleteOutcome {
    /// The object is gone; carries the `Status` answered and the object's last state.
    Removed {
        /// The success `Status` body.
        status: Value,
        /// The object as it was removed.
        object: Value,
    },
    /// The object stays, marked for deletion (finalizers or graceful termination).
    Pending(Value),
}

fn is_pod(resource: &ResourceType) -> bool {
    resource.group.is_empty() && resource.plural == "pods"
}

/// The grace period the deletion gets.
fn grace_period(resource: &ResourceType, object: &Value, options: &DeleteOptions) -> i64 {
    if !is_pod(resource) {
        return 0;
    }
    let unscheduled = object
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    let terminal = matches!(
        object.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    if unscheduled || terminal {
        return 0;
    }
    options
        .grace_period_seconds
        .or_else(|| {
            object
                .pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(DEFAULT_POD_GRACE_SECONDS)
        .max(0)
}

impl State {
    /// DELETE of one object.
    pub fn delete(
        &mut self,
        resource: &ResourceType,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
        now: Timestamp,
    ) -> Result<DeleteOutcome, ApiError> {
        let current = self.get(resource, namespace, name)?;
        if let Some(preconditions) = &options.preconditions {
            check_preconditions(resource, name, &current, preconditions)?;
        }
        let grace = grace_period(resource, &current, options);
        let key = ResourceKey::for_type(resource, namespace, name);
        let already_deleting = meta_str(&current, "deletionTimestamp").is_some();
        if grace == 0 && finalizers(&current).is_empty() {
            let resource_version = self.next_resource_version();
            let mut last = current;
            metadata_mut(&mut last).insert(
                "resourceVersion".into(),
                json!(resource_version.to_string()),
            );
            self.objects.remove(&key);
            self.watches.publish(
                resource_version,
                EventType::Deleted,
                resource,
                namespace,
                &last,
                None,
            );
            let uid = meta_str(&last, "uid").unwrap_or_default().to_string();
            return Ok(DeleteOutcome::Removed {
                status: success_status(resource, name, &uid),
                object: last,
            });
        }
        let current_grace = current
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64);
        // A deletion already under way may only be shortened.
        if already_deleting && current_grace.is_some_and(|g| g <= grace) {
            return Ok(DeleteOutcome::Pending(current));
        }
        let mut next = current.clone();
        let deadline = now
            .checked_add(SignedDuration::from_secs(grace))
            .unwrap_or(now);
        let generation = current
            .pointer("/metadata/generation")
            .and_then(Value::as_i64);
        let resource_version = self.next_resource_version();
        let metadata = metadata_mut(&mut next);
        metadata.insert("deletionTimestamp".into(), json!(rfc3339(deadline)));
        metadata.insert("deletionGracePeriodSeconds".into(), json!(grace));
        metadata.insert(
            "resourceVersion".into(),
            json!(resource_version.to_string()),
        );
        if !already_deleting && let Some(generation) = generation {
            metadata.insert("generation".into(), json!(generation + 1));
        }
        self.watches.publish(
            resource_version,
            EventType::Modified,
            resource,
            namespace,
            &next,
            Some(&current),
        );
        self.objects.insert(key, next.clone());
        Ok(DeleteOutcome::Pending(next))
    }
}

fn check_preconditions(
    resource: &ResourceType,
    name: &str,
    current: &Value,
    preconditions: &Preconditions,
) -> Result<(), ApiError> {
    let checks = [
        ("UID", "uid", &preconditions.uid),
        (
            "ResourceVersion",
            "resourceVersion",
            &preconditions.resource_version,
        ),
    ];
    for (label, field, expected) in checks {
        let actual = meta_str(current, field).unwrap_or_default();
        if let Some(expected) = expected
            && expected != actual
        {
            return Err(ApiError::conflict(
                resource,
                name,
                &format!(
                    "Precondition failed: {label} in precondition: {expected}, {label} in object \
                     meta: {actual}"
                ),
            ));
        }
    }
    Ok(())
}
