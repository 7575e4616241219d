//! What a subreconciler step and a whole pass end with.

use std::time::Duration;

/// The result of one step: go on with the next step, or end the pass and come back later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepOutcome {
    /// The step has nothing left to do (or did it); the pass continues.
    Continue,
    /// The step is waiting for something; the pass ends and runs again after `delay`.
    Requeue {
        /// When to run the next pass.
        delay: Duration,
        /// Why, in words a user understands ("waiting for 17 pods to be scheduled").
        reason: String,
    },
    /// The step waits for something, but the steps after it may still do their work
    /// (the Go operator's delayed requeue): the pass goes on and ends with this requeue
    /// unless a later step asks for an immediate one.
    DelayedRequeue {
        /// When to run the next pass.
        delay: Duration,
        /// Why.
        reason: String,
    },
}

/// How a pass ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PassOutcome {
    /// Every step continued.
    Completed,
    /// A step asked to come back later.
    Requeue {
        /// When to run the next pass.
        delay: Duration,
        /// Why.
        reason: String,
        /// The step that asked.
        step: &'static str,
    },
}

/// A step that waited while the pass went on (a [`StepOutcome::DelayedRequeue`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepWait {
    /// The step.
    pub step: &'static str,
    /// When it wants to look again.
    pub delay: Duration,
    /// Why it waits.
    pub reason: String,
}

impl std::fmt::Display for StepWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} (in {}s)",
            self.step,
            self.reason,
            self.delay.as_secs()
        )
    }
}

/// The result of [`super::super::run_pass`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassReport {
    /// How the pass ended.
    pub outcome: PassOutcome,
    /// Whether the cluster is reconciled: `status.generations.reconciled` equals
    /// `metadata.generation` and the pass had nothing left to do.
    pub reconciled: bool,
    /// Every step that waited while the pass went on, in step order (when every step
    /// continued otherwise, the outcome is the first of them). A step that
    /// ended the pass is in `outcome`, not here.
    pub waits: Vec<StepWait>,
}

impl PassReport {
    /// A report with no step waiting beside the outcome.
    pub fn new(outcome: PassOutcome, reconciled: bool) -> Self {
        Self {
            outcome,
            reconciled,
            waits: Vec::new(),
        }
    }
}
