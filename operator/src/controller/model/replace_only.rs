//! Which differences between a process group's live objects and the desired ones need a
//! new process group (docs/operator.md, "The steps"). Deleting and
//! recreating the pod cannot apply them: the ID is part of the group, the PVC keeps its
//! spec, the processes per pod and the public IP source shape the addresses the database
//! knows the group by.
//!
//! ReplaceMisconfiguredPods replaces the groups this finds; UpdatePods leaves them alone
//! (deleting their pods would roll them out twice). Both ask [`replace_only_change`], so
//! they always agree.

use std::collections::BTreeMap;
use std::fmt;

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ImageType;
use k8s_openapi::api::core::v1::{Container, PodSpec};

use super::super::snapshot::pod_head::PodHead;
use kube::ResourceExt;

use super::super::snapshot::ClusterSnapshot;
use super::super::snapshot::GroupView;
use super::desired_memo::DesiredObjects;
use super::pod::volumes::mounted_monitor_conf_key;
use super::pod::{
    IMAGE_TYPE_ANNOTATION, IP_FAMILY_ANNOTATION, LAST_APPLIED_SPEC_ANNOTATION,
    PUBLIC_IP_SOURCE_ANNOTATION, PodModelError, parse_any_process_group_id, process_group_id,
    pvc_difference,
};
use super::quantity::parse_quantity;

/// Operator-wide switches of what counts as replace-only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplacePolicy {
    /// `--replace-on-security-context-change`: a change of the pods' file ownership
    /// (`fsGroup`, `fsGroupChangePolicy`, `runAsUser`, `runAsGroup`) replaces the group
    /// instead of recreating its pod on a volume whose files the new user may not own.
    pub replace_on_security_context_change: bool,
}

/// A change that needs a new process group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReplaceOnlyChange {
    /// The ID does not have the current `processGroupIDPrefix`.
    ProcessGroupIdPrefix {
        /// The ID the group would have now.
        desired: String,
    },
    /// The pod's public IP source differs from `routing.publicIPSource`.
    PublicIpSource {
        /// The pod's.
        live: String,
        /// The spec's.
        desired: String,
    },
    /// The pod runs another number of servers (`storageServersPerPod`,
    /// `logServersPerPod`): its monitor conf key differs.
    ServersPerPod {
        /// The pod's monitor conf key.
        live: String,
        /// The desired one.
        desired: String,
    },
    /// The pod's node selector differs from the class's pod template.
    NodeSelector,
    /// The PVC's spec hash differs from the desired PVC's.
    PvcSpec,
    /// A container asks for more than the pod has, with
    /// `replaceInstancesWhenResourcesChange`.
    BiggerResources {
        /// The container.
        container: String,
        /// `cpu` or `memory`, requests or limits.
        resource: String,
    },
    /// The pod's file ownership changed, with `--replace-on-security-context-change`.
    FileSecurityContext,
    /// The pod was made for another `routing.podIPFamily` (its processes listen on
    /// the other family): a new group with a new pod, as the Go operator does since
    /// FoundationDB/fdb-kubernetes-operator#2243 (a rolling change could leave the
    /// coordinators on a family the rest no longer reaches).
    IpFamily {
        /// The pod's (`unset`, `4` or `6`).
        live: String,
        /// The spec's.
        desired: String,
    },
    /// The pod was made with another image type.
    ImageType {
        /// The pod's.
        live: String,
        /// The desired one.
        desired: String,
    },
}

impl fmt::Display for ReplaceOnlyChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ProcessGroupIdPrefix { desired } => {
                write!(
                    f,
                    "processGroupIDPrefix changed (the group would be {desired})"
                )
            }
            Self::PublicIpSource { live, desired } => {
                write!(f, "publicIPSource {live} -> {desired}")
            }
            Self::ServersPerPod { live, desired } => {
                write!(f, "servers per pod changed ({live} -> {desired})")
            }
            Self::NodeSelector => write!(f, "nodeSelector changed"),
            Self::PvcSpec => write!(f, "volumeClaimTemplate changed"),
            Self::BiggerResources {
                container,
                resource,
            } => write!(
                f,
                "container {container} asks for more {resource} (replaceInstancesWhenResourcesChange)"
            ),
            Self::FileSecurityContext => write!(
                f,
                "file security context changed (--replace-on-security-context-change)"
            ),
            Self::IpFamily { live, desired } => {
                write!(f, "routing.podIPFamily {live} -> {desired}")
            }
            Self::ImageType { live, desired } => write!(f, "imageType {live} -> {desired}"),
        }
    }
}

/// The node selector, absent and empty alike (borrowed: compared on every pass).
fn node_selector(spec: &PodSpec) -> Option<&BTreeMap<String, String>> {
    spec.node_selector
        .as_ref()
        .filter(|selector| !selector.is_empty())
}

/// The first resource of a desired container that asks for more than the live one.
fn bigger_resources(desired: &[Container], live: &[Container]) -> Option<ReplaceOnlyChange> {
    for wanted in desired {
        let Some(current) = live.iter().find(|c| c.name == wanted.name) else {
            continue;
        };
        let empty = Default::default();
        let wanted_resources = wanted.resources.as_ref().unwrap_or(&empty);
        let current_resources = current.resources.as_ref().unwrap_or(&empty);
        for (kind, wanted_map, current_map) in [
            (
                "requests",
                &wanted_resources.requests,
                &current_resources.requests,
            ),
            (
                "limits",
                &wanted_resources.limits,
                &current_resources.limits,
            ),
        ] {
            for resource in ["cpu", "memory"] {
                let value = |map: &Option<BTreeMap<String, _>>| {
                    map.as_ref().and_then(|m| m.get(resource)).and_then(
                        |q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity| {
                            parse_quantity(&q.0).ok()
                        },
                    )
                };
                // An unreadable or absent value is not "bigger": only a known increase
                // replaces the group.
                if let (Some(want), Some(have)) = (value(wanted_map), value(current_map))
                    && want > have
                {
                    return Some(ReplaceOnlyChange::BiggerResources {
                        container: wanted.name.clone(),
                        resource: format!("{resource} {kind}"),
                    });
                }
            }
        }
    }
    None
}

/// Whether the file ownership the pod runs with differs: the pod's `fsGroup`,
/// `fsGroupChangePolicy`, `runAsUser`, `runAsGroup`, and each container's `runAsUser`
/// and `runAsGroup`.
fn file_security_context_changed(desired: &PodSpec, live: &PodSpec) -> bool {
    let pod_level = |spec: &PodSpec| {
        spec.security_context.as_ref().map(|s| {
            (
                s.fs_group,
                s.fs_group_change_policy.clone(),
                s.run_as_user,
                s.run_as_group,
            )
        })
    };
    let containers = |spec: &PodSpec| -> BTreeMap<String, (Option<i64>, Option<i64>)> {
        spec.containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
            .map(|c| {
                let context = c.security_context.as_ref();
                (
                    c.name.clone(),
                    (
                        context.and_then(|s| s.run_as_user),
                        context.and_then(|s| s.run_as_group),
                    ),
                )
            })
            .collect()
    };
    pod_level(desired).unwrap_or_default() != pod_level(live).unwrap_or_default()
        || containers(desired) != containers(live)
}

/// The first change of `group` that needs a new process group, if any (checked in the
/// order of [`ReplaceOnlyChange`]). Objects being deleted are not judged: they are going
/// anyway.
pub(crate) fn replace_only_change(
    snapshot: &ClusterSnapshot,
    group: &GroupView<'_>,
    policy: ReplacePolicy,
) -> Result<Option<ReplaceOnlyChange>, PodModelError> {
    let cluster = snapshot.cluster();
    let status = group.status;
    if let Some((class, n)) = parse_any_process_group_id(group.id()) {
        let desired = process_group_id(cluster, class, n);
        if desired != group.id() {
            return Ok(Some(ReplaceOnlyChange::ProcessGroupIdPrefix { desired }));
        }
    }
    if let Some(pod) = group
        .pod_head()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        let desired = snapshot.desired(status)?;
        let live_spec_hash = pod.annotations().get(LAST_APPLIED_SPEC_ANNOTATION);
        // A pod with the desired spec hash has the desired spec: only the annotations
        // can differ, and neither the pod need be built again nor the live one decoded.
        let built;
        let specs = if live_spec_hash == Some(&desired.pod_spec_hash) {
            None
        } else {
            built = DesiredObjects::pod(cluster, status)?;
            let live = group.pod().and_then(|p| p.spec.as_ref());
            Some((built.spec.as_ref(), live))
        };
        if let Some(change) = pod_change(cluster, &desired.pod_annotations, specs, pod, policy) {
            return Ok(Some(change));
        }
    }
    if let Some(live) = group
        .pvc
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        let desired_objects = snapshot.desired(status)?;
        fn annotation(pvc: &k8s_openapi::api::core::v1::PersistentVolumeClaim) -> Option<&String> {
            pvc.annotations().get(LAST_APPLIED_SPEC_ANNOTATION)
        }
        // A PVC without the hash was not made by this operator; its spec is unknown,
        // and replacing every such group at once would be worse than leaving it. One
        // with another hash (another operator's) is replaced only when it lacks what
        // the desired claim asks for (the cache holds PVC specs for this; a live claim
        // read without one is judged by its hash alone).
        if let Some(desired) = desired_objects.pvc.as_ref()
            && let Some(live_hash) = annotation(live)
            && desired
                .spec_hash
                .as_ref()
                .is_some_and(|hash| hash != live_hash)
            && match (desired.spec.as_ref(), live.spec.as_ref()) {
                (Some(wanted), Some(running)) => pvc_difference(wanted, running).is_some(),
                _ => true,
            }
        {
            return Ok(Some(ReplaceOnlyChange::PvcSpec));
        }
    }
    Ok(None)
}

/// The change `live` (its metadata) needs; `specs`, the desired and the live spec, when
/// they may differ (`None`: the live spec is the desired one).
fn pod_change(
    cluster: &FoundationDBCluster,
    desired_annotations: &BTreeMap<String, String>,
    specs: Option<(Option<&PodSpec>, Option<&PodSpec>)>,
    live: &PodHead,
    policy: ReplacePolicy,
) -> Option<ReplaceOnlyChange> {
    let live_annotations = live.annotations();
    // Borrowed: copied only into a change found.
    fn annotation<'a>(
        annotations: &'a BTreeMap<String, String>,
        key: &str,
        default: &'a str,
    ) -> &'a str {
        annotations.get(key).map_or(default, String::as_str)
    }
    // A pod without the annotation was made with the defaults.
    let ip_live = annotation(live_annotations, PUBLIC_IP_SOURCE_ANNOTATION, "pod");
    let ip_desired = annotation(desired_annotations, PUBLIC_IP_SOURCE_ANNOTATION, "pod");
    if ip_live != ip_desired {
        return Some(ReplaceOnlyChange::PublicIpSource {
            live: ip_live.to_owned(),
            desired: ip_desired.to_owned(),
        });
    }
    if let Some(change) = ip_family_change(desired_annotations, live_annotations, specs) {
        return Some(change);
    }
    if let Some((desired_spec, live_spec)) = specs
        && let Some(change) = spec_change(cluster, desired_spec, live_spec, policy)
    {
        return Some(change);
    }
    let split = ImageType::Split.as_str();
    let image_live = annotation(live_annotations, IMAGE_TYPE_ANNOTATION, split);
    let image_desired = annotation(desired_annotations, IMAGE_TYPE_ANNOTATION, split);
    if image_live != image_desired {
        return Some(ReplaceOnlyChange::ImageType {
            live: image_live.to_owned(),
            desired: image_desired.to_owned(),
        });
    }
    None
}

/// The IP family change of a pod: its `foundationdb.org/ip-family` annotation, or for a
/// pod without one its sidecar's `--public-ip-family` (the Go operator's
/// `GetIPFamily`, `internal/pod_helper.go`), against the spec's. A pod without the
/// annotation whose spec is the desired one (`specs` is `None`) has the desired family.
fn ip_family_change(
    desired_annotations: &BTreeMap<String, String>,
    live_annotations: &BTreeMap<String, String>,
    specs: Option<(Option<&PodSpec>, Option<&PodSpec>)>,
) -> Option<ReplaceOnlyChange> {
    const UNSET: &str = "unset";
    let desired = desired_annotations
        .get(IP_FAMILY_ANNOTATION)
        .map_or(UNSET, String::as_str);
    let live = match live_annotations.get(IP_FAMILY_ANNOTATION) {
        Some(family) => family.as_str(),
        None => {
            let (_, live_spec) = specs?;
            live_spec.and_then(sidecar_ip_family).unwrap_or(UNSET)
        }
    };
    // The Go operator writes `0` (`PodIPFamilyUnset`) on pods made without a family
    // (`internal/pod_helper.go`, `PodMetadataCorrect`): that is unset too.
    fn normalized(family: &str) -> &str {
        match family.trim() {
            "" | "0" => "unset",
            family => family,
        }
    }
    let live = normalized(live);
    (live != normalized(desired)).then(|| ReplaceOnlyChange::IpFamily {
        live: live.to_owned(),
        desired: desired.to_owned(),
    })
}

/// The sidecar's `--public-ip-family` argument.
fn sidecar_ip_family(spec: &PodSpec) -> Option<&str> {
    let sidecar = spec
        .containers
        .iter()
        .find(|c| c.name == super::pod::SIDECAR_CONTAINER)?;
    let args = sidecar.args.as_deref()?;
    let at = args.iter().position(|arg| arg == "--public-ip-family")?;
    args.get(at + 1).map(String::as_str)
}

/// The change a pod whose spec is `live_spec` needs to have `desired_spec` that only a
/// replacement makes.
fn spec_change(
    cluster: &FoundationDBCluster,
    desired_spec: Option<&PodSpec>,
    live_spec: Option<&PodSpec>,
    policy: ReplacePolicy,
) -> Option<ReplaceOnlyChange> {
    let empty = PodSpec::default();
    let desired_spec = desired_spec.unwrap_or(&empty);
    let live_spec = live_spec.unwrap_or(&empty);
    if let (Some(live_key), Some(desired_key)) = (
        mounted_monitor_conf_key(live_spec),
        mounted_monitor_conf_key(desired_spec),
    ) && live_key != desired_key
    {
        return Some(ReplaceOnlyChange::ServersPerPod {
            live: live_key.to_owned(),
            desired: desired_key.to_owned(),
        });
    }
    if node_selector(live_spec) != node_selector(desired_spec) {
        return Some(ReplaceOnlyChange::NodeSelector);
    }
    if cluster.spec.replace_instances_when_resources_change()
        && let Some(change) = bigger_resources(&desired_spec.containers, &live_spec.containers)
    {
        return Some(change);
    }
    if policy.replace_on_security_context_change
        && file_security_context_changed(desired_spec, live_spec)
    {
        return Some(ReplaceOnlyChange::FileSecurityContext);
    }
    None
}

#[cfg(test)]
#[path = "replace_only_tests.rs"]
mod tests;
