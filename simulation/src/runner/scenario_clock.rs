//! The scenario's virtual clock, from the run's start, and the progress lines stamped
//! with it.

use fdb_operator::clock::{Clock, VirtualClock};
use jiff::{SignedDuration, Timestamp};

use super::ProgressSink;

/// The run's clock and where its progress lines go.
pub(super) struct ScenarioClock {
    clock: VirtualClock,
    /// When the run started.
    start: Timestamp,
    progress: Option<ProgressSink>,
    /// The last rollout line printed (printed again only when it changes).
    last_rollout_line: Option<String>,
}

impl ScenarioClock {
    /// The run starts at `clock`'s current time.
    pub(super) fn new(clock: VirtualClock, progress: Option<ProgressSink>) -> Self {
        Self {
            start: clock.now(),
            clock,
            progress,
            last_rollout_line: None,
        }
    }

    /// The virtual clock the world, the database and the operator read.
    pub(super) fn clock(&self) -> &VirtualClock {
        &self.clock
    }

    /// The current virtual time.
    pub(super) fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// When the run started.
    pub(super) fn start(&self) -> Timestamp {
        self.start
    }

    /// Simulated seconds since the start.
    pub(super) fn elapsed(&self) -> u64 {
        u64::try_from(self.now().as_second() - self.start.as_second()).unwrap_or(0)
    }

    /// Lets `by` of virtual time pass.
    pub(super) fn advance(&self, by: SignedDuration) {
        self.clock.advance(by);
    }

    /// Prints a progress line, stamped with the seconds since the start.
    pub(super) fn say(&self, line: &str) {
        if let Some(progress) = &self.progress {
            progress(&format!("[{:>6}s] {line}", self.elapsed()));
        }
    }

    /// Whether progress lines go anywhere (tests pay nothing for them otherwise).
    pub(super) fn reports_progress(&self) -> bool {
        self.progress.is_some()
    }

    /// Prints the rollout line when it changed since the last one (`None`: the rollout
    /// is complete).
    pub(super) fn rollout(&mut self, line: Option<String>) {
        if line != self.last_rollout_line {
            match &line {
                Some(text) => self.say(text),
                None if self.last_rollout_line.is_some() => self.say("rollout complete"),
                None => {}
            }
            self.last_rollout_line = line;
        }
    }
}
