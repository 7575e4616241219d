//! The connections being served, so that an idle one can make room for a new client.
//!
//! `--max-connections` bounds memory, but connections that are opened and left silent,
//! or that send their headers byte by byte, would otherwise hold every slot until their
//! header timeout while the operator's 5 s client timeout expires. A connection with no
//! request in progress (TLS handshake, waiting for or reading request headers, idle
//! keep-alive) is idle; when all slots are taken and a client connects, the connection
//! idle for the longest is closed to make room, provided it has been idle for at least
//! [`EVICT_AFTER`]: a real client sends its request right after connecting, so a
//! connection accepted a moment ago (whose request may already wait in its socket on a
//! loaded server) is left alone.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// How long a connection must have been idle before it may be closed for a newcomer.
pub const EVICT_AFTER: Duration = Duration::from_secs(1);

/// The connections of one server.
#[derive(Debug)]
pub struct Registry {
    clocks: Arc<Clocks>,
    inner: Mutex<Inner>,
}

/// Time for "idle long enough", and a logical clock for "idle for the longest" (strictly
/// increasing, so without ties).
#[derive(Debug)]
struct Clocks {
    epoch: Instant,
    sequence: AtomicU64,
}

impl Clocks {
    /// (sequence number, nanoseconds since the epoch).
    fn now(&self) -> (u64, u64) {
        let sequence = self.sequence.fetch_add(1, Ordering::SeqCst);
        let nanos = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        (sequence, nanos)
    }
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    entries: HashMap<u64, Arc<Tracked>>,
}

/// What the registry knows about one connection.
#[derive(Debug)]
pub struct Tracked {
    clocks: Arc<Clocks>,
    in_flight: AtomicUsize,
    /// The sequence number and time at which the connection last became idle.
    idle_sequence: AtomicU64,
    idle_nanos: AtomicU64,
    evict: CancellationToken,
}

impl Tracked {
    fn mark_idle(&self) {
        let (sequence, nanos) = self.clocks.now();
        self.idle_sequence.store(sequence, Ordering::SeqCst);
        self.idle_nanos.store(nanos, Ordering::SeqCst);
    }

    /// Whether the connection may be evicted at `now_nanos`.
    fn evictable(&self, now_nanos: u64, min_idle: Duration) -> bool {
        let idle_for = now_nanos.saturating_sub(self.idle_nanos.load(Ordering::SeqCst));
        self.is_idle() && !self.evict.is_cancelled() && u128::from(idle_for) >= min_idle.as_nanos()
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
        self.tracked.mark_idle();
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
            clocks: Arc::new(Clocks {
                epoch: Instant::now(),
                sequence: AtomicU64::new(0),
            }),
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
            clocks: self.clocks.clone(),
            in_flight: AtomicUsize::new(0),
            idle_sequence: AtomicU64::new(0),
            idle_nanos: AtomicU64::new(0),
            evict: CancellationToken::new(),
        });
        tracked.mark_idle();
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

    /// Asks the connection idle for the longest to close, if it has been idle for at
    /// least `min_idle`; `false` when there is no such connection.
    pub fn evict_idlest(&self, min_idle: Duration) -> bool {
        let (_, now) = self.clocks.now();
        let inner = self.lock();
        let idlest = inner
            .entries
            .values()
            .filter(|t| t.evictable(now, min_idle))
            .min_by_key(|t| t.idle_sequence.load(Ordering::SeqCst));
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
        // Nobody has been idle for an hour.
        assert!(!registry.evict_idlest(Duration::from_secs(3600)));
        assert!(registry.evict_idlest(Duration::ZERO));
        assert!(third.tracked.evict.is_cancelled());
        assert!(registry.evict_idlest(Duration::ZERO));
        assert!(second.tracked.evict.is_cancelled());
        assert!(!registry.evict_idlest(Duration::ZERO));
        assert!(!first.tracked.evict.is_cancelled());
        drop(busy);
        assert_eq!(registry.len(), 3);
        drop((first, second, third));
        assert!(registry.is_empty());
    }
}
