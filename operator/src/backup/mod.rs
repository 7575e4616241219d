//! The FoundationDBBackup controller: backup agents as a Deployment, and `fdbbackup`
//! commands that make the database's backup match the spec (start, stop, pause and
//! resume, modify), with the status read back from `fdbbackup status --json` and the
//! `status json` backup layer. [`driver::run_backup_pass`] is one reconcile pass.

pub mod agent_pods;
pub mod deployment;
pub mod driver;
pub mod errors;
pub mod plan;
pub mod production;
pub mod validate;

pub use driver::{FINALIZER, run_backup_pass};
pub use errors::BackupError;
