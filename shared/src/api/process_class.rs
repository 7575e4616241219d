//! FoundationDB process classes.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A FoundationDB process class: what role a process is meant to play.
///
/// The names are FoundationDB's own (`storage`, `log`, `cluster_controller`, ...).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ProcessClass {
    /// Storage servers: hold the data.
    Storage,
    /// Transaction logs.
    Log,
    /// Transaction class: logs, and also eligible for other transaction-system roles.
    Transaction,
    /// Stateless roles (proxies, resolvers, master, ...).
    Stateless,
    /// Dedicated cluster controller.
    ClusterController,
    /// Dedicated master.
    Master,
    /// Dedicated resolver.
    Resolution,
    /// Proxy (before commit and GRV proxies were split).
    Proxy,
    /// Commit proxy.
    CommitProxy,
    /// GRV proxy.
    GrvProxy,
    /// Ratekeeper.
    Ratekeeper,
    /// Data distributor.
    DataDistributor,
    /// Coordinator-only process.
    Coordinator,
    /// Backup agent.
    Backup,
    /// Fast restore worker.
    FastRestore,
    /// Log router.
    Router,
    /// Storage cache.
    StorageCache,
    /// Test process.
    Test,
    /// Tester.
    Tester,
    /// No class set.
    Unset,
}

/// Every process class, in a stable order.
pub const ALL_PROCESS_CLASSES: [ProcessClass; 20] = [
    ProcessClass::Storage,
    ProcessClass::Log,
    ProcessClass::Transaction,
    ProcessClass::Stateless,
    ProcessClass::ClusterController,
    ProcessClass::Master,
    ProcessClass::Resolution,
    ProcessClass::Proxy,
    ProcessClass::CommitProxy,
    ProcessClass::GrvProxy,
    ProcessClass::Ratekeeper,
    ProcessClass::DataDistributor,
    ProcessClass::Coordinator,
    ProcessClass::Backup,
    ProcessClass::FastRestore,
    ProcessClass::Router,
    ProcessClass::StorageCache,
    ProcessClass::Test,
    ProcessClass::Tester,
    ProcessClass::Unset,
];

/// An unknown process class name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a FoundationDB process class")]
pub struct UnknownProcessClass(pub String);

impl ProcessClass {
    /// FoundationDB's name for the class (`cluster_controller`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Storage => "storage",
            Self::Log => "log",
            Self::Transaction => "transaction",
            Self::Stateless => "stateless",
            Self::ClusterController => "cluster_controller",
            Self::Master => "master",
            Self::Resolution => "resolution",
            Self::Proxy => "proxy",
            Self::CommitProxy => "commit_proxy",
            Self::GrvProxy => "grv_proxy",
            Self::Ratekeeper => "ratekeeper",
            Self::DataDistributor => "data_distributor",
            Self::Coordinator => "coordinator",
            Self::Backup => "backup",
            Self::FastRestore => "fast_restore",
            Self::Router => "router",
            Self::StorageCache => "storage_cache",
            Self::Test => "test",
            Self::Tester => "tester",
            Self::Unset => "unset",
        }
    }

    /// The class name as used in Kubernetes object names (`cluster-controller`).
    pub fn dns_name(self) -> String {
        self.as_str().replace('_', "-")
    }

    /// Whether processes of this class keep data on disk (and so get a PVC).
    pub const fn is_stateful(self) -> bool {
        matches!(self, Self::Storage | Self::Log | Self::Transaction)
    }

    /// Whether processes of this class may host coordinators: the stateful classes and
    /// `coordinator` itself (the Go operator's `IsEligibleAsCandidate` without a
    /// `coordinatorSelection`).
    pub const fn may_host_coordinators(self) -> bool {
        self.is_stateful() || matches!(self, Self::Coordinator)
    }

    /// Whether processes of this class run transaction logs.
    pub const fn is_log_process(self) -> bool {
        matches!(self, Self::Log | Self::Transaction)
    }

    /// Whether this is one of the dedicated stateless role classes (not `stateless`
    /// itself) whose count, when set, is taken out of the stateless total.
    pub const fn is_dedicated_stateless_role(self) -> bool {
        matches!(
            self,
            Self::ClusterController
                | Self::Master
                | Self::Resolution
                | Self::Proxy
                | Self::CommitProxy
                | Self::GrvProxy
                | Self::Ratekeeper
                | Self::DataDistributor
        )
    }
}

impl fmt::Display for ProcessClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ProcessClass {
    type Err = UnknownProcessClass;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        ALL_PROCESS_CLASSES
            .into_iter()
            .find(|class| class.as_str() == name)
            .ok_or_else(|| UnknownProcessClass(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_serde_and_from_str() {
        for class in ALL_PROCESS_CLASSES {
            let json = serde_json::to_string(&class).unwrap();
            assert_eq!(json, format!("\"{}\"", class.as_str()));
            assert_eq!(class.as_str().parse::<ProcessClass>().unwrap(), class);
        }
        assert!("blob_worker".parse::<ProcessClass>().is_err());
    }

    #[test]
    fn stateful_and_dns_names() {
        assert!(ProcessClass::Storage.is_stateful());
        assert!(!ProcessClass::Stateless.is_stateful());
        assert_eq!(
            ProcessClass::ClusterController.dns_name(),
            "cluster-controller"
        );
    }
}
