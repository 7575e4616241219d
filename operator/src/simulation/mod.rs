//! The simulated world behind `fdb-operator simulate`: an in-memory Kubernetes, a simulated
//! FoundationDB, real sidecars, and the scenario runner.

pub mod result;
pub mod scenario;
