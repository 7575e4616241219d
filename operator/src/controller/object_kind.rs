//! The kinds of Kubernetes objects a cluster's snapshot holds and a plan writes: a leaf
//! module, so that plans (`pass/plan.rs`) and the pass's I/O (`pass::io`) both
//! name them without importing each other.

use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The kinds of objects a snapshot holds, as the pass refreshes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ObjectKind {
    /// Pods.
    Pods,
    /// PersistentVolumeClaims.
    Pvcs,
    /// Services.
    Services,
    /// The ConfigMap.
    ConfigMap,
}

impl ObjectKind {
    /// The kind in words, for logs and errors ("pod").
    pub fn noun(self) -> &'static str {
        match self {
            Self::Pods => "pod",
            Self::Pvcs => "PVC",
            Self::Services => "service",
            Self::ConfigMap => "configmap",
        }
    }
}

/// A namespaced object kind of the snapshot.
pub(crate) trait SnapshotObject:
    Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
    + Clone
    + std::fmt::Debug
    + Serialize
    + DeserializeOwned
{
    /// Which part of the snapshot holds it.
    const KIND: ObjectKind;
}

impl SnapshotObject for Pod {
    const KIND: ObjectKind = ObjectKind::Pods;
}
impl SnapshotObject for PersistentVolumeClaim {
    const KIND: ObjectKind = ObjectKind::Pvcs;
}
impl SnapshotObject for Service {
    const KIND: ObjectKind = ObjectKind::Services;
}
impl SnapshotObject for ConfigMap {
    const KIND: ObjectKind = ObjectKind::ConfigMap;
}

/// An object a plan creates (boxed: the kinds differ much in size).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NewObject {
    /// A pod.
    Pod(Box<Pod>),
    /// A PVC.
    Pvc(Box<PersistentVolumeClaim>),
    /// A Service.
    Service(Box<Service>),
    /// The ConfigMap.
    ConfigMap(Box<ConfigMap>),
}

impl NewObject {
    /// Its kind.
    pub(crate) fn kind(&self) -> ObjectKind {
        match self {
            Self::Pod(_) => ObjectKind::Pods,
            Self::Pvc(_) => ObjectKind::Pvcs,
            Self::Service(_) => ObjectKind::Services,
            Self::ConfigMap(_) => ObjectKind::ConfigMap,
        }
    }

    /// Its name.
    pub(crate) fn name(&self) -> String {
        match self {
            Self::Pod(object) => object.name_any(),
            Self::Pvc(object) => object.name_any(),
            Self::Service(object) => object.name_any(),
            Self::ConfigMap(object) => object.name_any(),
        }
    }
}
