//! The pod subresources written with POST: `binding` (how the scheduler assigns a node:
//! `spec.nodeName` can be set no other way) and `eviction` (what `kubectl drain` and
//! the Eviction API use: a graceful delete, answered `201` with a success `Status`).
//!
//! Eviction honours no PodDisruptionBudget: the simulated API server serves no `policy`
//! resources, so there is no budget to consult.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::deletion::DeleteOptions;
use super::errors::ApiError;
use super::resources::ResourceType;
use super::store::{ResourceKey, State, meta_str, metadata_mut, rfc3339};
use super::watch::EventType;

/// The subresources of pods this server answers, besides `status`.
pub const POD_POST_SUBRESOURCES: [&str; 2] = ["binding", "eviction"];

fn created_status() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
           "code": 201})
}

impl State {
    /// `POST pods/<name>/binding`: assigns the pod to `target.name` and marks it
    /// scheduled. 409 when it already has a node or is being deleted.
    pub fn bind(
        &mut self,
        resource: &ResourceType,
        namespace: &str,
        name: &str,
        binding: &Value,
        now: Timestamp,
    ) -> Result<Value, ApiError> {
        let node = binding
            .pointer("/target/name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                ApiError::invalid(resource, name, "target.name: Required value: a node name")
            })?;
        let current = self.get(resource, namespace, name)?;
        if meta_str(&current, "deletionTimestamp").is_some() {
            return Err(ApiError::conflict(
                resource,
                name,
                &format!("pod {name} is being deleted, cannot be assigned to a host"),
            ));
        }
        if let Some(assigned) = current
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        {
            return Err(ApiError::conflict(
                resource,
                name,
                &format!("pod {name} is already assigned to node \"{assigned}\""),
            ));
        }
        let mut next = current.clone();
        next["spec"]["nodeName"] = json!(node);
        let mut conditions: Vec<Value> = next
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some("PodScheduled"));
        conditions.push(json!({"type": "PodScheduled", "status": "True",
                               "lastTransitionTime": rfc3339(now)}));
        if !next.get("status").is_some_and(Value::is_object) {
            next["status"] = json!({});
        }
        next["status"]["conditions"] = Value::Array(conditions);
        // One write, as the server's binding does: node and condition together.
        let generation = current
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let resource_version = self.next_resource_version();
        let metadata = metadata_mut(&mut next);
        metadata.insert("generation".into(), json!(generation + 1));
        metadata.insert(
            "resourceVersion".into(),
            json!(resource_version.to_string()),
        );
        self.watches.publish(
            resource_version,
            EventType::Modified,
            resource,
            namespace,
            &next,
            Some(&current),
        );
        self.objects
            .insert(ResourceKey::for_type(resource, namespace, name), next);
        Ok(created_status())
    }

    /// `POST pods/<name>/eviction`: a graceful delete with the eviction's
    /// `deleteOptions`.
    pub fn evict(
        &mut self,
        resource: &ResourceType,
        namespace: &str,
        name: &str,
        eviction: &Value,
        now: Timestamp,
    ) -> Result<Value, ApiError> {
        let options = match eviction.get("deleteOptions") {
            Some(options) if !options.is_null() => {
                serde_json::from_value::<DeleteOptions>(options.clone()).map_err(|error| {
                    ApiError::bad_request(format!("invalid deleteOptions in eviction: {error}"))
                })?
            }
            _ => DeleteOptions::default(),
        };
        if let Some(body_name) = meta_str(eviction, "name")
            && body_name != name
        {
            return Err(ApiError::bad_request(format!(
                "name in URL does not match name in Eviction object ({body_name} != {name})"
            )));
        }
        self.delete(resource, namespace, name, &options, now)?;
        Ok(created_status())
    }
}
