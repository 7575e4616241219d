//! A pod's metadata and status without its spec: what a pass reads of most pods
//! ([`PodHead`]), and the reads the helpers make of a pod, whole or not ([`PodParts`]).
//! A typed `Pod` holds its `PodSpec` inline (some 1.4 KB even when `None`), so the
//! pods' cache keeps each pod's head as a `PodHead` rather than a spec-less `Pod`.

use std::borrow::Cow;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kube::api::ObjectMeta;

/// See the module documentation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodHead {
    /// The pod's metadata.
    pub metadata: ObjectMeta,
    /// The pod's status.
    pub status: Option<PodStatus>,
}

impl PodHead {
    /// The head of `pod`.
    pub fn of(pod: &Pod) -> Self {
        Self {
            metadata: pod.metadata.clone(),
            status: pod.status.clone(),
        }
    }
}

impl kube::Resource for PodHead {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        Pod::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        Pod::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        Pod::version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        Pod::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// A pod's metadata and status, of a whole pod or of its head.
pub(crate) trait PodParts: kube::Resource<DynamicType = ()> {
    /// The pod's status.
    fn pod_status(&self) -> Option<&PodStatus>;
}

impl PodParts for Pod {
    fn pod_status(&self) -> Option<&PodStatus> {
        self.status.as_ref()
    }
}

impl PodParts for PodHead {
    fn pod_status(&self) -> Option<&PodStatus> {
        self.status.as_ref()
    }
}
