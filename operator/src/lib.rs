//! The FoundationDB operator: controller, subreconcilers, admin client and simulation.

pub mod cli;
pub mod clock;
pub mod controller;
pub mod fdb;
pub mod simulation;
