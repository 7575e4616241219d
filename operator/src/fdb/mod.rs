//! The operator's access to FoundationDB: the admin-client interface, its fdbcli
//! implementation, the per-pass status cache, and the lock keys.

pub mod admin;
pub mod backup;
pub mod cache;
pub mod error;
pub mod fdbcli;
pub mod locality_filter;
pub mod locks;
#[cfg(feature = "native-client")]
pub mod native;
pub mod pending_upgrades;
pub mod restart_lists;
pub mod tool_runner;
pub mod tools;

pub use admin::{
    AdminClient, ClientInfo, ExclusionReport, ExclusionTarget, clients_without_support_for,
};
pub use backup::{
    BackupModify, BackupStart, KeyRange, KeyRangeError, RestoreProgress, RestoreStart, RestoreState,
};
pub use cache::PassScopedAdmin;
pub use error::AdminError;
pub use fdbcli::{FdbcliAdminClient, FdbcliConfig, TlsFiles};
pub use locks::LockValue;
pub use pending_upgrades::PendingUpgrade;
pub use restart_lists::{RestartEntry, RestartList};
pub use tool_runner::{ProcessRunner, ToolOutput, ToolRun, ToolRunError, ToolRunner};
pub use tools::{FdbTool, FdbTools, MissingTool, ToolLayout};
