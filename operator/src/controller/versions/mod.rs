//! Version changes around the upgrade's decision (`upgrade.rs`): the kind of change
//! `spec.version` asks, the tools' version, the shared pending-upgrade list, the
//! incompatible processes left behind, and the kill's quorum, back-off and cleanup.

pub mod change;
pub mod cleanup;
pub mod incompatible_processes;
pub mod pending_upgrades;
pub mod quorum;
pub mod retries;
pub mod tool_choice;
