//! BounceProcesses on a database shared by several operator instances
//! ([`crate::controller::safety::restart_sync`]): every pass writes this instance's entries of
//! the restart lists (its groups that need a restart; those it would kill now as ready)
//! and reads every instance's; when this instance would kill, [`conclude`] kills every
//! process of the database instead, once the lists allow it, or waits for the other
//! instances. Not used while an incompatible upgrade is pending (its own list,
//! upgrade_bounce.rs) nor when the instance is alone on its database.

use std::time::Duration;

use crate::controller::errors::StepError;
use crate::controller::pass::executor;
use crate::controller::pass::facts::Answers;
use crate::controller::pass::plan::{Action, PassFacts, Verdict, Wait, WaitOn};
use crate::controller::safety::restart_sync::{SharedKill, decide_shared_kill, synchronized};
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::steps::bounce_processes::{self, BounceDecision, KillReason};

/// The list update of this instance for its own `decision`: pending, the groups that
/// need a restart; ready, those its own decision would kill now.
fn sync_for(snapshot: &ClusterSnapshot, decision: &BounceDecision) -> Action {
    let pending: Vec<String> = bounce_processes::incorrect_command_line_targets(snapshot)
        .into_iter()
        .map(|t| t.group)
        .collect();
    let ready = match decision {
        BounceDecision::Kill(targets) => targets
            .iter()
            .filter(|t| t.reason != KillReason::Alongside)
            .map(|t| t.group.clone())
            .collect(),
        _ => Vec::new(),
    };
    Action::SyncRestartLists { pending, ready }
}

/// The step's verdict (no upgrade pending): this instance's own decision, its list
/// entries written first when the database is shared. A kill is left to [`conclude`].
pub(crate) fn decide(snapshot: &ClusterSnapshot, facts: &PassFacts, delay: Duration) -> Verdict {
    let decision = bounce_processes::decide(snapshot);
    if !facts.rules.shared_restarts || !synchronized(snapshot) {
        return bounce_processes::verdict(decision, delay);
    }
    let sync = sync_for(snapshot, &decision);
    match decision {
        BounceDecision::Kill(_) => Verdict::plain([sync]),
        other => bounce_processes::verdict(other, delay).preceded_by(Some(sync)),
    }
}

/// After the lists were written and read: when this instance would kill, the kill of
/// every process of the database if the lists allow it, else the wait.
pub(crate) fn conclude(
    snapshot: &ClusterSnapshot,
    facts: &PassFacts,
    answers: &mut Answers,
) -> Result<Verdict, StepError> {
    let lists = answers.restart_lists.take();
    if !facts.rules.shared_restarts
        || !synchronized(snapshot)
        || !matches!(bounce_processes::decide(snapshot), BounceDecision::Kill(_))
    {
        return Ok(Verdict::Continue);
    }
    let Some(lists) = lists else {
        return Ok(Verdict::Wait(Wait::new(
            WaitOn::Database,
            "processes need a restart; waiting to read the database's restart lists",
        )));
    };
    let (targets, ready) = match decide_shared_kill(snapshot, &lists, snapshot.now_unix()) {
        SharedKill::Wait {
            reason,
            after_seconds,
        } => {
            return Ok(Verdict::Wait(Wait::new(
                WaitOn::After(Duration::from_secs(after_seconds.max(1))),
                reason,
            )));
        }
        SharedKill::Kill { targets, ready } => (targets, ready),
    };
    let delay = facts.settings.database_wait;
    let verdict = bounce_processes::verdict(BounceDecision::Kill(targets), delay)
        .preceded_by(Some(Action::ClearReadyForRestart(ready)));
    // The shared rules (lock, one disruption, pacing) before the ready entries are
    // cleared: clearing them is only right when the kill follows.
    if let Verdict::Act(plan) = &verdict
        && let Some(wait) = executor::refused_before_start(snapshot, facts, plan)
    {
        return Ok(Verdict::Wait(wait));
    }
    Ok(verdict)
}
