//! Events: posted here, built by [`crate::controller::events::build_event`].

use fdb_shared::api::FoundationDBCluster;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::Api;
use kube::api::PostParams;

use crate::controller::context::Context;
use crate::controller::events::{EventReason, build_event};

/// Publishes the Event about `cluster` (built by [`self::build_event`]). Failing
/// to publish is logged, never fatal: an Event is information, not state. Steps plan
/// Events (`Action::Event`); this is for the executor and for the driver's Events about a
/// pass that could not start or a step that failed.
pub(crate) async fn publish(
    ctx: &Context,
    cluster: &FoundationDBCluster,
    reason: EventReason,
    action: &str,
    note: String,
) {
    if !ctx.settings.publish_events {
        return;
    }
    let event = build_event(
        &ctx.settings.controller_name,
        cluster,
        reason,
        action,
        &note,
        jiff::Timestamp::now(),
    );
    let namespace = event.metadata.namespace.clone().unwrap_or_default();
    let events: Api<K8sEvent> = Api::namespaced(ctx.kube.clone(), &namespace);
    if let Err(error) = events.create(&PostParams::default(), &event).await {
        tracing::warn!(reason = reason.as_str(), %error, "cannot publish event");
    }
}
