//! `fix-coordinator-ips`: after pods came back with new IPs (a whole-cluster restart,
//! say), the connection string still names the old ones and the database cannot find its
//! coordinators. The new connection string maps each coordinator to the process group
//! that had its IP and that group's pod's current IP.
//!
//! Applying it means writing the cluster file in every pod and restarting fdbserver
//! there, through `pods/exec`, which this plugin does not have yet: only `--dry-run` runs.

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::PublicIpSource;
use fdb_shared::connection_string::ConnectionString;
use k8s_openapi::api::core::v1::Pod;

use crate::cli::FixCoordinatorIpsArgs;
use crate::error::PluginError;
use crate::session::{Session, process_group_of};

/// The annotation holding a pod's service IP with `routing.publicIPSource: service`.
const PUBLIC_IP_ANNOTATION: &str = "foundationdb.org/public-ip";

/// What the new connection string would be, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordinatorPlan {
    /// The connection string now.
    pub current: String,
    /// With each coordinator's IP updated.
    pub new: String,
    /// One line per coordinator: kept, changed (old -> new, group) or not found.
    pub notes: Vec<String>,
}

impl CoordinatorPlan {
    /// Whether anything would change.
    pub fn changes(&self) -> bool {
        self.current != self.new
    }
}

fn public_ip(cluster: &FoundationDBCluster, pod: &Pod) -> Option<String> {
    if cluster.spec.routing.public_ip_source() == PublicIpSource::Service {
        return pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(PUBLIC_IP_ANNOTATION).cloned());
    }
    pod.status.as_ref().and_then(|s| s.pod_ip.clone())
}

/// Maps each coordinator to its process group's pod's current IP (pure).
pub fn plan(cluster: &FoundationDBCluster, pods: &[Pod]) -> Result<CoordinatorPlan, PluginError> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let status = cluster.status.clone().unwrap_or_default();
    let current = status.connection_string.clone().ok_or_else(|| {
        PluginError::NotFound(format!(
            "FoundationDBCluster {name} has no connection string in its status"
        ))
    })?;
    let parsed = ConnectionString::parse(&current)
        .map_err(|e| PluginError::Unsupported(format!("FoundationDBCluster {name}: {e}")))?;
    let mut notes = Vec::new();
    let mut coordinators = Vec::new();
    for coordinator in &parsed.coordinators {
        if coordinator.is_dns_name() {
            notes.push(format!("{coordinator}: a DNS name, kept"));
            coordinators.push(coordinator.clone());
            continue;
        }
        let group = status
            .process_groups
            .iter()
            .find(|g| g.addresses.contains(&coordinator.host));
        let Some(group) = group else {
            notes.push(format!("{coordinator}: no process group has this IP, kept"));
            coordinators.push(coordinator.clone());
            continue;
        };
        let pod = pods.iter().find(|pod| {
            process_group_of(cluster, pod).as_deref() == Some(group.process_group_id.as_str())
        });
        let ip = pod
            .and_then(|pod| public_ip(cluster, pod))
            .or_else(|| group.addresses.last().cloned());
        match ip {
            Some(ip) if ip != coordinator.host => {
                let updated = ProcessAddress {
                    host: ip,
                    port: coordinator.port,
                    tls: coordinator.tls,
                };
                notes.push(format!(
                    "{coordinator} -> {updated} (process group {})",
                    group.process_group_id
                ));
                coordinators.push(updated);
            }
            _ => {
                notes.push(format!(
                    "{coordinator}: process group {}, unchanged",
                    group.process_group_id
                ));
                coordinators.push(coordinator.clone());
            }
        }
    }
    let new = ConnectionString {
        coordinators,
        ..parsed
    }
    .to_string();
    Ok(CoordinatorPlan {
        current,
        new,
        notes,
    })
}

/// Runs `fix-coordinator-ips`.
pub async fn run(session: &Session, args: &FixCoordinatorIpsArgs) -> Result<u8, PluginError> {
    let cluster = session.cluster(&args.cluster).await?;
    let pods = session.pods_of(&cluster).await?;
    let plan = plan(&cluster, &pods)?;
    println!("Current connection string: {}", plan.current);
    for note in &plan.notes {
        println!("  {note}");
    }
    println!("New connection string: {}", plan.new);
    if !plan.changes() {
        println!("Nothing to change");
        return Ok(0);
    }
    if args.dry_run {
        println!("Dry run: nothing was changed");
        return Ok(0);
    }
    Err(PluginError::Unsupported(
        "fix-coordinator-ips: applying the new connection string needs pods/exec (write the cluster file and restart fdbserver in every pod), which kubectl-fdb does not support yet; use --dry-run".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster() -> FoundationDBCluster {
        serde_json::from_value(json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample", "namespace": "db"},
            "spec": {"version": "7.1.57"},
            "status": {
                "connectionString": "sample:abc@127.0.0.1:4501,127.0.0.2:4501:tls,127.0.0.3:4501",
                "processGroups": [
                    {"processGroupID": "storage-1", "processClass": "storage", "addresses": ["127.0.0.1"]},
                    {"processGroupID": "storage-2", "processClass": "storage", "addresses": ["127.0.0.2"]},
                ]},
        }))
        .unwrap()
    }

    fn pod(group: &str, ip: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": format!("sample-{group}"),
                         "labels": {"foundationdb.org/fdb-process-group-id": group}},
            "status": {"podIP": ip},
        }))
        .unwrap()
    }

    #[test]
    fn moved_pods_change_their_coordinator_and_others_stay() {
        let pods = [pod("storage-1", "127.0.0.1"), pod("storage-2", "127.0.0.9")];
        let plan = plan(&cluster(), &pods).unwrap();
        assert_eq!(
            plan.new,
            "sample:abc@127.0.0.1:4501,127.0.0.9:4501:tls,127.0.0.3:4501"
        );
        assert!(plan.changes());
        assert_eq!(
            plan.notes[1],
            "127.0.0.2:4501:tls -> 127.0.0.9:4501:tls (process group storage-2)"
        );
        assert!(plan.notes[2].contains("no process group has this IP"));
        let unchanged = super::plan(&cluster(), &[pod("storage-2", "127.0.0.2")]).unwrap();
        assert!(!unchanged.changes());
    }
}
