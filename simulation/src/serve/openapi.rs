//! `/openapi/v2`: an OpenAPI document that describes no resource.
//!
//! `kubectl apply` and `kubectl create` validate manifests against the server's OpenAPI
//! document and refuse to go on when it cannot be downloaded. A document without
//! definitions is accepted: kubectl then skips the schema check of every kind (as for a
//! custom resource without a schema), computes strategic merge patches of built-in kinds
//! from its own types and JSON merge patches of custom resources, and the API server's
//! own validation still applies. kubectl asks for the protobuf encoding (gnostic's
//! `openapi_v2.Document`), which is written here by hand: field 1 `swagger`, field 2
//! `info` (field 1 `title`, field 2 `version`).

use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode, header};

/// The media type of the protobuf encoding.
const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

const TITLE: &str = "FoundationDB simulated world";
const VERSION: &str = "v1";

/// A length-delimited protobuf field (wire type 2) holding `bytes`.
fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![(number << 3) | 2];
    let mut length = bytes.len();
    // Base-128 varint.
    loop {
        let low = u8::try_from(length & 0x7f).unwrap_or(0);
        length >>= 7;
        if length == 0 {
            out.push(low);
            break;
        }
        out.push(low | 0x80);
    }
    out.extend_from_slice(bytes);
    out
}

/// The document in protobuf encoding.
pub fn protobuf_document() -> Vec<u8> {
    let mut info = field(1, TITLE.as_bytes());
    info.extend(field(2, VERSION.as_bytes()));
    let mut document = field(1, b"2.0");
    document.extend(field(2, &info));
    document
}

/// The document in JSON.
pub fn json_document() -> serde_json::Value {
    serde_json::json!({"swagger": "2.0", "info": {"title": TITLE, "version": VERSION},
                       "paths": {}, "definitions": {}})
}

/// The reply to `GET /openapi/v2`: protobuf when the client accepts it, JSON otherwise.
pub fn v2_response(headers: &HeaderMap) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let (body, media) = if accept.contains("protobuf") {
        (protobuf_document(), PROTOBUF)
    } else {
        (json_document().to_string().into_bytes(), "application/json")
    };
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::OK;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(media));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protobuf_document_is_swagger_2_with_an_info() {
        let document = protobuf_document();
        assert_eq!(&document[..5], &[0x0a, 3, b'2', b'.', b'0']);
        assert_eq!(document[5], 0x12);
        let info = &document[7..];
        assert_eq!(usize::from(document[6]), info.len());
        assert_eq!(info[0], 0x0a);
        assert_eq!(usize::from(info[1]), TITLE.len());
        assert_eq!(field(1, &[0; 200])[1..3], [0xc8, 0x01]);
    }
}
