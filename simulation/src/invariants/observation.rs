//! What the runner observes for the invariants, as plain data.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::api::ProcessClass;

use fdb_operator::fdb::ClientInfo;

/// A pod or PVC of the cluster, as it was before an action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackedObject {
    /// The object's name.
    pub name: String,
    /// The object's uid (a recreated object is another object).
    pub uid: String,
    /// Its process group ID.
    pub group: String,
    /// Its process class.
    pub class: ProcessClass,
    /// Whether its deletion had already been requested.
    pub terminating: bool,
    /// For pods: the IP addresses its processes were reachable at (pod IP, and the
    /// addresses the database saw for the group).
    pub addresses: Vec<String>,
}

/// The deletions one action requested, found by comparing objects before and after.
pub struct ActionWindow<'a> {
    /// Simulated seconds since the start.
    pub time: u64,
    /// The pass number (0 for `act` steps).
    pub pass: u64,
    /// Who acted, for messages (`operator`, `user`).
    pub by: &'a str,
    /// Pods whose deletion the action requested.
    pub deleted_pods: &'a [TrackedObject],
    /// PVCs whose deletion the action requested.
    pub deleted_pvcs: &'a [TrackedObject],
    /// Why deleting a group's data would be risky now (`None`: nothing left on it).
    pub removal_risk: &'a dyn Fn(&str) -> Option<String>,
    /// Groups the user asked to remove without exclusion.
    pub removed_without_exclusion: &'a BTreeSet<String>,
    /// The current coordinators' `IP:port`.
    pub coordinators: &'a [String],
}

/// What is out of service, as the database sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceState {
    /// Zones with a storage process that does not serve while it holds data.
    pub storage_zones_down: BTreeSet<String>,
    /// Zones with a log process that does not serve and is not excluded.
    pub log_zones_down: BTreeSet<String>,
    /// Coordinators no serving process answers for.
    pub coordinators_down: usize,
    /// Coordinators in the connection string.
    pub coordinators: usize,
    /// In three_data_hall, each zone's data hall (empty otherwise): a whole hall counts
    /// as one failure there.
    pub zone_halls: BTreeMap<String, String>,
}

/// A period during which the database was unavailable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outage {
    /// When it began (unix seconds).
    pub start: i64,
    /// When it ended, if it has.
    pub end: Option<i64>,
    /// Why, in words.
    pub cause: String,
    /// The longest one recovery took while it lasted (a `slowRecovery` fault makes it
    /// longer than the world's `recoverySeconds`).
    pub recovery_seconds: i64,
}

/// The clients connected to the database, and the cluster's upgrade settings.
pub struct ClientView<'a> {
    /// Connected clients.
    pub clients: &'a [ClientInfo],
    /// `automationOptions.ignoreLogGroupsForUpgrade`.
    pub ignored_log_groups: &'a BTreeSet<String>,
    /// `ignoreUpgradabilityChecks`.
    pub checks_disabled: bool,
}
