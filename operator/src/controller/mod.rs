//! The operator's controller, by concept: `pass/` (the driver over the ordered steps, the
//! one executor of their plans, the plan vocabulary, the pass's state, facts, I/O and
//! look-ahead, the requeue), `steps/<step>/` (one folder per step: its pure decision and
//! its tests), `snapshot/` (what a pass reads, observed once), `model/` (the desired
//! Kubernetes objects: pod model, process groups, ConfigMap), `cache/` (the watch caches),
//! `status/`, `safety/` (the shared gates, locks, shared exclusions and restarts),
//! `coordinators/`, `pod_updates/`, `removals/`, `versions/`, `pod_agent/`, and
//! `production/` (`fdb-operator run`: providers, metrics, endpoints, leader election).
//!
//! Every module is `pub(crate)`; what the rest of the workspace uses (the binary's `run`,
//! the simulation's runner, fleet and judges, `kubectl-fdb analyze`, tests and benches)
//! is re-exported below, so nothing outside this crate names a module of the
//! controller: moving a file inside `controller/` changes no other crate.

pub(crate) mod buggify_deletions;
pub(crate) mod cache;
pub(crate) mod context;
pub(crate) mod coordinators;
pub(crate) mod errors;
pub(crate) mod events;
#[cfg(test)]
pub(crate) mod fixtures;
pub(crate) mod kill_target;
pub(crate) mod merge_patch;
pub(crate) mod model;
pub(crate) mod object_kind;
pub(crate) mod objects;
pub(crate) mod pass;
pub(crate) mod pod_agent;
pub(crate) mod pod_updates;
pub(crate) mod production;
pub(crate) mod removals;
pub(crate) mod retry_backoff;
pub(crate) mod safety;
#[cfg(test)]
mod scale_tests;
pub(crate) mod snapshot;
pub(crate) mod status;
pub(crate) mod steps;
pub(crate) mod upgrade;
pub(crate) mod versions;

// One pass, as the binary and the simulation run it.
pub use context::{AdminClientProvider, Context, OperatorSettings, SidecarProvider};
pub use errors::{ReconcileError, StepError};
pub use object_kind::ObjectKind;
pub use pass::driver::run_pass;
pub use pass::outcome::{PassOutcome, PassReport, StepOutcome, StepWait};
pub use pass::plan::ExecutorRules;
pub use pass::requeue::RequeuePolicy;

// The controller of `fdb-operator run`, its caches, providers, metrics and endpoints.
pub use cache::{CLUSTER_NAME_LABEL, CacheSelector, ObjectCache};
pub use production::endpoints::{Health, Phase};
pub use production::leader::LeaderElectionConfig;
pub use production::metrics::{OperatorMetrics, PassLabels};
pub use production::providers::{FdbcliAdminProvider, HttpSidecarProvider};
pub use production::{RunError, RunOptions, run_until};
pub use steps::generate_initial_cluster_file::description_for as connection_string_description;
pub use versions::tool_choice::tool_versions;

// What the operator would build and how it reads a cluster: the simulation's fleet
// (clusters created as the operator would have created them), its judges,
// `kubectl-fdb analyze` and the cache benchmarks.
pub use cache::pod::CompactPod;
pub use cache::slim::slim_pod;
pub use model::config_map::expected_monitor_conf;
pub use model::desired::{ConfigHashes, desired_config_map, pod_options};
pub use model::desired_memo::DesiredObjects;
pub use model::pod::buggify::crash_loops;
pub use model::pod::{
    LAST_APPLIED_CONFIG_MAP_ANNOTATION, MAIN_CONTAINER, SIDECAR_CONTAINER, build_pod, build_pvc,
    expected_substitutions, pod_servers_per_pod, process_difference, sha256_hex,
};
pub use model::process_config::desired_process_configuration;
pub use snapshot::{ClusterSnapshot, DatabaseState, SnapshotParts};
pub use status::mutations::apply as apply_status_mutations;
pub use status::{DatabaseView, StatusInputs, build_status};
pub use steps::add_process_groups::{AddGroupsDecision, decide as decide_new_process_groups};
