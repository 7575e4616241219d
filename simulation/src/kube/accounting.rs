//! Request accounting: counters per actor and verb, and the ordered log of writes.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// The API verbs counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// Read one object.
    Get,
    /// Read a collection.
    List,
    /// Open a watch.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE (one object or a collection).
    Delete,
}

impl Verb {
    /// Lowercase name, as in the simulation's metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::List => "list",
            Self::Watch => "watch",
            Self::Create => "create",
            Self::Update => "update",
            Self::Patch => "patch",
            Self::Delete => "delete",
        }
    }

    /// Whether the verb writes.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Self::Create | Self::Update | Self::Patch | Self::Delete
        )
    }
}

/// Request counts of one actor, per verb (failed and fault-injected requests included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct VerbCounts {
    /// GETs of one object.
    pub get: u64,
    /// Lists.
    pub list: u64,
    /// Watches opened.
    pub watch: u64,
    /// Creates.
    pub create: u64,
    /// Replaces (PUT).
    pub update: u64,
    /// Patches.
    pub patch: u64,
    /// Deletes.
    pub delete: u64,
}

impl VerbCounts {
    /// Counts one request.
    pub fn record(&mut self, verb: Verb) {
        let slot = match verb {
            Verb::Get => &mut self.get,
            Verb::List => &mut self.list,
            Verb::Watch => &mut self.watch,
            Verb::Create => &mut self.create,
            Verb::Update => &mut self.update,
            Verb::Patch => &mut self.patch,
            Verb::Delete => &mut self.delete,
        };
        *slot += 1;
    }

    /// Sum of every verb.
    pub fn total(&self) -> u64 {
        self.get + self.list + self.watch + self.create + self.update + self.patch + self.delete
    }
}

/// One write request as the simulated API server saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteRecord {
    /// Who sent it (the name given to `FakeApiServer::client`).
    pub actor: String,
    /// create, update, patch or delete.
    pub verb: Verb,
    /// API group ("" for core).
    pub group: String,
    /// Plural resource, e.g. `pods`.
    pub resource: String,
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// Namespace ("" when cluster-scoped).
    pub namespace: String,
    /// Object name (for creates with `generateName`, the generated name when known).
    pub name: String,
    /// Subresource written, e.g. `status`.
    pub subresource: Option<String>,
    /// HTTP status code answered.
    pub code: u16,
    /// Short description: patch type, changed fields, deletion mode or error reason.
    pub detail: String,
    /// Simulated time of the request, unix seconds.
    pub time: i64,
}

/// Called with every write as it is logged (while the server's lock is held: it must not
/// call back into the server).
pub type WriteObserver = std::sync::Arc<dyn Fn(&WriteRecord) + Send + Sync>;

/// Counters and the write log.
#[derive(Default)]
pub struct Accounting {
    counts: BTreeMap<String, VerbCounts>,
    writes: Vec<WriteRecord>,
    observer: Option<WriteObserver>,
}

impl std::fmt::Debug for Accounting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accounting")
            .field("counts", &self.counts)
            .field("writes", &self.writes.len())
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

impl Accounting {
    /// Counts a request of `actor`.
    pub fn count(&mut self, actor: &str, verb: Verb) {
        self.counts
            .entry(actor.to_string())
            .or_default()
            .record(verb);
    }

    /// Appends a write to the log, telling the observer first.
    pub fn log_write(&mut self, record: WriteRecord) {
        if let Some(observer) = &self.observer {
            observer(&record);
        }
        self.writes.push(record);
    }

    /// Sets (or clears) the write observer.
    pub fn set_observer(&mut self, observer: Option<WriteObserver>) {
        self.observer = observer;
    }

    /// Counts per actor.
    pub fn counts(&self) -> BTreeMap<String, VerbCounts> {
        self.counts.clone()
    }

    /// Takes the logged writes, leaving the log empty.
    pub fn take_writes(&mut self) -> Vec<WriteRecord> {
        std::mem::take(&mut self.writes)
    }
}

/// Dotted paths (at most three levels deep, at most `limit` of them) where two objects
/// differ, ignoring server-managed metadata. Used as the detail of updates and patches.
pub fn changed_paths(before: &Value, after: &Value, limit: usize) -> Vec<String> {
    let mut paths = Vec::new();
    collect_changes(before, after, String::new(), 0, &mut paths);
    paths.retain(|path| {
        !matches!(
            path.as_str(),
            "metadata.resourceVersion" | "metadata.generation" | "metadata.managedFields"
        )
    });
    if paths.len() > limit {
        let more = paths.len() - limit;
        paths.truncate(limit);
        paths.push(format!("(+{more} more)"));
    }
    paths
}

fn collect_changes(
    before: &Value,
    after: &Value,
    prefix: String,
    depth: usize,
    out: &mut Vec<String>,
) {
    if before == after {
        return;
    }
    match (before, after) {
        (Value::Object(old), Value::Object(new)) if depth < 3 => {
            let keys: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
            for key in keys {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                let null = Value::Null;
                collect_changes(
                    old.get(key).unwrap_or(&null),
                    new.get(key).unwrap_or(&null),
                    path,
                    depth + 1,
                    out,
                );
            }
        }
        _ => out.push(if prefix.is_empty() {
            "(root)".to_string()
        } else {
            prefix
        }),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_observer_sees_each_write_before_it_is_logged() {
        use std::sync::{Arc, Mutex};
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let mut accounting = Accounting::default();
        accounting.set_observer(Some(Arc::new(move |record: &WriteRecord| {
            sink.lock().unwrap().push(record.name.clone());
        })));
        for name in ["a", "b"] {
            accounting.log_write(WriteRecord {
                actor: "operator".into(),
                verb: Verb::Create,
                group: String::new(),
                resource: "pods".into(),
                kind: "Pod".into(),
                namespace: "default".into(),
                name: name.into(),
                subresource: None,
                code: 201,
                detail: String::new(),
                time: 0,
            });
        }
        assert_eq!(*seen.lock().unwrap(), ["a", "b"]);
        assert_eq!(accounting.take_writes().len(), 2);
    }

    use serde_json::json;

    use super::*;

    #[test]
    fn changed_paths_lists_differences_and_skips_server_fields() {
        let before =
            json!({"metadata": {"labels": {"a": "1"}, "resourceVersion": "3"}, "spec": {"x": 1}});
        let after = json!({"metadata": {"labels": {"a": "2"}, "resourceVersion": "4"}, "spec": {"x": 1, "y": 2}});
        assert_eq!(
            changed_paths(&before, &after, 5),
            vec!["metadata.labels.a", "spec.y"]
        );
        assert_eq!(
            changed_paths(&before, &after, 1),
            vec!["metadata.labels.a", "(+1 more)"]
        );
    }

    #[test]
    fn counts_per_actor_and_verb() {
        let mut accounting = Accounting::default();
        accounting.count("operator", Verb::Get);
        accounting.count("operator", Verb::Get);
        accounting.count("kubelet", Verb::Patch);
        let counts = accounting.counts();
        assert_eq!(counts["operator"].get, 2);
        assert_eq!(counts["kubelet"].patch, 1);
        assert_eq!(counts["kubelet"].total(), 1);
    }
}
