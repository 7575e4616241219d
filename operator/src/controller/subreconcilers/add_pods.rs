//! AddPods: creates the pod of every live process group that has none (the split pod
//! model of operator-behavior §6, with the `last-applied-spec` hash). With bin-packed
//! fault domains each group gets a distribution key (balanced over
//! `spec.faultDomain.zoneCount` by its number). With `publicIPSource: service` the pod
//! carries its Service's IP, so it waits for the Service to have one.

use std::collections::BTreeSet;

use async_trait::async_trait;
use fdb_shared::api::cluster::PublicIpSource;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use super::update_status::pod_options;
use super::{Subreconciler, create_missing};
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::objects::object_of_group;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass::PassState;
use crate::controller::pod_model::{PUBLIC_IP_ANNOTATION, build_pod};

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct AddPods;

#[async_trait]
impl Subreconciler for AddPods {
    fn name(&self) -> &'static str {
        "AddPods"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        pass: &mut PassState,
    ) -> Result<StepOutcome, StepError> {
        let cluster = pass.cluster().clone();
        let existing: BTreeSet<String> = pass
            .pods(ctx)
            .await?
            .iter()
            .map(ResourceExt::name_any)
            .collect();
        let services = if cluster.spec.routing.public_ip_source() == PublicIpSource::Service {
            pass.services(ctx).await?.to_vec()
        } else {
            Vec::new()
        };
        let mut desired = Vec::new();
        let mut waiting_for_service_ip = 0;
        for group in pass.status().process_groups {
            if group.is_marked_for_removal() {
                continue;
            }
            let mut pod =
                build_pod(&cluster, &group, &pod_options(&cluster, &group)).map_err(|e| {
                    StepError::Build {
                        what: format!("pod of {}", group.process_group_id),
                        message: e.to_string(),
                    }
                })?;
            let name = pod.name_any();
            if existing.contains(&name) {
                continue;
            }
            if cluster.spec.routing.public_ip_source() == PublicIpSource::Service {
                let ip = object_of_group(&cluster, &services, &group.process_group_id)
                    .and_then(|s| s.spec.as_ref()?.cluster_ip.clone())
                    .filter(|ip| !ip.is_empty() && ip != "None");
                let Some(ip) = ip else {
                    waiting_for_service_ip += 1;
                    continue;
                };
                pod.annotations_mut()
                    .insert(PUBLIC_IP_ANNOTATION.to_owned(), ip);
            }
            desired.push(pod);
        }
        let api = pass.api::<Pod>(ctx);
        let created = create_missing(&api, &existing, desired, "pod").await?;
        if created > 0 {
            pass.invalidate_pods();
        }
        if waiting_for_service_ip > 0 {
            return Ok(StepOutcome::Requeue {
                delay: ctx.settings.kube_wait,
                reason: format!(
                    "waiting for {waiting_for_service_ip} process group services to get an IP"
                ),
            });
        }
        Ok(StepOutcome::Continue)
    }
}
