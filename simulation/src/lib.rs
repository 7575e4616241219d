//! The simulated world behind `fdb-operator simulate`: an in-memory Kubernetes, a simulated
//! FoundationDB, real sidecars, and the scenario runner.

pub mod event_log;
pub mod fdb;
pub mod fdbcli;
pub mod fleet;
pub mod invariants;
pub mod kube;
pub mod recording_admin;
pub mod recording_sidecar;
pub mod result;
pub mod runner;
pub mod scenario;
pub mod serve;
pub mod tls;
pub mod world;
