//! AddPVCs: creates the data PVC (`<pod>-data`) of every live stateful process group that
//! has none.

use std::collections::BTreeSet;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::ResourceExt;

use super::{Subreconciler, create_missing};
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass::PassState;
use crate::controller::pod_model::build_pvc;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct AddPvcs;

#[async_trait]
impl Subreconciler for AddPvcs {
    fn name(&self) -> &'static str {
        "AddPVCs"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        pass: &mut PassState,
    ) -> Result<StepOutcome, StepError> {
        let cluster = pass.cluster().clone();
        let existing: BTreeSet<String> = pass
            .pvcs(ctx)
            .await?
            .iter()
            .map(ResourceExt::name_any)
            .collect();
        let mut desired = Vec::new();
        for group in pass.status().process_groups {
            if group.is_marked_for_removal() {
                continue;
            }
            let pvc = build_pvc(&cluster, &group).map_err(|e| StepError::Build {
                what: format!("PVC of {}", group.process_group_id),
                message: e.to_string(),
            })?;
            desired.extend(pvc);
        }
        let api = pass.api::<PersistentVolumeClaim>(ctx);
        let created = create_missing(&api, &existing, desired, "PVC").await? > 0;
        if created {
            pass.invalidate_pvcs();
        }
        Ok(StepOutcome::Continue)
    }
}
