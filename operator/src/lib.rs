//! The FoundationDB operator: controller, subreconcilers, admin client and simulation.

pub mod clock;
pub mod fdb;
pub mod simulation;
