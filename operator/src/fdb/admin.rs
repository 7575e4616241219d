//! The admin-client interface: the operator's only door to the database.

use std::fmt;
use std::net::IpAddr;

use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::DatabaseConfiguration;
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::status_json::DatabaseStatus;

use fdb_shared::status_json::BackupStatus;

use super::backup::{BackupModify, BackupStart, RestoreProgress, RestoreStart};
use super::error::AdminError;
use super::locality_filter::{LocalityFilter, LocalityFilterError};
use super::locks::LockValue;
use super::pending_upgrades::PendingUpgrade;
use super::restart_lists::{RestartEntry, RestartList};

/// What to exclude or include.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExclusionTarget {
    /// A locality filter such as `locality_instance_id:storage-1`.
    Locality(LocalityFilter),
    /// One process address.
    Address(ProcessAddress),
    /// Every process on an IP address.
    Ip(IpAddr),
}

impl ExclusionTarget {
    /// The locality target of a process group (`locality_instance_id:<id>`); refused
    /// when the ID has characters a locality may not have.
    pub fn instance_id(process_group_id: &str) -> Result<Self, LocalityFilterError> {
        LocalityFilter::instance_id(process_group_id).map(Self::Locality)
    }

    /// Parses a target as [`fmt::Display`] writes it: a locality filter, an address or
    /// an IP address; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        if text.starts_with("locality_") {
            return LocalityFilter::parse(text).ok().map(Self::Locality);
        }
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Some(Self::Ip(ip));
        }
        ProcessAddress::parse(text)
            .ok()
            .filter(|a| a.to_string() == text)
            .map(Self::Address)
    }

    /// Whether the process (by its status entry) is selected by this target.
    pub fn matches(&self, process: &fdb_shared::status_json::ProcessStatus) -> bool {
        match self {
            Self::Locality(filter) => {
                let (key, value) = (filter.key(), filter.value());
                let locality = &process.locality;
                let actual = match key {
                    "instance_id" => locality.instance_id.clone(),
                    "zoneid" => locality.zoneid.clone(),
                    "machineid" => locality.machineid.clone(),
                    "dcid" => locality.dcid.clone(),
                    "data_hall" => locality.data_hall.clone(),
                    "dns_name" => locality.dns_name.clone(),
                    "process_id" => locality.process_id.clone(),
                    other => locality
                        .other
                        .get(other)
                        .and_then(|v| v.as_str())
                        .map(str::to_owned),
                };
                actual.as_deref() == Some(value)
            }
            Self::Address(address) => process
                .address
                .as_ref()
                .is_some_and(|actual| actual.host == address.host && actual.port == address.port),
            Self::Ip(ip) => process
                .address
                .as_ref()
                .and_then(ProcessAddress::ip)
                .is_some_and(|actual| actual == *ip),
        }
    }
}

impl fmt::Display for ExclusionTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Locality(filter) => write!(f, "{filter}"),
            Self::Address(address) => write!(f, "{address}"),
            Self::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// Which exclusions are complete (safe to remove) and which are not, with why.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExclusionReport {
    /// Targets whose processes are excluded and have no roles and no data.
    pub complete: Vec<ExclusionTarget>,
    /// Targets not yet safe to remove, with the reason.
    pub incomplete: Vec<(ExclusionTarget, String)>,
}

impl ExclusionReport {
    /// Whether every target is complete.
    pub fn all_complete(&self) -> bool {
        self.incomplete.is_empty()
    }

    /// Judges exclusions from a status document. A target is complete when at least one
    /// process matches it and every matching process is excluded and has no roles (a
    /// storage server keeps its role until its data has moved). A target that matches no
    /// process cannot be verified and stays incomplete.
    pub fn from_status(status: &DatabaseStatus, targets: &[ExclusionTarget]) -> Self {
        let mut report = Self::default();
        for target in targets {
            let matching: Vec<_> = status
                .cluster
                .processes
                .values()
                .filter(|process| target.matches(process))
                .collect();
            let reason = if matching.is_empty() {
                Some(
                    "no reporting process matches it, so its exclusion cannot be verified"
                        .to_owned(),
                )
            } else if let Some(process) = matching.iter().find(|p| !p.excluded) {
                Some(format!("{} is not excluded", describe(process)))
            } else {
                matching
                    .iter()
                    .find(|p| !p.roles.is_empty())
                    .map(|process| {
                        let roles: Vec<&str> =
                            process.roles.iter().map(|r| r.role.as_str()).collect();
                        format!(
                            "{} still has roles: {}",
                            describe(process),
                            roles.join(", ")
                        )
                    })
            };
            match reason {
                Some(reason) => report.incomplete.push((target.clone(), reason)),
                None => report.complete.push(target.clone()),
            }
        }
        report
    }
}

fn describe(process: &fdb_shared::status_json::ProcessStatus) -> String {
    match &process.address {
        Some(address) => format!("process {address}"),
        None => "a process without address".to_owned(),
    }
}

/// A client connected to the database.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ClientInfo {
    /// The client's address (`IP:port`).
    pub address: String,
    /// A client library version the client supports (a multi-version client supports
    /// several, and is listed once per version).
    pub version: FdbVersion,
    /// The protocol version of that library (hex), when known.
    pub protocol_version: Option<String>,
    /// The client's log group.
    pub log_group: String,
}

impl ClientInfo {
    /// The clients listed in a status document, one entry per (client, version).
    pub fn from_status(status: &DatabaseStatus) -> Vec<Self> {
        let mut clients = Vec::new();
        for supported in &status.cluster.clients.supported_versions {
            let Some(version) = supported.client_version else {
                continue;
            };
            for client in &supported.connected_clients {
                clients.push(Self {
                    address: client.address.clone(),
                    version,
                    protocol_version: supported.protocol_version.clone(),
                    log_group: client.log_group.clone(),
                });
            }
        }
        clients.sort();
        clients.dedup();
        clients
    }
}

/// The addresses of clients that cannot talk to a cluster on `target`: no version they
/// support is protocol-compatible with it. Clients in `ignored_log_groups` are skipped.
pub fn clients_without_support_for(
    clients: &[ClientInfo],
    target: &FdbVersion,
    ignored_log_groups: &[String],
) -> Vec<String> {
    let mut unsupported: Vec<String> = clients
        .iter()
        .filter(|client| !ignored_log_groups.contains(&client.log_group))
        .map(|client| client.address.clone())
        .filter(|address| {
            !clients.iter().any(|client| {
                &client.address == address && client.version.is_protocol_compatible(target)
            })
        })
        .collect();
    unsupported.sort();
    unsupported.dedup();
    unsupported
}

/// The operations the operator performs on a FoundationDB database.
///
/// Implemented over `fdbcli` (`FdbcliAdminClient`, in `fdbcli.rs`) and by the simulated
/// database; the operator holds it as `Arc<dyn AdminClient>`, usually wrapped in
/// `PassScopedAdmin` (in `cache.rs`) so each reconcile pass reads `status json` once.
#[async_trait::async_trait]
pub trait AdminClient: Send + Sync + fmt::Debug {
    /// The database's `status json`.
    async fn status(&self) -> Result<DatabaseStatus, AdminError>;

    /// Applies a database configuration: `configure new ...` when `new_database`, else
    /// `configure ...` with the given settings.
    async fn configure(
        &self,
        configuration: &DatabaseConfiguration,
        new_database: bool,
    ) -> Result<(), AdminError>;

    /// Excludes processes. `blocking` waits until their data has moved.
    async fn exclude(&self, targets: &[ExclusionTarget], blocking: bool) -> Result<(), AdminError>;

    /// Which of these targets are fully excluded (no roles, no data), i.e. safe to remove.
    async fn exclusion_status(
        &self,
        targets: &[ExclusionTarget],
    ) -> Result<ExclusionReport, AdminError> {
        let status = self.status().await?;
        Ok(ExclusionReport::from_status(&status, targets))
    }

    /// Includes processes again.
    async fn include(&self, targets: &[ExclusionTarget]) -> Result<(), AdminError>;

    /// Changes the coordinators; returns the new connection string.
    async fn change_coordinators(
        &self,
        coordinators: &[ProcessAddress],
    ) -> Result<ConnectionString, AdminError>;

    /// Kills (restarts) processes.
    async fn kill(&self, addresses: &[ProcessAddress]) -> Result<(), AdminError>;

    /// Puts a zone in maintenance for `duration_seconds`.
    async fn set_maintenance_zone(
        &self,
        zone: &str,
        duration_seconds: u64,
    ) -> Result<(), AdminError>;

    /// Ends maintenance.
    async fn reset_maintenance_zone(&self) -> Result<(), AdminError>;

    /// The global operator lock, if set.
    async fn read_lock(&self) -> Result<Option<LockValue>, AdminError>;

    /// Writes the global operator lock.
    async fn write_lock(&self, lock: &LockValue) -> Result<(), AdminError>;

    /// The operator IDs on the lock deny list.
    async fn deny_list(&self) -> Result<Vec<String>, AdminError>;

    /// Adds and removes deny list entries.
    async fn update_deny_list(&self, add: &[String], remove: &[String]) -> Result<(), AdminError>;

    /// Every entry of the pending-upgrade list, whatever its target version.
    async fn pending_upgrades(&self) -> Result<Vec<PendingUpgrade>, AdminError>;

    /// Adds and removes pending-upgrade entries in one transaction.
    async fn update_pending_upgrades(
        &self,
        add: &[PendingUpgrade],
        remove: &[PendingUpgrade],
    ) -> Result<(), AdminError>;

    /// Clears the whole pending-upgrade list (the `upgrades/` range).
    async fn clear_pending_upgrades(&self) -> Result<(), AdminError>;

    /// Every entry of a restart list shared by the instances of the database (all
    /// instances' entries).
    async fn restart_list(&self, list: RestartList) -> Result<Vec<RestartEntry>, AdminError> {
        let _ = list;
        Err(AdminError::Unsupported {
            command: format!("getrange {list}"),
            reason: "this admin client does not keep the restart lists".to_owned(),
        })
    }

    /// Adds and removes entries of a restart list in one transaction.
    async fn update_restart_list(
        &self,
        list: RestartList,
        add: &[RestartEntry],
        remove: &[RestartEntry],
    ) -> Result<(), AdminError> {
        let _ = (add, remove);
        Err(AdminError::Unsupported {
            command: format!("update {list}"),
            reason: "this admin client does not keep the restart lists".to_owned(),
        })
    }

    /// The connected clients, with the versions they support.
    async fn connected_clients(&self) -> Result<Vec<ClientInfo>, AdminError> {
        let status = self.status().await?;
        Ok(ClientInfo::from_status(&status))
    }

    /// `fdbbackup start`: starts a continuous backup.
    async fn start_backup(&self, request: &BackupStart) -> Result<(), AdminError> {
        let _ = request;
        Err(unsupported("fdbbackup start"))
    }

    /// `fdbbackup modify`: changes a running backup's URL or snapshot period.
    async fn modify_backup(&self, request: &BackupModify) -> Result<(), AdminError> {
        let _ = request;
        Err(unsupported("fdbbackup modify"))
    }

    /// `fdbbackup discontinue`: stops the backup on `tag`.
    async fn discontinue_backup(&self, tag: &str) -> Result<(), AdminError> {
        let _ = tag;
        Err(unsupported("fdbbackup discontinue"))
    }

    /// `fdbbackup pause` (`paused`) or `fdbbackup resume`.
    async fn set_backups_paused(&self, paused: bool) -> Result<(), AdminError> {
        Err(unsupported(if paused {
            "fdbbackup pause"
        } else {
            "fdbbackup resume"
        }))
    }

    /// `fdbbackup delete -d <url>`: deletes a backup's files from the blob store.
    async fn delete_backup_data(&self, url: &str) -> Result<(), AdminError> {
        let _ = url;
        Err(unsupported("fdbbackup delete"))
    }

    /// `fdbbackup status --json` of the backup on `tag`.
    async fn backup_status(&self, tag: &str) -> Result<BackupStatus, AdminError> {
        let _ = tag;
        Err(unsupported("fdbbackup status"))
    }

    /// `fdbrestore start`.
    async fn start_restore(&self, request: &RestoreStart) -> Result<(), AdminError> {
        let _ = request;
        Err(unsupported("fdbrestore start"))
    }

    /// `fdbrestore status`.
    async fn restore_status(&self) -> Result<RestoreProgress, AdminError> {
        Err(unsupported("fdbrestore status"))
    }
}

/// The answer of a client that has no backup tools.
fn unsupported(command: &str) -> AdminError {
    AdminError::Unsupported {
        command: command.to_owned(),
        reason: "this admin client cannot run the backup tools".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(json: &str) -> DatabaseStatus {
        DatabaseStatus::parse_fdbcli_output(json).unwrap()
    }

    #[test]
    fn exclusion_report_requires_excluded_processes_without_roles() {
        let status = status(
            r#"{"cluster":{"processes":{
            "a":{"address":"10.0.0.1:4501","excluded":true,"roles":[],"locality":{"instance_id":"storage-1"}},
            "b":{"address":"10.0.0.2:4501","excluded":true,"roles":[{"role":"storage"}],"locality":{"instance_id":"storage-2"}},
            "c":{"address":"10.0.0.3:4501","excluded":false,"roles":[],"locality":{"instance_id":"storage-3"}}}}}"#,
        );
        let targets = [
            ExclusionTarget::instance_id("storage-1").unwrap(),
            ExclusionTarget::instance_id("storage-2").unwrap(),
            ExclusionTarget::Address(ProcessAddress::parse("10.0.0.3:4501").unwrap()),
            ExclusionTarget::Ip("10.0.0.1".parse().unwrap()),
            ExclusionTarget::instance_id("storage-9").unwrap(),
        ];
        let report = ExclusionReport::from_status(&status, &targets);
        assert_eq!(
            report.complete,
            vec![targets[0].clone(), targets[3].clone()]
        );
        let reasons: Vec<&str> = report.incomplete.iter().map(|(_, r)| r.as_str()).collect();
        assert!(
            reasons[0].contains("still has roles: storage"),
            "{reasons:?}"
        );
        assert!(reasons[1].contains("not excluded"), "{reasons:?}");
        assert!(reasons[2].contains("cannot be verified"), "{reasons:?}");
    }

    #[test]
    fn client_compatibility() {
        let v = |text: &str| text.parse::<FdbVersion>().unwrap();
        let client = |address: &str, version: &str, group: &str| ClientInfo {
            address: address.to_owned(),
            version: v(version),
            protocol_version: None,
            log_group: group.to_owned(),
        };
        let clients = [
            client("10.0.0.1:1", "7.1.57", "app"),
            client("10.0.0.1:1", "7.3.43", "app"),
            client("10.0.0.2:1", "7.1.57", "app"),
            client("10.0.0.3:1", "7.1.57", "fdb-kubernetes-operator"),
        ];
        assert_eq!(
            clients_without_support_for(
                &clients,
                &v("7.3.40"),
                &["fdb-kubernetes-operator".to_owned()]
            ),
            vec!["10.0.0.2:1".to_owned()]
        );
        assert!(clients_without_support_for(&clients, &v("7.1.60"), &[]).is_empty());
    }
}
