//! AddServices: creates the headless Service named like the cluster (with
//! `routing.headlessService`, implied by `useDNSInClusterFile`) and, with
//! `routing.publicIPSource: service`, the Service of every live process group.

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::model::pod::{build_headless_service, build_process_group_service};
use crate::controller::object_kind::NewObject;
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict};
use crate::controller::snapshot::ClusterSnapshot;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct AddServices;

/// The services to create: the desired ones whose name no service of the cluster has.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> Result<Vec<Service>, StepError> {
    let cluster = snapshot.cluster();
    let mut desired: Vec<Service> = build_headless_service(cluster).into_iter().collect();
    for group in snapshot.live_groups() {
        let service =
            build_process_group_service(cluster, group.status).map_err(|e| StepError::Build {
                what: format!("service of {}", group.id()),
                message: e.to_string(),
            })?;
        desired.extend(service);
    }
    desired.retain(|service| !snapshot.has_service(&service.name_any()));
    Ok(desired)
}

#[async_trait]
impl Subreconciler for AddServices {
    fn name(&self) -> &'static str {
        "AddServices"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        let missing = decide(snapshot)?;
        Ok(Verdict::plain(missing.into_iter().map(|service| {
            Action::Create(NewObject::Service(Box::new(service)))
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, group};

    fn names(services: &[Service]) -> Vec<String> {
        services.iter().map(ResourceExt::name_any).collect()
    }

    #[test]
    fn the_headless_service_and_one_per_live_group_with_service_routing() {
        let spec = "{version: 7.1.57, routing: {publicIPSource: service}}";
        let mut removed = group("log-2");
        removed.removal_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::UNIX_EPOCH,
        ));
        let snapshot = Fixture::new(spec)
            .groups([group("log-1"), removed, group("storage-1")])
            .build();
        let missing = decide(&snapshot).unwrap();
        assert_eq!(
            names(&missing),
            ["sample", "sample-log-1", "sample-storage-1"]
        );
        let existing = Fixture::new(spec)
            .groups([group("log-1")])
            .services(missing)
            .build();
        assert!(decide(&existing).unwrap().is_empty());
        let by_pod_ip = Fixture::new("version: 7.1.57")
            .groups([group("log-1")])
            .build();
        assert_eq!(names(&decide(&by_pod_ip).unwrap()), ["sample"]);
        let verdict = AddServices
            .decide(
                &by_pod_ip,
                &crate::controller::pass::plan::PassFacts::default(),
            )
            .unwrap();
        assert!(
            matches!(verdict.actions()[..], [Action::Create(NewObject::Service(s))] if s.name_any() == "sample"),
            "{verdict:?}"
        );
    }
}
