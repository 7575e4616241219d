//! The cluster-wide kill of an incompatible upgrade (docs/upgrades.md, "Incompatible
//! upgrades" step 4), run by BounceProcesses before anything else: while an incompatible
//! upgrade is pending, BounceProcesses does only this (a partial bounce of
//! IncorrectCommandLine processes would restart some processes on the new binary and split
//! the cluster). The decision is
//! [`crate::controller::upgrade::decide_bounce`]. `automationOptions.killProcesses:
//! false` holds the kill back, as it holds back every other restart.
//!
//! With locks in use, several operator instances may share the database: each takes the
//! lock, adds its ready process groups to the pending-upgrade list, and kills only when
//! every process group of the database still on the old version is on the list
//! ([`crate::controller::upgrade::check_agreement`]). An instance that has to wait for
//! the others gives the lock up, so they can take it and add theirs. The one that kills
//! clears the list afterwards, retrying in later passes while the database recovers from
//! the kill ([`crate::controller::versions::cleanup`]); if it crashes first, the entries
//! left behind name the old target and are dropped by the next upgrade's first write.
//!
//! All of it is decided here and done by the executor: joining the list is an action
//! whose answer (the groups listed) comes back to [`conclude`], which then plans the
//! kill or gives the lock up.

use std::time::Duration;

use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;

use super::super::super::errors::StepError;
use super::super::super::events::EventReason;
use super::super::super::pass::executor;
use super::super::super::pass::facts::Answers;
use super::super::super::pass::plan::{Action, PassFacts, Plan, Planned, Verdict, Wait, WaitOn};
use super::super::super::pass::requeue::kill_wait_delay;
use super::super::super::safety::{self, LockedAction};
use super::super::super::snapshot::ClusterSnapshot;
use super::super::super::upgrade::{UpgradeBounce, UpgradeWait, check_agreement, decide_bounce};
use super::super::super::versions::retries::retry_wait;

/// The step's name: the kill is BounceProcesses'.
const STEP: &str = "BounceProcesses";

/// The clear of the pending-upgrade list this instance's kill left, once the database
/// is available again.
pub(crate) fn clear_after_kill(snapshot: &ClusterSnapshot, facts: &PassFacts) -> Option<Action> {
    (facts.remembered.upgrade_cleanup_pending && safety::available(snapshot).is_ok())
        .then_some(Action::ClearPendingUpgrades)
}

/// The upgrade's verdict when one is pending: `None` when no incompatible upgrade is
/// pending (BounceProcesses goes on with its own work), else the kill, the join of the
/// pending-upgrade list (concluded by [`conclude`]) or why it waits. It always ends the
/// pass but when the user turned restarts off.
pub(crate) fn decide(
    snapshot: &ClusterSnapshot,
    facts: &PassFacts,
) -> Result<Option<Verdict>, StepError> {
    let (target, addresses, agreement, ends_mixed_versions) = match decide_bounce(snapshot)? {
        UpgradeBounce::NotUpgrading => return Ok(None),
        UpgradeBounce::Wait(wait) => {
            let delay = WaitOn::After(kill_wait_delay(facts.settings.database_wait, snapshot));
            if !matches!(wait, UpgradeWait::QuorumKept(_)) {
                return Ok(Some(Verdict::Wait(Wait::new(delay, wait.to_string()))));
            }
            // Only the user can end this refusal (their change wakes the operator): a
            // Warning Event tells them how, and no need to look often.
            let reason = format!("the upgrade to {}: {wait}", snapshot.spec().version);
            tracing::warn!(%reason, "the upgrade's kill is refused");
            let then = Wait::new(WaitOn::After(Duration::from_secs(300)), reason.clone());
            let event = Action::Event {
                reason: EventReason::UpgradeKillRefused,
                action: STEP.to_owned(),
                note: reason,
            };
            return Ok(Some(Verdict::plain([event]).then(Some(then))));
        }
        UpgradeBounce::KillAll {
            target,
            addresses,
            agreement,
            ends_mixed_versions,
        } => (target, addresses, agreement, ends_mixed_versions),
    };
    if !snapshot.spec().automation_options.kill_processes() {
        // The user turned the operator's restarts off: the upgrade stays staged (every
        // group IncorrectCommandLine) until they turn them on or restart the processes
        // themselves. The rest of the pass goes on; only the user can change this, and
        // their change wakes the operator: no need to look often.
        let reason = format!(
            "the upgrade to {target} is ready to restart every process, but automationOptions.killProcesses is false"
        );
        tracing::info!(%reason);
        return Ok(Some(Verdict::Wait(Wait::independent(
            WaitOn::After(Duration::from_secs(300)),
            reason,
        ))));
    }
    if let Some(wait) = backoff_wait(snapshot, facts, &target) {
        return Ok(Some(Verdict::Wait(wait)));
    }
    if let Some(wait) = alone_wait(facts, &target) {
        return Ok(Some(Verdict::Wait(wait)));
    }
    // The shared rules first (one disruption, pacing), before the pending-upgrade list
    // is touched: joining it is a promise to kill. The executor applies them again when
    // it runs the kill.
    let kill = kill_all(
        &target,
        &addresses,
        agreement.is_some(),
        ends_mixed_versions,
        facts,
    );
    if let Some(wait) = executor::refused_before_start(snapshot, facts, &kill) {
        return Ok(Some(Verdict::Wait(wait)));
    }
    let Some(agreement) = agreement else {
        return Ok(Some(Verdict::Act(kill)));
    };
    tracing::info!(lock_id = %agreement.lock_id, "joining the pending-upgrade list");
    Ok(Some(Verdict::Act(Plan::new(
        vec![Planned::locked(
            Action::JoinPendingUpgrades {
                target,
                groups: agreement.groups,
            },
            LockedAction::Bounce,
        )],
        format!("the upgrade to {target} waits to join the pending-upgrade list: "),
    ))))
}

/// The kill runs in a pass of its own (issue 26, seed 71): it takes every process down,
/// and a database change in the same pass (an exclusion that became possible with the
/// same snapshot) would land on a database that is entirely down.
fn alone_wait(facts: &PassFacts, target: &FdbVersion) -> Option<Wait> {
    let excluded = facts.record.excluded.as_ref()?;
    Some(Wait::new(
        WaitOn::Database,
        format!(
            "the upgrade to {target} is ready to restart every process, but this pass ran `{excluded}`: the kill runs in the next pass, alone"
        ),
    ))
}

/// A kill for this target already happened and the upgrade is still pending: some
/// processes did not restart (they ignore kills). The next try waits out the back-off
/// ([`super::super::super::versions::retries`]) instead of restarting every process each
/// pass.
fn backoff_wait(
    snapshot: &ClusterSnapshot,
    facts: &PassFacts,
    target: &FdbVersion,
) -> Option<Wait> {
    let record = facts.remembered.upgrade_kills.as_ref();
    let left = retry_wait(record, target, snapshot.now_unix())?;
    let kills = record.map_or(0, |r| r.kills);
    let reason = format!(
        "the upgrade to {target} is still pending after {kills} kill(s) of every process (some did not restart); the next kill is tried in {}s",
        left.as_secs()
    );
    Some(Wait::new(WaitOn::After(left), reason))
}

/// Once this instance's groups joined the list: the kill when every group of the
/// database still on the old version is listed, else the lock given up (the instances
/// still missing need it to add theirs) and a wait.
pub(crate) fn conclude(
    snapshot: &ClusterSnapshot,
    facts: &PassFacts,
    answers: &mut Answers,
) -> Result<Verdict, StepError> {
    let Some(agreed) = answers.pending_upgrade_agreed.take() else {
        return Ok(Verdict::Continue);
    };
    let UpgradeBounce::KillAll {
        target,
        addresses,
        ends_mixed_versions,
        ..
    } = decide_bounce(snapshot)?
    else {
        return Ok(Verdict::Continue);
    };
    let Some(status) = snapshot.database_status() else {
        return Ok(Verdict::Wait(Wait::new(
            WaitOn::Database,
            format!("the upgrade to {target} waits for the database status"),
        )));
    };
    match check_agreement(status, &target, &agreed) {
        Ok(()) => Ok(Verdict::Act(kill_all(
            &target,
            &addresses,
            true,
            ends_mixed_versions,
            facts,
        ))),
        Err(wait) => Ok(Verdict::Act(
            Plan::new(vec![Planned::plain(Action::ReleaseLock)], "").then(Wait::new(
                WaitOn::After(kill_wait_delay(facts.settings.database_wait, snapshot)),
                wait.to_string(),
            )),
        )),
    }
}

/// The plan of the cluster-wide kill: locked, one disruption, a recovery (paced without
/// availability when `ends_mixed_versions`: processes already run the target and only the
/// kill brings the database back); an Event; with `listed`, the list to clear once the
/// database is back; then the wait for the processes to restart.
fn kill_all(
    target: &FdbVersion,
    addresses: &[ProcessAddress],
    listed: bool,
    ends_mixed_versions: bool,
    facts: &PassFacts,
) -> Plan {
    let texts: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    let note = format!(
        "killed all {} processes at once to restart them on {target}: {}",
        texts.len(),
        texts.join(" ")
    );
    let kill = Planned::locked(Action::Kill(addresses.to_vec()), LockedAction::Bounce)
        .disrupting()
        .recovering(Some(format!(
            "killed every process for the upgrade to {target}"
        )))
        .ends_mixed_versions(ends_mixed_versions);
    let mut actions = vec![
        kill,
        Planned::plain(Action::Event {
            reason: EventReason::UpgradeBounce,
            action: STEP.to_owned(),
            note,
        }),
    ];
    if listed {
        // The kill happened: the list has served its purpose. The database is down for
        // the restart now, so the clear is tried once it is available again.
        actions.push(Planned::plain(Action::RememberUpgradeCleanup));
    }
    // Counted only once the kill went out (a refused kill stops the plan before it).
    actions.push(Planned::plain(Action::RememberUpgradeKill(*target)));
    Plan::new(
        actions,
        format!("the upgrade to {target} is ready to restart every process: "),
    )
    .then(Wait::new(
        WaitOn::After(Duration::max(
            facts.settings.database_wait,
            Duration::from_secs(1),
        )),
        format!(
            "killed {} processes for the upgrade to {target}; waiting for them to restart on it",
            addresses.len()
        ),
    ))
}
