//! The compact form in which the pods' cache keeps a pod.
//!
//! A typed `PodSpec` holds every optional field inline (a `Volume` is over 3 KB, a
//! `Container` over 2 KB, most of it `None`): a pod's spec of 3.8 KB of JSON takes
//! about 30 KiB typed, three quarters of what the operator holds per process group
//! (issue 20: 100 clusters of 100 process groups within 256 MiB). The cache keeps each
//! pod as a [`CompactPod`]: metadata and the slimmed status typed (the cache's index and
//! its own-write waits read them), the spec as its JSON bytes, deflated.
//!
//! A pass reads a pod's metadata and status ([`CompactPod::head`]) and what the steps
//! read from its spec ([`SpecFacts`], derived once when the pod is stored) without
//! decoding anything; a step that needs the spec itself has the pod decoded into the
//! `Pod` it came from (the same value: the steps decide the same) by `DecodedPods`,
//! which keeps the most recently read ones decoded.

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use kube::api::ObjectMeta;
use kube::runtime::watcher;

use super::super::snapshot::pod_head::PodHead;
use super::super::snapshot::pod_spec_facts::SpecFacts;
use super::slim::slim_pod;

/// A pod's spec as the cache keeps it.
#[derive(Debug, Clone)]
enum CompactSpec {
    /// Its JSON (known to decode: checked when the pod was stored), deflated: a storage
    /// pod's 5.6 KB of spec JSON takes 1.4 KB, and at 10 000 pods the JSON was a
    /// quarter of what the operator held (session 26). Steady passes decode no spec
    /// (module documentation), so the inflating is paid only by the steps that read one.
    Deflated {
        /// The raw deflate stream (`miniz_oxide`, level 1: the fastest).
        bytes: Box<[u8]>,
        /// The JSON's length, the most the stream may inflate to.
        json_len: usize,
    },
    /// Typed, for a spec whose JSON does not decode back (not expected: kept whole
    /// rather than lost).
    Typed(Box<PodSpec>),
}

impl CompactSpec {
    /// `json` deflated.
    fn deflated(json: &[u8]) -> Self {
        Self::Deflated {
            bytes: miniz_oxide::deflate::compress_to_vec(json, 1).into_boxed_slice(),
            json_len: json.len(),
        }
    }
}

/// A deflated spec's JSON decoded. A stream that does not inflate (the cache wrote it,
/// so not expected) is reported as the JSON error the decoding would have been.
fn inflate_spec(bytes: &[u8], json_len: usize) -> Result<PodSpec, serde_json::Error> {
    let json =
        miniz_oxide::inflate::decompress_to_vec_with_limit(bytes, json_len).map_err(|error| {
            <serde_json::Error as serde::de::Error>::custom(format!(
                "the kept spec does not inflate: {error}"
            ))
        })?;
    serde_json::from_slice(&json)
}

/// A pod as the pods' cache keeps it: see the module documentation.
#[derive(Debug, Clone)]
pub struct CompactPod {
    /// The metadata and the slimmed status.
    head: PodHead,
    spec: Option<CompactSpec>,
    /// What the steps read from the spec, derived when the pod was stored.
    facts: SpecFacts,
}

/// A compact pod whose spec does not decode.
#[derive(Debug, thiserror::Error)]
#[error("the cached pod {namespace}/{name} does not decode")]
pub struct DecodeError {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// Why.
    #[source]
    pub source: serde_json::Error,
}

impl CompactPod {
    /// `pod` slimmed ([`slim_pod`]) and compacted, with its [`SpecFacts`]. The spec's
    /// JSON is decoded once here: a spec that would not decode back is kept typed, so
    /// that reading a cached pod's spec does not fail.
    pub fn new(mut pod: Pod) -> Self {
        slim_pod(&mut pod);
        let facts = SpecFacts::of(&pod);
        let spec = pod.spec.map(|spec| match serde_json::to_vec(&spec) {
            Ok(json) if serde_json::from_slice::<PodSpec>(&json).is_ok() => {
                CompactSpec::deflated(&json)
            }
            _ => CompactSpec::Typed(Box::new(spec)),
        });
        Self {
            head: PodHead {
                metadata: pod.metadata,
                status: pod.status,
            },
            spec,
            facts,
        }
    }

    /// The pod's metadata and status, without its spec (nothing decoded).
    pub fn head(&self) -> &PodHead {
        &self.head
    }

    /// What the steps read from the pod's spec ([`SpecFacts`]), nothing decoded.
    pub fn facts(&self) -> &SpecFacts {
        &self.facts
    }

    /// The pod, as [`slim_pod`] left it.
    pub fn decode(&self) -> Result<Pod, DecodeError> {
        let spec = match &self.spec {
            None => None,
            Some(CompactSpec::Typed(spec)) => Some(PodSpec::clone(spec)),
            Some(CompactSpec::Deflated { bytes, json_len }) => Some(
                inflate_spec(bytes, *json_len).map_err(|source| DecodeError {
                    namespace: self.head.metadata.namespace.clone().unwrap_or_default(),
                    name: self.head.metadata.name.clone().unwrap_or_default(),
                    source,
                })?,
            ),
        };
        Ok(Pod {
            metadata: self.head.metadata.clone(),
            spec,
            status: self.head.status.clone(),
        })
    }
}

impl kube::Resource for CompactPod {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(dt: &()) -> std::borrow::Cow<'_, str> {
        Pod::kind(dt)
    }

    fn group(dt: &()) -> std::borrow::Cow<'_, str> {
        Pod::group(dt)
    }

    fn version(dt: &()) -> std::borrow::Cow<'_, str> {
        Pod::version(dt)
    }

    fn plural(dt: &()) -> std::borrow::Cow<'_, str> {
        Pod::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.head.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.head.metadata
    }
}

/// A pods' watch event with its pod compacted.
pub(crate) fn compact_event(event: watcher::Event<Pod>) -> watcher::Event<CompactPod> {
    match event {
        watcher::Event::Apply(pod) => watcher::Event::Apply(CompactPod::new(pod)),
        watcher::Event::Delete(pod) => watcher::Event::Delete(CompactPod::new(pod)),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitApply(pod) => watcher::Event::InitApply(CompactPod::new(pod)),
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

#[cfg(test)]
#[path = "pod_tests.rs"]
mod tests;
