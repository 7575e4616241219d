//! Time as the operator sees it.
//!
//! Every decision that depends on "now" (failure detection windows, minimum uptimes,
//! lock expiry) reads it through [`Clock`], so the simulation can run hours of virtual
//! time in seconds and production uses the system clock.

use std::sync::{Arc, Mutex, PoisonError};

use jiff::{SignedDuration, Timestamp};

/// A source of the current time.
pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    /// The current instant.
    fn now(&self) -> Timestamp;

    /// The current instant in whole seconds since the unix epoch.
    fn now_unix(&self) -> i64 {
        self.now().as_second()
    }
}

/// The machine's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that only moves when told to: the simulation's time.
///
/// Clones share the same time.
#[derive(Debug, Clone)]
pub struct VirtualClock {
    now: Arc<Mutex<Timestamp>>,
}

impl VirtualClock {
    /// A clock standing at `start`.
    pub fn starting_at(start: Timestamp) -> Self {
        Self {
            now: Arc::new(Mutex::new(start)),
        }
    }

    /// A clock standing at a fixed, arbitrary instant (2026-01-01T00:00:00Z), so that
    /// simulated runs are reproducible.
    pub fn fixed_epoch() -> Self {
        Self::starting_at(Timestamp::from_second(1_767_225_600).unwrap_or(Timestamp::UNIX_EPOCH))
    }

    /// Moves the clock forward. Negative durations are ignored: time never goes back.
    pub fn advance(&self, by: SignedDuration) {
        if by.is_negative() {
            return;
        }
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        if let Ok(next) = now.checked_add(by) {
            *now = next;
        }
    }

    /// Moves the clock forward by whole seconds.
    pub fn advance_seconds(&self, seconds: i64) {
        self.advance(SignedDuration::from_secs(seconds));
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Timestamp {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_clock_moves_only_forward_and_clones_share_time() {
        let clock = VirtualClock::fixed_epoch();
        let other = clock.clone();
        let start = clock.now_unix();
        clock.advance_seconds(90);
        assert_eq!(other.now_unix(), start + 90);
        clock.advance_seconds(-30);
        assert_eq!(clock.now_unix(), start + 90);
    }
}
