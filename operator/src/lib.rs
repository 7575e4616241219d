//! The FoundationDB operator library: controller, steps, admin client, backups and restores.
//! The simulated world is the `fdb-simulation` crate; the binary is the `cli/` crate.

pub mod backup;
pub mod capture;
pub mod cli;
pub mod clock;
pub mod controller;
pub mod fdb;
pub mod restore;
mod scoped_api;
