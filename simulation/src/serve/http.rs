//! The HTTP listener of a served world: discovery and health paths answered here, every
//! other request handed to the in-memory API server as actor [`super::SERVED_ACTOR`], and lists,
//! objects and watch events turned into `Table`s when the client asks for them.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt as _;
use http::{HeaderValue, Method, StatusCode, header};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::oneshot;
use tower::Service as _;

use super::{ServeError, control, discovery, exec, openapi, table, tools, watch_timing};
use crate::kube::interleave::lands_between_reads;
use crate::kube::resources::ResourceRegistry;
use crate::kube::routes::{Query, parse_path};
use crate::kube::{FakeApiServer, ResourceType};
use fdb_operator::clock::Clock;

/// The largest request body accepted (a cluster manifest is a few KiB).
const BODY_LIMIT: usize = 16 << 20;

/// The group, version and plural of served CustomResourceDefinitions.
const CRD_GROUP: &str = "apiextensions.k8s.io";

/// What the handlers share.
struct Served {
    api: FakeApiServer,
    clock: Arc<dyn Clock>,
    /// `additionalPrinterColumns` per (group, plural) of the custom resources.
    printer_columns: BTreeMap<(String, String), Vec<Value>>,
    /// Runs `pods/exec` commands; `None`: exec is refused.
    exec: Option<exec::SimulatedExec>,
    /// The actor every request of this listener is counted and judged as.
    actor: &'static str,
    /// See [`Extras::tools`].
    tools: Option<tools::ServedTools>,
    /// See [`Extras::turn`].
    turn: Option<Arc<tokio::sync::Mutex<()>>>,
    /// See [`Extras::control`].
    control: Arc<control::Control>,
}

/// A listener serving a world's API until [`RunningServer::stop`].
#[derive(Debug)]
pub struct RunningServer {
    /// The address it listens on (the port chosen when 0 was asked for).
    pub address: SocketAddr,
    api: FakeApiServer,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

/// What a served listener answers besides the API, and as whom.
pub struct Extras {
    /// Runs `pods/exec` commands; `None`: exec is refused.
    pub exec: Option<exec::SimulatedExec>,
    /// The actor every request is counted and judged as: [`super::SERVED_ACTOR`] for the users'
    /// listener, the operator's for the external operator's (`--external-operator`).
    pub actor: &'static str,
    /// The stand-in tools' endpoint ([`tools::TOOLS_PATH`]); `None`: not served.
    pub tools: Option<tools::ServedTools>,
    /// Held by the world while it advances: writes wait for it, so that each lands
    /// between two advances and is judged against the world as it was before it (but a
    /// user's write to the operator's resources, which lands at the operator's next
    /// request, `kube/interleave.rs`).
    pub turn: Option<Arc<tokio::sync::Mutex<()>>>,
    /// The outage and watch controls both listeners share; only the users' listener
    /// answers [`control::CONTROL_PREFIX`] (the operator cannot control the world).
    pub control: Arc<control::Control>,
}

/// Installs the CRDs in `api`, binds `address` and serves it (`pods/exec` and the actor
/// from `extras`); returns once the listener answers its own `/version` request.
pub async fn start(
    api: &FakeApiServer,
    clock: Arc<dyn Clock>,
    address: SocketAddr,
    extras: Extras,
) -> Result<RunningServer, ServeError> {
    let printer_columns = install_crds(api);
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|source| ServeError::Bind { address, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { address, source })?;
    let served = Arc::new(Served {
        api: api.clone(),
        clock,
        printer_columns,
        exec: extras.exec,
        actor: extras.actor,
        tools: extras.tools,
        turn: extras.turn,
        control: extras.control,
    });
    let router = axum::Router::new().fallback(handle).with_state(served);
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let server = axum::serve(listener, router).with_graceful_shutdown(async move {
            let _ = stopped.await;
        });
        if let Err(error) = server.await {
            tracing::warn!(%error, "the served API stopped");
        }
    });
    let running = RunningServer {
        address: bound,
        api: api.clone(),
        stop,
        task,
    };
    if let Err(detail) = probe(bound).await {
        running.stop().await;
        return Err(ServeError::NoAnswer {
            address: bound,
            detail,
        });
    }
    Ok(running)
}

impl RunningServer {
    /// Ends open watches, stops accepting, and waits (a few seconds at most) for open
    /// requests to finish.
    pub async fn stop(self) {
        self.api.close_watches();
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(5), self.task).await;
    }
}

/// One `GET /version` over a fresh connection: the listener answers 200.
async fn probe(address: SocketAddr) -> Result<(), String> {
    let attempt = async {
        let mut stream = tokio::net::TcpStream::connect(address)
            .await
            .map_err(|e| e.to_string())?;
        stream
            .write_all(b"GET /version HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")
            .await
            .map_err(|e| e.to_string())?;
        let mut reply = Vec::new();
        stream
            .read_to_end(&mut reply)
            .await
            .map_err(|e| e.to_string())?;
        if reply.starts_with(b"HTTP/1.1 200") {
            Ok(())
        } else {
            Err(format!(
                "unexpected reply {:?}",
                String::from_utf8_lossy(&reply[..reply.len().min(40)])
            ))
        }
    };
    tokio::time::timeout(Duration::from_secs(10), attempt)
        .await
        .map_err(|_| "no reply within 10 s".to_owned())?
}

/// Serves the CustomResourceDefinitions (so `kubectl get crd` lists them) and returns
/// their printer columns.
fn install_crds(api: &FakeApiServer) -> BTreeMap<(String, String), Vec<Value>> {
    api.register_resource(ResourceType::new(
        CRD_GROUP,
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        true,
    ));
    let mut columns = BTreeMap::new();
    for crd in fdb_shared::api::crd::crds() {
        let Ok(object) = serde_json::to_value(&crd) else {
            continue;
        };
        let group = crd.spec.group.clone();
        let plural = crd.spec.names.plural.clone();
        let printer = object
            .pointer("/spec/versions/0/additionalPrinterColumns")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        columns.insert((group, plural), printer);
        // Already there when a world is served twice (tests): nothing to do.
        let _ = api.create_as("user", object);
    }
    columns
}

async fn handle(State(served): State<Arc<Served>>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    if served.actor == super::SERVED_ACTOR && path.starts_with(control::CONTROL_PREFIX) {
        return control::serve(&served.control, &parts.method, &path, parts.uri.query());
    }
    // The FoundationDB tools reach their databases whatever the API server does.
    if served.control.in_outage() && path != tools::TOOLS_PATH {
        return control::unavailable();
    }
    if let Some(exec_request) = exec::parse_request(&path, parts.uri.query())
        && matches!(parts.method, Method::GET | Method::POST)
    {
        let upgrade = parts.extensions.remove::<hyper::upgrade::OnUpgrade>();
        return match &served.exec {
            Some(runner) => exec::serve(runner, exec_request, &parts.headers, upgrade).await,
            None => json_response(StatusCode::NOT_FOUND, &not_found(&path)),
        };
    }
    if path == tools::TOOLS_PATH
        && let Some(runner) = &served.tools
    {
        return tool_request(runner, &parts.method, &path, body).await;
    }
    let types = served.api.resource_types();
    if let Some(response) = fixed_response(&path, &parts, &types) {
        return response;
    }
    let body = match axum::body::to_bytes(body, BODY_LIMIT).await {
        Ok(body) => body,
        Err(error) => {
            let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "message": format!("cannot read the request body: {error}"), "reason": "BadRequest", "code": 400});
            return json_response(StatusCode::BAD_REQUEST, &status);
        }
    };
    let accept = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let query = Query::parse(parts.uri.query());
    let wants_table = (parts.method == Method::GET)
        .then(|| table::requested_version(&accept))
        .flatten();
    let response = call_api(&served, parts, body).await;
    let (head, body) = response.into_parts();
    let mut registry = ResourceRegistry::default();
    for resource in types {
        registry.register(resource);
    }
    let route = parse_path(&registry, &path).ok();
    let watching = query.flag("watch") && head.status == StatusCode::OK;
    let Some(version) = wants_table.filter(|_| head.status == StatusCode::OK) else {
        if watching {
            let timed = timed_watch(&served.api, route.as_ref(), &query, body);
            return Response::from_parts(head, Body::from_stream(timed));
        }
        return Response::from_parts(head, Body::new(body));
    };
    let Some(route) = route else {
        return Response::from_parts(head, Body::new(body));
    };
    table_response(&served, route, &query, version, (head, body)).await
}

/// A list, an object or a watch as `Table`s (`kubectl get`).
async fn table_response(
    served: &Served,
    route: crate::kube::routes::Route,
    query: &Query,
    version: &'static str,
    (mut head, body): (http::response::Parts, crate::kube::service::ResponseBody),
) -> Response {
    let columns = served
        .printer_columns
        .get(&(route.resource.group.clone(), route.resource.plural.clone()))
        .cloned()
        .unwrap_or_default();
    let include = query.get("includeObject").map(str::to_owned);
    let clock = served.clock.clone();
    let resource = route.resource;
    if query.flag("watch") {
        let events = watch_tables(body, resource, clock, version, include, columns);
        let lifetime = watch_timing::lifetime(query.get("timeoutSeconds"));
        let timed = watch_timing::timed(events, lifetime, None);
        return Response::from_parts(head, Body::from_stream(timed));
    }
    let Ok(collected) = body.collect().await;
    let Ok(value) = serde_json::from_slice::<Value>(&collected.to_bytes()) else {
        return Response::from_parts(head, Body::empty());
    };
    let table = table::to_table(
        &resource,
        &value,
        clock.now(),
        version,
        include.as_deref(),
        &columns,
    );
    head.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(head, Body::from(table.to_string()))
}

/// A POST of a stand-in tool ([`tools::TOOLS_PATH`]).
async fn tool_request(
    runner: &tools::ServedTools,
    method: &Method,
    path: &str,
    body: Body,
) -> Response {
    if *method != Method::POST {
        return json_response(StatusCode::METHOD_NOT_ALLOWED, &not_found(path));
    }
    match axum::body::to_bytes(body, BODY_LIMIT).await {
        Ok(body) => tools::serve(runner, &body).await,
        Err(_) => json_response(StatusCode::PAYLOAD_TOO_LARGE, &not_found(path)),
    }
}

/// Hands a request to the in-memory API server as this listener's actor; a write waits
/// for the world's turn ([`Extras::turn`]).
async fn call_api(
    served: &Served,
    parts: http::request::Parts,
    body: Bytes,
) -> http::Response<crate::kube::service::ResponseBody> {
    let write = !matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
    let turn = match (&served.turn, write) {
        (Some(turn), true) => match turn.try_lock() {
            Ok(idle) => Some(idle),
            // The world is advancing: a user's write to the operator's resources lands
            // at the operator's next request (`kube/interleave.rs`), or when the advance
            // ends if that comes first. An external operator's writes are judged per
            // round, between advances, as before.
            Err(_)
                if served.actor == super::SERVED_ACTOR
                    && lands_between_reads(&parts.method, parts.uri.path()) =>
            {
                let (id, reply) = served.api.queue_write(served.actor, parts, body);
                tokio::pin!(reply);
                return tokio::select! {
                    biased;
                    landed = &mut reply => landed.unwrap_or_else(|_| lost_write()),
                    _idle = turn.lock() => match served.api.apply_queued_write_now(id) {
                        Some(response) => response,
                        None => reply.await.unwrap_or_else(|_| lost_write()),
                    },
                };
            }
            Err(_) => Some(turn.lock().await),
        },
        _ => None,
    };
    let request = http::Request::from_parts(parts, kube::client::Body::from(body.to_vec()));
    let mut service = served.api.service(served.actor);
    let Ok(response) = service.call(request).await;
    drop(turn);
    response
}

/// The answer to a queued write whose response never came (the world stopped first).
fn lost_write() -> http::Response<crate::kube::service::ResponseBody> {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": "the served world stopped before the write was applied",
                      "reason": "ServiceUnavailable", "code": 503});
    let mut response = http::Response::new(
        http_body_util::Full::new(Bytes::from(body.to_string())).boxed_unsync(),
    );
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    response
}

/// A watch's events with a real server's lifetime and, when asked for, bookmarks.
fn timed_watch(
    api: &FakeApiServer,
    route: Option<&crate::kube::routes::Route>,
    query: &Query,
    body: crate::kube::service::ResponseBody,
) -> impl futures::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static {
    let bookmarks = route
        .filter(|_| query.flag("allowWatchBookmarks"))
        .map(|route| watch_timing::BookmarkSource {
            api: api.clone(),
            kind: route.resource.kind.clone(),
            api_version: api_version(&route.resource),
        });
    let lifetime = watch_timing::lifetime(query.get("timeoutSeconds"));
    watch_timing::timed(body.into_data_stream(), lifetime, bookmarks)
}

/// The routes answered without the API server: health, OpenAPI, discovery.
fn fixed_response(
    path: &str,
    parts: &http::request::Parts,
    types: &[ResourceType],
) -> Option<Response> {
    if matches!(path, "/healthz" | "/readyz" | "/livez") {
        return Some(text(StatusCode::OK, "ok"));
    }
    if path == "/openapi/v2" {
        return Some(openapi::v2_response(&parts.headers));
    }
    if path.starts_with("/openapi") || path.starts_with("/swagger") {
        // No OpenAPI v3: clients fall back to v2, then to their built-in schemas.
        return Some(json_response(StatusCode::NOT_FOUND, &not_found(path)));
    }
    if parts.method == Method::GET
        && let Some(document) = discovery::document(path, types)
    {
        return Some(json_response(StatusCode::OK, &document));
    }
    None
}

/// A watch as tables: each watch line is one event, its object a one-row table.
fn watch_tables<B>(
    body: B,
    resource: ResourceType,
    clock: Arc<dyn Clock>,
    version: &'static str,
    include: Option<String>,
    columns: Vec<Value>,
) -> impl futures::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static
where
    B: axum::body::HttpBody<Data = Bytes, Error = std::convert::Infallible> + Send + 'static,
{
    body.into_data_stream().map(move |chunk| {
        let Ok(chunk) = chunk;
        let mut out = Vec::new();
        for line in chunk.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let mut event: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
            let is_object = event
                .pointer("/object/kind")
                .and_then(Value::as_str)
                .is_some_and(|kind| kind != "Status");
            if is_object && let Some(object) = event.get_mut("object") {
                *object = table::to_table(
                    &resource,
                    object,
                    clock.now(),
                    version,
                    include.as_deref(),
                    &columns,
                );
            }
            out.extend_from_slice(event.to_string().as_bytes());
            out.push(b'\n');
        }
        Ok::<_, std::convert::Infallible>(Bytes::from(out))
    })
}

/// `v1` for the core group, `GROUP/VERSION` otherwise.
fn api_version(resource: &ResourceType) -> String {
    if resource.group.is_empty() {
        resource.version.clone()
    } else {
        format!("{}/{}", resource.group, resource.version)
    }
}

fn not_found(path: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": format!("the server could not find the requested resource ({path})"),
           "reason": "NotFound", "details": {}, "code": 404})
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn text(status: StatusCode, body: &'static str) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response
}
