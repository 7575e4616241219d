//! `fix-coordinator-ips`: after pods came back with new IPs (a whole-cluster restart,
//! say), the connection string still names the old ones and the database cannot find its
//! coordinators. The new connection string maps each coordinator to the process group
//! that had its IP and that group's pod's current IP.
//!
//! Applying it does what the Go plugin does, through the Kubernetes API: in every running
//! pod of the cluster it writes the new connection string to the cluster file fdbserver
//! keeps (`/var/fdb/data/fdb.cluster`) and restarts fdbserver (`pkill fdbserver`; fdbmonitor
//! starts it again), through `pods/exec`; then it sets the connection string in the
//! cluster's status and its ConfigMap, as `update connection-string` does. The pods come
//! first: if one of them fails, the status keeps the old string, so running the command
//! again redoes every pod (each step is idempotent). The connection string reaches the
//! shell as a positional argument (`"$1"`), never spliced into the script.

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::PublicIpSource;
use fdb_shared::connection_string::ConnectionString;
use k8s_openapi::api::core::v1::Pod;

use fdb_shared::api::cluster::config_map_name;
use fdb_shared::monitor_conf::render::CLUSTER_FILE_PATH;

use crate::cli::FixCoordinatorIpsArgs;
use crate::commands::update::{ConnectionStringChange, write_connection_string};
use crate::error::PluginError;
use crate::exec::{MAIN_CONTAINER, exec, fdbcli_pods};
use crate::session::{Session, process_group_of};

/// The annotation holding a pod's service IP with `routing.publicIPSource: service`.
const PUBLIC_IP_ANNOTATION: &str = "foundationdb.org/public-ip";
/// The annotation naming the IP family a pod was made for (`routing.podIPFamily`).
const IP_FAMILY_ANNOTATION: &str = "foundationdb.org/ip-family";

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

/// The pod's public IP (its service's with `routing.publicIPSource: service`).
pub(crate) fn public_ip(cluster: &FoundationDBCluster, pod: &Pod) -> Option<String> {
    if cluster.spec.routing.public_ip_source() == PublicIpSource::Service {
        return pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(PUBLIC_IP_ANNOTATION).cloned());
    }
    let status = pod.status.as_ref()?;
    let Some(family) = ip_family(pod) else {
        return status.pod_ip.clone();
    };
    // A pod made for `routing.podIPFamily` listens on its IP of that family: the first
    // of `status.podIPs` (the Go plugin's `GetPublicIPsForPod`, internal/pod_helper.go).
    status
        .pod_ips
        .iter()
        .flatten()
        .map(|listed| listed.ip.as_str())
        .find(|ip| {
            ip.parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_ipv6() == (family == 6))
        })
        .map(str::to_owned)
}

/// The IP family (4 or 6) the pod was made for, from its `foundationdb.org/ip-family`
/// annotation (the Go operator writes `0` for none).
fn ip_family(pod: &Pod) -> Option<u8> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(IP_FAMILY_ANNOTATION)?
        .trim()
        .parse()
        .ok()
        .filter(|family| matches!(family, 4 | 6))
}

/// The connection string in the cluster's status, as written and parsed; an error naming
/// the cluster when it has none or it does not parse.
pub(crate) fn status_connection_string(
    cluster: &FoundationDBCluster,
) -> Result<(String, ConnectionString), PluginError> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let current = cluster
        .status
        .as_ref()
        .and_then(|s| s.connection_string.clone())
        .ok_or_else(|| {
            PluginError::NotFound(format!(
                "FoundationDBCluster {name} has no connection string in its status"
            ))
        })?;
    let parsed = ConnectionString::parse(&current).map_err(|e| {
        PluginError::Unsupported(format!(
            "FoundationDBCluster {name}: {}",
            fdb_shared::error_chain::ErrorChain(&e)
        ))
    })?;
    Ok((current, parsed))
}

/// Maps each coordinator to its process group's pod's current IP (pure).
pub fn plan(cluster: &FoundationDBCluster, pods: &[Pod]) -> Result<CoordinatorPlan, PluginError> {
    let (current, parsed) = status_connection_string(cluster)?;
    let status = cluster.status.clone().unwrap_or_default();
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
    let targets = fdbcli_pods(&pods);
    let description = format!(
        "Will write the new connection string to {CLUSTER_FILE_PATH} and restart fdbserver in {} running pod(s) ({}), then set it in the status of FoundationDBCluster {}/{} and in ConfigMap {}",
        targets.len(),
        targets.join(", "),
        session.namespace,
        args.cluster,
        config_map_name(&cluster),
    );
    if args.dry_run {
        println!("{description}\nDry run: nothing was changed");
        return Ok(0);
    }
    session.confirm(&description)?;
    let mut failed = Vec::new();
    for pod in &targets {
        match rewrite_cluster_file(session, pod, &plan.new).await {
            Ok(true) => println!("  {pod}: cluster file written, fdbserver restarted"),
            Ok(false) => println!("  {pod}: cluster file written, no fdbserver was running"),
            Err(error) => {
                println!("  {pod}: {error}");
                failed.push(pod.clone());
            }
        }
    }
    if !failed.is_empty() {
        // The status keeps the old string: running the command again redoes every pod.
        return Err(PluginError::Refused {
            action: format!("rewrite the cluster file in pod(s) {}", failed.join(", ")),
            message: "the connection string in the status and ConfigMap was left unchanged; run the command again once they run".to_owned(),
            code: 500,
        });
    }
    let change = ConnectionStringChange {
        current: Some(plan.current.clone()),
        new: plan.new.clone(),
        config_map: config_map_name(&cluster),
    };
    write_connection_string(session, &args.cluster, &change).await?;
    println!(
        "Updated the connection string of {} to {}",
        args.cluster, plan.new
    );
    Ok(0)
}

/// The script that writes its first argument to the cluster file; the connection string
/// is that argument, never part of the script's text.
fn write_script() -> String {
    format!("printf '%s\\n' \"$1\" > {CLUSTER_FILE_PATH}")
}

/// Writes `connection_string` to the cluster file of `pod` and restarts its fdbserver
/// processes (`pkill` finding none is no failure: fdbmonitor was restarting them);
/// returns whether a process was killed.
pub(crate) async fn rewrite_cluster_file(
    session: &Session,
    pod: &str,
    connection_string: &str,
) -> Result<bool, PluginError> {
    let command = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        write_script(),
        "fix-coordinator-ips".to_owned(),
        connection_string.to_owned(),
    ];
    let written = exec(session, pod, MAIN_CONTAINER, command).await?;
    if written.code != 0 {
        return Err(PluginError::Refused {
            action: format!("write {CLUSTER_FILE_PATH} in pod {pod}"),
            message: crate::error::one_line(&written.stderr),
            code: 500,
        });
    }
    let command = vec!["pkill".to_owned(), "fdbserver".to_owned()];
    let killed = exec(session, pod, MAIN_CONTAINER, command).await?;
    if killed.code > 1 {
        return Err(PluginError::Refused {
            action: format!("restart fdbserver in pod {pod}"),
            message: crate::error::one_line(&killed.stderr),
            code: 500,
        });
    }
    Ok(killed.code == 0)
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

    /// A dual-stack pod made for IPv6 is reached on its IPv6 address, as the Go plugin
    /// reads it; without a family (or Go's `0`), on `status.podIP`.
    #[test]
    fn a_pod_made_for_an_ip_family_gives_its_address_of_that_family() {
        let dual = |family: Option<&str>| -> Pod {
            let mut pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": "sample-storage-2",
                             "labels": {"foundationdb.org/fdb-process-group-id": "storage-2"}},
                "status": {"podIP": "10.0.0.9",
                           "podIPs": [{"ip": "10.0.0.9"}, {"ip": "fd00::9"}]},
            }))
            .unwrap();
            if let Some(family) = family {
                pod.metadata.annotations = Some(
                    [(IP_FAMILY_ANNOTATION.to_owned(), family.to_owned())]
                        .into_iter()
                        .collect(),
                );
            }
            pod
        };
        assert_eq!(
            public_ip(&cluster(), &dual(Some("6"))).as_deref(),
            Some("fd00::9")
        );
        assert_eq!(
            public_ip(&cluster(), &dual(Some("4"))).as_deref(),
            Some("10.0.0.9")
        );
        assert_eq!(
            public_ip(&cluster(), &dual(Some("0"))).as_deref(),
            Some("10.0.0.9")
        );
        assert_eq!(
            public_ip(&cluster(), &dual(None)).as_deref(),
            Some("10.0.0.9")
        );
        let plan = plan(&cluster(), &[dual(Some("6"))]).unwrap();
        assert_eq!(
            plan.new,
            "sample:abc@127.0.0.1:4501,[fd00::9]:4501:tls,127.0.0.3:4501"
        );
    }

    #[test]
    fn the_connection_string_is_an_argument_of_the_script_not_its_text() {
        assert_eq!(
            write_script(),
            r#"printf '%s\n' "$1" > /var/fdb/data/fdb.cluster"#
        );
    }
}
