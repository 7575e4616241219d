//! The operator's controller: the reconcile driver over the ordered subreconcilers, the
//! per-pass snapshot and I/O, observation, the shared safety gates, process group
//! bookkeeping, the status and its typed edits, and the desired Kubernetes objects of a
//! cluster (pod model, ConfigMap).

pub mod buggify_deletions;
pub mod cache;
pub mod cache_index;
pub mod cache_pod;
pub mod cache_slim;
pub mod config_map;
pub mod config_map_error;
pub mod context;
pub mod coordinator_candidates;
pub mod coordinator_change;
pub mod coordinator_room;
pub mod coordinators;
pub mod decoded_pods;
pub mod desired;
pub mod desired_memo;
pub mod driver;
pub mod endpoints;
pub mod errors;
pub mod events;
pub mod exclusion_sync;
pub mod executor;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod forecast;
pub mod leader;
pub mod locks;
pub mod merge_patch;
pub mod metered;
pub mod metrics;
pub mod object_kind;
pub mod objects;
pub mod observe;
pub mod outcome;
pub mod pass;
pub mod pass_facts;
pub mod pass_io;
pub mod pending_upgrades;
pub mod plan;
pub mod pod_agent;
pub mod pod_config_memo;
pub mod pod_config_query;
pub mod pod_head;
pub mod pod_model;
pub mod pod_spec_facts;
pub mod pod_template_policy;
pub mod pod_update_coordinators;
pub mod pod_update_decision;
pub mod pod_updates;
pub mod process_config;
/// Buggify is part of the pod model (what it does to a pod); kept at its old path too.
pub use pod_model::buggify;
pub mod incompatible_processes;
pub mod kill_target;
pub mod process_groups;
pub mod production;
pub mod providers;
pub mod quantity;
pub mod removals;
pub mod replace_only;
pub mod requeue;
pub mod restart_sync;
pub mod safety;
#[cfg(test)]
mod scale_tests;
pub mod snapshot;
pub mod snapshot_group;
pub mod snapshot_pod;
pub mod status;
pub mod status_mutations;
pub mod subreconcilers;
pub mod tool_choice;
pub mod upgrade;
pub mod upgrade_cleanup;
pub mod upgrade_quorum;
pub mod upgrade_retries;
pub mod version_change;

pub use context::{AdminClientProvider, Context, OperatorSettings, SidecarProvider};
pub use driver::run_pass;
pub use errors::{ReconcileError, StepError};
pub use outcome::{PassOutcome, PassReport, StepOutcome, StepWait};
