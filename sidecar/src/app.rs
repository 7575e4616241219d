//! The HTTP API: state, router, handlers and the mapping of failures to status codes.

use std::sync::{Arc, Mutex};

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
use crate::hash::{FileHasher, HashError};
use crate::metrics::{Metrics, RequestLabels};
use crate::paths::{self, PathError};
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
    /// Serializes copy actions (HTTP requests and the input watcher).
    copy_lock: Arc<Mutex<()>>,
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
            config: Arc::new(config),
            tls,
            hasher,
            metrics,
            restart: CancellationToken::new(),
            copy_lock: Arc::new(Mutex::new(())),
        })
    }

    /// Runs a copy action on the blocking pool, one at a time, counting the outcome.
    pub async fn run_copy(
        &self,
        name: &'static str,
        action: fn(&SidecarConfig) -> Result<(), CopyError>,
    ) -> Result<(), AppError> {
        let config = self.config.clone();
        let lock = self.copy_lock.clone();
        let result = tokio::task::spawn_blocking(move || {
            let _guard = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            action(&config)
        })
        .await
        .map_err(|e| AppError::Internal(format!("{name} task failed: {e}")))?;
        self.metrics.action(name, result.is_ok());
        if let Err(e) = &result {
            tracing::warn!(action = name, error = %e, "copy action failed");
        }
        result.map_err(AppError::Copy)
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
    /// The path is a directory or special file.
    #[error("{0} is not a regular file")]
    NotAFile(String),
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
            AppError::Path(PathError::Invalid { .. })
            | AppError::NotAFile(_)
            | AppError::BadRequest(_) => StatusCode::BAD_REQUEST,
            AppError::Copy(e) if e.is_input_problem() => StatusCode::BAD_REQUEST,
            AppError::Path(PathError::Io { .. }) | AppError::Copy(_) | AppError::Internal(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(error = %self, "request failed");
        }
        text(status, self.to_string())
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
        .route(protocol::READY, get(|| async { ok() }))
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
    let (path, rel) = paths::resolve(
        &state.config.args.output_dir,
        raw_rel(&uri, protocol::CHECK_HASH_PREFIX),
    )?;
    match state.hasher.hash(path).await {
        Ok(hash) => Ok(text(StatusCode::OK, hash)),
        Err(HashError::NotAFile) => Err(AppError::NotAFile(rel)),
        Err(HashError::NotFound) => Err(PathError::NotFound { rel }.into()),
        Err(HashError::Io(e)) => Err(AppError::Internal(format!("Cannot read {rel}: {e}"))),
    }
}

async fn is_present(State(state): State<AppState>, uri: Uri) -> Result<Response, AppError> {
    paths::resolve(
        &state.config.args.output_dir,
        raw_rel(&uri, protocol::IS_PRESENT_PREFIX),
    )?;
    Ok(ok())
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
