//! UpdateConfigMap: creates or updates `<cluster>-config` (operator-behavior §5): the
//! cluster file, the running version, the CA file and one monitor conf per class in use
//! (empty until the connection string is known). Writes only the keys that differ.

use std::collections::BTreeMap;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams};

use super::Subreconciler;
use crate::controller::config_map::{build_config_map, config_map_name};
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::merge_patch::merge_diff;
use crate::controller::outcome::StepOutcome;
use crate::controller::pass::PassState;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct UpdateConfigMap;

/// The merge patch bringing `live` to `desired` (data keys and the operator's labels),
/// `None` when nothing differs.
pub fn config_map_patch(live: &ConfigMap, desired: &ConfigMap) -> Option<serde_json::Value> {
    let live_data = serde_json::to_value(live.data.clone().unwrap_or_default()).ok()?;
    let desired_data = serde_json::to_value(desired.data.clone().unwrap_or_default()).ok()?;
    let data = merge_diff(&live_data, &desired_data);
    let live_labels = live.metadata.labels.clone().unwrap_or_default();
    let missing_labels: BTreeMap<String, String> = desired
        .metadata
        .labels
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, v)| live_labels.get(k) != Some(v))
        .collect();
    if data.is_none() && missing_labels.is_empty() {
        return None;
    }
    let mut patch = serde_json::json!({});
    if let Some(data) = data {
        patch["data"] = data;
    }
    if !missing_labels.is_empty() {
        patch["metadata"] = serde_json::json!({ "labels": missing_labels });
    }
    Some(patch)
}

#[async_trait]
impl Subreconciler for UpdateConfigMap {
    fn name(&self) -> &'static str {
        "UpdateConfigMap"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        pass: &mut PassState,
    ) -> Result<StepOutcome, StepError> {
        let cluster = pass.cluster().clone();
        let status = pass.status();
        let desired = build_config_map(&cluster, status.connection_string.as_deref(), None)
            .map_err(|e| StepError::Build {
                what: "ConfigMap".to_owned(),
                message: e.to_string(),
            })?;
        let name = config_map_name(&cluster);
        let api = pass.api::<ConfigMap>(ctx);
        match pass.config_map(ctx, &name).await?.cloned() {
            None => {
                tracing::info!(configmap = %name, "creating the ConfigMap");
                api.create(&PostParams::default(), &desired)
                    .await
                    .map_err(StepError::kube(format!("create configmap {name}")))?;
                pass.invalidate_config_map();
            }
            Some(live) => {
                if let Some(patch) = config_map_patch(&live, &desired) {
                    tracing::info!(configmap = %name, "updating the ConfigMap");
                    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .map_err(StepError::kube(format!("patch configmap {name}")))?;
                    pass.invalidate_config_map();
                }
            }
        }
        Ok(StepOutcome::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_map(data: &[(&str, &str)], labels: &[(&str, &str)]) -> ConfigMap {
        let mut cm = ConfigMap {
            data: Some(
                data.iter()
                    .map(|(k, v)| ((*k).into(), (*v).into()))
                    .collect(),
            ),
            ..ConfigMap::default()
        };
        cm.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
        );
        cm
    }

    #[test]
    fn patch_names_only_differences() {
        let desired = config_map(
            &[
                ("cluster-file", "a:b@1.2.3.4:4501"),
                ("running-version", "7.1.57"),
            ],
            &[("l", "1")],
        );
        assert_eq!(config_map_patch(&desired, &desired), None);
        let live = config_map(
            &[
                ("cluster-file", ""),
                ("running-version", "7.1.57"),
                ("old", "x"),
            ],
            &[("l", "1"), ("user", "2")],
        );
        let patch = config_map_patch(&live, &desired).unwrap();
        assert_eq!(
            patch,
            serde_json::json!({"data": {"cluster-file": "a:b@1.2.3.4:4501", "old": null}})
        );
        let live = config_map(
            &[
                ("cluster-file", "a:b@1.2.3.4:4501"),
                ("running-version", "7.1.57"),
            ],
            &[],
        );
        assert_eq!(
            config_map_patch(&live, &desired).unwrap(),
            serde_json::json!({"metadata": {"labels": {"l": "1"}}})
        );
    }
}
