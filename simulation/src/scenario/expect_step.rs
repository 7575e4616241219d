//! `expect` steps: the conditions a scenario states about the world at its end.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An `expect` step: conditions on the world, awaited for at most `within` seconds.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpectStep {
    /// Seconds of simulated time to wait for the conditions (default 0: check now).
    #[serde(default)]
    pub within: u64,
    /// Once the conditions hold, they must keep holding at every moment of the next
    /// `throughout` seconds, while the world and the operator run (default 0: only once;
    /// Gomega's `Consistently`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub throughout: u64,
    /// The cluster (by name) whose operator and object `reconciled`, `runningVersion`
    /// and `processGroups` are about, and whose pods `pods` and `images` count (default:
    /// the first cluster's, and every pod).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// The operator's last pass reported Reconciled (and nothing changed since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciled: Option<bool>,
    /// The database accepts transactions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available: Option<bool>,
    /// Every fdbserver process runs this version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The cluster's `status.runningVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_version: Option<String>,
    /// Live process groups (not marked for removal) by class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_groups: Option<BTreeMap<String, u32>>,
    /// Pods that are not terminating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<u32>,
    /// The database's exclusion list, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<Vec<String>>,
    /// Every pod's image of a container: `main`, `sidecar`, or a container's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<BTreeMap<String, String>>,
    /// Conditions on FoundationDBBackups, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backups: Option<BTreeMap<String, ResourceExpectation>>,
    /// Conditions on FoundationDBRestores, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restores: Option<BTreeMap<String, ResourceExpectation>>,
    /// The database's user data (`fdb.dataDigest`) is what it was at the latest
    /// restorable version of this FoundationDBBackup's blob store URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_matches_backup: Option<String>,
    /// The database's maintenance zone: a zone, or `null` for none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub maintenance_zone: Option<Option<String>>,
    /// Every team tracker of `status json` (`cluster.data.team_trackers[].state.healthy`)
    /// reports healthy (`true`), or every one reports unhealthy (`false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teams_healthy: Option<bool>,
    /// Process group conditions, by group ID: each named condition is on that group in
    /// the cluster's status (an empty list: the group has no condition at all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<BTreeMap<String, Vec<String>>>,
    /// Every process of the database listens on an address of this family (`4` or
    /// `6`), and so does every coordinator (its resolved address, and its address in
    /// the connection string when that holds IPs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_family: Option<u8>,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// A field that may be `null` on purpose: present (`Some`) even when null.
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// Conditions on one backup or restore resource.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceExpectation {
    /// The resource exists (`true`) or is gone (`false`); default `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    /// Every field given here equals the resource's status field (a subset match: maps
    /// compare key by key, other values exactly; `null` matches an absent field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
    /// Backups only: at least this many completed snapshots in its blob store URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshots: Option<u32>,
    /// Backups only: whether the container at its blob store URL is encrypted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<bool>,
}

impl ExpectStep {
    pub(super) fn validate(&self) -> Result<(), (&'static str, String)> {
        let conditions = [
            self.reconciled.is_some(),
            self.available.is_some(),
            self.version.is_some(),
            self.running_version.is_some(),
            self.process_groups.is_some(),
            self.pods.is_some(),
            self.excluded.is_some(),
            self.images.is_some(),
            self.backups.is_some(),
            self.restores.is_some(),
            self.data_matches_backup.is_some(),
            self.maintenance_zone.is_some(),
            self.teams_healthy.is_some(),
            self.conditions.is_some(),
        ];
        if !conditions.contains(&true) {
            return Err(("", "must state at least one condition (reconciled, available, version, runningVersion, processGroups, pods, excluded, images, backups, restores, dataMatchesBackup, maintenanceZone, teamsHealthy, conditions)".to_owned()));
        }
        for (field, list) in [("backups", &self.backups), ("restores", &self.restores)] {
            for (name, expectation) in list.iter().flatten() {
                if expectation.status.as_ref().is_some_and(|s| !s.is_object()) {
                    return Err((field, format!("{name}.status must be a mapping")));
                }
                if field == "restores" && expectation.snapshots.is_some() {
                    return Err((field, format!("{name}.snapshots applies to backups only")));
                }
                if field == "restores" && expectation.encrypted.is_some() {
                    return Err((field, format!("{name}.encrypted applies to backups only")));
                }
                if expectation.exists == Some(false)
                    && (expectation.status.is_some() || expectation.snapshots.is_some())
                {
                    return Err((
                        field,
                        format!("{name}: a resource expected gone has no status or snapshots"),
                    ));
                }
            }
        }
        for (field, version) in [
            ("version", &self.version),
            ("runningVersion", &self.running_version),
        ] {
            if let Some(version) = version {
                version
                    .parse::<fdb_shared::FdbVersion>()
                    .map_err(|error| (field, error.to_string()))?;
            }
        }
        if let Some(zone) = &self.maintenance_zone
            && zone.as_deref().is_some_and(|z| z.trim().is_empty())
        {
            return Err((
                "maintenanceZone",
                "must name a zone, or be null for none".to_owned(),
            ));
        }
        for (group, conditions) in self.conditions.iter().flatten() {
            if group.trim().is_empty() {
                return Err(("conditions", "a process group ID is empty".to_owned()));
            }
            for condition in conditions {
                if !fdb_shared::api::cluster::ProcessGroupConditionType::from(condition.as_str())
                    .is_known()
                {
                    return Err((
                        "conditions",
                        format!("{group}: {condition:?} is not a process group condition"),
                    ));
                }
            }
        }
        if let Some(classes) = &self.process_groups {
            for class in classes.keys() {
                class
                    .parse::<fdb_shared::api::ProcessClass>()
                    .map_err(|_| ("processGroups", format!("{class:?} is not a process class")))?;
            }
        }
        Ok(())
    }
}
