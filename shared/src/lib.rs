//! Shared building blocks of the FoundationDB operator and its sidecar: the v1beta2 API
//! types, FoundationDB versions, the `status json` model, monitor conf rendering and the
//! sidecar protocol.

pub mod address;
pub mod api;
pub mod blob_store_url;
pub mod cluster_math;
pub mod connection_string;
pub mod error_chain;
pub mod monitor_conf;
pub mod printable;
pub mod sidecar;
pub mod status_json;
mod text_serde;
pub mod unknown_fields;
pub mod validation;
pub mod version;
pub mod yaml_input;

pub use version::FdbVersion;
