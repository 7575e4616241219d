//! UpdateConfigMap: creates or updates `<cluster>-config` (docs/controller-model.md, "The
//! `<cluster>-config` ConfigMap"): the cluster file, the running version, the CA file and
//! one monitor conf per class and servers per pod in use (empty until the connection string
//! is known); a key a pod still mounts is kept. Writes only the keys that differ.

use std::collections::BTreeMap;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ConfigMap;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::merge_patch::merge_diff;
use crate::controller::model::config_map::config_map_name;
use crate::controller::model::desired::desired_config_map_for;
use crate::controller::object_kind::{NewObject, ObjectKind};
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict};
use crate::controller::snapshot::ClusterSnapshot;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct UpdateConfigMap;

/// What to do with the ConfigMap.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ConfigMapDecision {
    /// It is as desired.
    Nothing,
    /// It does not exist: create it.
    Create(Box<ConfigMap>),
    /// Merge-patch it.
    Patch(serde_json::Value),
}

/// Decides from the snapshot.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> Result<ConfigMapDecision, StepError> {
    let desired = desired_config_map_for(
        snapshot.cluster(),
        snapshot.config_map(),
        snapshot.pod_spec_facts(),
    )?;
    Ok(match snapshot.config_map() {
        None => ConfigMapDecision::Create(Box::new(desired)),
        Some(live) => match config_map_patch(live, &desired) {
            Some(patch) => ConfigMapDecision::Patch(patch),
            None => ConfigMapDecision::Nothing,
        },
    })
}

/// The merge patch bringing `live` to `desired` (data keys and the operator's labels),
/// `None` when nothing differs.
pub(crate) fn config_map_patch(live: &ConfigMap, desired: &ConfigMap) -> Option<serde_json::Value> {
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

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        Ok(match decide(snapshot)? {
            ConfigMapDecision::Nothing => Verdict::Continue,
            ConfigMapDecision::Create(desired) => {
                Verdict::plain([Action::Create(NewObject::ConfigMap(desired))])
            }
            ConfigMapDecision::Patch(patch) => Verdict::plain([Action::Patch {
                kind: ObjectKind::ConfigMap,
                name: config_map_name(snapshot.cluster()),
                patch,
            }]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, group, pod};

    #[test]
    fn created_when_missing_then_patched_to_the_new_cluster_file() {
        let snapshot = Fixture::new("version: 7.1.57")
            .groups([group("log-1")])
            .build();
        let ConfigMapDecision::Create(created) = decide(&snapshot).unwrap() else {
            panic!("the ConfigMap is missing");
        };
        let data = created.data.clone().unwrap();
        assert_eq!(data["cluster-file"], "");
        assert_eq!(
            data["fdbmonitor-conf-log"], "",
            "empty until the cluster file is known"
        );
        let in_sync = Fixture::new("version: 7.1.57")
            .groups([group("log-1")])
            .config_map(*created.clone())
            .build();
        assert_eq!(decide(&in_sync).unwrap(), ConfigMapDecision::Nothing);
        let connected = Fixture::new("version: 7.1.57")
            .groups([group("log-1")])
            .connection_string("sample:abc@10.0.0.1:4501")
            .config_map(*created)
            .build();
        let ConfigMapDecision::Patch(patch) = decide(&connected).unwrap() else {
            panic!("the cluster file changed");
        };
        assert_eq!(patch["data"]["cluster-file"], "sample:abc@10.0.0.1:4501");
        let verdict = UpdateConfigMap
            .decide(&connected, &PassFacts::default())
            .unwrap();
        assert!(
            matches!(&verdict.actions()[..], [Action::Patch { kind: ObjectKind::ConfigMap, name, patch: planned }]
                if name == "sample-config" && *planned == patch),
            "{verdict:?}"
        );
        assert!(
            patch["data"]["fdbmonitor-conf-log"]
                .as_str()
                .unwrap()
                .contains("[fdbserver.1]")
        );
    }

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
    fn a_key_a_pod_still_mounts_is_kept_after_the_spec_drops_it() {
        use k8s_openapi::api::core::v1::{ConfigMapVolumeSource, KeyToPath, Volume};
        let base = Fixture::new("version: 7.1.57")
            .groups([group("log-1")])
            .connection_string("sample:abc@10.0.0.1:4501");
        let built = base.clone().build();
        let mut live =
            desired_config_map_for(built.cluster(), built.config_map(), built.pod_spec_facts())
                .unwrap();
        live.data
            .get_or_insert_with(Default::default)
            .insert("ca-file".into(), "OLD CA".into());
        // No pod mounts ca-file: the key goes.
        let ConfigMapDecision::Patch(patch) =
            decide(&base.clone().config_map(live.clone()).build()).unwrap()
        else {
            panic!("ca-file must be removed");
        };
        assert_eq!(patch["data"]["ca-file"], serde_json::Value::Null);
        // A pod made when trustedCAs was set mounts it: kept, with its value.
        let mut mounting = pod("sample-log-1", "log-1", "n1", "10.0.0.1");
        mounting
            .spec
            .get_or_insert_with(Default::default)
            .volumes
            .get_or_insert_with(Vec::new)
            .push(Volume {
                name: "config-map".into(),
                config_map: Some(ConfigMapVolumeSource {
                    name: "sample-config".into(),
                    items: Some(vec![KeyToPath {
                        key: "ca-file".into(),
                        path: "ca.pem".into(),
                        mode: None,
                    }]),
                    ..ConfigMapVolumeSource::default()
                }),
                ..Volume::default()
            });
        let snapshot = base.config_map(live).pods([mounting]).build();
        assert_eq!(decide(&snapshot).unwrap(), ConfigMapDecision::Nothing);
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
