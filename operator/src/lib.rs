//! The FoundationDB operator: controller, subreconcilers, admin client and simulation.

pub mod backup;
pub mod cli;
pub mod clock;
pub mod controller;
pub mod fdb;
pub mod restore;
pub mod simulation;
