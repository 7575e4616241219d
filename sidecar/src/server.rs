//! Starting, serving and stopping a sidecar (in-process or as the binary's main loop).

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::app::{AppState, app};
use crate::config::SidecarConfig;
use crate::connections::EVICT_AFTER;
use crate::copy::{self, CopyError};
use crate::hash::MAX_LOOKUPS;
use crate::limited::{self, ConnectionLimits, Slot, Slots};
use crate::metrics::Metrics;
use crate::tls::{ClientApproval, TlsError};
use crate::watch::{self, WatchError};

/// Longest TLS handshake accepted.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for the complete headers of a request, also between the requests of a
/// keep-alive connection: a real client sends them at once (the operator gives up after
/// 5 s anyway), so a slow or silent connection gives its slot back soon.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a sidecar could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The certificates could not be loaded.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// A start-up copy action failed.
    #[error("start-up copy failed")]
    Copy(#[from] CopyError),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}")]
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
    limited::listen(bind, LISTEN_BACKLOG)
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
    let closing = CancellationToken::new();
    let slots = Slots::new(ConnectionLimits {
        max_connections: state.config.args.max_connections as usize,
        header_timeout: HEADER_TIMEOUT,
        evict_after: EVICT_AFTER,
    });
    let stopped = || async {
        tokio::select! {
            _ = shutdown.cancelled() => ExitReason::Stopped,
            _ = state.restart.cancelled() => ExitReason::RestartRequested,
        }
    };
    let (reason, connections) = limited::accept(listener, &slots, stopped, |stream, slot| {
        let connection = Connection {
            state: state.clone(),
            router: router.clone(),
            closing: closing.clone(),
            slot,
        };
        connection.serve(stream)
    })
    .await;
    drop(watchers);
    limited::drain(connections, &closing).await;
    tracing::info!(?reason, "server stopped");
    reason
}

/// What a connection task needs.
struct Connection {
    state: AppState,
    router: Router,
    closing: CancellationToken,
    slot: Slot,
}

impl Connection {
    async fn serve(self, stream: TcpStream) {
        let Some(tls) = self.state.tls.clone() else {
            return self
                .serve_http(TokioIo::new(stream), ClientApproval::NotTls)
                .await;
        };
        let acceptor = TlsAcceptor::from(tls.server_config());
        let stream = tokio::select! {
            _ = self.closing.cancelled() => return,
            // Still in the handshake: idle, may make room for a new client.
            _ = self.slot.registration().evicted() => return,
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
        self.slot
            .serve_http(io, self.router, self.closing, move |request| {
                request.extensions_mut().insert(approval.clone());
            })
            .await;
    }
}
