//! Recoveries of the transaction system.
//!
//! When a member of the transaction system stops, restarts, is excluded or cannot join,
//! or on `configure`, a coordinators change or a regained quorum, the database recovers:
//! unavailable until a transaction system can be recruited, then for `recoverySeconds`
//! (or the `slowRecovery` override), after which the new transaction system is recruited
//! from the processes there are then. Each recovery that starts is counted once, however
//! many of its processes went at once (one batch kill = one recovery).

use super::failback::better_primary;
use super::records::{Recovery, RecoveryRecord, TransactionSystem};
use super::roles::recruit;
use super::state::State;
use super::{coordinated_state, failover};

/// The recovery reason when the coordinators lost their quorum by themselves.
pub(crate) const QUORUM_LOST: &str = "loss of the coordinators' quorum";

/// When the running recovery ends (unix seconds).
pub(crate) fn recovery_end(state: &State) -> Option<i64> {
    match &state.recovery {
        Recovery::Recovering { started, .. } => {
            Some(started.saturating_add(state.recovery_seconds()))
        }
        _ => None,
    }
}

/// Starts a recovery now (configure, coordinators change).
pub(crate) fn force(state: &mut State, now: i64, reason: &str) {
    if state.configuration.is_none() {
        return;
    }
    state.transaction_system = None;
    state.recovery = Recovery::Waiting {
        reason: reason.to_owned(),
    };
    ensure(state, now);
}

/// Brings the recovery state up to `now`: a broken transaction system starts a recovery,
/// a recovery whose time is up recruits its transaction system.
pub(crate) fn ensure(state: &mut State, now: i64) {
    if state.configuration.is_none() {
        state.transaction_system = None;
        state.recovery = Recovery::Down;
        return;
    }
    if state.cluster_version().is_none() {
        if !matches!(state.recovery, Recovery::Waiting { .. }) {
            // A kill that took the coordinators keeps its name.
            let reason = state
                .recovery_reason
                .take()
                .unwrap_or_else(|| QUORUM_LOST.to_owned());
            state.recovery = Recovery::Waiting { reason };
        }
        state.transaction_system = None;
        return;
    }
    loop {
        match &state.recovery {
            Recovery::Down => {
                state.recovery = Recovery::Waiting {
                    reason: "configure new".to_owned(),
                };
            }
            Recovery::Recovered => {
                let Some(cause) = broken(state).or_else(|| failback(state, now)) else {
                    return;
                };
                let reason = state.recovery_reason.take().unwrap_or(cause);
                state.transaction_system = None;
                state.recovery = Recovery::Waiting { reason };
            }
            Recovery::Waiting { reason } => {
                if recruit_allowed(state).is_none() {
                    return;
                }
                let reason = reason.clone();
                coordinated_state::write_to_coordinators(state);
                state.recoveries += 1;
                state.generation += 2;
                state.recovery_log.push(RecoveryRecord {
                    started: now,
                    recovered: None,
                    reason: reason.clone(),
                });
                state.recovery = Recovery::Recovering {
                    started: now,
                    reason,
                };
            }
            Recovery::Recovering { started, reason } => {
                let end = started.saturating_add(state.recovery_seconds());
                if end > now {
                    return;
                }
                let reason = reason.clone();
                match recruit_allowed(state) {
                    Some(system) => {
                        failover::record_generation(state, &system);
                        state.transaction_system = Some(system);
                        state.recovery = Recovery::Recovered;
                        state.last_recovered_unix = end;
                        if let Some(record) = state.recovery_log.last_mut() {
                            record.recovered = Some(end);
                        }
                    }
                    None => state.recovery = Recovery::Waiting { reason },
                }
                return;
            }
        }
    }
}

/// The transaction system a recovery can recruit now: one there are processes for,
/// whose primary the last generation's logs allow (`failover.rs`).
fn recruit_allowed(state: &State) -> Option<TransactionSystem> {
    recruit(state).filter(|system| failover::may_recruit(state, system))
}

/// The reason of a failback recovery (`failback.rs`), when one is due at `now`.
fn failback(state: &State, now: i64) -> Option<String> {
    let system = state.transaction_system.as_ref()?;
    better_primary(state, system, now)
        .map(|dc| format!("failback to the preferred datacenter {dc}"))
}

/// Why the recruited transaction system no longer stands, if it does not.
fn broken(state: &State) -> Option<String> {
    let Some(system) = &state.transaction_system else {
        return Some("loss of the transaction system".to_owned());
    };
    let version = state.cluster_version();
    system.members.iter().find_map(|member| {
        let what = |how: &str| Some(format!("transaction process {} {how}", member.address));
        let process = state.processes.get(&member.address);
        match process {
            None => what("left"),
            Some(p) if !p.running => what("stopped"),
            Some(p) if p.started_unix != member.started_unix => what("restarted"),
            Some(p) if !state.is_member(p, version.as_ref()) => what("cannot join"),
            Some(p) if state.is_excluded(p) => what("excluded"),
            Some(_) => None,
        }
    })
}
