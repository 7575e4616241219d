//! `fdb-sidecar`: the FoundationDB per-pod agent, a wire-compatible replacement for the
//! Python `foundationdb-kubernetes-sidecar`.
//!
//! - [`SidecarConfig::from_args`] parses the flags with an explicit environment map.
//! - [`Sidecar::start`] runs the start-up copies and serves the API, returning a
//!   [`RunningSidecar`] that can be stopped and that reports `POST /restart`.
//! - [`app()`] builds the axum router for in-process tests.
//! - [`copy`] holds the copy actions ([`copy::run_startup_copies`] for `--init-mode`).

pub mod app;
pub mod config;
pub mod confined;
pub mod copy;
pub mod gate;
pub mod hash;
pub mod metrics;
pub mod paths;
pub mod server;
pub mod tls;
pub mod watch;

pub use app::{AppState, app};
pub use config::{ConfigError, LogFormat, SidecarArgs, SidecarConfig};
/// Bounded HTTP serving lives in its own crate, shared with the operator's endpoints.
pub use fdb_bounded_http::{connections, limited};
pub use server::{ExitReason, RunningSidecar, Sidecar, StartError};
