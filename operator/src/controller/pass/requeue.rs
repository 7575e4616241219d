//! When a cluster is looked at again: the requeue after a pass (reconciled, waiting,
//! unreconciled) and the back-off after a failure. Shared by the cluster, backup and
//! restore controllers, and by steps that bound their own waits.

use std::time::Duration;

use kube::runtime::controller::Action;

use super::super::errors::ReconcileError;
use super::super::safety::{self, Refusal};
use super::super::snapshot::ClusterSnapshot;
use super::outcome::{PassOutcome, PassReport};

/// How often a reconciled cluster is looked at again without any change.
pub(crate) const RESYNC_INTERVAL: Duration = Duration::from_secs(600);
/// How soon a cluster whose pass completed but is not reconciled is looked at again
/// (the same as the simulation's resync of such a pass).
pub(crate) const UNRECONCILED_INTERVAL: Duration = Duration::from_secs(30);

/// How long the controller waits before looking at a cluster again, after a pass and
/// after a failure. The defaults are what `fdb-operator run` uses; tests shorten them
/// because kube-runtime's requeue timers run on real time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequeuePolicy {
    /// The shortest requeue after a pass that asked to wait (guards against a hot loop
    /// on a zero delay).
    pub min_delay: Duration,
    /// The requeue of a reconciled cluster, and of an invalid or missing one (they wait
    /// for a change of the spec, which triggers a reconcile anyway).
    pub resync: Duration,
    /// The requeue after a pass that completed without reaching Reconciled and named
    /// nothing to wait for (e.g. the database still recovering): soon, not at the resync.
    pub unreconciled: Duration,
    /// The back-off after a transient failure (conflicts, timeouts, unreachable peers).
    pub transient_backoff: Duration,
    /// The back-off after any other failure.
    pub error_backoff: Duration,
}

impl Default for RequeuePolicy {
    fn default() -> Self {
        Self {
            min_delay: Duration::from_secs(1),
            resync: RESYNC_INTERVAL,
            unreconciled: UNRECONCILED_INTERVAL,
            transient_backoff: Duration::from_secs(15),
            error_backoff: Duration::from_secs(120),
        }
    }
}

impl RequeuePolicy {
    /// The requeue after a successful pass.
    pub fn action_for(&self, outcome: &PassOutcome) -> Action {
        match outcome {
            PassOutcome::Completed => Action::requeue(self.resync),
            PassOutcome::Requeue { delay, .. } => Action::requeue((*delay).max(self.min_delay)),
        }
    }

    /// The requeue after a pass, knowing whether it reached Reconciled: a completed pass
    /// that did not is looked at again soon (nothing will wake it: the database
    /// recovering or data moving do not change any watched object).
    pub fn after_pass(&self, report: &PassReport) -> Action {
        match &report.outcome {
            PassOutcome::Completed if !report.reconciled => Action::requeue(self.unreconciled),
            outcome => self.action_for(outcome),
        }
    }

    /// The back-off after a failed pass: an invalid spec waits for the next change (or
    /// a long resync); transient failures retry soon; others later.
    pub fn backoff_for(&self, error: &ReconcileError) -> Action {
        match error {
            ReconcileError::InvalidSpec(_)
            | ReconcileError::PodTemplateRefused(_)
            | ReconcileError::ClusterNotFound { .. } => Action::requeue(self.resync),
            error if error.is_transient() => Action::requeue(self.transient_backoff),
            _ => Action::requeue(self.error_backoff),
        }
    }
}

/// How long a waiting kill (a bounce or an upgrade's) waits before looking again: when
/// only the minimum uptime holds it back, until that is met (nothing else can change
/// sooner), else `usual`. Clamped to a day: a spec value can be anything.
pub(crate) fn kill_wait_delay(
    usual: std::time::Duration,
    snapshot: &ClusterSnapshot,
) -> std::time::Duration {
    if safety::available(snapshot).is_err() {
        return usual;
    }
    match safety::minimum_uptime(snapshot) {
        Err(Refusal::UptimeTooShort {
            uptime, minimum, ..
        }) => {
            let left = (minimum - uptime).ceil().max(0.0);
            Duration::from_secs_f64(left.min(86_400.0)).max(usual)
        }
        _ => usual,
    }
}
