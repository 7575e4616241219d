//! `exclusion-left-behind`: while a pass reports Reconciled, every exclusion the
//! operator put in place must still belong to a process group being removed. An
//! excluded address or locality of no such group is one the operator forgot to include
//! again (it recomputed its targets from options that changed meanwhile, say): the
//! database keeps refusing roles and data to whatever gets that address next.

use std::collections::BTreeSet;
use std::net::IpAddr;

/// A process group being removed, as the world shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupBeingRemoved {
    /// The process group ID.
    pub id: String,
    /// Every IP address it was seen with (its status addresses and its pod's IPs).
    pub ips: BTreeSet<IpAddr>,
}

/// The host of an exclusion target that is an address or an IP (`10.0.0.1`,
/// `10.0.0.1:4501`, `[::1]:4501:tls`), `None` for a locality.
fn target_ip(target: &str) -> Option<IpAddr> {
    if let Ok(ip) = target.parse::<IpAddr>() {
        return Some(ip);
    }
    fdb_shared::address::ProcessAddress::parse(target)
        .ok()
        .and_then(|address| address.ip())
}

/// Whether `target` excludes (part of) `group`.
fn belongs_to(target: &str, group: &GroupBeingRemoved) -> bool {
    if let Some(value) = target.strip_prefix("locality_instance_id:") {
        return value == group.id;
    }
    target_ip(target).is_some_and(|ip| group.ips.contains(&ip))
}

/// The exclusions in effect (`excluded_now`) that the operator made (`by_operator`)
/// and that belong to no group in `being_removed`, sorted.
pub fn leftover_exclusions(
    excluded_now: &BTreeSet<String>,
    by_operator: &BTreeSet<String>,
    being_removed: &[GroupBeingRemoved],
) -> Vec<String> {
    excluded_now
        .intersection(by_operator)
        .filter(|target| !being_removed.iter().any(|group| belongs_to(target, group)))
        .cloned()
        .collect()
}
