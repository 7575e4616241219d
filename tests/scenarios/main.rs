//! Scenarios in the simulated world: the real operator, real sidecars, a simulated
//! Kubernetes and FoundationDB. The tests of this binary run at the same time: each run
//! picks a loopback block no other run holds for its sidecars.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod backups;
mod conditions;
mod creation;
mod determinism;
mod efficiency;
mod engines;
mod faults;
mod field_reports;
mod fleet;
mod go_e2e;
mod go_e2e_faults;
mod go_e2e_maintenance;
mod go_e2e_migrations;
mod go_e2e_replacements;
mod halls;
mod idempotence;
mod kubernetes;
mod locks;
mod multi;
mod mutations;
mod pacing;
mod randomized;
mod randomized_rollouts;
mod regions;
mod removals;
mod replacements;
mod restart;
mod rollouts;
mod snapshots;
mod sweep;
mod tls;
mod unified;
mod upgrades;
