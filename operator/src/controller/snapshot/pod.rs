//! A pod as a snapshot holds it: its metadata and status ([`SnapshotPod::head`]) and
//! what the steps read from its spec ([`SnapshotPod::facts`]) read without decoding
//! anything; the whole pod ([`SnapshotPod::pod`]) decoded the first time a step asks for
//! it, at most once per snapshot (issue 20: a pass with nothing to change decodes no
//! pod).

use std::sync::{Arc, OnceLock};

use k8s_openapi::api::core::v1::Pod;

use super::super::cache::decoded_pods::DecodedPods;
use super::super::cache::pod::CompactPod;
use super::pod_head::PodHead;
use super::pod_spec_facts::SpecFacts;

/// Where a snapshot's pod comes from.
#[derive(Debug, Clone)]
pub enum PodSource {
    /// Listed from the API server (or built by a test): whole.
    Listed(Arc<Pod>),
    /// From the pods' cache, decoded through `decoder` when a step asks for the spec.
    Cached {
        /// The pod as the cache keeps it.
        pod: Arc<CompactPod>,
        /// The cache's decoded pods.
        decoder: Arc<DecodedPods>,
    },
}

impl From<Arc<Pod>> for PodSource {
    fn from(pod: Arc<Pod>) -> Self {
        Self::Listed(pod)
    }
}

impl From<Pod> for PodSource {
    fn from(pod: Pod) -> Self {
        Self::Listed(Arc::new(pod))
    }
}

impl PodSource {
    /// `spec.nodeName`, nothing decoded.
    pub fn node_name(&self) -> Option<&str> {
        match self {
            Self::Listed(pod) => pod.spec.as_ref()?.node_name.as_deref(),
            Self::Cached { pod, .. } => pod.facts().node_name.as_deref(),
        }
    }
}

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct SnapshotPod {
    source: PodSource,
    /// A listed pod's metadata and status, derived when first asked.
    listed_head: OnceLock<PodHead>,
    /// A listed pod's facts, derived when first asked.
    listed_facts: OnceLock<SpecFacts>,
    /// A cached pod decoded, or why it did not decode.
    decoded: OnceLock<Result<Arc<Pod>, String>>,
}

impl SnapshotPod {
    /// The pod of `source`; nothing decoded yet.
    pub fn new(source: PodSource) -> Self {
        Self {
            source,
            listed_head: OnceLock::new(),
            listed_facts: OnceLock::new(),
            decoded: OnceLock::new(),
        }
    }

    /// The pod's metadata and status (see [`SnapshotPod::facts`] and
    /// [`SnapshotPod::pod`] for its spec).
    pub fn head(&self) -> &PodHead {
        match &self.source {
            PodSource::Cached { pod, .. } => pod.head(),
            PodSource::Listed(pod) => self.listed_head.get_or_init(|| PodHead::of(pod)),
        }
    }

    /// What the steps read from the pod's spec, without decoding it.
    pub fn facts(&self) -> &SpecFacts {
        match &self.source {
            PodSource::Cached { pod, .. } => pod.facts(),
            PodSource::Listed(pod) => self.listed_facts.get_or_init(|| SpecFacts::of(pod)),
        }
    }

    /// The whole pod (decoded the first time it is asked for), or why it does not
    /// decode (not expected: the cache checked its spec when it stored it).
    pub fn pod(&self) -> Result<&Pod, &str> {
        match &self.source {
            PodSource::Listed(pod) => Ok(pod),
            PodSource::Cached { pod, decoder } => self
                .decoded
                .get_or_init(|| {
                    decoder
                        .decode_one(pod)
                        .map_err(|e| fdb_shared::error_chain::chain_text(&e))
                })
                .as_deref()
                .map_err(String::as_str),
        }
    }

    /// Why the pod did not decode, when a step asked for it and it did not.
    pub fn decode_failure(&self) -> Option<&str> {
        self.decoded.get()?.as_ref().err().map(String::as_str)
    }
}
