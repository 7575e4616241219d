//! AddPVCs: creates the data PVC (`<pod>-data`) of every live stateful process group that
//! has none.

use std::collections::BTreeSet;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::ResourceExt;
use kube::api::PostParams;

use super::{Subreconciler, create_ignoring_conflict};
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
        let api = pass.api::<PersistentVolumeClaim>(ctx);
        let mut created = false;
        for group in pass.status().process_groups {
            if group.is_marked_for_removal() {
                continue;
            }
            let Some(pvc) = build_pvc(&cluster, &group).map_err(|e| StepError::Build {
                what: format!("PVC of {}", group.process_group_id),
                message: e.to_string(),
            })?
            else {
                continue;
            };
            let name = pvc.name_any();
            if existing.contains(&name) {
                continue;
            }
            tracing::info!(pvc = %name, "creating PVC");
            create_ignoring_conflict(api.create(&PostParams::default(), &pvc).await)
                .map_err(StepError::kube(format!("create pvc {name}")))?;
            created = true;
        }
        if created {
            pass.invalidate_pvcs();
        }
        Ok(StepOutcome::Continue)
    }
}
