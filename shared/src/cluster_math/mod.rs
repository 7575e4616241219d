//! Values derived from a cluster spec: fault tolerance, role and process counts,
//! coordinator count, the desired database configuration and its `configure` command,
//! container images and whether locks are used. Pure functions of the spec.

pub mod coordinators;
pub mod counts;
pub mod desired_configuration;
pub mod images;
pub mod locks;
pub mod region_migration;

pub use coordinators::desired_coordinator_count;
pub use counts::{
    DesiredProcessCounts, RoleCounts, desired_process_counts, fault_tolerance,
    minimum_fault_domains, role_counts,
};
pub use desired_configuration::{
    configuration_string, configure_change_command, configure_new_command,
    desired_database_configuration,
};
pub use images::{main_image, select_image, sidecar_image, unified_image};
pub use locks::uses_locks;
pub use region_migration::next_configuration_change;
