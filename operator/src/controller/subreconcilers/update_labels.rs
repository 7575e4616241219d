//! UpdateLabels: puts the operator's labels (cluster, class, process group ID) on the
//! pods and PVCs of the live process groups where they are missing or different.

use std::collections::BTreeMap;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};

use super::Subreconciler;
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::objects::object_of_group;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass::PassState;
use crate::controller::pod_model::process_group_labels;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct UpdateLabels;

/// The labels of `desired` that `live` lacks or has with another value.
pub fn missing_labels(
    live: &BTreeMap<String, String>,
    desired: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    desired
        .iter()
        .filter(|(k, v)| live.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[async_trait]
impl Subreconciler for UpdateLabels {
    fn name(&self) -> &'static str {
        "UpdateLabels"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        pass: &mut PassState,
    ) -> Result<StepOutcome, StepError> {
        let cluster = pass.cluster().clone();
        let pods = pass.pods(ctx).await?.to_vec();
        let pvcs = pass.pvcs(ctx).await?.to_vec();
        let (pod_api, pvc_api) = (pass.api::<Pod>(ctx), pass.api::<PersistentVolumeClaim>(ctx));
        let (mut pods_changed, mut pvcs_changed) = (false, false);
        for group in pass.status().process_groups {
            if group.is_marked_for_removal() {
                continue;
            }
            let desired = process_group_labels(&cluster, &group);
            if let Some(pod) = object_of_group(&cluster, &pods, &group.process_group_id) {
                let missing = missing_labels(pod.labels(), &desired);
                if !missing.is_empty() && pod.metadata.deletion_timestamp.is_none() {
                    let name = pod.name_any();
                    let patch = serde_json::json!({"metadata": {"labels": missing}});
                    pod_api
                        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .map_err(StepError::kube(format!("label pod {name}")))?;
                    pods_changed = true;
                }
            }
            if let Some(pvc) = object_of_group(&cluster, &pvcs, &group.process_group_id) {
                let missing = missing_labels(pvc.labels(), &desired);
                if !missing.is_empty() && pvc.metadata.deletion_timestamp.is_none() {
                    let name = pvc.name_any();
                    let patch = serde_json::json!({"metadata": {"labels": missing}});
                    pvc_api
                        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .map_err(StepError::kube(format!("label pvc {name}")))?;
                    pvcs_changed = true;
                }
            }
        }
        if pods_changed {
            pass.invalidate_pods();
        }
        if pvcs_changed {
            pass.invalidate_pvcs();
        }
        Ok(StepOutcome::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_missing_or_different_labels() {
        let live = BTreeMap::from([
            ("a".to_owned(), "1".to_owned()),
            ("b".to_owned(), "x".to_owned()),
        ]);
        let desired = BTreeMap::from([
            ("a".to_owned(), "1".to_owned()),
            ("b".to_owned(), "2".to_owned()),
            ("c".to_owned(), "3".to_owned()),
        ]);
        let missing = missing_labels(&live, &desired);
        assert_eq!(missing.keys().collect::<Vec<_>>(), ["b", "c"]);
        assert!(missing_labels(&desired, &desired).is_empty());
    }
}
