//! Scenarios in the simulated world: the real operator, real sidecars, a simulated
//! Kubernetes and FoundationDB. Each test uses its own pod IP block (`127.<block>.y.z`)
//! since the tests of this binary run at the same time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod creation;
mod faults;
mod idempotence;
mod mutations;
mod restart;
