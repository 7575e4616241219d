//! The operator's controller: the reconcile driver over the ordered subreconcilers, the
//! per-pass snapshot and I/O, observation, the shared safety gates, process group
//! bookkeeping, the status and its typed edits, and the desired Kubernetes objects of a
//! cluster (pod model, ConfigMap).

pub mod buggify_deletions;
pub mod cache;
pub mod context;
pub mod coordinators;
pub mod errors;
pub mod events;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod kill_target;
pub mod merge_patch;
pub mod model;
pub mod object_kind;
pub mod objects;
pub mod pass;
pub mod pod_agent;
pub mod pod_updates;
pub mod production;
pub mod removals;
pub mod safety;
#[cfg(test)]
mod scale_tests;
pub mod snapshot;
pub mod status;
pub mod steps;
pub mod upgrade;
pub mod versions;

pub use context::{AdminClientProvider, Context, OperatorSettings, SidecarProvider};
pub use errors::{ReconcileError, StepError};
pub use pass::driver::run_pass;
pub use pass::outcome::{PassOutcome, PassReport, StepOutcome, StepWait};
