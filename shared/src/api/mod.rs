//! The `apps.foundationdb.org/v1beta2` API types.

pub(crate) mod defaults;
pub(crate) mod open_enum;

pub mod backup;
pub mod cluster;
pub mod crd;
pub mod database_configuration;
pub mod embedded_schema;
pub mod image_config;
pub mod process_class;
pub mod restore;

pub use backup::{FoundationDBBackup, FoundationDBBackupSpec, FoundationDBBackupStatus};
pub use cluster::{FoundationDBCluster, FoundationDBClusterSpec, FoundationDBClusterStatus};
pub use database_configuration::{
    DatabaseConfiguration, RedundancyMode, StorageEngine, StorageMigrationType,
};
pub use image_config::{ContainerOverrides, ImageConfig};
pub use process_class::ProcessClass;
pub use restore::{FoundationDBRestore, FoundationDBRestoreSpec, FoundationDBRestoreStatus};
