//! The coordinator candidates of a cluster: its live stateful process groups whose pods
//! can take a coordinator, with their addresses and zones. Shared by the steps that
//! choose coordinators (the first connection string, a coordinator change, moving one
//! off a pod about to be deleted).

use fdb_shared::address::ProcessAddress;

use super::super::model::pod::parse_any_process_group_id;
use super::super::objects::public_ip;
use super::super::snapshot::{ClusterSnapshot, GroupView};
use super::{CoordinatorCandidate, address_on_host, coordinator_host, dns_suffix};

/// Why candidates could not all be examined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CandidateGaps {
    /// Stateful groups without a pod, or whose pod is not scheduled (or has no IP when
    /// IPs are used).
    pub waiting: Vec<String>,
}

/// The coordinator candidates of a cluster from its live stateful process groups and
/// their pods, skipping groups for which `unusable` says so; groups whose pod cannot be
/// placed yet are listed in the gaps.
pub(crate) fn coordinator_candidates(
    snapshot: &ClusterSnapshot,
    current: &[String],
    unusable: &dyn Fn(&GroupView<'_>) -> bool,
) -> (Vec<CoordinatorCandidate>, CandidateGaps) {
    collect(snapshot, current, unusable, None)
}

/// The candidates [`coordinator_candidates`] would mark `current`, and only those: the
/// groups whose coordinator host is not one of `current`'s are not examined (a decision
/// that reads only the current coordinators' candidates, in a steady pass, then costs
/// five groups' addresses, not every group's; issue 37).
pub(crate) fn current_candidates(
    snapshot: &ClusterSnapshot,
    current: &[ProcessAddress],
    current_text: &[String],
    unusable: &dyn Fn(&GroupView<'_>) -> bool,
) -> Vec<CoordinatorCandidate> {
    let (mut candidates, _) = collect(snapshot, current_text, unusable, Some(current));
    candidates.retain(|candidate| candidate.current);
    candidates
}

/// The hosts of the current coordinators, to tell which groups could host one without
/// building every group's host.
struct CurrentHosts<'c> {
    /// [`dns_suffix`]: the hosts are pods' DNS names.
    dns_suffix: Option<String>,
    hosts: Vec<&'c str>,
}

impl CurrentHosts<'_> {
    /// Whether the pod named `pod_name`, of IP `ip`, has one of the hosts.
    fn admit(&self, pod_name: &str, ip: Option<&str>) -> bool {
        match &self.dns_suffix {
            Some(suffix) => self
                .hosts
                .iter()
                .any(|host| host.strip_suffix(suffix.as_str()) == Some(pod_name)),
            None => ip.is_some_and(|ip| self.hosts.contains(&ip)),
        }
    }
}

/// [`coordinator_candidates`], examining only the groups on a host of `hosts_of` when
/// given. An address is current only when its text is one of `current`'s, and such an
/// address has the host of one of them (a checked address reads back as itself), so the
/// groups left out could not have been current.
fn collect(
    snapshot: &ClusterSnapshot,
    current: &[String],
    unusable: &dyn Fn(&GroupView<'_>) -> bool,
    hosts_of: Option<&[ProcessAddress]>,
) -> (Vec<CoordinatorCandidate>, CandidateGaps) {
    let cluster = snapshot.cluster();
    let suffix = dns_suffix(cluster);
    let by_dns = suffix.is_some();
    let scope = hosts_of.map(|addresses| CurrentHosts {
        dns_suffix: suffix,
        hosts: addresses.iter().map(|a| a.host.as_str()).collect(),
    });
    let mut candidates = Vec::new();
    let mut waiting = Vec::new();
    for group in snapshot.live_groups() {
        if !group.status.process_class.may_host_coordinators() || unusable(&group) {
            continue;
        }
        let Some((_, number)) = parse_any_process_group_id(group.id()) else {
            continue;
        };
        let class = group.status.process_class;
        let pod = group
            .pod_head()
            .filter(|pod| pod.metadata.deletion_timestamp.is_none());
        // The pod's IP is read only when coordinators are written by IP.
        let named = pod.and_then(|pod| {
            let name = pod.metadata.name.as_deref()?;
            let ip = (!by_dns).then(|| public_ip(cluster, pod)).flatten();
            Some((name, ip))
        });
        if let Some(scope) = &scope
            && !named.is_some_and(|(name, ip)| scope.admit(name, ip))
        {
            continue;
        }
        let placed = group.pod_zone().zip(named).and_then(|(zone, (name, ip))| {
            let host = coordinator_host(cluster, name, ip)?;
            Some((zone.to_owned(), address_on_host(cluster, &host)?))
        });
        match placed {
            Some((zone, address)) => candidates.push(CoordinatorCandidate {
                current: current.contains(&address.to_string()),
                process_group_id: group.id().to_owned(),
                class,
                number,
                zone,
                dc: cluster.spec.data_center.clone(),
                address,
                hall: group.processes().find_map(|p| p.locality.data_hall.clone()),
            }),
            None => waiting.push(group.id().to_owned()),
        }
    }
    (candidates, CandidateGaps { waiting })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, group, pod};
    use fdb_shared::connection_string::ConnectionString;

    /// Groups log-1..3 and storage-1 (storage-1 without an IP yet) on `routing`.
    fn snapshot(routing: &str) -> ClusterSnapshot {
        let ids = ["log-1", "log-2", "log-3", "storage-1"];
        let pods: Vec<_> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let ip = if *id == "storage-1" {
                    String::new()
                } else {
                    format!("10.0.0.{}", i + 1)
                };
                pod(&format!("s-{id}"), id, &format!("node-{i}"), &ip)
            })
            .collect();
        Fixture::new(&format!("{{version: 7.1.57, routing: {routing}}}"))
            .groups(ids.map(group))
            .pods(pods)
            .build()
    }

    /// What `current_candidates` must give: every candidate, those current kept.
    fn expected(snapshot: &ClusterSnapshot, current: &[String]) -> Vec<CoordinatorCandidate> {
        let (all, _) = coordinator_candidates(snapshot, current, &|_| false);
        all.into_iter().filter(|c| c.current).collect()
    }

    fn scoped(snapshot: &ClusterSnapshot, connection: &str) -> Vec<CoordinatorCandidate> {
        let parsed = ConnectionString::parse(connection).unwrap();
        let text: Vec<String> = parsed
            .coordinators
            .iter()
            .map(ToString::to_string)
            .collect();
        let found = current_candidates(snapshot, &parsed.coordinators, &text, &|_| false);
        assert_eq!(found, expected(snapshot, &text), "{connection}");
        found
    }

    #[test]
    fn only_the_current_coordinators_candidates_are_built_by_ip() {
        let snapshot = snapshot("{useDNSInClusterFile: false}");
        let found = scoped(&snapshot, "s:abc@10.0.0.1:4501,10.0.0.3:4501,10.9.9.9:4501");
        let ids: Vec<&str> = found.iter().map(|c| c.process_group_id.as_str()).collect();
        assert_eq!(ids, ["log-1", "log-3"]);
        // The same host on another port or with TLS is not current.
        assert!(scoped(&snapshot, "s:abc@10.0.0.1:4500,10.0.0.3:4501:tls").is_empty());
    }

    #[test]
    fn only_the_current_coordinators_candidates_are_built_by_dns_name() {
        let snapshot = snapshot("{}");
        let (all, _) = coordinator_candidates(&snapshot, &[], &|_| false);
        let names: Vec<String> = all.iter().map(|c| c.address.to_string()).collect();
        assert!(names[0].starts_with("s-log-1."), "{names:?}");
        let connection = format!("s:abc@{},{},10.0.0.3:4501", names[0], names[2]);
        let found = scoped(&snapshot, &connection);
        let ids: Vec<&str> = found.iter().map(|c| c.process_group_id.as_str()).collect();
        assert_eq!(ids, ["log-1", "log-3"]);
    }
}
