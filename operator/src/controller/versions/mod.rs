//! Version changes around the upgrade's decision (`upgrade.rs`): the kind of change
//! `spec.version` asks, the tools' version, the shared pending-upgrade list, the
//! incompatible processes left behind, and the kill's quorum, back-off and cleanup.

pub(crate) mod change;
pub(crate) mod cleanup;
pub(crate) mod incompatible_processes;
pub(crate) mod pending_upgrades;
pub(crate) mod quorum;
pub(crate) mod retries;
pub(crate) mod tool_choice;
