//! The query of the pods' agents (the HTTP sidecar, fdb-kubernetes-monitor's
//! annotations) and their answers: which pods must confirm the desired configuration
//! ([`PodConfigPlan`], [`PodConfigQuery`]) and what each agent says
//! ([`PodConfigResult`]). The vocabulary between the step that asks and the executor
//! that asks them.

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::ProcessGroupStatus;
use k8s_openapi::api::core::v1::Pod;

use super::{MonitorCheck, check_monitor};

/// What the sidecar protocol found for one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PodConfigResult {
    /// Both files are as desired.
    Confirmed,
    /// The sidecar did not answer.
    Unreachable(String),
    /// A file still differs after the copy (or the copy was refused), e.g. because the
    /// kubelet has not projected the new ConfigMap yet.
    Incorrect(String),
    /// A unified pod's monitor annotations are missing or malformed (the message names
    /// the pod and the annotation): IncorrectConfigMap, and always named in the reason.
    Unreadable(String),
    /// The new monitor conf cannot be rendered from what the pod offers (a substitution
    /// its spec does not give yet, as `$FDB_DNS_NAME` once `useDNSInClusterFile` is
    /// turned on): IncorrectConfigMap until UpdatePods gives the pod the new spec, which
    /// the pass must reach (the wait does not end it).
    NeedsPodUpdate(String),
    /// Not asked this pass: the pod asked before it showed that the kubelet has not
    /// projected the ConfigMap yet, which it does for every pod about the same time.
    NotAsked,
}

/// A pod whose configuration the sidecar must confirm.
#[derive(Debug, Clone)]
pub(crate) struct Candidate<'a> {
    /// Its process group.
    pub group: &'a ProcessGroupStatus,
    /// The pod.
    pub pod: &'a Pod,
    /// The hash its `last-applied-config-map` annotation must get.
    pub desired_hash: String,
}

/// Which pods to ask.
#[derive(Debug, Clone, Default)]
pub(crate) struct PodConfigPlan<'a> {
    /// The cluster file the pods must have.
    pub cluster_file: String,
    /// Running pods of live groups whose annotation is not the desired hash, in status
    /// order.
    pub candidates: Vec<Candidate<'a>>,
    /// Pods that need the configuration but do not run (with an IP) yet.
    pub not_running: usize,
    /// During an incompatible upgrade, the staged `fdbserver` every pod must have
    /// (relative to the sidecar's output dir).
    pub staged: Option<String>,
}

/// One pod whose agent is asked, by name (a plan's action holds no borrow of the
/// snapshot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueryCandidate {
    /// Its process group.
    pub group: String,
    /// The pod.
    pub pod: String,
    /// The hash its `last-applied-config-map` annotation must get.
    pub desired_hash: String,
}

/// What UpdatePodConfig asks the pods' agents: take the desired configuration and
/// confirm it. The answers, one per candidate in order, land in the pass's facts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PodConfigQuery {
    /// The cluster file the pods must have.
    pub cluster_file: String,
    /// During an incompatible upgrade, the staged `fdbserver` every pod must have.
    pub staged: Option<String>,
    /// The pods, in status order.
    pub candidates: Vec<QueryCandidate>,
}

impl PodConfigQuery {
    /// The query of `plan`'s candidates.
    pub(crate) fn of(plan: &PodConfigPlan<'_>) -> Self {
        use kube::ResourceExt as _;
        Self {
            cluster_file: plan.cluster_file.clone(),
            staged: plan.staged.clone(),
            candidates: plan
                .candidates
                .iter()
                .map(|c| QueryCandidate {
                    group: c.group.process_group_id.clone(),
                    pod: c.pod.name_any(),
                    desired_hash: c.desired_hash.clone(),
                })
                .collect(),
        }
    }
}

/// What a unified pod's monitor reports, as the sidecar protocol's result: confirmed
/// when it runs the desired configuration, else IncorrectConfigMap with why (a missing
/// or malformed annotation is named with its pod).
pub(crate) fn monitor_result(
    cluster: &FoundationDBCluster,
    candidate: &Candidate<'_>,
) -> PodConfigResult {
    match check_monitor(cluster, candidate.group, candidate.pod) {
        MonitorCheck::Confirmed => PodConfigResult::Confirmed,
        MonitorCheck::Outdated(why) => PodConfigResult::Incorrect(why),
        MonitorCheck::Unreadable(problem) => PodConfigResult::Unreadable(problem.to_string()),
    }
}
