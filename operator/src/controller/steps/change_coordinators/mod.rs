//! ChangeCoordinators: changes the coordinators when
//! [`crate::controller::coordinators::change`] says they must (an unreachable, excluded
//! or misplaced coordinator, a wrong number, one on a pod about to be deleted), as one
//! locked, recovery-paced `coordinators` command; the new connection string goes to
//! `status.connectionString`.

use super::Subreconciler;
use crate::controller::coordinators::change::{CoordinatorAction, decide};
use crate::controller::errors::StepError;
use crate::controller::pass::forecast;
use crate::controller::pass::plan::{
    Action, Barrier, PassFacts, Plan, Planned, Verdict, Wait, WaitOn,
};
use crate::controller::safety::LockedAction;
use crate::controller::snapshot::ClusterSnapshot;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ChangeCoordinators;

impl Subreconciler for ChangeCoordinators {
    fn name(&self) -> &'static str {
        "ChangeCoordinators"
    }

    fn barrier(&self) -> Barrier {
        Barrier::GoesOn
    }

    fn look_ahead(
        &self,
        snapshot: &ClusterSnapshot,
        facts: &mut PassFacts,
    ) -> Result<(), StepError> {
        forecast::fill(facts, snapshot);
        Ok(())
    }

    fn decide(&self, snapshot: &ClusterSnapshot, facts: &PassFacts) -> Result<Verdict, StepError> {
        Ok(match decide(snapshot, facts) {
            CoordinatorAction::None => Verdict::Continue,
            CoordinatorAction::Wait(reason) => Verdict::Wait(Wait::new(WaitOn::Database, reason)),
            CoordinatorAction::Change {
                coordinators,
                reason,
            } => {
                let refused = format!("{reason}, but ");
                // Every coordinators change is a recovery of the transaction system.
                let change = Planned::locked(
                    Action::ChangeCoordinators {
                        coordinators,
                        reason,
                    },
                    LockedAction::ChangeCoordinators,
                )
                .recovering(Some("coordinators change".to_owned()));
                Verdict::Act(Plan::new(vec![change], refused))
            }
        })
    }
}
