//! A pod asking for an address family the pod network lacks (`world.ipFamilies`): its
//! sandbox cannot get that address, so the pod stays Pending in `ContainerCreating`
//! and the kubelet reports why with a Warning Event `FailedCreatePodSandBox`, as
//! Kubernetes' `pkg/kubelet/kuberuntime/kuberuntime_manager.go` (`SyncPod`: "Failed to
//! create pod sandbox: %v") does with the runtime's error (containerd's
//! `internal/cri/server/sandbox_run.go`: "failed to setup network for sandbox %q").
//!
//! A pod asks for a family through the FoundationDB pod conventions: the
//! `foundationdb.org/ip-family` annotation (the Go operator's `IPFamilyAnnotation`,
//! `api/v1beta2/foundationdb_labels.go`) or the sidecar's `--public-ip-family` argument.

use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

use super::World;
use super::ip_families::IpFamily;
use super::nodes::NODE_ACTOR;
use super::pod_runtime::{PodPhase, PodRuntime};

/// The annotation naming the family a pod's processes use.
pub const IP_FAMILY_ANNOTATION: &str = "foundationdb.org/ip-family";
/// The kubelet's Event reason when a sandbox cannot be created.
pub const SANDBOX_FAILED_REASON: &str = "FailedCreatePodSandBox";

/// The family `pod` asks for, if any.
pub fn requested_family(pod: &Pod) -> Option<IpFamily> {
    let annotated = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(IP_FAMILY_ANNOTATION));
    if let Some(text) = annotated {
        return text.trim().parse().ok().and_then(IpFamily::from_number);
    }
    pod.spec.as_ref()?.containers.iter().find_map(|container| {
        let words: Vec<&String> = container
            .command
            .iter()
            .flatten()
            .chain(container.args.iter().flatten())
            .collect();
        words.windows(2).find_map(|pair| {
            (pair[0] == "--public-ip-family")
                .then(|| pair[1].trim().parse().ok().and_then(IpFamily::from_number))
                .flatten()
        })
    })
}

impl World {
    /// Whether `pod` cannot get its sandbox because it asks for a family the network
    /// lacks; then the pod waits in `ContainerCreating` and, the first time, the
    /// kubelet's Event is posted.
    pub(super) fn sandbox_lacks_family(&mut self, pod: &Pod, runtime: &mut PodRuntime) -> bool {
        let families = self.network.map().families();
        let Some(family) = requested_family(pod).filter(|f| !families.offers(*f)) else {
            return false;
        };
        let offered: Vec<String> = families.list().iter().map(ToString::to_string).collect();
        let sandbox = runtime.uid.replace('-', "");
        let message = format!(
            "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox \"{sandbox}\": the pod asks for an {family} address and the cluster network offers only {}",
            offered.join(" and ")
        );
        let phase = PodPhase::Waiting {
            reason: "ContainerCreating".into(),
            message: message.clone(),
        };
        if runtime.phase != phase {
            runtime.phase = phase;
            self.record("wait-pod", runtime.target(), message.clone());
            self.post_sandbox_event(runtime, &message);
        }
        true
    }

    /// The kubelet's Warning Event on the pod.
    fn post_sandbox_event(&self, runtime: &PodRuntime, message: &str) {
        let now = self.now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let suffix: String = runtime.uid.chars().filter(|c| *c != '-').take(16).collect();
        let event = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": format!("{}.{suffix}", runtime.name),
                "namespace": runtime.namespace,
            },
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": runtime.name,
                "namespace": runtime.namespace,
                "uid": runtime.uid,
            },
            "reason": SANDBOX_FAILED_REASON,
            "message": message,
            "type": "Warning",
            "source": {"component": "kubelet", "host": runtime.node},
            "reportingComponent": "kubelet",
            "reportingInstance": runtime.node,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        });
        // An Event is a report: a refusal (one already posted) loses nothing.
        if let Err(error) = self.api.create_as(NODE_ACTOR, event) {
            tracing::debug!(%error, "kubelet event not posted");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_family_comes_from_the_annotation_or_the_sidecar_argument() {
        let pod = |yaml: &str| -> Pod { serde_yaml_ng::from_str(yaml).unwrap() };
        assert_eq!(
            requested_family(&pod(
                "metadata: {annotations: {foundationdb.org/ip-family: '6'}}\nspec: {containers: []}"
            )),
            Some(IpFamily::V6)
        );
        assert_eq!(
            requested_family(&pod(
                "metadata: {}\nspec: {containers: [{name: foundationdb-kubernetes-sidecar, args: [--public-ip-family, '4']}]}"
            )),
            Some(IpFamily::V4)
        );
        assert_eq!(
            requested_family(&pod("metadata: {}\nspec: {containers: [{name: x}]}")),
            None
        );
    }
}
