//! The desired Kubernetes objects of a process group (docs/controller-model.md, "Names,
//! labels, annotations" and "The pod"): its pod (split image: main container + sidecar),
//! data PVC and Service, the cluster's headless Service, their names and labels, and the
//! hash written to `foundationdb.org/last-applied-spec`.
//!
//! Everything here is pure and deterministic: the same cluster, group and options always
//! give byte-identical objects (maps are `BTreeMap`s, no clock, no randomness), so a
//! second pass computes the same hash as the first.
//!
//! The pod starts from the class's `spec.processes.<class>.podTemplate`, or the `general`
//! one when the class has none (the same fallback as `spec.process_settings`), and the
//! operator's containers, volumes, environment and affinity are merged into it.

mod affinity;
pub(crate) mod buggify;
mod containers;
mod env;
mod equivalence;
mod hash;
mod invocation;
mod labels;
mod names;
mod pvc;
mod services;
mod substitutions;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_equivalence;
#[cfg(test)]
mod tests_names;
#[cfg(test)]
mod tests_objects;
#[cfg(test)]
mod tests_pod;
#[cfg(test)]
mod tests_scheduling;
#[cfg(test)]
mod tests_unified;
pub(crate) mod unified;

use std::collections::BTreeMap;

use fdb_shared::api::cluster::{ImageType, ProcessGroupStatus};
use fdb_shared::api::{FoundationDBCluster, ProcessClass};
use fdb_shared::cluster_math::{main_image, sidecar_image, unified_image};
use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

pub(crate) use affinity::default_distribution_key;
pub(crate) use containers::INIT_CONTAINER;
pub use containers::{MAIN_CONTAINER, SIDECAR_CONTAINER};
pub use equivalence::process_difference;
pub(crate) use equivalence::pvc_difference;
pub(crate) use hash::pod_spec_hash;
pub use hash::sha256_hex;
pub(crate) use labels::merged_labels;
pub(crate) use labels::{cluster_labels, process_group_labels};
pub(crate) use names::ClusterIdentity;
pub(crate) use names::{
    checked_object_name, parse_any_process_group_id, pod_name, process_group_id, pvc_name,
};
pub use pvc::build_pvc;
pub(crate) use services::{build_headless_service, build_process_group_service};
pub(crate) use volumes::CONFIG_MAP_VOLUME;

pub(crate) mod volumes;

pub use substitutions::expected_substitutions;
pub(crate) use substitutions::{expected_zone, has_sidecar, live_sidecar_image};

/// Hash of the desired pod spec (see [`pod_spec_hash`]), written by [`build_pod`].
pub(crate) const LAST_APPLIED_SPEC_ANNOTATION: &str = "foundationdb.org/last-applied-spec";
/// Hash of the dynamic configuration (cluster file + monitor conf) the sidecar confirmed;
/// written by UpdatePodConfig, see `config_map::dynamic_conf_hash`.
pub const LAST_APPLIED_CONFIG_MAP_ANNOTATION: &str = "foundationdb.org/last-applied-config-map";
/// Where the pod's public IP comes from (`pod` or `service`).
pub(crate) const PUBLIC_IP_SOURCE_ANNOTATION: &str = "foundationdb.org/public-ip-source";
/// The IP family (4 or 6) a pod was made for, with `routing.podIPFamily` (the Go
/// operator's `IPFamilyAnnotation`, `api/v1beta2/foundationdb_labels.go`): the
/// operator addresses the pod by its IP of that family.
pub(crate) const IP_FAMILY_ANNOTATION: &str = "foundationdb.org/ip-family";
/// The public IP of a pod whose IP comes from its Service; set by the controller when it
/// creates the pod (it is not part of the spec hash). `FDB_PUBLIC_IP` reads it.
pub(crate) const PUBLIC_IP_ANNOTATION: &str = "foundationdb.org/public-ip";
/// The pod model (`split` or `unified`).
pub(crate) const IMAGE_TYPE_ANNOTATION: &str = "foundationdb.org/image-type";
/// The logical fault domain of a pod when fault domains are bin packed.
pub(crate) const DISTRIBUTION_KEY_LABEL: &str = "foundationdb.org/distribution-key";

/// Why a desired object cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodModelError {
    /// The cluster object has no name.
    #[error("the FoundationDBCluster has no metadata.name")]
    MissingClusterName,
    /// The cluster object has no namespace.
    #[error("FoundationDBCluster {cluster} has no metadata.namespace")]
    MissingNamespace {
        /// The cluster's name.
        cluster: String,
    },
    /// The cluster object has no UID (it was not read from the API server).
    #[error(
        "FoundationDBCluster {cluster} has no metadata.uid; owner references need it (use the object read from the API server)"
    )]
    MissingUid {
        /// `namespace/name` of the cluster.
        cluster: String,
    },
    /// No FoundationDB version to build images from.
    #[error("FoundationDBCluster {cluster}: spec.version is empty, no image can be chosen")]
    MissingVersion {
        /// The cluster's name.
        cluster: String,
    },
    /// `foundationdb.org/kubernetes-cluster` fault domains need a fixed zone value.
    #[error(
        "spec.faultDomain.value must be set when spec.faultDomain.key is foundationdb.org/kubernetes-cluster"
    )]
    MissingFaultDomainValue,
    /// `spec.faultDomain.valueFrom` names an environment variable other than
    /// `$FDB_INSTANCE_ID`, which is not supported.
    #[error(
        "spec.faultDomain.valueFrom {value_from:?}: of the environment variable references only $FDB_INSTANCE_ID is supported; use it or a pod field path such as spec.nodeName"
    )]
    UnsupportedFaultDomainValueFrom {
        /// The configured value.
        value_from: String,
    },
    /// A name or label value built for a process group breaks Kubernetes' rules (an ID
    /// from the status, e.g. written by another operator, that validation never saw).
    #[error("process group {process_group}: {what} {value:?} is invalid: {problem}")]
    InvalidName {
        /// The process group ID.
        process_group: String,
        /// What the value is ("pod name", "label value").
        what: &'static str,
        /// The value.
        value: String,
        /// The rule it breaks, in the API server's words.
        problem: String,
    },
}

/// What the pod builder cannot know from the cluster alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodOptions {
    /// The group's logical fault domain when fault domains are bin packed (see
    /// [`default_distribution_key`]): labels the pod, becomes `FDB_ZONE_ID`, and switches
    /// the affinity to pack/spread by key. `None`: the default spreading.
    pub distribution_key: Option<String>,
    /// FDB version of the main container (image and `--main-container-version`).
    /// Default: [`pod_version`] (`spec.version`, or the running version during an
    /// incompatible upgrade).
    pub main_version: Option<String>,
    /// FDB version of the sidecar and init image (during an incompatible upgrade, the
    /// target version, so the sidecar stages the new binaries). Default: as the main
    /// container.
    pub sidecar_version: Option<String>,
}

/// Number of fdbserver processes in a pod of `class`: `storageServersPerPod` for storage,
/// `logServersPerPod` for log and transaction, else 1 (at least 1).
pub(crate) fn servers_per_pod(cluster: &FoundationDBCluster, class: ProcessClass) -> u32 {
    fdb_shared::monitor_conf::render::spec_servers_per_pod(&cluster.spec, class)
}

/// Number of fdbserver processes `pod` (of a group of `class`) runs: the density of the
/// monitor conf key it mounts, else (no pod, or a key of another shape) the spec's. A
/// pod made before a change of servers per pod keeps its density until its group is
/// replaced, and is judged by it: its conf, its processes and its config hash.
pub fn pod_servers_per_pod(
    cluster: &FoundationDBCluster,
    class: ProcessClass,
    pod: Option<&k8s_openapi::api::core::v1::Pod>,
) -> u32 {
    pod.and_then(mounted_servers_per_pod)
        .unwrap_or_else(|| servers_per_pod(cluster, class))
}

/// The density of the monitor conf key `pod` mounts, if it mounts one of that shape; for a
/// unified pod, its monitor's `--process-count`.
pub(crate) fn mounted_servers_per_pod(pod: &k8s_openapi::api::core::v1::Pod) -> Option<u32> {
    pod.spec
        .as_ref()
        .and_then(volumes::mounted_monitor_conf_key)
        .and_then(fdb_shared::monitor_conf::render::servers_per_pod_of_key)
        .or_else(|| unified::monitor_process_count(pod))
}

/// The pod model a pod runs, from its `foundationdb.org/image-type` annotation (pods
/// without it are split, as every pod this operator made before unified pods existed).
pub(crate) fn pod_image_type(pod: &impl kube::Resource) -> ImageType {
    match pod
        .meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get(IMAGE_TYPE_ANNOTATION))
        .map(String::as_str)
    {
        Some("unified") => ImageType::Unified,
        _ => ImageType::Split,
    }
}

/// The version the cluster's processes run now: `status.runningVersion`, else
/// `spec.version`.
pub(crate) fn running_version(cluster: &FoundationDBCluster) -> &str {
    cluster
        .status
        .as_ref()
        .and_then(|status| status.running_version.as_deref())
        .filter(|version| !version.is_empty())
        .unwrap_or(&cluster.spec.version)
}

/// The FoundationDB version new and updated pods run: `spec.version` when it is protocol
/// compatible with the running version (patch upgrades and downgrades roll out as pod
/// updates, docs/upgrades.md), else the running version (an incompatible upgrade
/// first stages binaries and bounces every process at once; pods follow afterwards).
pub(crate) fn pod_version(cluster: &FoundationDBCluster) -> &str {
    let running = running_version(cluster);
    let wanted = cluster.spec.version.as_str();
    match (
        running.parse::<fdb_shared::FdbVersion>(),
        wanted.parse::<fdb_shared::FdbVersion>(),
    ) {
        (Ok(running_parsed), Ok(wanted_parsed))
            if !running_parsed.is_protocol_compatible(&wanted_parsed) =>
        {
            running
        }
        _ => wanted,
    }
}

fn take_named(containers: &mut Vec<Container>, name: &str) -> Option<Container> {
    let index = containers.iter().position(|c| c.name == name)?;
    Some(containers.remove(index))
}

/// The containers of the user's pod template that the operator builds on.
struct UserContainers {
    /// The template's main container, if any.
    main: Option<Container>,
    /// The template's sidecar container, if any.
    sidecar: Option<Container>,
    /// The template's init containers (the split model's init container among them).
    inits: Vec<Container>,
}

/// The containers, init containers and volumes of the cluster's image type (unified or
/// split), each built on the template's container of the same name; `versions` are the
/// main container's and the sidecar's.
fn image_containers(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
    (main_version, sidecar_version): (&str, &str),
    user: UserContainers,
    shared_env: &[EnvVar],
) -> (Vec<Container>, Vec<Container>, Vec<Volume>) {
    let spec = &cluster.spec;
    let UserContainers {
        main: user_main,
        sidecar: user_sidecar,
        inits: mut user_inits,
    } = user;
    let user_init = take_named(&mut user_inits, INIT_CONTAINER);
    match cluster.image_type() {
        ImageType::Unified => (
            vec![
                unified::main_container(
                    cluster,
                    group,
                    user_main.as_ref(),
                    &unified_image(spec, main_version),
                    shared_env,
                ),
                // The sidecar-mode container runs the version the processes must move
                // to, so its binaries are in the shared volume before the kill.
                unified::sidecar_container(
                    user_sidecar.as_ref(),
                    &unified_image(spec, sidecar_version),
                    sidecar_version,
                ),
            ],
            // The Go operator drops the split model's init container from the template.
            user_inits,
            unified::pod_volumes(cluster, group),
        ),
        _ => {
            let images = containers::ContainerImages {
                main: main_image(spec, main_version),
                sidecar: sidecar_image(spec, sidecar_version),
                main_version: main_version.to_owned(),
            };
            let mut inits = vec![containers::sidecar_container(
                cluster,
                user_init.as_ref(),
                &images,
                shared_env,
                true,
            )];
            inits.extend(user_inits);
            (
                vec![
                    containers::main_container(cluster, user_main.as_ref(), &images, shared_env),
                    containers::sidecar_container(
                        cluster,
                        user_sidecar.as_ref(),
                        &images,
                        shared_env,
                        false,
                    ),
                ],
                inits,
                volumes::pod_volumes(cluster, group),
            )
        }
    }
}

/// The pod's metadata: its name, the template's labels and annotations merged with the
/// operator's, and the cluster as its owner.
fn pod_metadata(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
    options: &PodOptions,
    template_meta: ObjectMeta,
    identity: names::ClusterIdentity,
) -> ObjectMeta {
    let mut own_labels = process_group_labels(cluster, group);
    if let Some(key) = &options.distribution_key {
        own_labels.insert(DISTRIBUTION_KEY_LABEL.to_owned(), key.clone());
    }
    let mut annotations: BTreeMap<String, String> = template_meta.annotations.unwrap_or_default();
    annotations.insert(
        PUBLIC_IP_SOURCE_ANNOTATION.to_owned(),
        cluster.spec.routing.public_ip_source().as_str().to_owned(),
    );
    annotations.insert(
        IMAGE_TYPE_ANNOTATION.to_owned(),
        cluster.image_type().as_str().to_owned(),
    );
    match cluster.spec.routing.chosen_pod_ip_family() {
        Some(family) => {
            annotations.insert(IP_FAMILY_ANNOTATION.to_owned(), family.to_string());
        }
        // Unset: the pod uses `status.podIP`, whatever the template says.
        None => {
            annotations.remove(IP_FAMILY_ANNOTATION);
        }
    }
    ObjectMeta {
        name: Some(pod_name(cluster, group)),
        namespace: Some(identity.namespace),
        labels: Some(labels::merged_labels(
            cluster,
            template_meta.labels.as_ref(),
            own_labels,
        )),
        annotations: Some(annotations),
        owner_references: Some(vec![identity.owner]),
        ..ObjectMeta::default()
    }
}

/// The desired pod of a process group (docs/controller-model.md, "The pod"). See the module
/// docs for how the user's template is used; the result carries the spec hash in
/// [`LAST_APPLIED_SPEC_ANNOTATION`].
pub fn build_pod(
    cluster: &FoundationDBCluster,
    group: &ProcessGroupStatus,
    options: &PodOptions,
) -> Result<Pod, PodModelError> {
    let spec = &cluster.spec;
    let identity = names::ClusterIdentity::of(cluster)?;
    names::check_group_names(cluster, group)?;
    let default_version = pod_version(cluster);
    let main_version = options.main_version.as_deref().unwrap_or(default_version);
    let sidecar_version = options.sidecar_version.as_deref().unwrap_or(main_version);
    if main_version.is_empty() || sidecar_version.is_empty() {
        return Err(PodModelError::MissingVersion {
            cluster: identity.name,
        });
    }

    let template = spec
        .process_settings(group.process_class)
        .pod_template
        .unwrap_or_default();
    let template_meta = template.metadata.unwrap_or_default();
    let mut pod_spec = template.spec.unwrap_or_default();
    let shared_env = env::shared_env(cluster, group, options)?;

    let mut user_containers = std::mem::take(&mut pod_spec.containers);
    let user = UserContainers {
        main: take_named(&mut user_containers, MAIN_CONTAINER),
        sidecar: take_named(&mut user_containers, SIDECAR_CONTAINER),
        inits: pod_spec.init_containers.take().unwrap_or_default(),
    };
    let versions = (main_version, sidecar_version);
    let (pod_containers, init_containers, volumes) =
        image_containers(cluster, group, versions, user, &shared_env);
    let mut pod_containers = pod_containers;
    pod_containers.extend(user_containers);
    pod_spec.containers = pod_containers;
    pod_spec.init_containers = Some(init_containers);

    pod_spec.volumes = Some(volumes::merge_volumes(volumes, pod_spec.volumes.as_ref()));
    pod_spec.affinity = affinity::pod_affinity(cluster, group, options, pod_spec.affinity.as_ref());
    buggify::apply(
        &buggify::desired_state(cluster, &group.process_group_id),
        &mut pod_spec,
    );
    let routing = &spec.routing;
    if routing.headless_service() || routing.define_dns_locality_fields() {
        pod_spec.hostname = Some(pod_name(cluster, group));
        pod_spec.subdomain = Some(identity.name.clone());
    }

    let metadata = pod_metadata(cluster, group, options, template_meta, identity);
    let mut pod = Pod {
        metadata,
        spec: Some(pod_spec),
        status: None,
    };
    let hash = pod_spec_hash(&pod);
    if let Some(annotations) = pod.metadata.annotations.as_mut() {
        annotations.insert(LAST_APPLIED_SPEC_ANNOTATION.to_owned(), hash);
    }
    Ok(pod)
}
