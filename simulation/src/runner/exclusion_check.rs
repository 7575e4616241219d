//! Gathers what `exclusion-left-behind` judges: the database's exclusions now, those the
//! operator made, and the process groups being removed with every IP they had.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::Arc;

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::FoundationDBCluster;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::invariants::{GroupBeingRemoved, leftover_exclusions};

use super::world_views::GroupLabels;
use super::{RunError, Runner};

/// An IP address from a status address (`10.0.0.1`, `10.0.0.1:4501:tls`, `[::1]:4501`).
fn ip_of(text: &str) -> Option<IpAddr> {
    text.parse::<IpAddr>()
        .ok()
        .or_else(|| ProcessAddress::parse(text).ok()?.ip())
}

/// The process groups of `cluster` marked for removal, with every IP they had (from the
/// status and from their pods).
fn being_removed(cluster: &FoundationDBCluster, pods: &[Arc<Pod>]) -> Vec<GroupBeingRemoved> {
    // The cluster's own label keys (`labels.processGroupIDLabels`), as the operator
    // finds its pods.
    let labels = GroupLabels::of(Some(cluster));
    cluster
        .status
        .iter()
        .flat_map(|status| status.process_groups.iter())
        .filter(|group| group.is_marked_for_removal())
        .map(|group| {
            let mut ips: BTreeSet<IpAddr> =
                group.addresses.iter().filter_map(|a| ip_of(a)).collect();
            ips.extend(
                pods.iter()
                    .filter(|pod| {
                        labels.group_of(pod.labels()).map(|(id, _)| id).as_ref()
                            == Some(&group.process_group_id)
                    })
                    .filter_map(|pod| pod.status.as_ref())
                    // Every address of a dual-stack pod: its processes listen on one.
                    .flat_map(|status| {
                        let listed = status.pod_ips.iter().flatten().map(|ip| ip.ip.as_str());
                        status.pod_ip.as_deref().into_iter().chain(listed)
                    })
                    .filter_map(ip_of),
            );
            GroupBeingRemoved {
                id: group.process_group_id.clone(),
                ips,
            }
        })
        .collect()
}

impl Runner {
    /// Judges the exclusions after a pass of `cluster` that reported Reconciled; `issuer`
    /// names the instance when several share the database. Then the groups being
    /// removed by every instance count: the instances exclude together (one excludes
    /// every instance's ready groups), and each includes its own groups again once
    /// they are removed, so an exclusion is left behind only when no instance removes
    /// its group.
    pub(super) fn check_exclusions_left_behind(
        &mut self,
        cluster: &FoundationDBCluster,
        issuer: Option<&str>,
    ) -> Result<(), RunError> {
        let (time, pass) = (self.elapsed(), self.passes.total());
        let pods = self.pods()?;
        let mut removing = being_removed(cluster, &pods);
        if issuer.is_some() {
            let names: Vec<String> = std::iter::once(self.name.clone())
                .chain(self.operators.instances.iter().map(|i| i.name.clone()))
                .filter(|name| cluster.metadata.name.as_ref() != Some(name))
                .collect();
            for name in names {
                if let Some(other) = self.cluster_named(&name) {
                    removing.extend(being_removed(&other, &pods));
                }
            }
        }
        let excluded_now: BTreeSet<String> = self.fdb.snapshot().excluded.into_iter().collect();
        let by_operator = self.log.operator_exclusions(issuer);
        let leftovers = leftover_exclusions(&excluded_now, &by_operator, &removing);
        self.judged
            .monitor
            .check_leftover_exclusions(time, pass, &leftovers);
        Ok(())
    }
}
