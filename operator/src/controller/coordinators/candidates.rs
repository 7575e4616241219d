//! The coordinator candidates of a cluster: its live stateful process groups whose pods
//! can take a coordinator, with their addresses and zones. Shared by the steps that
//! choose coordinators (the first connection string, a coordinator change, moving one
//! off a pod about to be deleted).

use super::super::model::pod::parse_any_process_group_id;
use super::super::objects::public_ip;
use super::super::snapshot::{ClusterSnapshot, GroupView};
use super::{CoordinatorCandidate, coordinator_address};

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
    let cluster = snapshot.cluster();
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
        let placed = pod.and_then(|pod| {
            let zone = group.pod_zone()?.to_owned();
            let name = pod.metadata.name.as_deref()?;
            let address = coordinator_address(cluster, name, public_ip(cluster, pod))?;
            Some((zone, address))
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
