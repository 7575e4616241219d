//! Starting, serving and stopping a sidecar (in-process or as the binary's main loop).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::app::{AppState, app};
use crate::config::SidecarConfig;
use crate::connections::{BusyBody, EVICT_AFTER, Registration, Registry};
use crate::copy::{self, CopyError};
use crate::hash::MAX_LOOKUPS;
use crate::metrics::Metrics;
use crate::tls::{ClientApproval, TlsError};
use crate::watch::{self, WatchError};

/// Longest TLS handshake accepted.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for the complete headers of a request, also between the requests of a
/// keep-alive connection: a real client sends them at once (the operator gives up after
/// 5 s anyway), so a slow or silent connection gives its slot back soon.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// While all connection slots are taken, how often a waiting newcomer looks again for a
/// connection idle for long enough to be closed.
const EVICTION_RECHECK: Duration = Duration::from_millis(100);
/// How long in-flight requests may take to finish after a stop.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a sidecar could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The certificates could not be loaded.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// A start-up copy action failed.
    #[error("start-up copy failed: {0}")]
    Copy(#[from] CopyError),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A file watch could not be set up.
    #[error(transparent)]
    Watch(#[from] WatchError),
    /// The start-up task panicked or was cancelled.
    #[error("start-up task failed: {0}")]
    Task(String),
}

/// Why a sidecar stopped serving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitReason {
    /// [`RunningSidecar::stop`] was called (or the handle dropped): a graceful stop.
    Stopped,
    /// `POST /restart` was received: the owner should restart the container (the binary
    /// exits non-zero).
    RestartRequested,
}

/// Entry point of the library.
#[derive(Debug)]
pub struct Sidecar;

impl Sidecar {
    /// Runs the start-up copies, then serves the API on `bind` until stopped.
    pub async fn start(
        config: SidecarConfig,
        bind: SocketAddr,
    ) -> Result<RunningSidecar, StartError> {
        let state = AppState::new(config)?;
        let config = state.config.clone();
        tokio::task::spawn_blocking(move || copy::run_startup_copies(&config))
            .await
            .map_err(|e| StartError::Task(e.to_string()))??;
        let listener = listen(bind).map_err(|source| StartError::Bind { addr: bind, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| StartError::Bind { addr: bind, source })?;
        let watchers = watch::start(&state)?;
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(serve(listener, state.clone(), shutdown.clone(), watchers));
        tracing::info!(address = %local_addr, tls = state.tls.is_some(), "listening");
        Ok(RunningSidecar {
            local_addr,
            shutdown,
            state,
            task: Some(task),
            finished: None,
        })
    }
}

/// Blocking threads the runtime needs so that no kind of blocking work waits for
/// another: hashes (`--max-concurrent-hashes`), file lookups ([`MAX_LOOKUPS`]), one copy
/// (copies run one at a time and hold their permit while they run, see
/// [`crate::gate`]), and a few for certificate reloads and the start-up copies. Threads
/// are started on demand, so an idle sidecar does not pay for them.
pub fn blocking_threads(config: &SidecarConfig) -> usize {
    config.args.max_concurrent_hashes as usize + MAX_LOOKUPS + 4
}

/// Listen queue length: connections beyond `--max-connections` wait here (the kernel caps
/// it at `net.core.somaxconn`).
const LISTEN_BACKLOG: u32 = 4096;

fn listen(bind: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if bind.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(bind)?;
    socket.listen(LISTEN_BACKLOG)
}

/// A serving sidecar. Dropping it stops the server (without waiting).
#[derive(Debug)]
pub struct RunningSidecar {
    local_addr: SocketAddr,
    shutdown: CancellationToken,
    state: AppState,
    task: Option<JoinHandle<ExitReason>>,
    finished: Option<ExitReason>,
}

impl RunningSidecar {
    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The metrics of this instance.
    pub fn metrics(&self) -> &Metrics {
        &self.state.metrics
    }

    /// A token that stops the server when cancelled (e.g. from a signal handler).
    pub fn stop_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Waits until the server stops by itself (`POST /restart`) or is stopped through
    /// [`RunningSidecar::stop_token`]. Cancel-safe; may be called again.
    pub async fn wait(&mut self) -> ExitReason {
        if let Some(reason) = self.finished {
            return reason;
        }
        let reason = match self.task.as_mut() {
            Some(task) => task.await.unwrap_or(ExitReason::Stopped),
            None => ExitReason::Stopped,
        };
        self.task = None;
        self.finished = Some(reason);
        reason
    }

    /// Stops accepting, lets in-flight requests finish (up to 5 s) and returns why the
    /// server ended (`RestartRequested` if a restart came first).
    pub async fn stop(mut self) -> ExitReason {
        self.shutdown.cancel();
        self.wait().await
    }
}

impl Drop for RunningSidecar {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: CancellationToken,
    watchers: watch::Watchers,
) -> ExitReason {
    let router = app(state.clone());
    let mut connections = JoinSet::new();
    let closing = CancellationToken::new();
    let slots = Arc::new(Semaphore::new(state.config.args.max_connections as usize));
    let registry = Arc::new(Registry::default());
    let reason = loop {
        tokio::select! {
            _ = shutdown.cancelled() => break ExitReason::Stopped,
            _ = state.restart.cancelled() => break ExitReason::RestartRequested,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    // All slots taken: close the connection idle for the longest (once
                    // it has been idle for EVICT_AFTER) so that this client is served now,
                    // not after a header timeout. Meanwhile further clients wait in the
                    // kernel's listen queue, which costs this process no memory.
                    let permit = loop {
                        if let Ok(permit) = slots.clone().try_acquire_owned() {
                            break Some(permit);
                        }
                        registry.evict_idlest(EVICT_AFTER);
                        tokio::select! {
                            _ = shutdown.cancelled() => break None,
                            _ = state.restart.cancelled() => break None,
                            permit = slots.clone().acquire_owned() => break permit.ok(),
                            // Look again once more connections may have been idle long enough.
                            _ = tokio::time::sleep(EVICTION_RECHECK) => {}
                        }
                    };
                    let Some(permit) = permit else {
                        // Stopping: the outer select sees the cancelled token next.
                        continue;
                    };
                    let connection = Connection {
                        state: state.clone(),
                        router: router.clone(),
                        closing: closing.clone(),
                        slots: slots.clone(),
                        registration: registry.register(),
                    };
                    connections.spawn(async move {
                        connection.serve(stream).await;
                        drop(permit);
                    });
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
    drop(watchers);
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
    tracing::info!(?reason, "server stopped");
    reason
}

/// What a connection task needs.
struct Connection {
    state: AppState,
    router: Router,
    closing: CancellationToken,
    slots: Arc<Semaphore>,
    registration: Registration,
}

impl Connection {
    async fn serve(self, stream: TcpStream) {
        let _ = stream.set_nodelay(true);
        let Some(tls) = self.state.tls.clone() else {
            return self
                .serve_http(TokioIo::new(stream), ClientApproval::NotTls)
                .await;
        };
        let acceptor = TlsAcceptor::from(tls.server_config());
        let stream = tokio::select! {
            _ = self.closing.cancelled() => return,
            // Still in the handshake: idle, may make room for a new client.
            _ = self.registration.evicted() => return,
            handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)) => match handshake {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!("TLS handshake timed out");
                    return;
                }
            },
        };
        let approval = tls.approve(stream.get_ref().1.peer_certificates());
        self.serve_http(TokioIo::new(stream), approval).await;
    }

    async fn serve_http<I>(self, io: I, approval: ClientApproval)
    where
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        let Self {
            router,
            closing,
            slots,
            registration,
            ..
        } = self;
        let tracked = registration.tracked().clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            // Called once the request headers are complete: from now on until the
            // response body is sent, the connection is busy and never evicted.
            let busy = tracked.request_started();
            request.extensions_mut().insert(approval.clone());
            let router = router.clone();
            let slots = slots.clone();
            async move {
                let mut response = router
                    .oneshot(request.map(Body::new))
                    .await
                    .map_err(|e: Infallible| e)?;
                // All slots busy: close after this response so queued clients get a turn.
                if slots.available_permits() == 0 {
                    response
                        .headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                Ok::<_, Infallible>(response.map(|body| BusyBody::new(body, busy)))
            }
        });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT)
            .serve_connection(io, service);
        tokio::pin!(connection);
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection error");
                }
            }
            _ = closing.cancelled() => {
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
            }
            _ = registration.evicted() => {
                if registration.tracked().is_idle() {
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
