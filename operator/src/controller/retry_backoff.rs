//! The back-off the operator's in-memory retries share: an upgrade's cluster-wide kill
//! that did not end the upgrade (`versions/retries.rs`) and an exclusion FoundationDB
//! refused (`removals/exclusion_retries.rs`). 30 s (FoundationDB's own "try again in 30
//! seconds"), doubled after each failure in a row, at most 300 s.

use std::time::Duration;

/// The first wait after a failure.
const FIRST_BACKOFF_SECONDS: u64 = 30;
/// The longest wait between two attempts.
const MAX_BACKOFF_SECONDS: u64 = 300;

/// The wait after the `failures`-th failure in a row.
pub(crate) fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    Duration::from_secs((FIRST_BACKOFF_SECONDS << doublings).min(MAX_BACKOFF_SECONDS))
}

/// How long the next attempt still waits at `now_unix` after `failures` in a row, the
/// last at `last_unix` (`None`: it may go ahead). A clock that went back waits the whole
/// back-off, never less.
pub(crate) fn wait_left(failures: u32, last_unix: i64, now_unix: i64) -> Option<Duration> {
    let elapsed = u64::try_from(now_unix.saturating_sub(last_unix)).unwrap_or(0);
    let wait = backoff(failures).as_secs();
    (elapsed < wait).then(|| Duration::from_secs(wait - elapsed))
}
