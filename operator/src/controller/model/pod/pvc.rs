//! The data PVC of a stateful process group: `<pod>-data` from the class's
//! `volumeClaimTemplate`.

use std::collections::BTreeMap;

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ProcessGroupStatus;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimSpec, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::hash::pvc_spec_hash;
use super::labels::{merged_labels, process_group_labels};
use super::names::{ClusterIdentity, pvc_name};
use super::volumes::DATA_VOLUME;
use super::{LAST_APPLIED_SPEC_ANNOTATION, PodModelError};

/// Storage requested when the volume claim template asks for none (the existing
/// operator's default).
pub(crate) const DEFAULT_VOLUME_SIZE: &str = "128G";
/// Access mode when the template sets none.
pub(crate) const DEFAULT_ACCESS_MODE: &str = "ReadWriteOnce";

/// The data PVC of a group: `None` for stateless classes and when the class's pod template
/// brings its own `data` volume. Metadata and spec come from the class's (or general)
/// `volumeClaimTemplate`, with access mode `ReadWriteOnce` and `128G` of storage unless
/// the template sets them; labels are the template's, the resource labels and the process
/// group labels; the spec hash is in `foundationdb.org/last-applied-spec`.
pub fn build_pvc(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
) -> Result<Option<PersistentVolumeClaim>, PodModelError> {
    if !group.process_class.is_stateful() {
        return Ok(None);
    }
    let settings = cluster.spec.process_settings(group.process_class);
    let user_has_data_volume = settings
        .pod_template
        .as_ref()
        .and_then(|template| template.spec.as_ref())
        .and_then(|spec| spec.volumes.as_ref())
        .is_some_and(|volumes| volumes.iter().any(|v| v.name == DATA_VOLUME));
    if user_has_data_volume {
        return Ok(None);
    }
    let identity = ClusterIdentity::of(cluster)?;
    super::names::check_group_names(cluster, group)?;
    let template = settings.volume_claim_template.unwrap_or_default();
    let mut spec: PersistentVolumeClaimSpec = template.spec.unwrap_or_default();
    if spec.access_modes.as_ref().is_none_or(Vec::is_empty) {
        spec.access_modes = Some(vec![DEFAULT_ACCESS_MODE.to_owned()]);
    }
    let resources = spec
        .resources
        .get_or_insert_with(VolumeResourceRequirements::default);
    resources
        .requests
        .get_or_insert_with(BTreeMap::new)
        .entry("storage".to_owned())
        .or_insert_with(|| Quantity(DEFAULT_VOLUME_SIZE.to_owned()));

    let metadata = template.metadata;
    let mut pvc = PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(pvc_name(cluster, group)),
            namespace: Some(identity.namespace),
            labels: Some(merged_labels(
                cluster,
                metadata.labels.as_ref(),
                process_group_labels(cluster, group),
            )),
            annotations: metadata.annotations.clone(),
            owner_references: Some(vec![identity.owner]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    };
    let hash = pvc_spec_hash(&pvc);
    pvc.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(LAST_APPLIED_SPEC_ANNOTATION.to_owned(), hash);
    Ok(Some(pvc))
}
