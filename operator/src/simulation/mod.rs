//! The simulated world that `fdb-operator simulate` runs the real operator code against.

pub mod kube;
