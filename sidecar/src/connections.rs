//! The connections being served, so that an idle one can make room for a new client.
//!
//! `--max-connections` bounds memory, but connections that are opened and left silent,
//! or that send their headers byte by byte, would otherwise hold every slot until their
//! header timeout while the operator's 5 s client timeout expires. A connection with no
//! request in progress (TLS handshake, waiting for or reading request headers, idle
//! keep-alive) is idle; when all slots are taken and a client connects, the connection
//! idle for the longest is closed to make room.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// The connections of one server.
#[derive(Debug)]
pub struct Registry {
    /// A logical clock: strictly increasing, so "idle for the longest" has no ties.
    clock: Arc<AtomicU64>,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    entries: HashMap<u64, Arc<Tracked>>,
}

/// What the registry knows about one connection.
#[derive(Debug)]
pub struct Tracked {
    clock: Arc<AtomicU64>,
    in_flight: AtomicUsize,
    /// The registry's clock when the connection last became idle.
    idle_since: AtomicU64,
    evict: CancellationToken,
}

impl Tracked {
    fn now(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }

    /// Whether no request is in progress.
    pub fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) == 0
    }

    /// Marks a request as in progress until the returned guard is dropped.
    pub fn request_started(self: &Arc<Self>) -> RequestGuard {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        RequestGuard {
            tracked: self.clone(),
        }
    }
}

/// A request in progress on a connection (see [`Tracked::request_started`]).
#[derive(Debug)]
pub struct RequestGuard {
    tracked: Arc<Tracked>,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.tracked
            .idle_since
            .store(self.tracked.now(), Ordering::SeqCst);
        self.tracked.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A response body that keeps its connection busy (never evicted) until the body has
/// been handed to the connection completely, so that eviction never cuts a response.
#[derive(Debug)]
pub struct BusyBody {
    inner: axum::body::Body,
    _busy: RequestGuard,
}

impl BusyBody {
    /// Wraps `inner`; the connection stays busy until the returned body is dropped.
    pub fn new(inner: axum::body::Body, busy: RequestGuard) -> Self {
        Self { inner, _busy: busy }
    }
}

impl hyper::body::Body for BusyBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A connection's entry in the registry; removed when dropped.
#[derive(Debug)]
pub struct Registration {
    id: u64,
    tracked: Arc<Tracked>,
    registry: Arc<Registry>,
}

impl Registration {
    /// The connection's state, shared with its request handler.
    pub fn tracked(&self) -> &Arc<Tracked> {
        &self.tracked
    }

    /// Completes when the registry asks the connection to close.
    pub fn evicted(&self) -> WaitForCancellationFuture<'_> {
        self.tracked.evict.cancelled()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.registry.lock().entries.remove(&self.id);
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            clock: Arc::new(AtomicU64::new(0)),
            inner: Mutex::new(Inner::default()),
        }
    }
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a new connection (idle since now).
    pub fn register(self: &Arc<Self>) -> Registration {
        let tracked = Arc::new(Tracked {
            clock: self.clock.clone(),
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            evict: CancellationToken::new(),
        });
        tracked.idle_since.store(tracked.now(), Ordering::SeqCst);
        let mut inner = self.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        inner.entries.insert(id, tracked.clone());
        Registration {
            id,
            tracked,
            registry: self.clone(),
        }
    }

    /// Asks the connection idle for the longest to close; `false` when every
    /// connection has a request in progress.
    pub fn evict_idlest(&self) -> bool {
        let inner = self.lock();
        let idlest = inner
            .entries
            .values()
            .filter(|t| t.is_idle() && !t.evict.is_cancelled())
            .min_by_key(|t| t.idle_since.load(Ordering::SeqCst));
        match idlest {
            Some(tracked) => {
                tracked.evict.cancel();
                true
            }
            None => false,
        }
    }

    /// Number of registered connections.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether no connection is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_idle_connection_is_evicted_and_busy_ones_never() {
        let registry = Arc::new(Registry::default());
        let first = registry.register();
        let second = registry.register();
        let third = registry.register();
        // The first is busy, the second finished a request after the third connected.
        let busy = first.tracked().request_started();
        drop(second.tracked().request_started());
        assert!(registry.evict_idlest());
        assert!(third.tracked.evict.is_cancelled());
        assert!(registry.evict_idlest());
        assert!(second.tracked.evict.is_cancelled());
        assert!(!registry.evict_idlest());
        assert!(!first.tracked.evict.is_cancelled());
        drop(busy);
        assert_eq!(registry.len(), 3);
        drop((first, second, third));
        assert!(registry.is_empty());
    }
}
