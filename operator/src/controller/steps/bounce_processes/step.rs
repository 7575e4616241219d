//! The BounceProcesses step's entry: an incompatible upgrade's cluster-wide kill when one
//! is pending (`upgrade_bounce.rs`), else the restarts this step decides
//! (`bounce_processes.rs`), shared with the other instances of the database when they
//! synchronize (`global_bounce.rs`). Kept apart so those files import only downward.

use async_trait::async_trait;

use super::super::Subreconciler;
use super::BounceProcesses;
use crate::controller::errors::StepError;
use crate::controller::pass::facts::Answers;
use crate::controller::pass::plan::{Barrier, PassFacts, Verdict};
use crate::controller::snapshot::ClusterSnapshot;

#[async_trait]
impl Subreconciler for BounceProcesses {
    fn name(&self) -> &'static str {
        "BounceProcesses"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    /// An incompatible upgrade's cluster-wide kill when one is pending (and nothing
    /// else of this step then: see upgrade_bounce.rs), else the restarts of the
    /// processes that need one; first, the clear of a pending-upgrade list this
    /// instance's last kill left.
    fn decide(&self, snapshot: &ClusterSnapshot, facts: &PassFacts) -> Result<Verdict, StepError> {
        let clear = super::upgrade_bounce::clear_after_kill(snapshot, facts);
        let verdict = match super::upgrade_bounce::decide(snapshot, facts)? {
            Some(upgrade) => upgrade,
            None => super::global_bounce::decide(
                snapshot,
                facts,
                crate::controller::pass::requeue::kill_wait_delay(
                    facts.settings.database_wait,
                    snapshot,
                ),
            ),
        };
        Ok(verdict.preceded_by(clear))
    }

    /// After this instance joined the pending-upgrade list or the restart lists: the
    /// kill, or the wait for the other instances.
    fn conclude(
        &self,
        snapshot: &ClusterSnapshot,
        facts: &PassFacts,
        answers: &mut Answers,
    ) -> Result<Verdict, StepError> {
        match super::upgrade_bounce::conclude(snapshot, facts, answers)? {
            Verdict::Continue => super::global_bounce::conclude(snapshot, facts, answers),
            upgrade => Ok(upgrade),
        }
    }
}
