//! AddPods: creates the pod of every live process group that has none, and of every
//! group marked for removal whose exclusion has not finished (it still holds data) (the
//! split pod model of docs/controller-model.md, "The pod", with the `last-applied-spec`
//! hash). With bin-packed fault domains each group gets a distribution key (balanced over
//! `spec.faultDomain.zoneCount` by its number). With `publicIPSource: service` the pod
//! carries its Service's IP, so it waits for the Service to have one.

use async_trait::async_trait;
use fdb_shared::api::cluster::PublicIpSource;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::model::desired::pod_options;
use crate::controller::model::pod::{PUBLIC_IP_ANNOTATION, build_pod, pod_name};
use crate::controller::object_kind::NewObject;
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict, Wait, WaitOn};
use crate::controller::removals::ready_for_deletion;
use crate::controller::snapshot::ClusterSnapshot;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct AddPods;

/// The pods to create, and how many more wait for their Service's IP.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct PodsDecision {
    /// Pods of live groups (and of marked groups still holding data) whose name no pod
    /// of the cluster has, in status order.
    pub create: Vec<Pod>,
    /// Groups whose pod waits for its Service to get an IP.
    pub waiting_for_service_ip: usize,
}

/// Decides from the snapshot.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> Result<PodsDecision, StepError> {
    let cluster = snapshot.cluster();
    let by_service = cluster.spec.routing.public_ip_source() == PublicIpSource::Service;
    let mut decision = PodsDecision::default();
    // A group marked for removal whose exclusion has not finished still holds data that
    // must move off it first (in single redundancy, the only replica): its pod comes
    // back too, as the Go operator's AddPods does; only a group ready to be taken apart
    // (excluded, or removed without exclusion) stays without one.
    let groups = snapshot
        .groups()
        .filter(|group| !group.is_marked_for_removal() || !ready_for_deletion(snapshot, group));
    for group in groups {
        // Only the missing ones are built (the name does not depend on the spec). The
        // group's own pod usually has the name: no search among the cluster's pods then
        // (issue 37).
        let name = pod_name(cluster, group.status);
        let own = group
            .pod_head()
            .and_then(|pod| pod.metadata.name.as_deref())
            == Some(name.as_str());
        if own || snapshot.has_pod(&name) {
            continue;
        }
        let mut pod = build_pod(cluster, group.status, &pod_options(cluster, group.status))
            .map_err(|e| StepError::Build {
                what: format!("pod of {}", group.id()),
                message: e.to_string(),
            })?;
        if by_service {
            let ip = group
                .service
                .and_then(|s| s.spec.as_ref()?.cluster_ip.clone())
                .filter(|ip| !ip.is_empty() && ip != "None");
            let Some(ip) = ip else {
                decision.waiting_for_service_ip += 1;
                continue;
            };
            pod.annotations_mut()
                .insert(PUBLIC_IP_ANNOTATION.to_owned(), ip);
        }
        decision.create.push(pod);
    }
    Ok(decision)
}

#[async_trait]
impl Subreconciler for AddPods {
    fn name(&self) -> &'static str {
        "AddPods"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        let decision = decide(snapshot)?;
        let actions: Vec<Action> = decision
            .create
            .into_iter()
            .map(|pod| Action::Create(NewObject::Pod(Box::new(pod))))
            .collect();
        let waiting = decision.waiting_for_service_ip;
        let wait = (waiting > 0).then(|| {
            Wait::new(
                WaitOn::Kubernetes,
                format!("waiting for {waiting} process group services to get an IP"),
            )
        });
        Ok(Verdict::plain(actions).then(wait))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, group, pod};
    use k8s_openapi::api::core::v1::Service;

    fn service(name: &str, group: &str, ip: Option<&str>) -> Service {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {"foundationdb.org/fdb-process-group-id": group}},
            "spec": {"clusterIP": ip}
        }))
        .unwrap()
    }

    #[test]
    fn missing_pods_of_live_groups() {
        let snapshot = Fixture::new("version: 7.1.57")
            .groups([group("log-1"), group("log-2")])
            .pods([pod("sample-log-1", "log-1", "n1", "10.0.0.1")])
            .build();
        let decision = decide(&snapshot).unwrap();
        let names: Vec<_> = decision.create.iter().map(ResourceExt::name_any).collect();
        assert_eq!(names, ["sample-log-2"]);
        assert_eq!(decision.waiting_for_service_ip, 0);
    }

    /// Randomized seed 6 (single redundancy): a replaced storage group whose pod
    /// terminated before its data moved off must get its pod back, else its data (the
    /// only replica) stays unavailable and its exclusion never finishes.
    #[test]
    fn a_marked_group_still_holding_data_gets_its_pod_back_an_excluded_one_does_not() {
        let at = |seconds| {
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                jiff::Timestamp::from_second(seconds).unwrap(),
            ))
        };
        let mut holding = group("storage-1");
        holding.removal_timestamp = at(9_000);
        let mut excluded = group("storage-2");
        excluded.removal_timestamp = at(9_000);
        excluded.exclusion_timestamp = at(9_500);
        let snapshot = Fixture::new("version: 7.1.57")
            .groups([holding, excluded, group("storage-3")])
            .build();
        let decision = decide(&snapshot).unwrap();
        let names: Vec<_> = decision.create.iter().map(ResourceExt::name_any).collect();
        assert_eq!(names, ["sample-storage-1", "sample-storage-3"]);
    }

    #[test]
    fn with_service_routing_pods_wait_for_their_service_ip() {
        let snapshot = Fixture::new("{version: 7.1.57, routing: {publicIPSource: service}}")
            .groups([group("log-1"), group("log-2"), group("log-3")])
            .services([
                service("sample-log-1", "log-1", Some("10.96.0.1")),
                service("sample-log-2", "log-2", None),
            ])
            .build();
        let decision = decide(&snapshot).unwrap();
        assert_eq!(decision.waiting_for_service_ip, 2);
        assert_eq!(decision.create.len(), 1);
        assert_eq!(
            decision.create[0].annotations().get(PUBLIC_IP_ANNOTATION),
            Some(&"10.96.0.1".to_owned())
        );
        let Verdict::Act(plan) = AddPods.decide(&snapshot, &PassFacts::default()).unwrap() else {
            panic!("one pod to create");
        };
        assert!(matches!(
            plan.actions[..],
            [ref only] if matches!(&only.action, Action::Create(NewObject::Pod(p)) if p.name_any() == "sample-log-1")
        ));
        assert_eq!(
            plan.then.map(|w| (w.waits_on, w.goes_on)),
            Some((WaitOn::Kubernetes, false)),
            "the pass waits for the services' IPs"
        );
    }
}
