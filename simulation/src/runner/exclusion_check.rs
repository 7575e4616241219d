//! Gathers what `exclusion-left-behind` judges: the database's exclusions now, those the
//! operator made, and the process groups being removed with every IP they had.

use std::collections::BTreeSet;
use std::net::IpAddr;

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

impl Runner {
    /// Judges the exclusions after a pass of `cluster` that reported Reconciled; `issuer`
    /// names the instance when several share the database.
    pub(super) fn check_exclusions_left_behind(
        &mut self,
        cluster: &FoundationDBCluster,
        issuer: Option<&str>,
    ) -> Result<(), RunError> {
        let (time, pass) = (self.elapsed(), self.total_passes);
        let pods: Vec<Pod> = self
            .api
            .list_typed(Some(&self.namespace))
            .map_err(|error| RunError::World(error.into()))?;
        // The cluster's own label keys (`labels.processGroupIDLabels`), as the operator
        // finds its pods.
        let labels = GroupLabels::of(Some(cluster));
        let being_removed: Vec<GroupBeingRemoved> = cluster
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
                        .filter_map(|pod| pod.status.as_ref()?.pod_ip.as_deref())
                        .filter_map(ip_of),
                );
                GroupBeingRemoved {
                    id: group.process_group_id.clone(),
                    ips,
                }
            })
            .collect();
        let excluded_now: BTreeSet<String> = self.fdb.snapshot().excluded.into_iter().collect();
        let by_operator = self.log.operator_exclusions(issuer);
        let leftovers = leftover_exclusions(&excluded_now, &by_operator, &being_removed);
        self.monitor
            .check_leftover_exclusions(time, pass, &leftovers);
        Ok(())
    }
}
