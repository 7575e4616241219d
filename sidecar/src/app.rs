//! The HTTP API: state, router, handlers and the mapping of failures to status codes.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use fdb_shared::sidecar::protocol;
use tokio_util::sync::CancellationToken;

use crate::config::SidecarConfig;
use crate::copy::{self, CopyError};
use crate::gate::{CopyGate, GateError};
use crate::hash::{FileHasher, HashError};
use crate::metrics::{Metrics, RequestLabels};
use crate::paths::PathError;
use crate::tls::{ClientApproval, TlsError, TlsState};

/// Everything the handlers share.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The configuration.
    pub config: Arc<SidecarConfig>,
    /// TLS state when serving HTTPS.
    pub tls: Option<Arc<TlsState>>,
    /// File hasher (bounded concurrency, cache).
    pub hasher: Arc<FileHasher>,
    /// Metrics of this instance.
    pub metrics: Arc<Metrics>,
    /// Cancelled when `POST /restart` is received.
    pub restart: CancellationToken,
    /// Serializes copy actions (HTTP requests and the input watcher) with a deadline.
    pub copies: Arc<CopyGate>,
}

impl AppState {
    /// Builds the state; loads the certificates when TLS is configured.
    pub fn new(config: SidecarConfig) -> Result<Self, TlsError> {
        let tls = match &config.tls {
            Some(settings) => Some(Arc::new(TlsState::load(settings.clone())?)),
            None => None,
        };
        let metrics = Arc::new(Metrics::new());
        let hasher = Arc::new(FileHasher::new(
            config.args.max_concurrent_hashes as usize,
            config.args.hash_cache_entries,
            metrics.clone(),
        ));
        Ok(Self {
            tls,
            hasher,
            metrics,
            restart: CancellationToken::new(),
            copies: Arc::new(CopyGate::new(Duration::from_secs(
                config.args.copy_timeout_seconds,
            ))),
            config: Arc::new(config),
        })
    }

    /// Runs a copy action on the blocking pool, one at a time, answering within
    /// `--copy-timeout-seconds` (see [`CopyGate`]), counting the outcome.
    pub async fn run_copy(
        &self,
        name: &'static str,
        action: impl FnOnce(&SidecarConfig) -> Result<(), CopyError> + Send + 'static,
    ) -> Result<(), AppError> {
        let config = self.config.clone();
        let result = match self.copies.run(name, move || action(&config)).await {
            Ok(result) => result.map_err(AppError::Copy),
            Err(e) => Err(AppError::Gate(e)),
        };
        self.metrics.action(name, result.is_ok());
        if let Err(e) = &result {
            tracing::warn!(action = name, error = %fdb_shared::error_chain::ErrorChain(e), "copy action failed");
        }
        result
    }
}

/// A failed request, mapped to a status code and a short text body.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Path resolution failed.
    #[error(transparent)]
    Path(#[from] PathError),
    /// A copy action failed.
    #[error(transparent)]
    Copy(CopyError),
    /// A copy action got no result in time (503: copies cannot be served right now).
    #[error(transparent)]
    Gate(GateError),
    /// A client-side problem with a fixed message.
    #[error("{0}")]
    BadRequest(String),
    /// A server fault; details are logged, the body stays short.
    #[error("{0}")]
    Internal(String),
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = match &self {
            AppError::Path(PathError::Forbidden { .. }) => StatusCode::FORBIDDEN,
            AppError::Path(PathError::NotFound { .. }) => StatusCode::NOT_FOUND,
            AppError::Path(PathError::Invalid { .. } | PathError::NotAFile { .. })
            | AppError::BadRequest(_) => StatusCode::BAD_REQUEST,
            AppError::Copy(e) if e.is_input_problem() => StatusCode::BAD_REQUEST,
            AppError::Gate(GateError::Busy { .. } | GateError::TimedOut { .. }) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            AppError::Path(PathError::Io { .. })
            | AppError::Copy(_)
            | AppError::Gate(GateError::Task { .. })
            | AppError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(error = %fdb_shared::error_chain::ErrorChain(&self), "request failed");
        }
        text(status, fdb_shared::error_chain::chain_text(&self))
    }
}

fn text(status: StatusCode, body: impl Into<String>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.into(),
    )
        .into_response()
}

fn ok() -> Response {
    text(StatusCode::OK, protocol::OK_BODY)
}

/// The sidecar router.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route(protocol::READY, get(ready))
        .route(protocol::SUBSTITUTIONS, get(substitutions))
        .route("/check_hash/{*rel}", get(check_hash))
        .route("/is_present/{*rel}", get(is_present))
        .route(protocol::COPY_FILES, post(copy_files))
        .route(protocol::COPY_BINARIES, post(copy_binaries))
        .route(protocol::COPY_LIBRARIES, post(copy_libraries))
        .route(protocol::COPY_MONITOR_CONF, post(copy_monitor_conf))
        .route(protocol::REFRESH_CERTS, post(refresh_certs))
        .route(protocol::RESTART, post(restart))
        .route(protocol::METRICS, get(metrics))
        .fallback(not_found)
        // The Python sidecar answered a known path with the wrong method like any unknown
        // path; clients match on that body.
        .method_not_allowed_fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), authorize))
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .with_state(state)
}

/// Counts and logs every request (outermost layer, so 401s are counted too).
async fn observe(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let endpoint = match request.extensions().get::<MatchedPath>() {
        Some(matched) => matched.as_str().trim_end_matches("/{*rel}").to_owned(),
        None => "other".to_owned(),
    };
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    let status = response.status();
    state
        .metrics
        .requests
        .get_or_create(&RequestLabels {
            endpoint,
            status: status.as_u16(),
        })
        .inc();
    tracing::debug!(%method, %path, status = status.as_u16(), "request");
    response
}

/// Under TLS, refuses unapproved clients on every path but `/ready`.
async fn authorize(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if request.uri().path() == protocol::READY {
        return next.run(request).await;
    }
    let approval = request.extensions().get::<ClientApproval>().cloned();
    let allowed = match (&approval, &state.tls) {
        (Some(approval), _) => approval.is_allowed(),
        (None, tls) => tls.is_none(),
    };
    if !allowed {
        if let Some(ClientApproval::Rejected { reason }) = &approval {
            tracing::info!(%reason, "client certificate rejected");
        }
        return text(StatusCode::UNAUTHORIZED, protocol::NOT_APPROVED_BODY);
    }
    next.run(request).await
}

async fn not_found(uri: Uri) -> Response {
    text(
        StatusCode::NOT_FOUND,
        format!("Path {} not found", uri.path()),
    )
}

/// 200 while the sidecar can serve; 503 while a copy has been running for longer than
/// its limit (a hung input or output volume), so that the pod is not reported ready.
async fn ready(State(state): State<AppState>) -> Response {
    match state.copies.overdue() {
        None => ok(),
        Some(running) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "Not ready: {} has been running for {} s, longer than its {} s limit",
                running.action,
                running.started.elapsed().as_secs(),
                state.copies.limit().as_secs()
            ),
        ),
    }
}

async fn substitutions(State(state): State<AppState>) -> Response {
    match serde_json::to_string(&state.config.substitutions) {
        Ok(json) => text(StatusCode::OK, json),
        Err(e) => AppError::Internal(format!("cannot encode substitutions: {e}")).into_response(),
    }
}

fn raw_rel<'a>(uri: &'a Uri, prefix: &str) -> &'a str {
    uri.path().strip_prefix(prefix).unwrap_or_default()
}

async fn check_hash(State(state): State<AppState>, uri: Uri) -> Result<Response, AppError> {
    let raw = raw_rel(&uri, protocol::CHECK_HASH_PREFIX).to_owned();
    match state
        .hasher
        .hash(state.config.args.output_dir.clone(), raw)
        .await
    {
        Ok(hash) => Ok(text(StatusCode::OK, hash)),
        Err(e) => Err(hash_error(e)),
    }
}

/// Only a regular file is present: an upgrade relies on `bin/<version>/fdbserver`.
async fn is_present(State(state): State<AppState>, uri: Uri) -> Result<Response, AppError> {
    let raw = raw_rel(&uri, protocol::IS_PRESENT_PREFIX).to_owned();
    state
        .hasher
        .check_present(state.config.args.output_dir.clone(), raw)
        .await
        .map_err(hash_error)?;
    Ok(ok())
}

fn hash_error(error: HashError) -> AppError {
    match error {
        HashError::Path(e) => AppError::Path(e),
        e @ (HashError::Read { .. } | HashError::Task(_)) => {
            AppError::Internal(fdb_shared::error_chain::chain_text(&e))
        }
    }
}

async fn copy_files(State(state): State<AppState>) -> Result<Response, AppError> {
    state
        .run_copy("copy_files", copy::copy_files)
        .await
        .map(|()| ok())
}

async fn copy_binaries(State(state): State<AppState>) -> Result<Response, AppError> {
    state
        .run_copy("copy_binaries", copy::copy_binaries)
        .await
        .map(|()| ok())
}

async fn copy_libraries(State(state): State<AppState>) -> Result<Response, AppError> {
    state
        .run_copy("copy_libraries", copy::copy_libraries)
        .await
        .map(|()| ok())
}

async fn copy_monitor_conf(State(state): State<AppState>) -> Result<Response, AppError> {
    state
        .run_copy("copy_monitor_conf", copy::copy_monitor_conf)
        .await
        .map(|()| ok())
}

async fn refresh_certs(State(state): State<AppState>) -> Result<Response, AppError> {
    let Some(tls) = state.tls.clone() else {
        return Err(AppError::BadRequest(
            protocol::NOT_USING_TLS_BODY.to_owned(),
        ));
    };
    let result = tokio::task::spawn_blocking(move || tls.reload())
        .await
        .map_err(|e| AppError::Internal(format!("certificate reload task failed: {e}")))?;
    state.metrics.action("cert_reload", result.is_ok());
    result.map_err(|e| AppError::Internal(format!("Cannot reload certificates: {e}")))?;
    tracing::info!("reloaded TLS certificates");
    Ok(ok())
}

async fn restart(State(state): State<AppState>) -> Response {
    tracing::warn!("restart requested over HTTP");
    state.restart.cancel();
    ok()
}

async fn metrics(State(state): State<AppState>) -> Response {
    match state.metrics.encode() {
        Ok(body) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            Body::from(body),
        )
            .into_response(),
        Err(e) => AppError::Internal(format!("cannot encode metrics: {e}")).into_response(),
    }
}
