//! An exclusion FoundationDB refused (fdbcli's `exclude` without `FORCE`: too little
//! free space, or storage metrics missing; `fdb/fdbcli/refusals.rs`): the refusal is
//! remembered for the wait before the next attempt
//! ([`crate::controller::removals::exclusion_retries`]), the step ends with that wait,
//! independent of the later steps (they go on), and an Event quotes FoundationDB.
//! Any other failure of the command stays a failure of the step.

use super::super::super::context::Context;
use super::super::super::errors::StepError;
use super::super::super::events::EventReason;
use super::super::super::retry_backoff::backoff;
use super::super::super::snapshot::ClusterSnapshot;
use super::super::plan::{Action, PassFacts, Wait, WaitOn};

/// The step that excludes (the Event's action).
const EXCLUDING_STEP: &str = "ExcludeInstances";

/// The wait after `error`, when it is a refusal of the exclusion (remembered in `ctx`
/// and `facts`); `prefix` names the groups waiting. Any other error is returned.
pub(super) fn wait_after(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    facts: &mut PassFacts,
    prefix: &str,
    error: StepError,
) -> Result<Wait, StepError> {
    let StepError::Admin { source, .. } = &error else {
        return Err(error);
    };
    let Some(refusal) = source.exclude_refusal() else {
        return Err(error);
    };
    let record = ctx.exclusion_refusals.count(
        snapshot.namespace(),
        snapshot.name(),
        refusal,
        snapshot.now_unix(),
    );
    let delay = backoff(record.refusals);
    facts.remembered.exclusion_refusal = Some(record);
    let source = fdb_shared::error_chain::ErrorChain(source);
    tracing::warn!(%source, seconds = delay.as_secs(), "FoundationDB refused the exclusion");
    Ok(Wait::independent(
        WaitOn::After(delay),
        format!(
            "{prefix}{} ({source}); trying again in {}s",
            refusal.describe(),
            delay.as_secs()
        ),
    ))
}

/// The Event that says why the exclusion waits.
pub(super) fn event(wait: &Wait) -> Action {
    Action::Event {
        reason: EventReason::RemovalBlocked,
        action: EXCLUDING_STEP.to_owned(),
        note: wait.reason.clone(),
    }
}
