//! The FoundationDBRestore controller: StartRestore (`fdbrestore start` with the backup
//! URL, key ranges, version and encryption key) once, then the restore's state from
//! `fdbrestore status` in the resource's status until it completes.

pub mod driver;

pub use driver::run_restore_pass;
