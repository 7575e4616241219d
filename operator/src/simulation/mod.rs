//! The simulated world `fdb-operator simulate` runs the operator against.

pub mod fdb;
