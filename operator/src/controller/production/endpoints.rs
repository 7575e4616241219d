//! The HTTP endpoints of `fdb-operator run` on its metrics address: `/healthz` (the
//! process serves), `/readyz` (the controller can do its work) and `/metrics`
//! (Prometheus, OpenMetrics text).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use fdb_bounded_http::limited::{self, ConnectionLimits, Slots};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::metrics::OperatorMetrics;

/// Where the controller is in its life, as `/readyz` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Started; neither leading nor standing by yet.
    Starting = 0,
    /// Waiting for the leader lease (another replica reconciles).
    Standby = 1,
    /// Reconciling, or about to: the watch caches are being filled.
    Syncing = 2,
    /// The watch caches have synced: reconciles see the cluster's objects.
    Ready = 3,
    /// Stopping (shutdown asked, or the leader lease lost).
    Stopping = 4,
}

impl Phase {
    fn from_u8(value: u8) -> Self {
        match value {
            1 => Self::Standby,
            2 => Self::Syncing,
            3 => Self::Ready,
            4 => Self::Stopping,
            _ => Self::Starting,
        }
    }

    /// The word `/readyz` answers with.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Standby => "standby",
            Self::Syncing => "syncing",
            Self::Ready => "ready",
            Self::Stopping => "stopping",
        }
    }

    /// Whether `/readyz` answers 200: once the caches synced, and on a standby replica
    /// (it is ready to take over; nothing of its own to sync before it leads, and an
    /// unready standby would block rolling updates of the operator's Deployment).
    pub fn is_ready(self) -> bool {
        matches!(self, Self::Ready | Self::Standby)
    }
}

/// The controller's phase, shared between the controller and the endpoints.
#[derive(Debug, Default)]
pub struct Health {
    phase: AtomicU8,
}

impl Health {
    /// The current phase.
    pub fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::SeqCst))
    }

    /// Moves to `phase`.
    pub fn set(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::SeqCst);
    }
}

/// The router serving `/healthz`, `/readyz` and `/metrics`.
pub(crate) fn router(metrics: Arc<OperatorMetrics>, health: Arc<Health>) -> axum::Router {
    axum::Router::new()
        .route("/healthz", axum::routing::get(|| async { "ok\n" }))
        .route(
            "/readyz",
            axum::routing::get(move || {
                let health = health.clone();
                async move { readiness(health.phase()) }
            }),
        )
        .route(
            "/metrics",
            axum::routing::get(move || {
                let metrics = metrics.clone();
                async move {
                    (
                        [(
                            header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        metrics.encode(),
                    )
                }
            }),
        )
}

/// The bounds of the endpoints' connections: a probe or a scrape sends its request at
/// once and is answered in milliseconds, so idle connections are closed after 10 s
/// (header timeout, also between keep-alive requests) and, when all 256 slots are taken,
/// after 250 ms to make room, so that idle connections cannot starve `/healthz`.
pub(crate) const ENDPOINT_LIMITS: ConnectionLimits = ConnectionLimits {
    max_connections: 256,
    header_timeout: Duration::from_secs(10),
    evict_after: Duration::from_millis(250),
};

/// Listen queue of the endpoints: connections beyond [`ENDPOINT_LIMITS`] wait there.
pub(crate) const ENDPOINT_BACKLOG: u32 = 4096;

/// Serves `app` on `listener` within `slots` until `shutdown` completes.
pub(crate) async fn serve(
    listener: TcpListener,
    app: axum::Router,
    slots: Slots,
    shutdown: impl Future<Output = ()>,
) {
    let stop = CancellationToken::new();
    let server = limited::serve(listener, app, slots, stop.clone());
    tokio::pin!(server);
    tokio::select! {
        () = &mut server => {}
        () = shutdown => {
            stop.cancel();
            server.await;
        }
    }
}

fn readiness(phase: Phase) -> Response {
    let status = if phase.is_ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, format!("{}\n", phase.as_str())).into_response()
}

#[cfg(test)]
#[path = "endpoints_tests.rs"]
mod serving_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    async fn get(router: &axum::Router, path: &str) -> (StatusCode, String) {
        let request = axum::http::Request::get(path)
            .body(axum::body::Body::empty())
            .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn readyz_is_503_until_the_caches_synced_and_metrics_are_served() {
        let metrics = Arc::new(OperatorMetrics::default());
        let health = Arc::new(Health::default());
        let router = router(metrics.clone(), health.clone());

        assert_eq!(get(&router, "/healthz").await.0, StatusCode::OK);
        for phase in [Phase::Starting, Phase::Syncing, Phase::Stopping] {
            health.set(phase);
            let (status, body) = get(&router, "/readyz").await;
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{phase:?}");
            assert_eq!(body.trim(), phase.as_str());
        }
        for phase in [Phase::Standby, Phase::Ready] {
            health.set(phase);
            assert_eq!(get(&router, "/readyz").await.0, StatusCode::OK, "{phase:?}");
        }

        metrics.record_groups("default", "sample", 17, 5);
        let (status, body) = get(&router, "/metrics").await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            body.contains(
                "fdb_operator_process_groups_desired{namespace=\"default\",cluster=\"sample\"} 17"
            ),
            "{body}"
        );
        assert!(body.trim_end().ends_with("# EOF"), "{body}");
        assert_eq!(get(&router, "/nothing").await.0, StatusCode::NOT_FOUND);
    }
}
