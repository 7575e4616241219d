//! Shared building blocks of the FoundationDB operator and its sidecar: the v1beta2 API
//! types, FoundationDB versions, the `status json` model, monitor conf rendering and the
//! sidecar protocol.

pub mod api;
pub mod monitor_conf;
pub mod sidecar;
pub mod version;

pub use version::FdbVersion;
pub mod address;
pub mod connection_string;
pub mod monitor_conf;
pub mod status_json;
