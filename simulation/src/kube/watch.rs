//! Watches: the retained event history and the open watch streams.
//!
//! Every committed write produces exactly one event carrying the new global
//! resourceVersion. A watch streams newline-delimited `{"type": ..., "object": ...}` lines:
//! first the replay (events after the requested resourceVersion, or synthetic `ADDED`
//! events for the current objects when none or `0` is given, or with `sendInitialEvents`
//! followed by the `k8s.io/initial-events-end` bookmark), then live events. An object
//! that starts or stops matching the watch's selectors arrives as `ADDED` / `DELETED`.

use std::collections::VecDeque;

use bytes::Bytes;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use serde_json::{Value, json};

use super::errors::ApiError;
use super::resources::ResourceType;
use super::selectors::{FieldSelector, LabelSelector};

/// How many events are kept for watches resuming from an older resourceVersion.
const HISTORY_CAPACITY: usize = 8192;

/// The change an event describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Object created.
    Added,
    /// Object changed.
    Modified,
    /// Object removed.
    Deleted,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One committed change.
#[derive(Debug, Clone)]
pub struct StoredEvent {
    resource_version: u64,
    event_type: EventType,
    group: String,
    version: String,
    plural: String,
    namespace: String,
    object: Value,
    /// The object before a modification, to detect selector transitions.
    previous: Option<Value>,
}

/// What one watch observes.
#[derive(Debug, Clone)]
pub struct WatchFilter {
    /// The watched resource type.
    pub resource: ResourceType,
    /// Namespace, or `None` for all namespaces / cluster-scoped.
    pub namespace: Option<String>,
    /// Label selector.
    pub labels: LabelSelector,
    /// Field selector.
    pub fields: FieldSelector,
}

impl WatchFilter {
    fn covers(&self, event: &StoredEvent) -> bool {
        self.resource.group == event.group
            && self.resource.version == event.version
            && self.resource.plural == event.plural
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| *ns == event.namespace)
    }

    /// Whether an object passes both selectors.
    pub fn selects(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object)
    }

    /// The line this watch should receive for `event`, if any.
    fn translate(&self, event: &StoredEvent) -> Option<Bytes> {
        if !self.covers(event) {
            return None;
        }
        let now = self.selects(&event.object);
        let before = event.previous.as_ref().map(|p| self.selects(p));
        let event_type = match (event.event_type, before, now) {
            (EventType::Modified, Some(true), true) => EventType::Modified,
            (EventType::Modified, Some(false), true) => EventType::Added,
            (EventType::Modified, Some(true), false) => EventType::Deleted,
            (EventType::Modified, _, _) => return None,
            (other, _, true) => other,
            (_, _, false) => return None,
        };
        Some(event_line(event_type.as_str(), &event.object))
    }
}

/// One `{"type": ..., "object": ...}` line.
pub fn event_line(event_type: &str, object: &Value) -> Bytes {
    /// The line's shape, borrowing the object: no copy of it before writing it out.
    #[derive(serde::Serialize)]
    struct Line<'a> {
        #[serde(rename = "type")]
        event_type: &'a str,
        object: &'a Value,
    }
    let mut line = serde_json::to_vec(&Line { event_type, object }).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

/// The bookmark that ends the initial events of a streaming list.
pub fn initial_events_end(resource: &ResourceType, resource_version: u64) -> Bytes {
    event_line(
        "BOOKMARK",
        &json!({
            "apiVersion": resource.api_version(),
            "kind": resource.kind,
            "metadata": {
                "resourceVersion": resource_version.to_string(),
                "annotations": {"k8s.io/initial-events-end": "true"},
            },
        }),
    )
}

struct Watcher {
    filter: WatchFilter,
    sender: UnboundedSender<Bytes>,
    /// The resourceVersion of the last event sent (0: none yet).
    last_sent: u64,
}

/// Event history and open watches.
#[derive(Default)]
pub struct WatchHub {
    history: VecDeque<StoredEvent>,
    /// Highest resourceVersion dropped from the history (0 when nothing was dropped).
    dropped_up_to: u64,
    watchers: Vec<Watcher>,
    /// While a dry run executes: nothing is recorded or sent.
    muted: bool,
}

impl std::fmt::Debug for WatchHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchHub")
            .field("history", &self.history.len())
            .field("watchers", &self.watchers.len())
            .finish()
    }
}

impl WatchHub {
    /// Records a committed change and sends it to the watches it concerns.
    pub fn publish(
        &mut self,
        resource_version: u64,
        event_type: EventType,
        resource: &ResourceType,
        namespace: &str,
        object: &Value,
        previous: Option<&Value>,
    ) {
        if self.muted {
            return;
        }
        let event = StoredEvent {
            resource_version,
            event_type,
            group: resource.group.clone(),
            version: resource.version.clone(),
            plural: resource.plural.clone(),
            namespace: namespace.to_string(),
            object: object.clone(),
            previous: previous.cloned(),
        };
        // A failed send means the client dropped the stream: forget that watch.
        self.watchers
            .retain_mut(|watcher| match watcher.filter.translate(&event) {
                Some(line) => {
                    watcher.last_sent = resource_version;
                    watcher.sender.unbounded_send(line).is_ok()
                }
                None => !watcher.sender.is_closed(),
            });
        self.history.push_back(event);
        while self.history.len() > HISTORY_CAPACITY {
            if let Some(dropped) = self.history.pop_front() {
                self.dropped_up_to = dropped.resource_version;
            }
        }
    }

    /// Opens a watch: `initial` lines are sent first, then history after `since` (when
    /// given), then live events.
    pub fn open(
        &mut self,
        filter: WatchFilter,
        initial: Vec<Bytes>,
        since: Option<u64>,
    ) -> Result<UnboundedReceiver<Bytes>, ApiError> {
        let mut lines = initial;
        let mut last_sent = 0;
        if let Some(since) = since {
            if since < self.dropped_up_to {
                return Err(ApiError::expired(format!(
                    "too old resource version: {since} ({})",
                    self.dropped_up_to + 1
                )));
            }
            for event in self.history.iter().filter(|e| e.resource_version > since) {
                if let Some(line) = filter.translate(event) {
                    last_sent = event.resource_version;
                    lines.push(line);
                }
            }
        }
        let (sender, receiver) = unbounded();
        for line in lines {
            // The receiver is still in our hands, so sending cannot fail.
            let _ = sender.unbounded_send(line);
        }
        self.watchers.push(Watcher {
            filter,
            sender,
            last_sent,
        });
        Ok(receiver)
    }

    /// The resourceVersion of the last event sent on the open watches of
    /// `group`/`plural` (the highest, 0 when none was sent), or `None` when none is
    /// open: what a client following them has to have applied to be up to date.
    pub fn position(&self, group: &str, plural: &str) -> Option<u64> {
        self.watchers
            .iter()
            .filter(|w| {
                !w.sender.is_closed()
                    && w.filter.resource.group == group
                    && w.filter.resource.plural == plural
            })
            .map(|w| w.last_sent)
            .max()
    }

    /// Drops the history up to `up_to` and ends every open watch: a watch resuming
    /// from before `up_to` is refused as expired (`410`).
    pub fn compact(&mut self, up_to: u64) {
        self.history.retain(|event| event.resource_version > up_to);
        self.dropped_up_to = self.dropped_up_to.max(up_to);
        self.close_all();
    }

    /// Ends every open watch stream (clients see the stream end and re-watch).
    pub fn close_all(&mut self) {
        self.watchers.clear();
    }

    /// Mutes (or unmutes) publishing, for a dry run.
    pub fn set_muted(&mut self, muted: bool) {
        self.muted = muted;
    }

    /// Number of open watches.
    pub fn open_watches(&self) -> usize {
        self.watchers
            .iter()
            .filter(|w| !w.sender.is_closed())
            .count()
    }
}
