//! API errors, answered as real `Status` objects so `kube::Error::Api` carries code and reason.

use serde_json::{Value, json};

use super::resources::ResourceType;
use super::schema::messages::{FieldError, aggregate};

/// An error the simulated API server answers with; rendered as a `metav1.Status` body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// Machine-readable reason, e.g. `NotFound`, `AlreadyExists`, `Conflict`, `Invalid`.
    pub reason: String,
    /// Human-readable message, worded like the real API server's.
    pub message: String,
    /// The `details` of the `Status` (name, group, kind and the field `causes` of a 422),
    /// when the real server gives them.
    pub details: Option<Box<Value>>,
}

impl ApiError {
    fn new(code: u16, reason: &str, message: String) -> Self {
        Self {
            code,
            reason: reason.to_string(),
            message,
            details: None,
        }
    }

    /// 404 for a missing object.
    pub fn not_found(resource: &ResourceType, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", resource.qualified_name()),
        )
    }

    /// 404 for a path that names no known resource.
    pub fn unknown_path(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }

    /// 409 for a create of an existing name.
    pub fn already_exists(resource: &ResourceType, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", resource.qualified_name()),
        )
    }

    /// 409 for a stale resourceVersion or failed precondition.
    pub fn conflict(resource: &ResourceType, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                resource.qualified_name()
            ),
        )
    }

    /// 422 for an object that fails validation.
    pub fn invalid(resource: &ResourceType, name: &str, why: &str) -> Self {
        Self::new(
            422,
            "Invalid",
            format!("{} \"{name}\" is invalid: {why}", resource.qualified_kind()),
        )
    }

    /// 422 for an object whose fields fail validation, as apimachinery's `NewInvalid`
    /// answers it: the aggregated message and one `details.causes[]` entry per field.
    pub fn invalid_fields(resource: &ResourceType, name: &str, errors: &[FieldError]) -> Self {
        Self::invalid_kind(
            &resource.qualified_kind(),
            &resource.group,
            &resource.kind,
            name,
            errors,
        )
    }

    /// 422 naming `qualified_kind` (`Kind` or `Kind.group`) with the field `errors`.
    pub fn invalid_kind(
        qualified_kind: &str,
        group: &str,
        kind: &str,
        name: &str,
        errors: &[FieldError],
    ) -> Self {
        let mut error = Self::new(
            422,
            "Invalid",
            format!(
                "{qualified_kind} \"{name}\" is invalid: {}",
                aggregate(errors)
            ),
        );
        error.details = Some(Box::new(json!({
            "name": name,
            "group": group,
            "kind": kind,
            "causes": errors.iter().map(FieldError::cause).collect::<Vec<_>>(),
        })));
        error
    }

    /// 422 for list or watch options the real server's `ValidateListOptions` refuses,
    /// each cause worded `field: Kind: detail`.
    pub fn invalid_options(causes: &[String]) -> Self {
        let why = match causes {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        Self::new(
            422,
            "Invalid",
            format!("ListOptions.meta.k8s.io \"\" is invalid: {why}"),
        )
    }

    /// 400 for a malformed request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message.into())
    }

    /// 405 for a verb the path does not support.
    pub fn method_not_allowed(method: &str, path: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow method {method} on {path}"),
        )
    }

    /// 415 for a patch or body type the simulated server does not handle.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message.into())
    }

    /// 410 for a watch that starts before the retained event history.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message.into())
    }

    /// The `Status` object body.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = details.as_ref().clone();
        }
        status
    }
}

/// A successful `Status`, answered by deletes that removed the object at once.
pub fn success_status(resource: &ResourceType, name: &str, uid: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": name,
            "group": resource.group,
            "kind": resource.plural,
            "uid": uid,
        },
    })
}

/// Errors of the typed direct-access helpers.
#[derive(Debug, thiserror::Error)]
pub enum DirectAccessError {
    /// The stored object does not deserialize into the requested type.
    #[error("stored {resource} {namespace}/{name} does not deserialize as the requested type")]
    Deserialize {
        /// `plural.group` of the object.
        resource: String,
        /// Its namespace (empty when cluster-scoped).
        namespace: String,
        /// Its name.
        name: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// The object to write could not be serialised to JSON.
    #[error("cannot serialise {what} to JSON")]
    Serialize {
        /// What was being serialised.
        what: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// The API server refused the request.
    #[error(transparent)]
    Api(#[from] ApiError),
}
