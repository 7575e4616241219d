//! Where a process group is: its zone and the addresses it serves (or served) on.

use fdb_shared::connection_string::ConnectionString;

use crate::controller::objects::public_ip;
use crate::controller::snapshot::{ClusterSnapshot, GroupView};

/// The zone a group counts in: the zone FoundationDB or the status saw, else its pod's,
/// else the group itself (a group of unknown zone is its own zone).
/// (The pod's zone is derived once per snapshot, by the group view.)
pub(crate) fn zone(group: &GroupView<'_>) -> String {
    group
        .processes()
        .find_map(|p| p.locality.zoneid.clone())
        .or_else(|| group.status.fault_domain.clone())
        .or_else(|| group.pod_zone().map(str::to_owned))
        .unwrap_or_else(|| group.id().to_owned())
}

/// Every IP the group is or was seen with: the recorded addresses (all of them while it
/// is marked), its pod's current public IP and its processes' addresses.
pub(crate) fn known_ips(snapshot: &ClusterSnapshot, group: &GroupView<'_>) -> Vec<String> {
    let mut ips: Vec<String> = group.status.addresses.clone();
    if let Some(ip) = group
        .pod_head()
        .and_then(|pod| public_ip(snapshot.cluster(), pod))
    {
        ips.push(ip.to_owned());
    }
    for process in group.processes() {
        if let Some(host) = process.address.as_ref().map(|a| a.host.clone()) {
            ips.push(host);
        }
        if let Some(name) = process.locality.dns_name.clone() {
            ips.push(name);
        }
    }
    ips.sort();
    ips.dedup();
    ips
}

/// The current coordinator hosted by the group (by any address it is or was seen with,
/// or by its pod's DNS name), if any.
pub(crate) fn hosted_coordinator(
    snapshot: &ClusterSnapshot,
    group: &GroupView<'_>,
) -> Option<String> {
    let connection = snapshot
        .status()
        .connection_string
        .as_deref()
        .and_then(|s| ConnectionString::parse(s).ok())?;
    let ips = known_ips(snapshot, group);
    let pod_name = group.pod_head().and_then(|pod| pod.metadata.name.clone());
    connection
        .coordinators
        .iter()
        .find(|c| {
            ips.contains(&c.host)
                || pod_name
                    .as_deref()
                    .is_some_and(|name| c.host.split('.').next() == Some(name))
        })
        .map(ToString::to_string)
}
