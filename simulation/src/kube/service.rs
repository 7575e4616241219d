//! The HTTP front end: a tower `Service` per actor that `kube::Client::new` wraps.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use serde_json::Value;

use super::FakeApiServer;
use super::deletion::DeleteOptions;
use super::errors::ApiError;
use super::operations::{Operation, selectors};
use super::patch::PatchType;
use super::routes::{Query, Route, parse_path};
use super::schema::messages::{BadValue, ErrorType, FieldError};
use super::store::{State, meta_str};
use super::watch::{WatchFilter, event_line, initial_events_end};

/// The response body type: a full JSON document or a watch stream.
pub type ResponseBody = UnsyncBoxBody<Bytes, Infallible>;

/// The tower service behind one actor's `kube::Client`.
#[derive(Clone)]
pub struct ActorService {
    pub(super) server: FakeApiServer,
    pub(super) actor: Arc<str>,
}

impl std::fmt::Debug for ActorService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActorService")
            .field("actor", &self.actor)
            .finish()
    }
}

impl tower::Service<Request<kube::client::Body>> for ActorService {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<kube::client::Body>) -> Self::Future {
        let server = self.server.clone();
        let actor = self.actor.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let response = match body.collect().await {
                Ok(collected) => server.handle_http(&actor, &parts, &collected.to_bytes()),
                Err(error) => error_response(&ApiError::bad_request(format!(
                    "cannot read the request body: {error}"
                ))),
            };
            Ok(response)
        })
    }
}

fn json_response(code: u16, body: &Value) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed_unsync());
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn error_response(error: &ApiError) -> Response<ResponseBody> {
    json_response(error.code, &error.to_status())
}

fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|error| {
        ApiError::bad_request(format!("the request body is not valid JSON: {error}"))
    })
}

/// The body of a create or update in the media types the simulated server speaks: JSON
/// (also when no type is named, as the real server defaults to its first type) and
/// YAML. Anything else (protobuf, CBOR, ...) is a 415 as from a server without it
/// (apiserver `negotiation.NegotiateInputSerializer`).
fn parse_object_body(content_type: &str, body: &[u8]) -> Result<Value, ApiError> {
    let media = content_type.split(';').next().unwrap_or_default().trim();
    match media {
        "" | "application/json" | "*/*" => parse_json(body),
        "application/yaml" => serde_yaml_ng::from_slice(body).map_err(|error| {
            ApiError::bad_request(format!("the request body is not valid YAML: {error}"))
        }),
        _ => Err(ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types \
             include: application/json, application/yaml (got \"{media}\")"
        ))),
    }
}

fn options_kind(method: &Method) -> &'static str {
    match *method {
        Method::POST => "CreateOptions",
        Method::PUT => "UpdateOptions",
        Method::PATCH => "PatchOptions",
        _ => "DeleteOptions",
    }
}

/// `fieldValidation` (what `kubectl apply` sends, `Strict` by default): `Strict` refuses a
/// create or update body with fields the schema drops (400, as the real server's strict
/// decoding); `Ignore`, `Warn` and empty let pruning drop them (no warning header is
/// sent); any other value is refused as `ValidateFieldValidation` refuses it. The fields
/// of a patch body are not checked.
fn check_field_validation(
    store: &State,
    route: &Route,
    method: &Method,
    query: &Query,
    operation: &Operation,
) -> Result<(), ApiError> {
    const SUPPORTED: [&str; 4] = ["", "Ignore", "Strict", "Warn"];
    let requested = query.get("fieldValidation").unwrap_or_default();
    if !SUPPORTED.contains(&requested) {
        let kind = options_kind(method);
        let error = FieldError::new(
            ErrorType::NotSupported,
            "fieldValidation",
            Value::String(requested.to_owned()),
            "supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
        );
        return Err(ApiError::invalid_kind(
            &format!("{kind}.meta.k8s.io"),
            "meta.k8s.io",
            kind,
            "",
            &[error],
        ));
    }
    let body = match operation {
        Operation::Create(body) | Operation::Update(body) if requested == "Strict" => body,
        _ => return Ok(()),
    };
    let unknown = store.schemas().unknown_fields(&route.resource, body);
    if unknown.is_empty() {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "strict decoding error: {}",
        unknown
            .iter()
            .map(|field| format!("unknown field \"{}\"", field.trim_start_matches('.')))
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// Whether a write runs as a dry run: `dryRun=All` (query, or a DeleteOptions body);
/// any other value is refused as the real server's `ValidateDryRun` refuses it (422 on
/// the request's options kind).
fn dry_run_of(method: &Method, query: &Query, operation: &Operation) -> Result<bool, ApiError> {
    let mut values: Vec<String> = query.get("dryRun").map(str::to_owned).into_iter().collect();
    if let Operation::Delete(options) | Operation::DeleteCollection(_, options) = operation {
        values.extend(options.dry_run.iter().flatten().cloned());
    }
    if values.is_empty() {
        return Ok(false);
    }
    if values.iter().all(|value| value == "All") {
        return Ok(true);
    }
    let options_kind = options_kind(method);
    let error = FieldError {
        kind: ErrorType::NotSupported,
        field: "dryRun".to_owned(),
        value: BadValue::Strings(values),
        detail: "supported values: \"All\"".to_owned(),
    };
    Err(ApiError::invalid_kind(
        &format!("{options_kind}.meta.k8s.io"),
        "meta.k8s.io",
        options_kind,
        "",
        &[error],
    ))
}

/// Maps method and route to an operation (or `None` for a watch).
fn operation_for(
    method: &Method,
    route: &Route,
    query: Query,
    content_type: &str,
    body: &[u8],
) -> Result<Option<Operation>, ApiError> {
    let has_name = route.name.is_some();
    let post_subresource = route
        .subresource
        .as_deref()
        .filter(|s| super::subresources::POD_POST_SUBRESOURCES.contains(s));
    let operation = match *method {
        Method::POST if has_name && post_subresource == Some("binding") => {
            Operation::Bind(parse_json(body)?)
        }
        Method::POST if has_name && post_subresource == Some("eviction") => {
            Operation::Evict(parse_json(body)?)
        }
        Method::GET if !has_name && query.flag("watch") => return Ok(None),
        Method::GET if has_name => Operation::Get,
        Method::GET => Operation::List(query),
        Method::POST if !has_name => Operation::Create(parse_object_body(content_type, body)?),
        Method::PUT if has_name => Operation::Update(parse_object_body(content_type, body)?),
        Method::PATCH if has_name => {
            Operation::Patch(PatchType::from_content_type(content_type)?, body.to_vec())
        }
        Method::DELETE if has_name => Operation::Delete(DeleteOptions::from_body(body)?),
        Method::DELETE => Operation::DeleteCollection(query, DeleteOptions::from_body(body)?),
        _ => {
            return Err(ApiError::method_not_allowed(
                method.as_str(),
                &route.resource.qualified_name(),
            ));
        }
    };
    Ok(Some(operation))
}

impl FakeApiServer {
    /// Answers one HTTP request of `actor`.
    pub(super) fn handle_http(
        &self,
        actor: &str,
        parts: &http::request::Parts,
        body: &[u8],
    ) -> Response<ResponseBody> {
        let path = parts.uri.path();
        let query = Query::parse(parts.uri.query());
        let now = self.inner.clock.now();
        let mut core = self.lock();
        let route = match parse_path(&core.store.registry, path) {
            Ok(route) => route,
            Err(error) => {
                if let Some(verb) = fallback_verb(&parts.method) {
                    core.accounting.count(actor, verb);
                }
                return error_response(&error);
            }
        };
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        let operation =
            match operation_for(&parts.method, &route, query.clone(), content_type, body) {
                Ok(Some(operation)) => operation,
                Ok(None) => {
                    core.accounting.count(actor, super::accounting::Verb::Watch);
                    return match open_watch(&mut core.store, &route, &query) {
                        Ok(response) => response,
                        Err(error) => error_response(&error),
                    };
                }
                Err(error) => {
                    if let Some(verb) = fallback_verb(&parts.method) {
                        core.accounting.count(actor, verb);
                    }
                    return error_response(&error);
                }
            };
        if let Err(error) =
            check_field_validation(&core.store, &route, &parts.method, &query, &operation)
        {
            core.accounting.count(actor, operation.verb());
            return error_response(&error);
        }
        let dry_run = match dry_run_of(&parts.method, &query, &operation) {
            Ok(dry_run) => dry_run,
            Err(error) => {
                core.accounting.count(actor, operation.verb());
                return error_response(&error);
            }
        };
        match core.execute(actor, &route, operation, now, dry_run) {
            Ok((code, body)) => json_response(code, &body),
            Err(error) => error_response(&error),
        }
    }
}

fn fallback_verb(method: &Method) -> Option<super::accounting::Verb> {
    use super::accounting::Verb;
    match *method {
        Method::GET => Some(Verb::Get),
        Method::POST => Some(Verb::Create),
        Method::PUT => Some(Verb::Update),
        Method::PATCH => Some(Verb::Patch),
        Method::DELETE => Some(Verb::Delete),
        _ => None,
    }
}

/// Opens a watch stream under the lock, so no event falls between replay and live.
fn open_watch(
    store: &mut State,
    route: &Route,
    query: &Query,
) -> Result<Response<ResponseBody>, ApiError> {
    let (labels, fields) = selectors(query)?;
    let filter = WatchFilter {
        resource: route.resource.clone(),
        namespace: route.namespace.clone(),
        labels,
        fields,
    };
    if let Some(name) = &route.name {
        return Err(ApiError::bad_request(format!(
            "watch of a single object ({name}) is not supported; use fieldSelector=metadata.name={name}"
        )));
    }
    check_watch_options(query)?;
    let requested = query.get("resourceVersion").filter(|rv| *rv != "0");
    let send_initial = query.flag("sendInitialEvents");
    let (initial, since) = match (requested, send_initial) {
        (Some(version), false) => {
            let since = version.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("invalid resourceVersion \"{version}\""))
            })?;
            (Vec::new(), Some(since))
        }
        _ => {
            let mut lines: Vec<Bytes> = store
                .objects_of(&route.resource, route.namespace.as_deref())
                .filter(|(_, object)| filter.selects(object))
                .map(|(_, object)| event_line("ADDED", object))
                .collect();
            if send_initial {
                lines.push(initial_events_end(&route.resource, store.resource_version));
            }
            (lines, None)
        }
    };
    let receiver = match store.watches.open(filter, initial, since) {
        Ok(receiver) => receiver,
        // The real server answers an expired resourceVersion with an ERROR event.
        Err(error) if error.code == 410 => {
            let line = event_line("ERROR", &error.to_status());
            let body = Full::new(line).boxed_unsync();
            let mut response = Response::new(body);
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            return Ok(response);
        }
        Err(error) => return Err(error),
    };
    let stream = receiver.map(|line| Ok::<_, Infallible>(Frame::data(line)));
    let mut response = Response::new(StreamBody::new(stream).boxed_unsync());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

/// The real server's checks of a watch's options (`validateWatchOptions` in
/// apimachinery's `internalversion/validation`): `sendInitialEvents` needs
/// `resourceVersionMatch=NotOlderThan`, and `resourceVersionMatch` is refused on a
/// watch without `sendInitialEvents`, or with any other value, or with `continue`.
fn check_watch_options(query: &Query) -> Result<(), ApiError> {
    const NOT_OLDER_THAN: &str = "NotOlderThan";
    let send_initial = query.get("sendInitialEvents").is_some();
    let matching = query.get("resourceVersionMatch").filter(|m| !m.is_empty());
    let mut causes = Vec::new();
    if send_initial && matching != Some(NOT_OLDER_THAN) {
        causes.push(format!(
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting \
             resourceVersionMatch to {NOT_OLDER_THAN}"
        ));
    }
    if let Some(matching) = matching {
        if !send_initial {
            causes.push(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch \
                 unless sendInitialEvents is provided"
                    .to_owned(),
            );
        }
        if matching != NOT_OLDER_THAN {
            causes.push(format!(
                "resourceVersionMatch: Unsupported value: {matching:?}: supported values: \
                 \"{NOT_OLDER_THAN}\""
            ));
        }
        if query.get("continue").is_some_and(|c| !c.is_empty()) {
            causes.push(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when \
                 continue is provided"
                    .to_owned(),
            );
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid_options(&causes))
    }
}

/// The namespace and name an object body addresses, for direct writes.
pub(super) fn body_address(object: &Value) -> (Option<String>, Option<String>) {
    (
        meta_str(object, "namespace").map(str::to_string),
        meta_str(object, "name").map(str::to_string),
    )
}
