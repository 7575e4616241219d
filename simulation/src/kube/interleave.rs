//! Users' writes that land inside an operator pass, as on a real API server.
//!
//! A real API server applies a write when it arrives, each one atomically with a new
//! resourceVersion, whatever a controller is doing: the controller's next read sees it,
//! and its own write from an object it read before gets 409 Conflict when it carries the
//! old resourceVersion (`staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`
//! upstream: an update's precondition is the stored resourceVersion). The served world
//! advances holding its turn (`runner/live.rs`); a user's write to the operator's own
//! resources (the `apps.foundationdb.org` group) that arrives meanwhile is queued here
//! and applied just before the operator's next request (`runner/harness.rs`), between
//! two of its reads, instead of waiting for the advance to end. Writes the world itself
//! reacts to (pods, nodes, claims, deletions) still wait for the turn, so their effects
//! are judged as the user's, never inside an operator pass.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http::Response;
use tokio::sync::oneshot;

use super::FakeApiServer;
use super::service::ResponseBody;

/// A write waiting for the operator's next request.
struct Queued {
    id: u64,
    actor: Arc<str>,
    parts: http::request::Parts,
    body: Bytes,
    reply: oneshot::Sender<Response<ResponseBody>>,
}

/// The queue of writes waiting to land between two of the operator's requests.
#[derive(Default)]
pub(super) struct Interleaved {
    queue: Mutex<VecDeque<Queued>>,
    next_id: std::sync::atomic::AtomicU64,
}

/// Whether a write of `method` to `path` may land inside an operator pass: a create,
/// update or patch of the operator's own resources, which nothing but the operator
/// reacts to.
pub fn lands_between_reads(method: &http::Method, path: &str) -> bool {
    path.starts_with("/apis/apps.foundationdb.org/")
        && matches!(
            *method,
            http::Method::POST | http::Method::PUT | http::Method::PATCH
        )
}

impl FakeApiServer {
    /// Queues `actor`'s write for the operator's next request; returns its id (for
    /// [`Self::take_queued_write`]) and where its response comes.
    pub fn queue_write(
        &self,
        actor: &str,
        parts: http::request::Parts,
        body: Bytes,
    ) -> (u64, oneshot::Receiver<Response<ResponseBody>>) {
        let interleaved = &self.inner.interleaved;
        let id = interleaved
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (reply, response) = oneshot::channel();
        interleaved
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(Queued {
                id,
                actor: Arc::from(actor),
                parts,
                body,
                reply,
            });
        (id, response)
    }

    /// Takes the queued write `id` back, if no request applied it yet, and applies it
    /// now (its writer holds the world's turn).
    pub fn apply_queued_write_now(&self, id: u64) -> Option<Response<ResponseBody>> {
        let queued = {
            let mut queue = self
                .inner
                .interleaved
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let at = queue.iter().position(|q| q.id == id)?;
            queue.remove(at)?
        };
        Some(self.handle_http(&queued.actor, &queued.parts, &queued.body))
    }

    /// Applies every queued write, in arrival order, each atomically; their writers get
    /// the responses.
    pub fn apply_queued_writes(&self) {
        let queued: Vec<Queued> = self
            .inner
            .interleaved
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
            .collect();
        for write in queued {
            let response = self.handle_http(&write.actor, &write.parts, &write.body);
            // A writer gone (its client hung up) still had its write applied, as on a
            // real server.
            let _ = write.reply.send(response);
        }
    }
}
