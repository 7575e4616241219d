//! Serving HTTP/1 with bounded connections, for the sidecar's API and for the HTTP
//! endpoints of `fdb-operator run`: a connection cap, a header timeout (which also bounds
//! how long a keep-alive connection may sit idle between requests), and, while every slot
//! is taken, the connection idle for the longest closed to make room for a newcomer (see
//! [`crate::connections`]).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::connections::{BusyBody, Registration, Registry};

/// While all connection slots are taken, how often a waiting newcomer looks again for a
/// connection idle for long enough to be closed.
const EVICTION_RECHECK: Duration = Duration::from_millis(100);
/// How long in-flight requests may take to finish after a stop ([`drain`]).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// The bounds of a server's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections served at once; more wait in the kernel's listen queue.
    pub max_connections: usize,
    /// Longest wait for the complete headers of a request, also between the requests of
    /// a keep-alive connection (so it is the idle timeout too).
    pub header_timeout: Duration,
    /// How long a connection must have been idle before it may be closed for a
    /// newcomer while all slots are taken.
    pub evict_after: Duration,
}

/// The connection slots of one server.
#[derive(Debug, Clone)]
pub struct Slots {
    semaphore: Arc<Semaphore>,
    registry: Arc<Registry>,
    limits: ConnectionLimits,
}

impl Slots {
    /// Slots for `limits.max_connections` connections (at least one).
    pub fn new(limits: ConnectionLimits) -> Self {
        Self {
            semaphore: Arc::new(Semaphore::new(limits.max_connections.max(1))),
            registry: Arc::new(Registry::default()),
            limits,
        }
    }

    /// Waits for a free slot for a just-accepted connection. While all are taken, the
    /// connection idle for the longest (once idle for `evict_after`) is asked to close,
    /// so that this client is served now rather than after a header timeout; further
    /// clients meanwhile wait in the kernel's listen queue, which costs no memory.
    /// `None` when `stopped` completes first.
    pub async fn acquire<F: Future<Output = ()>>(&self, mut stopped: Pin<&mut F>) -> Option<Slot> {
        let permit = loop {
            if let Ok(permit) = self.semaphore.clone().try_acquire_owned() {
                break permit;
            }
            self.registry.evict_idlest(self.limits.evict_after);
            tokio::select! {
                () = stopped.as_mut() => return None,
                permit = self.semaphore.clone().acquire_owned() => break permit.ok()?,
                // Look again once more connections may have been idle long enough.
                () = tokio::time::sleep(EVICTION_RECHECK) => {}
            }
        };
        Some(Slot {
            _permit: permit,
            registration: self.registry.register(),
            semaphore: self.semaphore.clone(),
            header_timeout: self.limits.header_timeout,
        })
    }

    /// Connections being served.
    pub fn in_use(&self) -> usize {
        self.registry.len()
    }
}

/// One connection's slot: given back when dropped.
#[derive(Debug)]
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    registration: Registration,
    semaphore: Arc<Semaphore>,
    header_timeout: Duration,
}

impl Slot {
    /// The connection's registration (e.g. to give up a TLS handshake when evicted).
    pub fn registration(&self) -> &Registration {
        &self.registration
    }

    /// Serves HTTP/1 requests on `io` with `router` until the client closes, the header
    /// timeout passes, the connection is evicted while idle, or `closing` is cancelled (a
    /// graceful end). `prepare` sees each request first (e.g. to add an extension).
    pub async fn serve_http<I, P>(
        self,
        io: I,
        router: Router,
        closing: CancellationToken,
        prepare: P,
    ) where
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
        P: Fn(&mut hyper::Request<Incoming>) + Send + Sync + 'static,
    {
        let tracked = self.registration.tracked().clone();
        let semaphore = self.semaphore.clone();
        let prepare = Arc::new(prepare);
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            // Called once the request headers are complete: from now on until the
            // response body is sent, the connection is busy and never evicted.
            let busy = tracked.request_started();
            prepare(&mut request);
            let router = router.clone();
            let semaphore = semaphore.clone();
            async move {
                let mut response = router
                    .oneshot(request.map(Body::new))
                    .await
                    .map_err(|e: Infallible| e)?;
                // All slots busy: close after this response so queued clients get a turn.
                if semaphore.available_permits() == 0 {
                    response
                        .headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                Ok::<_, Infallible>(response.map(|body| BusyBody::new(body, busy)))
            }
        });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(self.header_timeout)
            .serve_connection(io, service);
        tokio::pin!(connection);
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection error");
                }
            }
            () = closing.cancelled() => {
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
            }
            () = self.registration.evicted() => {
                if self.registration.tracked().is_idle() {
                    tracing::debug!("closing an idle connection to make room for a new client");
                    return;
                }
                // A request started meanwhile: answer it, then close.
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
            }
        }
    }
}

/// Serves `router` over plain HTTP/1 on `listener` within `slots` until `stop` is
/// cancelled, then lets in-flight requests finish (up to 5 s).
pub async fn serve(listener: TcpListener, router: Router, slots: Slots, stop: CancellationToken) {
    let closing = CancellationToken::new();
    let ((), connections) = accept(
        listener,
        &slots,
        || stop.cancelled(),
        |stream, slot| {
            slot.serve_http(
                TokioIo::new(stream),
                router.clone(),
                closing.clone(),
                |_| {},
            )
        },
    )
    .await;
    drain(connections, &closing).await;
}

/// Accepts connections on `listener` within `slots`, each served by the task `connect`
/// makes of it and its slot, until the future `stopped` makes completes (a fresh one is
/// made at every turn); returns its output and the connections still open. The
/// listener is closed on return.
pub async fn accept<R, S, F, C, T>(
    listener: TcpListener,
    slots: &Slots,
    stopped: S,
    mut connect: C,
) -> (R, JoinSet<()>)
where
    S: Fn() -> F,
    F: Future<Output = R>,
    C: FnMut(TcpStream, Slot) -> T,
    T: Future<Output = ()> + Send + 'static,
{
    let mut connections = JoinSet::new();
    let reason = loop {
        tokio::select! {
            reason = stopped() => break reason,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let Some(slot) = slots.acquire(std::pin::pin!(async { stopped().await; })).await else {
                        // Stopping: the next turn sees it and says why.
                        continue;
                    };
                    let _ = stream.set_nodelay(true);
                    connections.spawn(connect(stream, slot));
                }
                Err(e) => {
                    // Typically EMFILE: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    };
    drop(listener);
    (reason, connections)
}

/// Cancels `closing` (a graceful end for every connection) and lets `connections` finish
/// for up to 5 s; the rest are aborted.
pub async fn drain(mut connections: JoinSet<()>, closing: &CancellationToken) {
    closing.cancel();
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            remaining = connections.len(),
            "aborting connections that did not finish in time"
        );
    }
    connections.abort_all();
}

/// Binds `address` with a listen queue of `backlog` connections (those beyond the
/// connection cap wait there; the kernel caps it at `net.core.somaxconn`).
pub fn listen(address: SocketAddr, backlog: u32) -> std::io::Result<TcpListener> {
    let socket = if address.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(backlog)
}
