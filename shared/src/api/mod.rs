//! The `apps.foundationdb.org/v1beta2` API types.

pub mod database_configuration;
pub mod process_class;

pub use database_configuration::{DatabaseConfiguration, RedundancyMode, StorageEngine};
pub use process_class::ProcessClass;
