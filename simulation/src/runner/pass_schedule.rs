//! When a controller next wants to run: a requeue it asked for, or a watch event that
//! woke it, never sooner than [`MIN_PASS_SPACING_SECONDS`] after its last pass. The
//! first cluster's operator, each extra instance and the backup and restore controllers
//! keep one each.

use jiff::{SignedDuration, Timestamp};

use super::pass_judge::PassEnd;

/// A pass takes time: the next one starts at least this much later, even when woken.
pub const MIN_PASS_SPACING_SECONDS: i64 = 1;

/// One controller's pass schedule.
#[derive(Debug, Clone, Default)]
pub(super) struct PassSchedule {
    /// When it next wants to run (requeue or watch event), if ever.
    next_due: Option<Timestamp>,
    /// When its last pass ran.
    last_at: Option<Timestamp>,
    /// Its last pass reported Reconciled and nothing woke it since.
    reconciled: bool,
}

impl PassSchedule {
    /// A schedule whose first pass falls due at `due` (`None`: when something wakes it).
    pub(super) fn due_at(due: Option<Timestamp>) -> Self {
        Self {
            next_due: due,
            ..Self::default()
        }
    }

    /// When the next pass falls due, if ever.
    pub(super) fn next_due(&self) -> Option<Timestamp> {
        self.next_due
    }

    /// Whether a pass is due at `now`.
    pub(super) fn is_due(&self, now: Timestamp) -> bool {
        self.next_due.is_some_and(|due| due <= now)
    }

    /// The last pass reported Reconciled and nothing is due since.
    pub(super) fn at_rest(&self) -> bool {
        self.reconciled && self.next_due.is_none()
    }

    /// A pass starts at `now`: nothing is due until it says.
    pub(super) fn started(&mut self, now: Timestamp) {
        self.last_at = Some(now);
        self.next_due = None;
    }

    /// Nothing is due (a controller that does not run).
    pub(super) fn cancel(&mut self) {
        self.next_due = None;
    }

    /// A pass that started at `now` ended with `end`: a requeue brings the next one
    /// forward.
    pub(super) fn ended(&mut self, now: Timestamp, end: PassEnd) {
        self.reconciled = end == PassEnd::Reconciled;
        if let PassEnd::After(delay) = end {
            self.no_later_than(
                now + SignedDuration::try_from(delay).unwrap_or(SignedDuration::MAX),
            );
        }
    }

    /// A watch event at `now`: the controller runs as soon as it may (passes take time).
    pub(super) fn wake(&mut self, now: Timestamp) {
        let earliest = self.last_at.map_or(now, |at| {
            (at + SignedDuration::from_secs(MIN_PASS_SPACING_SECONDS)).max(now)
        });
        self.reconciled = false;
        self.no_later_than(earliest);
    }

    /// The next pass falls due at `at` unless one is due sooner.
    pub(super) fn no_later_than(&mut self, at: Timestamp) {
        if self.next_due.is_none_or(|due| due > at) {
            self.next_due = Some(at);
        }
    }
}

/// The passes of the world's own operator: how many ran (extra instances' included), and
/// when its cluster controller and its backup and restore controllers next run.
#[derive(Debug, Default)]
pub(super) struct Passes {
    /// Passes so far, of every instance.
    total: u64,
    /// The first cluster's controller.
    pub(super) cluster: PassSchedule,
    /// Every wait the cluster controller's last pass reported (the step result's `waits`).
    pub(super) last_waits: Vec<String>,
    /// The backup and restore controllers.
    pub(super) resources: PassSchedule,
    /// Backup and restore passes so far.
    pub(super) resource_passes_run: u64,
}

impl Passes {
    /// The first cluster's controller's first pass falls due at `first` (`None`: an
    /// operator outside runs its passes); the backup and restore controllers' at `start`.
    pub(super) fn new(first: Option<Timestamp>, start: Timestamp) -> Self {
        Self {
            cluster: PassSchedule::due_at(first),
            resources: PassSchedule::due_at(Some(start)),
            ..Self::default()
        }
    }

    /// Passes so far.
    pub(super) fn total(&self) -> u64 {
        self.total
    }

    /// A pass begins: its number.
    pub(super) fn begin(&mut self) -> u64 {
        self.total += 1;
        self.total
    }
}
