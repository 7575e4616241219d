//! The simulated world behind `fdb-operator simulate`: an in-memory Kubernetes, a simulated
//! FoundationDB, real sidecars, and the scenario runner.

pub mod fdb;
pub mod kube;
pub mod result;
pub mod scenario;
pub mod world;
