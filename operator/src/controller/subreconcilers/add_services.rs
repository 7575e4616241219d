//! AddServices: creates the headless Service named like the cluster (with
//! `routing.headlessService`, implied by `useDNSInClusterFile`) and, with
//! `routing.publicIPSource: service`, the Service of every live process group.

use std::collections::BTreeSet;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;

use super::Subreconciler;
use super::create_missing;
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass::PassState;
use crate::controller::pod_model::{build_headless_service, build_process_group_service};

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct AddServices;

#[async_trait]
impl Subreconciler for AddServices {
    fn name(&self) -> &'static str {
        "AddServices"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        pass: &mut PassState,
    ) -> Result<StepOutcome, StepError> {
        let cluster = pass.cluster().clone();
        let existing: BTreeSet<String> = pass
            .services(ctx)
            .await?
            .iter()
            .map(ResourceExt::name_any)
            .collect();
        let mut desired: Vec<Service> = build_headless_service(&cluster).into_iter().collect();
        for group in pass.status().process_groups {
            if group.is_marked_for_removal() {
                continue;
            }
            let service =
                build_process_group_service(&cluster, &group).map_err(|e| StepError::Build {
                    what: format!("service of {}", group.process_group_id),
                    message: e.to_string(),
                })?;
            desired.extend(service);
        }
        let api = pass.api::<Service>(ctx);
        let created = create_missing(&api, &existing, desired, "service").await? > 0;
        if created {
            pass.invalidate_services();
        }
        Ok(StepOutcome::Continue)
    }
}
