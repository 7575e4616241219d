//! AddPVCs: creates the data PVC (`<pod>-data`) of every live stateful process group that
//! has none.

use async_trait::async_trait;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::model::pod::{build_pvc, pvc_name};
use crate::controller::object_kind::NewObject;
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict};
use crate::controller::snapshot::ClusterSnapshot;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct AddPvcs;

/// The PVCs to create: those of live groups whose name no PVC of the cluster has.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> Result<Vec<PersistentVolumeClaim>, StepError> {
    let cluster = snapshot.cluster();
    let mut missing = Vec::new();
    for group in snapshot.live_groups() {
        // Only the missing ones are built (the name does not depend on the template).
        // The group's own PVC usually has the name: no search among the cluster's PVCs
        // then (issue 37).
        let name = pvc_name(cluster, group.status);
        let own = group.pvc.and_then(|pvc| pvc.metadata.name.as_deref()) == Some(name.as_str());
        if own || snapshot.has_pvc(&name) {
            continue;
        }
        let pvc = build_pvc(cluster, group.status).map_err(|e| StepError::Build {
            what: format!("PVC of {}", group.id()),
            message: e.to_string(),
        })?;
        missing.extend(pvc);
    }
    Ok(missing)
}

#[async_trait]
impl Subreconciler for AddPvcs {
    fn name(&self) -> &'static str {
        "AddPVCs"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        let missing = decide(snapshot)?;
        Ok(Verdict::plain(
            missing
                .into_iter()
                .map(|pvc| Action::Create(NewObject::Pvc(Box::new(pvc)))),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, group};
    use kube::ResourceExt;

    #[test]
    fn stateful_live_groups_without_a_pvc() {
        let snapshot = Fixture::new("version: 7.1.57")
            .groups([group("log-1"), group("stateless-1"), group("storage-1")])
            .build();
        let missing = decide(&snapshot).unwrap();
        let names: Vec<_> = missing.iter().map(ResourceExt::name_any).collect();
        assert_eq!(names, ["sample-log-1-data", "sample-storage-1-data"]);
        let existing = Fixture::new("version: 7.1.57")
            .groups([group("log-1"), group("storage-1")])
            .pvcs(missing)
            .build();
        assert!(decide(&existing).unwrap().is_empty());
        let facts = PassFacts::default();
        assert_eq!(
            AddPvcs.decide(&existing, &facts).unwrap(),
            Verdict::Continue
        );
        let verdict = AddPvcs.decide(&snapshot, &facts).unwrap();
        let created: Vec<_> = verdict
            .actions()
            .into_iter()
            .filter_map(|a| match a {
                Action::Create(object) => Some(object.name()),
                _ => None,
            })
            .collect();
        assert_eq!(created, ["sample-log-1-data", "sample-storage-1-data"]);
    }
}
