//! The served world's control endpoints, on the users' listener only: what a test or
//! a user rehearsing a runbook does to the API server itself, which no Kubernetes
//! request can do.
//!
//! - `POST /simulation/control/v1/outage?seconds=N`: for N seconds (0 ends an outage)
//!   every API request, on both listeners, is answered `503 ServiceUnavailable`, as a
//!   load balancer answers while no API server is up, and the open watches end (as when
//!   an API server stops). The stand-in FoundationDB tools still reach their databases:
//!   FoundationDB does not go through Kubernetes.
//! - `POST /simulation/control/v1/expire-watches`: every open watch ends (as one closed
//!   by its `timeoutSeconds`) and the event history is compacted (as etcd's compaction
//!   after many writes elsewhere), so a client resuming from a resourceVersion it saw
//!   gets `410 Gone` (`too old resource version`) and lists again.
//! - `GET /simulation/control/v1/api-requests`: the API requests counted so far, per
//!   actor (`operator` for the external operator's listener, `kubectl` for the users')
//!   and verb, as the result's `metrics.apiRequests` counts them at the end: what a
//!   benchmark reads before and after a window (`scripts/footprint.sh`).

use std::sync::Mutex;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::kube::FakeApiServer;
use crate::kube::routes::Query;

/// The prefix of the control paths.
pub const CONTROL_PREFIX: &str = "/simulation/control/v1/";
/// The longest outage one request starts (a day): longer is refused, not cut short.
pub const MAX_OUTAGE_SECONDS: u64 = 86_400;

/// The control state both listeners of a served world share.
#[derive(Debug)]
pub struct Control {
    api: FakeApiServer,
    /// When the current outage ends (`None`: no outage).
    outage_until: Mutex<Option<Instant>>,
}

impl Control {
    /// No outage, for the world served from `api`.
    pub fn new(api: FakeApiServer) -> Self {
        Self {
            api,
            outage_until: Mutex::new(None),
        }
    }

    /// Whether the API is down now.
    pub fn in_outage(&self) -> bool {
        let Ok(until) = self.outage_until.lock() else {
            return false;
        };
        until.is_some_and(|until| Instant::now() < until)
    }

    /// Starts an outage of `seconds` from now (0 ends the current one); open watches
    /// end at its start.
    pub fn start_outage(&self, seconds: u64) {
        let until = (seconds > 0).then(|| Instant::now() + Duration::from_secs(seconds));
        if let Ok(mut current) = self.outage_until.lock() {
            *current = until;
        }
        if seconds > 0 {
            self.api.close_watches();
        }
    }
}

/// Answers a request to [`CONTROL_PREFIX`]`...`.
pub fn serve(control: &Control, method: &Method, path: &str, query: Option<&str>) -> Response {
    let Some(action) = path.strip_prefix(CONTROL_PREFIX) else {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("no control {path}"),
        );
    };
    if action == "api-requests" {
        if *method != Method::GET {
            return status(
                StatusCode::METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                format!("{path} takes GET"),
            );
        }
        return json_response(
            StatusCode::OK,
            &json!({"apiRequests": control.api.request_counts()}),
        );
    }
    if *method != Method::POST {
        return status(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!("{path} takes POST"),
        );
    }
    match action {
        "outage" => outage(control, &Query::parse(query)),
        "expire-watches" => {
            let up_to = control.api.compact_watch_history();
            tracing::info!(up_to, "watches ended and their history compacted");
            json_response(
                StatusCode::OK,
                &json!({"expiredWatches": {"compactedResourceVersion": up_to.to_string()}}),
            )
        }
        _ => status(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!(
                "no control {path}: the controls are {CONTROL_PREFIX}outage?seconds=N, {CONTROL_PREFIX}expire-watches and (GET) {CONTROL_PREFIX}api-requests"
            ),
        ),
    }
}

fn outage(control: &Control, query: &Query) -> Response {
    let seconds = query.get("seconds").and_then(|s| s.parse::<u64>().ok());
    let Some(seconds) = seconds.filter(|s| *s <= MAX_OUTAGE_SECONDS) else {
        return status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            format!("outage needs ?seconds=N, N from 0 (end the outage) to {MAX_OUTAGE_SECONDS}"),
        );
    };
    control.start_outage(seconds);
    tracing::info!(seconds, "API outage");
    json_response(StatusCode::OK, &json!({"outage": {"seconds": seconds}}))
}

/// The answer to an API request during an outage.
pub fn unavailable() -> Response {
    let mut response = status(
        StatusCode::SERVICE_UNAVAILABLE,
        "ServiceUnavailable",
        "the API server is unavailable (a simulated outage)".to_owned(),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

fn status(code: StatusCode, reason: &str, message: String) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": message, "reason": reason, "code": code.as_u16()});
    json_response(code, &body)
}

fn json_response(code: StatusCode, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = code;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api() -> FakeApiServer {
        let clock = std::sync::Arc::new(fdb_operator::clock::VirtualClock::fixed_epoch());
        FakeApiServer::new(clock, 1)
    }

    /// The first line of a watch of ConfigMaps from `since`.
    async fn first_watch_line(api: &FakeApiServer, since: u64) -> Value {
        use http_body_util::BodyExt as _;
        use tower::Service as _;
        let uri = format!("/api/v1/namespaces/db/configmaps?watch=1&resourceVersion={since}");
        let request = http::Request::get(uri)
            .body(kube::client::Body::empty())
            .unwrap();
        let Ok(response) = api.service("kubectl").call(request).await;
        let mut body = response.into_body();
        let frame = body.frame().await.unwrap().unwrap();
        let data = frame.into_data().unwrap();
        serde_json::from_slice(&data).unwrap()
    }

    #[tokio::test]
    async fn an_outage_lasts_its_seconds_and_zero_ends_it() {
        let control = Control::new(api());
        assert!(!control.in_outage());
        let answer = serve(
            &control,
            &Method::POST,
            "/simulation/control/v1/outage",
            Some("seconds=30"),
        );
        assert_eq!(answer.status(), StatusCode::OK);
        assert!(control.in_outage());
        serve(
            &control,
            &Method::POST,
            "/simulation/control/v1/outage",
            Some("seconds=0"),
        );
        assert!(!control.in_outage());
        for bad in ["seconds=x", "seconds=-1", "seconds=86401", ""] {
            let answer = serve(
                &control,
                &Method::POST,
                "/simulation/control/v1/outage",
                Some(bad),
            );
            assert_eq!(answer.status(), StatusCode::BAD_REQUEST, "{bad}");
        }
        let get = serve(
            &control,
            &Method::GET,
            "/simulation/control/v1/outage",
            Some("seconds=3"),
        );
        assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert!(!control.in_outage());
    }

    #[tokio::test]
    async fn expired_watches_resume_with_410_and_a_relist_watches_again() {
        let api = api();
        let config_map = |name: &str| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": name, "namespace": "db"}})
        };
        api.create_as("user", config_map("a")).unwrap();
        let before = api.resource_version();
        assert_eq!(first_watch_line(&api, before - 1).await["type"], "ADDED");
        let control = Control::new(api.clone());
        let answer = serve(
            &control,
            &Method::POST,
            "/simulation/control/v1/expire-watches",
            None,
        );
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(api.resource_version(), before + 1);
        // Resuming from what the client saw: too old.
        let expired = first_watch_line(&api, before).await;
        assert_eq!(expired["type"], "ERROR");
        assert_eq!(expired["object"]["code"], 410);
        // From the relist's resourceVersion: live events again.
        api.create_as("user", config_map("b")).unwrap();
        let resumed = first_watch_line(&api, before + 1).await;
        assert_eq!(resumed["object"]["metadata"]["name"], "b");
        let unknown = serve(
            &control,
            &Method::POST,
            "/simulation/control/v1/nothing",
            None,
        );
        assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn the_request_counts_are_read_per_actor_and_verb() {
        use http_body_util::BodyExt as _;
        let api = api();
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "a", "namespace": "db"}});
        api.create_as("operator", config_map).unwrap();
        let control = Control::new(api);
        let answer = serve(
            &control,
            &Method::GET,
            "/simulation/control/v1/api-requests",
            None,
        );
        assert_eq!(answer.status(), StatusCode::OK);
        let body = answer.into_body().collect().await.unwrap().to_bytes();
        let counts: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(counts["apiRequests"]["operator"]["create"], 1, "{counts}");
        let post = serve(
            &control,
            &Method::POST,
            "/simulation/control/v1/api-requests",
            None,
        );
        assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
    }
}
