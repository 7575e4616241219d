//! The simulation's events log: every operator write, admin command and sidecar request,
//! stamped with the scenario step, the simulated time and the operator pass.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use fdb_operator::clock::Clock;

use super::result::{Event, EventSource, ToolRunRecord};

/// Where the run currently is; stamped on every event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunPosition {
    /// Index of the scenario step being executed.
    pub step: usize,
    /// The operator pass being run (0 outside passes).
    pub pass: u64,
}

/// Who the following events are by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Actor {
    /// The operator under test.
    #[default]
    Operator,
    /// An `act` step as the operator (judged like the operator, but not the operator
    /// process: it does not trigger `restartOperator: {after: ...}`).
    ActAsOperator,
    /// An `act` step as a user.
    User,
}

/// The `by` of a user's events.
pub const USER_BY: &str = "user";

impl Actor {
    fn by(self) -> &'static str {
        match self {
            Self::Operator | Self::ActAsOperator => "operator",
            Self::User => USER_BY,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    position: RunPosition,
    actor: Actor,
    /// `restartOperator: {after: X}`: the action name that crashes the operator.
    crash_after: Option<String>,
    /// The operator crashed (its later requests must not reach the world) and has not
    /// been restarted yet.
    crashed: bool,
    /// A request to an in-process component got no answer in real time (the run cannot
    /// go on: see [`EventLog::record_stall`]).
    stalled: Option<String>,
    events: Vec<Event>,
    /// The tool runs of [`EventLog::record_tool_run`].
    tool_runs: Vec<ToolRunRecord>,
    /// Violations found while an action happened (`(invariant, time, detail)`), for the
    /// runner to report.
    violations: Vec<(&'static str, u64, String)>,
    status_json_calls: u64,
    admin_commands: u64,
    sidecar_requests: u64,
    /// Targets the operator excluded, with the issuing instance (its cluster's name):
    /// what `exclusion-left-behind` may blame on it.
    operator_exclusions: BTreeSet<(Option<String>, String)>,
}

/// A shared, append-only events log with the counters of the result's `metrics`.
///
/// Clones share the same log.
#[derive(Debug, Clone)]
pub struct EventLog {
    clock: Arc<dyn Clock>,
    start_unix: i64,
    state: Arc<Mutex<State>>,
}

/// Counters kept alongside the events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventCounters {
    /// `status json` reads that reached the database.
    pub status_json_calls: u64,
    /// Other admin commands.
    pub admin_commands: u64,
    /// Requests sent to sidecars.
    pub sidecar_requests: u64,
}

impl EventLog {
    /// An empty log; times are seconds since `start_unix`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        let start_unix = clock.now_unix();
        Self {
            clock,
            start_unix,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Simulated seconds since the run started.
    pub fn elapsed_seconds(&self) -> u64 {
        u64::try_from(self.clock.now_unix() - self.start_unix).unwrap_or(0)
    }

    /// Sets the step and pass stamped on the following events.
    pub fn set_position(&self, position: RunPosition) {
        self.lock().position = position;
    }

    /// The current step and pass.
    pub fn position(&self) -> RunPosition {
        self.lock().position
    }

    /// Sets who the following events are by.
    pub fn set_actor(&self, actor: Actor) {
        self.lock().actor = actor;
    }

    /// Arms `restartOperator: {after: action}`: the operator's next event with that
    /// action name crashes it (see [`EventLog::operator_crashed`]).
    pub fn arm_crash(&self, action: &str) {
        self.lock().crash_after = Some(action.to_owned());
    }

    /// Whether the operator has crashed and not been restarted: its clients refuse to
    /// reach the world from then on.
    pub fn operator_crashed(&self) -> bool {
        self.lock().crashed
    }

    /// Takes the crash (the runner restarts the operator): true once per crash.
    pub fn take_crash(&self) -> bool {
        std::mem::take(&mut self.lock().crashed)
    }

    /// Notes that a request to an in-process component (a sidecar) reached its real-time
    /// watchdog. That is no simulated outcome, and the runner stops the run with an
    /// error rather than let a stalled machine change the result. The first stall is kept.
    pub fn record_stall(&self, detail: &str) {
        self.lock().stalled.get_or_insert_with(|| detail.to_owned());
    }

    /// Takes the stall noted since the last call, if any.
    pub fn take_stall(&self) -> Option<String> {
        self.lock().stalled.take()
    }

    /// Appends an event at the current time and position.
    pub fn record(&self, source: EventSource, action: &str, target: &str, detail: &str) {
        self.record_issued(source, action, target, detail, None);
    }

    /// Notes a violation of `invariant` seen at the moment of an action (the runner
    /// reports it with the pass: [`EventLog::take_violations`]).
    pub fn note_violation(&self, invariant: &'static str, detail: String) {
        let time = self.elapsed_seconds();
        self.lock().violations.push((invariant, time, detail));
    }

    /// Takes the violations noted since the last call.
    pub fn take_violations(&self) -> Vec<(&'static str, u64, String)> {
        std::mem::take(&mut self.lock().violations)
    }

    /// Appends an event issued by an operator instance (`issuer`: its cluster's name).
    pub fn record_issued(
        &self,
        source: EventSource,
        action: &str,
        target: &str,
        detail: &str,
        issuer: Option<&str>,
    ) {
        self.record_by(None, source, action, target, detail, issuer);
    }

    /// Appends an event by `actor` (`None`: whoever the log says acts now). A served
    /// world's users act while the operator runs, so their events name them explicitly.
    pub fn record_by(
        &self,
        actor: Option<Actor>,
        source: EventSource,
        action: &str,
        target: &str,
        detail: &str,
        issuer: Option<&str>,
    ) {
        let time = self.elapsed_seconds();
        let mut state = self.lock();
        let position = state.position;
        let actor = actor.unwrap_or(state.actor);
        if actor == Actor::Operator
            && source != EventSource::Operator
            && state.crash_after.as_deref() == Some(action)
        {
            state.crash_after = None;
            state.crashed = true;
        }
        state.events.push(Event {
            step: position.step,
            time,
            pass: position.pass,
            source,
            action: action.to_owned(),
            target: target.to_owned(),
            detail: detail.to_owned(),
            by: (source != EventSource::Operator).then(|| actor.by().to_owned()),
            issuer: issuer.map(str::to_owned),
        });
    }

    /// Notes targets an `exclude` of the operator (or of an `act` step as the operator,
    /// judged like it) put in place.
    pub fn note_operator_exclusions(&self, issuer: Option<&str>, targets: &[String]) {
        let mut state = self.lock();
        if state.actor != Actor::User {
            for target in targets {
                state
                    .operator_exclusions
                    .insert((issuer.map(str::to_owned), target.clone()));
            }
        }
    }

    /// The targets the operator ever excluded; with `issuer`, only that instance's.
    pub fn operator_exclusions(&self, issuer: Option<&str>) -> BTreeSet<String> {
        self.lock()
            .operator_exclusions
            .iter()
            .filter(|(by, _)| issuer.is_none() || by.as_deref() == issuer)
            .map(|(_, target)| target.clone())
            .collect()
    }

    /// Counts a `status json` read.
    pub fn count_status_json(&self) {
        self.lock().status_json_calls += 1;
    }

    /// Counts an admin command other than `status json`.
    pub fn count_admin_command(&self) {
        self.lock().admin_commands += 1;
    }

    /// Counts a sidecar request.
    pub fn count_sidecar_request(&self) {
        self.lock().sidecar_requests += 1;
    }

    /// The counters so far.
    pub fn counters(&self) -> EventCounters {
        let state = self.lock();
        EventCounters {
            status_json_calls: state.status_json_calls,
            admin_commands: state.admin_commands,
            sidecar_requests: state.sidecar_requests,
        }
    }

    /// Records a tool run; its `step`, `time` and `pass` are stamped here.
    pub fn record_tool_run(&self, mut run: ToolRunRecord) {
        run.time = self.elapsed_seconds();
        let mut state = self.lock();
        run.step = state.position.step;
        run.pass = state.position.pass;
        state.tool_runs.push(run);
    }

    /// Every tool run recorded so far, in order.
    pub fn tool_runs(&self) -> Vec<ToolRunRecord> {
        self.lock().tool_runs.clone()
    }

    /// Every event so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.lock().events.clone()
    }

    /// The events recorded since index `from` (for per-pass checks).
    pub fn events_since(&self, from: usize) -> Vec<Event> {
        self.lock()
            .events
            .get(from..)
            .map(<[Event]>::to_vec)
            .unwrap_or_default()
    }

    /// How many events have been recorded.
    pub fn len(&self) -> usize {
        self.lock().events.len()
    }

    /// Whether nothing has been recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdb_operator::clock::VirtualClock;

    #[test]
    fn events_carry_time_step_and_pass() {
        let clock = VirtualClock::fixed_epoch();
        let log = EventLog::new(Arc::new(clock.clone()));
        log.set_position(RunPosition { step: 2, pass: 5 });
        clock.advance_seconds(30);
        log.record(
            EventSource::Fdb,
            "configure",
            "database",
            "configure new double ssd-2",
        );
        let events = log.events();
        assert_eq!(events.len(), 1);
        assert_eq!((events[0].step, events[0].pass, events[0].time), (2, 5, 30));
        assert_eq!(log.events_since(1), Vec::new());
        log.count_status_json();
        assert_eq!(log.counters().status_json_calls, 1);
        assert_eq!(events[0].by.as_deref(), Some("operator"));
    }

    #[test]
    fn an_armed_crash_fires_once_on_the_operators_own_matching_action() {
        let log = EventLog::new(Arc::new(VirtualClock::fixed_epoch()));
        log.arm_crash("kill");
        log.set_actor(Actor::ActAsOperator);
        log.record(EventSource::Fdb, "kill", "database", "kill 1.2.3.4:4501");
        assert!(!log.operator_crashed(), "an act step is not the operator");
        log.set_actor(Actor::Operator);
        log.record(EventSource::Fdb, "exclude", "database", "exclude x");
        assert!(!log.operator_crashed());
        log.record(EventSource::Fdb, "kill", "database", "kill 1.2.3.4:4501");
        assert!(log.operator_crashed());
        assert!(log.take_crash());
        assert!(!log.take_crash());
        log.record(EventSource::Fdb, "kill", "database", "kill 1.2.3.4:4501");
        assert!(!log.operator_crashed(), "fires once");
        log.set_actor(Actor::User);
        log.record(EventSource::K8s, "delete", "pod/x", "");
        assert_eq!(log.events()[4].by.as_deref(), Some("user"));
    }
}
