//! One API operation executed against the store, with fault injection, counting and the
//! write log. Shared by the HTTP front end and the harness's direct calls.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::accounting::{Accounting, Verb, WriteRecord, changed_paths};
use super::deletion::{DeleteOptions, DeleteOutcome};
use super::errors::ApiError;
use super::faults::ConflictFaults;
use super::patch::PatchType;
use super::resources::ResourceType;
use super::routes::{Query, Route};
use super::selectors::{FieldSelector, LabelSelector};
use super::store::{State, finalizers, meta_str};

/// What a request asks for (watches are handled separately: they stream).
#[derive(Debug, Clone)]
pub enum Operation {
    /// GET one object.
    Get,
    /// GET a collection.
    List(Query),
    /// POST.
    Create(Value),
    /// PUT.
    Update(Value),
    /// PATCH.
    Patch(PatchType, Vec<u8>),
    /// DELETE one object.
    Delete(DeleteOptions),
    /// DELETE a collection.
    DeleteCollection(Query, DeleteOptions),
    /// POST to `pods/<name>/binding`.
    Bind(Value),
    /// POST to `pods/<name>/eviction`.
    Evict(Value),
}

impl Operation {
    /// The verb counted for it.
    pub fn verb(&self) -> Verb {
        match self {
            Self::Get => Verb::Get,
            Self::List(_) => Verb::List,
            Self::Create(_) | Self::Bind(_) | Self::Evict(_) => Verb::Create,
            Self::Update(_) => Verb::Update,
            Self::Patch(..) => Verb::Patch,
            Self::Delete(_) | Self::DeleteCollection(..) => Verb::Delete,
        }
    }
}

/// Everything behind the server's single lock.
#[derive(Debug)]
pub struct Core {
    /// Objects, versions and watches.
    pub store: State,
    /// Injected conflicts.
    pub faults: ConflictFaults,
    /// Counters and write log.
    pub accounting: Accounting,
}

/// A successful answer: HTTP code and JSON body.
pub type Reply = (u16, Value);

/// Parsed selectors of a list or watch.
pub fn selectors(query: &Query) -> Result<(LabelSelector, FieldSelector), ApiError> {
    Ok((
        LabelSelector::parse(query.get("labelSelector").unwrap_or_default())?,
        FieldSelector::parse(query.get("fieldSelector").unwrap_or_default())?,
    ))
}

impl Core {
    /// A fresh server state; generated names and faults derive from `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            store: State::new(seed),
            faults: ConflictFaults::new(seed),
            accounting: Accounting::default(),
        }
    }

    /// Counts, maybe injects a conflict, executes and logs one operation. A `dry_run`
    /// write (`dryRun=All`) runs every check and answers as the write would, but
    /// persists nothing, sends no watch event and is not logged.
    pub fn execute(
        &mut self,
        actor: &str,
        route: &Route,
        operation: Operation,
        now: Timestamp,
        dry_run: bool,
    ) -> Result<Reply, ApiError> {
        let verb = operation.verb();
        self.accounting.count(actor, verb);
        if !verb.is_write() {
            return self.read(route, &operation);
        }
        let requested_name = route
            .name
            .clone()
            .or_else(|| match &operation {
                Operation::Create(body) => meta_str(body, "name")
                    .or_else(|| meta_str(body, "generateName"))
                    .map(str::to_string),
                _ => None,
            })
            .unwrap_or_default();
        let mut record = WriteRecord {
            actor: actor.to_string(),
            verb,
            group: route.resource.group.clone(),
            resource: route.resource.plural.clone(),
            kind: route.resource.kind.clone(),
            namespace: route.namespace.clone().unwrap_or_default(),
            name: requested_name.clone(),
            subresource: route.subresource.clone(),
            code: 200,
            detail: String::new(),
            time: now.as_second(),
        };
        if dry_run {
            return self.dry_run(route, operation, now, &mut record);
        }
        let result = if self.faults.should_conflict(actor) {
            record.detail = "injected conflict".to_string();
            Err(ApiError::conflict(
                &route.resource,
                &requested_name,
                "the object has been modified; please apply your changes to the latest version \
                 and try again (injected fault)",
            ))
        } else {
            self.write(route, operation, now, &mut record)
        };
        match &result {
            Ok((code, _)) => record.code = *code,
            Err(error) => {
                record.code = error.code;
                if record.detail.is_empty() {
                    record.detail = format!("{}: {}", error.reason, error.message);
                }
            }
        }
        self.accounting.log_write(record);
        result
    }

    /// A write under `dryRun=All`: executed on the real state, then undone. The answer
    /// carries no new resourceVersion (none was written), as the real dry-run storage.
    fn dry_run(
        &mut self,
        route: &Route,
        operation: Operation,
        now: Timestamp,
        record: &mut WriteRecord,
    ) -> Result<Reply, ApiError> {
        let creating = matches!(operation, Operation::Create(_));
        let before = route
            .name
            .as_deref()
            .and_then(|name| self.peek(route, name, None));
        let snapshot = self.store.begin_dry_run();
        let result = self.write(route, operation, now, record);
        self.store.end_dry_run(snapshot);
        let (code, mut body) = result?;
        let is_status = body.get("kind").and_then(Value::as_str) == Some("Status");
        if let Some(metadata) = body.get_mut("metadata").and_then(Value::as_object_mut)
            && !is_status
        {
            let kept = before
                .as_ref()
                .and_then(|b| meta_str(b, "resourceVersion"))
                .filter(|_| !creating);
            match kept {
                Some(version) => {
                    metadata.insert("resourceVersion".into(), json!(version));
                }
                None => {
                    metadata.remove("resourceVersion");
                }
            }
        }
        Ok((code, body))
    }

    fn read(&self, route: &Route, operation: &Operation) -> Result<Reply, ApiError> {
        let resource = &route.resource;
        match (operation, &route.name) {
            (Operation::Get, Some(name)) => {
                let namespace = State::namespace_for(resource, route.namespace.as_deref(), None)?;
                Ok((200, self.store.get(resource, &namespace, name)?))
            }
            (Operation::List(query), None) => self.list(route, query),
            _ => Err(ApiError::method_not_allowed("GET", &resource.plural)),
        }
    }

    fn list(&self, route: &Route, query: &Query) -> Result<Reply, ApiError> {
        let resource = &route.resource;
        let (labels, fields) = selectors(query)?;
        let after = query.get("continue").map(|token| {
            let (namespace, name) = token.split_once('/').unwrap_or(("", token));
            (namespace.to_string(), name.to_string())
        });
        let matching: Vec<(String, String, &Value)> = self
            .store
            .objects_of(resource, route.namespace.as_deref())
            .filter(|(key, _)| {
                after
                    .as_ref()
                    .is_none_or(|(ns, name)| (&key.namespace, &key.name) > (ns, name))
            })
            .filter(|(_, object)| labels.matches(object) && fields.matches(object))
            .map(|(key, object)| (key.namespace.clone(), key.name.clone(), object))
            .collect();
        let limit = query
            .get("limit")
            .and_then(|limit| limit.parse::<usize>().ok())
            .filter(|limit| *limit > 0)
            .unwrap_or(usize::MAX);
        let page: Vec<Value> = matching
            .iter()
            .take(limit)
            .map(|(_, _, o)| (*o).clone())
            .collect();
        let mut metadata = json!({"resourceVersion": self.store.resource_version.to_string()});
        if matching.len() > page.len()
            && let Some((namespace, name, _)) = matching.get(page.len().saturating_sub(1))
        {
            metadata["continue"] = json!(format!("{namespace}/{name}"));
            metadata["remainingItemCount"] = json!(matching.len() - page.len());
        }
        Ok((
            200,
            json!({
                "apiVersion": resource.api_version(),
                "kind": format!("{}List", resource.kind),
                "metadata": metadata,
                "items": page,
            }),
        ))
    }

    fn write(
        &mut self,
        route: &Route,
        operation: Operation,
        now: Timestamp,
        record: &mut WriteRecord,
    ) -> Result<Reply, ApiError> {
        let resource = &route.resource;
        let status_only = route.subresource.as_deref() == Some("status");
        let url_namespace = route.namespace.as_deref();
        let subresource = route.subresource.as_deref().filter(|s| *s != "status");
        check_subresource(resource, &operation, subresource)?;
        match (operation, &route.name) {
            (Operation::Bind(body), Some(name)) => {
                let namespace = State::namespace_for(resource, url_namespace, None)?;
                let node = body
                    .pointer("/target/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let reply = self.store.bind(resource, &namespace, name, &body, now)?;
                record.detail = format!("bind to {node}");
                Ok((201, reply))
            }
            (Operation::Evict(body), Some(name)) => {
                let namespace = State::namespace_for(resource, url_namespace, None)?;
                let reply = self.store.evict(resource, &namespace, name, &body, now)?;
                record.detail = "eviction".to_string();
                Ok((201, reply))
            }
            (Operation::Create(body), None) => {
                let created = self.store.create(resource, url_namespace, body, now)?;
                record.name = meta_str(&created, "name").unwrap_or_default().to_string();
                record.detail = describe_created(&created);
                record.namespace = meta_str(&created, "namespace")
                    .unwrap_or_default()
                    .to_string();
                Ok((201, created))
            }
            (Operation::Update(body), Some(name)) => {
                let before = self.peek(route, name, Some(&body));
                let updated =
                    self.store
                        .replace(resource, url_namespace, name, body, status_only)?;
                record.detail = describe_change(before.as_ref(), &updated);
                Ok((200, updated))
            }
            (Operation::Patch(patch_type, body), Some(name)) => {
                self.patch(route, name, patch_type, &body, record)
            }
            (Operation::Delete(options), Some(name)) => {
                let namespace = State::namespace_for(resource, url_namespace, None)?;
                let outcome = self
                    .store
                    .delete(resource, &namespace, name, &options, now)?;
                record.detail = describe_deletion(&outcome);
                Ok(match outcome {
                    DeleteOutcome::Removed { status, .. } => (200, status),
                    DeleteOutcome::Pending(object) => (200, object),
                })
            }
            (Operation::DeleteCollection(query, options), None) => {
                self.delete_collection(resource, url_namespace, &query, &options, now, record)
            }
            (operation, _) => Err(ApiError::method_not_allowed(
                operation.verb().as_str(),
                &resource.qualified_name(),
            )),
        }
    }

    /// PATCH of one object (or its status), recorded with what it changed.
    fn patch(
        &mut self,
        route: &Route,
        name: &str,
        patch_type: PatchType,
        body: &[u8],
        record: &mut WriteRecord,
    ) -> Result<Reply, ApiError> {
        let before = self.peek(route, name, None);
        let patched = self.store.patch(
            &route.resource,
            route.namespace.as_deref(),
            name,
            patch_type,
            body,
            route.subresource.as_deref() == Some("status"),
        )?;
        record.detail = format!(
            "{} patch: {}",
            patch_type.as_str(),
            describe_change(before.as_ref(), &patched)
        );
        Ok((200, patched))
    }

    /// DELETE of a collection: every object matching the selectors, each as its own
    /// deletion.
    fn delete_collection(
        &mut self,
        resource: &ResourceType,
        url_namespace: Option<&str>,
        query: &Query,
        options: &DeleteOptions,
        now: Timestamp,
        record: &mut WriteRecord,
    ) -> Result<Reply, ApiError> {
        let (labels, fields) = selectors(query)?;
        let targets: Vec<(String, String)> = self
            .store
            .objects_of(resource, url_namespace)
            .filter(|(_, object)| labels.matches(object) && fields.matches(object))
            .map(|(key, _)| (key.namespace.clone(), key.name.clone()))
            .collect();
        let mut items = Vec::new();
        for (namespace, name) in &targets {
            match self.store.delete(resource, namespace, name, options, now)? {
                DeleteOutcome::Removed { object, .. } | DeleteOutcome::Pending(object) => {
                    items.push(object)
                }
            }
        }
        record.detail = format!("collection: {} objects", targets.len());
        Ok((
            200,
            json!({
                "apiVersion": resource.api_version(),
                "kind": format!("{}List", resource.kind),
                "metadata": {"resourceVersion": self.store.resource_version.to_string()},
                "items": items,
            }),
        ))
    }

    /// The current object a write is about to change, for describing the change.
    fn peek(&self, route: &Route, name: &str, body: Option<&Value>) -> Option<Value> {
        let namespace =
            State::namespace_for(&route.resource, route.namespace.as_deref(), body).ok()?;
        self.store.get(&route.resource, &namespace, name).ok()
    }
}

fn describe_change(before: Option<&Value>, after: &Value) -> String {
    let Some(before) = before else {
        return String::new();
    };
    let paths = changed_paths(before, after, 8);
    if paths.is_empty() {
        "no change".to_string()
    } else {
        paths.join(", ")
    }
}

fn describe_deletion(outcome: &DeleteOutcome) -> String {
    match outcome {
        DeleteOutcome::Removed { .. } => "removed".to_string(),
        DeleteOutcome::Pending(object) => {
            let pending = finalizers(object);
            let grace = object
                .pointer("/metadata/deletionGracePeriodSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            match (grace, pending.is_empty()) {
                (0, _) => format!("terminating, finalizers: {}", pending.join(",")),
                (grace, true) => format!("graceful termination ({grace}s)"),
                (grace, false) => format!(
                    "graceful termination ({grace}s), finalizers: {}",
                    pending.join(",")
                ),
            }
        }
    }
}

/// The detail of a create: for Kubernetes Events what they say (`Reason: note` about the
/// involved object), which is what a reader of the write log wants; empty otherwise.
fn describe_created(created: &Value) -> String {
    if created.get("kind").and_then(Value::as_str) != Some("Event") {
        return String::new();
    }
    let text = |pointer: &str| {
        created
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let note = match text("/note") {
        "" => text("/message"),
        note => note,
    };
    let regarding = match text("/regarding/name") {
        "" => text("/involvedObject/name"),
        name => name,
    };
    format!("{}: {note} (about {regarding})", text("/reason"))
}

/// Only the pod subresources `binding` (with a bind) and `eviction` (with an eviction)
/// are written through; any other subresource write is refused.
fn check_subresource(
    resource: &ResourceType,
    operation: &Operation,
    subresource: Option<&str>,
) -> Result<(), ApiError> {
    match (operation, subresource) {
        (Operation::Bind(_), Some("binding")) | (Operation::Evict(_), Some("eviction")) => {}
        (Operation::Bind(_) | Operation::Evict(_), _) | (_, Some(_)) => {
            return Err(ApiError::method_not_allowed(
                operation.verb().as_str(),
                &format!(
                    "{}/{}",
                    resource.qualified_name(),
                    subresource.unwrap_or_default()
                ),
            ));
        }
        _ => {}
    }
    Ok(())
}
