//! What the runner judges one database by: its invariant monitor and the history the
//! checks need (who acted when, which groups were ever marked for removal, which clients
//! are connected). The first cluster's judge is the runner's; each fleet member has its
//! own, swapped in around the member's passes (`fleet_members.rs`).

use std::collections::BTreeSet;

use fdb_operator::fdb::ClientInfo;

use crate::fdb::SimulatedFdb;
use crate::invariants::{ActionTimes, InvariantMonitor, OutageAllowance};

use super::fdb_bridge;

/// How long the database's recoveries and process restarts take (the outage allowance).
#[derive(Debug, Clone, Copy)]
pub(super) struct RecoveryTiming {
    /// How long one recovery takes now (faults included).
    recovery_seconds: u64,
    /// How long one recovery takes without the `slowRecovery` fault.
    default_recovery_seconds: u64,
    /// How long fdbmonitor takes to restart a killed process.
    restart_seconds: u64,
}

impl RecoveryTiming {
    /// The database's timing as configured.
    pub(super) fn new(recovery_seconds: u64, restart_seconds: u64) -> Self {
        Self {
            recovery_seconds,
            default_recovery_seconds: recovery_seconds,
            restart_seconds,
        }
    }

    /// The `slowRecovery` fault: one recovery takes `seconds` until healed.
    pub(super) fn slow_recovery(&mut self, seconds: u64) {
        self.recovery_seconds = seconds;
    }

    /// Healed: recoveries take their configured time again.
    pub(super) fn heal(&mut self) {
        self.recovery_seconds = self.default_recovery_seconds;
    }

    /// How long an outage may last: one recovery, or a restart plus a recovery.
    fn allowance(&self) -> OutageAllowance {
        let recovery = i64::try_from(self.recovery_seconds).unwrap_or(i64::MAX);
        let restart = i64::try_from(self.restart_seconds).unwrap_or(i64::MAX);
        OutageAllowance {
            recovery,
            bounce: recovery.saturating_add(restart),
        }
    }
}

/// One database's invariant monitor and the history its checks read.
#[derive(Default)]
pub(super) struct DatabaseJudge {
    /// Turns breaches into violations.
    pub(super) monitor: InvariantMonitor,
    /// Operator actions (unix time, whether its outage may last a restart plus a recovery:
    /// a cluster-wide kill, or a storage restart in single redundancy), for outage
    /// attribution.
    operator_actions: Vec<(i64, bool)>,
    /// When a user acted or a fault struck (unix seconds): an outage that begins then is
    /// theirs, not part of a storm of the operator's outages.
    others_acted: Vec<i64>,
    /// Process groups the operator marked for removal at some point.
    pub(super) ever_marked: BTreeSet<String>,
    /// The clients connected to the database (scenario and faults).
    pub(super) clients: Vec<ClientInfo>,
}

impl DatabaseJudge {
    /// A judge of a database that `clients` are connected to.
    pub(super) fn new(clients: Vec<ClientInfo>) -> Self {
        Self {
            clients,
            ..Self::default()
        }
    }

    /// The operator stopped something at `at` (unix seconds); `may_bounce`: its outage may
    /// last a restart plus a recovery.
    pub(super) fn operator_acted(&mut self, at: i64, may_bounce: bool) {
        self.operator_actions.push((at, may_bounce));
    }

    /// A fault or the user is about to stop something at `now`. While the database is
    /// available, the operator's actions of the last second have caused no outage: one
    /// that begins now is the fault's or the user's, so those actions leave the
    /// attribution window (an outage already open stays with whoever began it).
    pub(super) fn others_acting(&mut self, now: i64, fdb: &SimulatedFdb) {
        self.others_acted.push(now);
        let open = fdb_bridge::outages(fdb)
            .last()
            .is_some_and(|outage| outage.end.is_none());
        if open {
            return;
        }
        self.operator_actions.retain(|(at, _)| now - *at > 1);
    }

    /// Judges the database's outages so far (at `now`, the run started at `start`, unix
    /// seconds) against the operator's actions.
    pub(super) fn check_outages(
        &mut self,
        now: i64,
        start: i64,
        fdb: &SimulatedFdb,
        timing: &RecoveryTiming,
    ) {
        let outages = fdb_bridge::outages(fdb);
        self.monitor.check_outages(
            now,
            start,
            &outages,
            &ActionTimes {
                operator: &self.operator_actions,
                others: &self.others_acted,
            },
            timing.allowance(),
        );
    }
}
