//! RemoveServices (docs/operator.md, "The steps"): deletes the per-group Service of each
//! group marked for removal whose pod and PVC are gone (see RemovePods for the order; a pod
//! stuck Terminating past `ignoreTerminatingPodsSeconds` no longer holds it back).

use async_trait::async_trait;
use kube::ResourceExt;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::object_kind::ObjectKind;
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict};
use crate::controller::removals::ready_for_deletion;
use crate::controller::removals::release::{pod_released, pvc_released};
use crate::controller::snapshot::ClusterSnapshot;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct RemoveServices;

/// The Services to delete, by name.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> Vec<String> {
    snapshot
        .groups()
        .filter(|g| ready_for_deletion(snapshot, g))
        .filter(|g| pod_released(snapshot, g) && pvc_released(g))
        .filter_map(|g| g.service)
        .filter(|service| service.metadata.deletion_timestamp.is_none())
        .map(ResourceExt::name_any)
        .collect()
}

#[async_trait]
impl Subreconciler for RemoveServices {
    fn name(&self) -> &'static str {
        "RemoveServices"
    }

    fn barrier(&self) -> Barrier {
        Barrier::GoesOn
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        Ok(Verdict::plain(decide(snapshot).into_iter().map(|name| {
            Action::Delete {
                kind: ObjectKind::Services,
                name,
            }
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, group, pod};
    use jiff::Timestamp;
    use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Service};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn labelled<K: serde::de::DeserializeOwned>(name: &str, group: &str) -> K {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {"foundationdb.org/fdb-process-group-id": group}}
        }))
        .unwrap()
    }

    fn fixture(exclusion_done: bool, pod_left: bool, pvc_left: bool) -> Fixture {
        let mut marked = group("storage-3");
        marked.removal_timestamp = Some(Time(Timestamp::from_second(9_000).unwrap()));
        if exclusion_done {
            marked.exclusion_timestamp = Some(Time(Timestamp::from_second(9_500).unwrap()));
        }
        let mut fixture = Fixture::new("{version: 7.1.57, routing: {publicIPSource: service}}")
            .groups([group("storage-1"), marked])
            .services([
                labelled::<Service>("sample-storage-1", "storage-1"),
                labelled::<Service>("sample-storage-3", "storage-3"),
            ]);
        if pod_left {
            fixture = fixture.pods([pod("sample-storage-3", "storage-3", "n3", "10.0.0.3")]);
        }
        if pvc_left {
            fixture = fixture.pvcs([labelled::<PersistentVolumeClaim>(
                "sample-storage-3-data",
                "storage-3",
            )]);
        }
        fixture
    }

    #[test]
    fn the_service_of_an_excluded_group_goes_once_its_pod_and_pvc_are_gone() {
        let facts = PassFacts::default();
        let verdict = RemoveServices
            .decide(&fixture(true, false, false).build(), &facts)
            .unwrap();
        assert_eq!(
            verdict.actions(),
            [&Action::Delete {
                kind: ObjectKind::Services,
                name: "sample-storage-3".into()
            }]
        );
        for (exclusion_done, pod_left, pvc_left) in [
            (false, false, false),
            (true, true, false),
            (true, false, true),
        ] {
            let held = fixture(exclusion_done, pod_left, pvc_left).build();
            assert_eq!(
                RemoveServices.decide(&held, &facts).unwrap(),
                Verdict::Continue,
                "exclusion done {exclusion_done}, pod left {pod_left}, pvc left {pvc_left}"
            );
        }
    }
}
