//! Garbage collection of dependents, as kube-controller-manager's garbage collector
//! does it (kubernetes/kubernetes `pkg/controller/garbagecollector/garbagecollector.go`,
//! `attemptToDeleteItem`): an object whose `ownerReferences` all name owners that no
//! longer exist (no object with that uid in its namespace, or cluster-scoped) is deleted
//! in the background; one with some owners left loses only the references to the
//! absent ones. Objects already being deleted are left alone. Foreground deletion
//! (owners waiting for their dependents) is not simulated.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::deletion::DeleteOptions;
use super::patch::PatchType;
use super::{ApiError, FakeApiServer, ResourceKey};

/// The actor the collector's requests are counted and logged as.
pub const GARBAGE_COLLECTOR_ACTOR: &str = "garbage-collector";

/// What one sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Collected {
    /// Objects deleted: every owner was gone.
    pub deleted: Vec<ResourceKey>,
    /// Objects whose references to absent owners were removed.
    pub released: Vec<ResourceKey>,
}

impl Collected {
    /// Whether the sweep changed anything.
    pub fn is_empty(&self) -> bool {
        self.deleted.is_empty() && self.released.is_empty()
    }
}

impl FakeApiServer {
    /// How many objects are stored: when it drops, an owner may be gone (a cheap test
    /// before a sweep).
    pub fn object_count(&self) -> usize {
        self.lock().store.objects.len()
    }

    /// One sweep of the garbage collector over every stored object.
    pub fn collect_garbage(&self) -> Result<Collected, ApiError> {
        let objects: Vec<(ResourceKey, Value)> = {
            let core = self.lock();
            core.store
                .objects
                .iter()
                .map(|(key, object)| (key.clone(), object.clone()))
                .collect()
        };
        // (namespace, uid) of everything that exists; "" for cluster-scoped owners.
        let present: BTreeSet<(String, String)> = objects
            .iter()
            .filter_map(|(key, object)| {
                let uid = object.pointer("/metadata/uid")?.as_str()?;
                Some((key.namespace.clone(), uid.to_owned()))
            })
            .collect();
        let mut collected = Collected::default();
        for (key, object) in &objects {
            let Some(owners) = object
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .filter(|owners| !owners.is_empty())
            else {
                continue;
            };
            if object.pointer("/metadata/deletionTimestamp").is_some() {
                continue;
            }
            let exists = |owner: &Value| {
                owner.get("uid").and_then(Value::as_str).is_some_and(|uid| {
                    present.contains(&(key.namespace.clone(), uid.to_owned()))
                        || present.contains(&(String::new(), uid.to_owned()))
                })
            };
            let solid: Vec<Value> = owners.iter().filter(|o| exists(o)).cloned().collect();
            if solid.is_empty() {
                match self.delete_as(GARBAGE_COLLECTOR_ACTOR, key, DeleteOptions::default()) {
                    Ok(_) => collected.deleted.push(key.clone()),
                    // Deleted meanwhile: nothing left to collect.
                    Err(error) if error.code == 404 => {}
                    Err(error) => return Err(error),
                }
            } else if solid.len() < owners.len() {
                let patch = json!({"metadata": {"ownerReferences": solid}});
                let patched = self.patch_as(
                    GARBAGE_COLLECTOR_ACTOR,
                    key,
                    PatchType::Merge,
                    &patch,
                    false,
                );
                match patched {
                    Ok(_) => collected.released.push(key.clone()),
                    Err(error) if error.code == 404 => {}
                    Err(error) => return Err(error),
                }
            }
        }
        Ok(collected)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use fdb_operator::clock::VirtualClock;

    fn config_map(name: &str, owners: &[&Value]) -> Value {
        let references: Vec<Value> = owners
            .iter()
            .map(|owner| {
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]})
            })
            .collect();
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "db", "ownerReferences": references}})
    }

    fn key(name: &str) -> ResourceKey {
        ResourceKey::new("", "v1", "configmaps", "db", name)
    }

    #[test]
    fn dependents_of_absent_owners_are_deleted_and_dangling_references_dropped() {
        let api = FakeApiServer::new(Arc::new(VirtualClock::fixed_epoch()), 1);
        let owner = api.create_as("user", config_map("owner", &[])).unwrap();
        let other = api.create_as("user", config_map("other", &[])).unwrap();
        api.create_as("user", config_map("only-child", &[&owner]))
            .unwrap();
        api.create_as("user", config_map("two-parents", &[&owner, &other]))
            .unwrap();
        assert!(
            api.collect_garbage().unwrap().is_empty(),
            "every owner exists"
        );

        api.delete_as("user", &key("owner"), DeleteOptions::default())
            .unwrap();
        let collected = api.collect_garbage().unwrap();
        assert_eq!(collected.deleted, vec![key("only-child")]);
        assert_eq!(collected.released, vec![key("two-parents")]);
        assert!(api.get(&key("only-child")).is_none());
        let kept = api.get(&key("two-parents")).unwrap();
        assert_eq!(
            kept["metadata"]["ownerReferences"][0]["uid"],
            other["metadata"]["uid"]
        );
        assert_eq!(
            kept["metadata"]["ownerReferences"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        assert!(api.request_counts()[GARBAGE_COLLECTOR_ACTOR].delete == 1);
    }
}
