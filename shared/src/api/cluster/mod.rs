//! The `FoundationDBCluster` resource: spec split by concern, status and conditions.

pub mod automation;
pub mod conditions;
pub mod config_map;
pub mod locks;
pub mod processes;
pub mod routing;
pub mod settings;
pub mod spec;
pub mod status;

pub use automation::{
    AutomaticReplacementOptions, AutomationOptions,
    DEFAULT_MAX_FAULT_DOMAINS_WITH_TAINTED_PROCESS_GROUPS, DeletionMode, MaintenanceModeOptions,
    PodUpdateStrategy, TaintReplacementOption,
};
pub use conditions::{ProcessGroupCondition, ProcessGroupConditionType};
pub use config_map::{CLUSTER_FILE_KEY, config_map_name};
pub use locks::{LockDenyListEntry, LockOptions};
pub use processes::{GENERAL_PROCESS_SETTINGS, ProcessCounts, ProcessSettings, ProcessSettingsMap};
pub use routing::{PublicIpSource, RoutingConfig};
pub use settings::{
    BuggifyConfig, CoordinatorSelectionSetting, CrashLoopContainerObject, FaultDomain, LabelConfig,
    PartialConnectionString,
};
pub use spec::{FoundationDBCluster, FoundationDBClusterSpec, ImageType, ImageTypeSource};
pub use status::{
    ClusterGenerationStatus, ClusterHealth, FoundationDBClusterStatus, LockSystemStatus,
    MaintenanceModeInfo, ProcessGroupStatus, RequiredAddressSet,
};
