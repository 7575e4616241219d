//! UpdateLabels: puts the operator's labels (cluster, class, process group ID) on the
//! pods and PVCs of the live process groups where they are missing or different, and
//! re-stamps the spec hash of pods that carry another hash (another operator's) but run
//! their processes as the desired pod would ([`process_difference`]): taking over a pod
//! must not recreate it.

use std::collections::BTreeMap;

use crate::controller::snapshot::pod_head::PodHead;
use async_trait::async_trait;
use fdb_shared::api::ProcessClass;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::model::pod::{
    LAST_APPLIED_SPEC_ANNOTATION, process_difference, process_group_labels,
};
use crate::controller::object_kind::ObjectKind;
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict};
use crate::controller::snapshot::{ClusterSnapshot, GroupView};

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct UpdateLabels;

/// The labels of `desired` that `live` lacks or has with another value.
pub(crate) fn missing_labels(
    live: &BTreeMap<String, String>,
    desired: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    desired
        .iter()
        .filter(|(k, v)| live.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Which object a label patch is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Labelled {
    /// A pod.
    Pod,
    /// A PVC.
    Pvc,
}

/// Labels to add to one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LabelPatch {
    /// The kind of object.
    pub kind: Labelled,
    /// Its name.
    pub name: String,
    /// The labels it lacks.
    pub labels: BTreeMap<String, String>,
    /// Annotations to set (the desired spec hash of a pod that runs as desired).
    pub annotations: BTreeMap<String, String>,
}

impl LabelPatch {
    /// The merge patch of the object's metadata, as an action.
    pub(crate) fn into_action(self) -> Action {
        let mut metadata = serde_json::Map::new();
        if !self.labels.is_empty() {
            metadata.insert("labels".into(), serde_json::json!(self.labels));
        }
        if !self.annotations.is_empty() {
            metadata.insert("annotations".into(), serde_json::json!(self.annotations));
        }
        Action::Patch {
            kind: match self.kind {
                Labelled::Pod => ObjectKind::Pods,
                Labelled::Pvc => ObjectKind::Pvcs,
            },
            name: self.name,
            patch: serde_json::json!({ "metadata": metadata }),
        }
    }
}

/// The class labels built so far in a pass ([`class_labels`]), by class.
type ClassLabels = BTreeMap<ProcessClass, (BTreeMap<String, String>, Vec<String>)>;

/// The label patches of the live groups' pods and PVCs (not of terminating ones), in
/// status order, each group's pod before its PVC. A group found complete is asked about
/// again only when its inputs change (`snapshot/clean_memo.rs`).
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> Vec<LabelPatch> {
    let mut patches = Vec::new();
    // Each group's labels are built only when an object lacks one: a steady pass over a
    // large cluster only looks them up (issue 37).
    let mut by_class = ClassLabels::new();
    let mut clean = snapshot.clean_groups("UpdateLabels");
    for group in snapshot.live_groups() {
        if clean.was_clean(&group) {
            // Every test run checks the memo against the patches built again.
            debug_assert!(
                group_patches(snapshot, &group, &mut ClassLabels::new()).is_empty(),
                "{} was remembered with its labels complete",
                group.id()
            );
            continue;
        }
        let before = patches.len();
        patches.extend(group_patches(snapshot, &group, &mut by_class));
        if patches.len() == before {
            clean.mark_clean(&group);
        }
    }
    patches
}

/// The label patches of one live group's pod and PVC (`by_class`: the class labels
/// built so far).
fn group_patches(
    snapshot: &ClusterSnapshot,
    group: &GroupView<'_>,
    by_class: &mut ClassLabels,
) -> Vec<LabelPatch> {
    let cluster = snapshot.cluster();
    let mut patches = Vec::new();
    let class = group.status.process_class;
    let (class_labels, id_keys) = by_class
        .entry(class)
        .or_insert_with(|| class_labels(cluster, group.status));
    let objects = [
        (Labelled::Pod, group.pod_head().map(|p| &p.metadata)),
        (Labelled::Pvc, group.pvc.map(|p| &p.metadata)),
    ];
    for (kind, meta) in objects {
        let Some(meta) = meta.filter(|m| m.deletion_timestamp.is_none()) else {
            continue;
        };
        let has = |key: &str, value: &str| {
            meta.labels
                .as_ref()
                .and_then(|labels| labels.get(key))
                .is_some_and(|live| live == value)
        };
        let complete = class_labels.iter().all(|(key, value)| has(key, value))
            && id_keys.iter().all(|key| has(key, group.id()));
        let labels = if complete {
            BTreeMap::new()
        } else {
            let live = meta.labels.clone().unwrap_or_default();
            missing_labels(&live, &process_group_labels(cluster, group.status))
        };
        let annotations = match (kind, group.pod_head()) {
            (Labelled::Pod, Some(pod)) => restamp(snapshot, group, pod),
            _ => BTreeMap::new(),
        };
        if !labels.is_empty() || !annotations.is_empty() {
            patches.push(LabelPatch {
                kind,
                name: meta.name.clone().unwrap_or_default(),
                labels,
                annotations,
            });
        }
    }
    patches
}

/// The labels every group of `group`'s class wants ([`process_group_labels`] without
/// the ID), and the label keys that hold the group's ID (they win over the others).
fn class_labels(
    cluster: &fdb_shared::api::FoundationDBCluster,
    group: &fdb_shared::api::cluster::ProcessGroupStatus,
) -> (BTreeMap<String, String>, Vec<String>) {
    let id_keys = cluster.spec.labels.process_group_id_labels();
    let mut labels = process_group_labels(cluster, group);
    for key in &id_keys {
        labels.remove(key);
    }
    (labels, id_keys)
}

/// The desired spec hash, when `pod` carries another one but runs its processes as the
/// desired pod would; else nothing.
fn restamp(
    snapshot: &ClusterSnapshot,
    group: &GroupView<'_>,
    pod: &PodHead,
) -> BTreeMap<String, String> {
    let status = group.status;
    let Ok(desired) = snapshot.desired(status) else {
        return BTreeMap::new();
    };
    let live_hash = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(LAST_APPLIED_SPEC_ANNOTATION));
    if live_hash == Some(&desired.pod_spec_hash) {
        return BTreeMap::new();
    }
    let Ok(built) =
        crate::controller::model::desired_memo::DesiredObjects::pod(snapshot.cluster(), status)
    else {
        return BTreeMap::new();
    };
    // Only now is the pod's spec needed: decoded.
    match (
        built.spec.as_ref(),
        group.pod().and_then(|p| p.spec.as_ref()),
    ) {
        (Some(wanted), Some(live)) if process_difference(wanted, live).is_none() => {
            BTreeMap::from([(
                LAST_APPLIED_SPEC_ANNOTATION.to_owned(),
                desired.pod_spec_hash.clone(),
            )])
        }
        _ => BTreeMap::new(),
    }
}

#[async_trait]
impl Subreconciler for UpdateLabels {
    fn name(&self) -> &'static str {
        "UpdateLabels"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        Ok(Verdict::plain(
            decide(snapshot).into_iter().map(LabelPatch::into_action),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, group, pod};

    #[test]
    fn live_untouched_objects_get_the_missing_labels() {
        let mut terminating = pod("sample-log-2", "log-2", "n2", "10.0.0.2");
        terminating.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
        );
        let snapshot = Fixture::new("version: 7.1.57")
            .groups([group("log-1"), group("log-2")])
            .pods([pod("sample-log-1", "log-1", "n1", "10.0.0.1"), terminating])
            .build();
        let patches = decide(&snapshot);
        assert_eq!(patches.len(), 1, "{patches:?}");
        assert_eq!(
            (patches[0].kind, patches[0].name.as_str()),
            (Labelled::Pod, "sample-log-1")
        );
        assert_eq!(
            patches[0].labels.keys().collect::<Vec<_>>(),
            [
                "foundationdb.org/fdb-cluster-name",
                "foundationdb.org/fdb-process-class"
            ]
        );
        let verdict = UpdateLabels
            .decide(&snapshot, &PassFacts::default())
            .unwrap();
        let [Action::Patch { kind, name, patch }] = &verdict.actions()[..] else {
            panic!("one patch: {verdict:?}");
        };
        assert_eq!((*kind, name.as_str()), (ObjectKind::Pods, "sample-log-1"));
        assert_eq!(
            patch["metadata"]["labels"]["foundationdb.org/fdb-process-class"],
            "log"
        );
        assert!(patch["metadata"].get("annotations").is_none());
    }

    /// A pod labelled as `process_group_labels` wants it needs no patch: a key that is
    /// both a class and an ID label holds the ID (the ID labels win); a wrong class label
    /// is patched, for each class (the class labels are built once per class).
    #[test]
    fn complete_labels_need_no_patch_and_the_id_label_wins() {
        let spec = "{version: 7.1.57, labels: {processClassLabels: [role, kind], processGroupIDLabels: [role]}}";
        let labelled = |name: &str, id: &str, labels: serde_json::Value| {
            let mut pod = pod(name, id, "n1", "10.0.0.1");
            let labels: BTreeMap<String, String> = serde_json::from_value(labels).unwrap();
            pod.metadata.labels.get_or_insert_default().extend(labels);
            pod
        };
        let snapshot = Fixture::new(spec)
            .groups([group("storage-1"), group("log-1"), group("log-2")])
            .pods([
                labelled(
                    "sample-storage-1",
                    "storage-1",
                    serde_json::json!({"foundationdb.org/fdb-cluster-name": "sample", "kind": "storage", "role": "storage-1"}),
                ),
                labelled(
                    "sample-log-1",
                    "log-1",
                    serde_json::json!({"foundationdb.org/fdb-cluster-name": "sample", "kind": "storage", "role": "log-1"}),
                ),
                labelled(
                    "sample-log-2",
                    "log-2",
                    serde_json::json!({"foundationdb.org/fdb-cluster-name": "sample", "kind": "log", "role": "log-2"}),
                ),
            ])
            .build();
        let patches = decide(&snapshot);
        assert_eq!(patches.len(), 1, "{patches:?}");
        assert_eq!(patches[0].name, "sample-log-1");
        assert_eq!(
            patches[0].labels,
            BTreeMap::from([("kind".to_owned(), "log".to_owned())])
        );
    }

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
