//! Copy actions run one at a time, each answered within a time limit.
//!
//! A copy can hang on its input or output (a hung volume): the request must still get an
//! answer, hashing must not be starved of blocking threads, and readiness must say that
//! copies cannot be served. So:
//! - the single copy permit is taken asynchronously *before* any blocking work is
//!   spawned, and is then held by the blocking task itself: a copy that outlives its
//!   request keeps further copies waiting (asynchronously) instead of letting each of
//!   them take another blocking thread;
//! - waiting for the permit and running the copy share one deadline;
//! - [`CopyGate::overdue`] reports a copy running for longer than the limit.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// A copy action in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Running {
    /// The action (`copy_files`, ...).
    pub action: &'static str,
    /// When its blocking work started.
    pub started: Instant,
}

/// Why a copy action got no result in time.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// Another copy held the permit until the deadline.
    #[error(
        "{action} did not start within {limit_secs} s: {running} has been running for {elapsed_secs} s"
    )]
    Busy {
        /// The refused action.
        action: &'static str,
        /// The action still running.
        running: &'static str,
        /// How long it has been running.
        elapsed_secs: u64,
        /// The limit.
        limit_secs: u64,
    },
    /// The copy did not finish in time; it goes on in the background.
    #[error(
        "{action} did not finish within {limit_secs} s (input or output not responding); it goes on in the background and further copies wait for it"
    )]
    TimedOut {
        /// The action.
        action: &'static str,
        /// The limit.
        limit_secs: u64,
    },
    /// The blocking task panicked or was cancelled.
    #[error("{action} task failed: {reason}")]
    Task {
        /// The action.
        action: &'static str,
        /// What happened.
        reason: String,
    },
}

/// Serializes copy actions with a deadline; see the module documentation.
#[derive(Debug)]
pub struct CopyGate {
    permit: Arc<Semaphore>,
    running: Arc<Mutex<Option<Running>>>,
    limit: Duration,
}

/// Marks a copy as running while its blocking work lasts; releases the permit after
/// clearing the mark (fields drop after `drop`).
struct RunningGuard {
    running: Arc<Mutex<Option<Running>>>,
    _permit: OwnedSemaphorePermit,
}

impl RunningGuard {
    fn enter(
        running: Arc<Mutex<Option<Running>>>,
        action: &'static str,
        permit: OwnedSemaphorePermit,
    ) -> Self {
        *running.lock().unwrap_or_else(PoisonError::into_inner) = Some(Running {
            action,
            started: Instant::now(),
        });
        Self {
            running,
            _permit: permit,
        }
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        *self.running.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

impl CopyGate {
    /// A gate answering every copy within `limit`.
    pub fn new(limit: Duration) -> Self {
        Self {
            permit: Arc::new(Semaphore::new(1)),
            running: Arc::new(Mutex::new(None)),
            limit,
        }
    }

    /// The time limit of one copy (waiting included).
    pub fn limit(&self) -> Duration {
        self.limit
    }

    fn limit_secs(&self) -> u64 {
        self.limit.as_secs_f64().ceil() as u64
    }

    /// Runs `work` on the blocking pool once no other copy runs, and waits for it until
    /// the deadline.
    pub async fn run<T: Send + 'static>(
        &self,
        action: &'static str,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, GateError> {
        let deadline = Instant::now() + self.limit;
        let permit =
            match tokio::time::timeout_at(deadline, self.permit.clone().acquire_owned()).await {
                Ok(Ok(permit)) => permit,
                Ok(Err(closed)) => {
                    return Err(GateError::Task {
                        action,
                        reason: closed.to_string(),
                    });
                }
                Err(_) => {
                    let (running, elapsed_secs) = match self.running() {
                        Some(r) => (r.action, r.started.elapsed().as_secs()),
                        None => ("another copy", 0),
                    };
                    return Err(GateError::Busy {
                        action,
                        running,
                        elapsed_secs,
                        limit_secs: self.limit_secs(),
                    });
                }
            };
        let running = self.running.clone();
        let task = tokio::task::spawn_blocking(move || {
            let _guard = RunningGuard::enter(running, action, permit);
            work()
        });
        match tokio::time::timeout_at(deadline, task).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(GateError::Task {
                action,
                reason: e.to_string(),
            }),
            Err(_) => Err(GateError::TimedOut {
                action,
                limit_secs: self.limit_secs(),
            }),
        }
    }

    /// The copy in progress, if any.
    pub fn running(&self) -> Option<Running> {
        *self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The copy that has been running for longer than the limit, if any: while there is
    /// one, copies cannot be served.
    pub fn overdue(&self) -> Option<Running> {
        self.running()
            .filter(|running| running.started.elapsed() >= self.limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Polls `check` every 20 ms for up to 5 s.
    async fn eventually(mut check: impl FnMut() -> bool) -> bool {
        for _ in 0..250 {
            if check() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        check()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stuck_copy_times_out_blocks_later_copies_and_is_reported_overdue() {
        let gate = Arc::new(CopyGate::new(Duration::from_millis(300)));
        let (release, stuck) = mpsc::channel::<()>();
        // Stuck until released (bounded, so that a failing test cannot hang).
        let err = gate
            .run("copy_files", move || {
                let _ = stuck.recv_timeout(Duration::from_secs(20));
            })
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                GateError::TimedOut {
                    action: "copy_files",
                    ..
                }
            ),
            "{err}"
        );
        assert!(eventually(|| gate.overdue().is_some()).await);
        assert_eq!(gate.overdue().map(|r| r.action), Some("copy_files"));

        let err = gate.run("copy_binaries", || ()).await.unwrap_err();
        assert!(
            matches!(
                err,
                GateError::Busy {
                    action: "copy_binaries",
                    running: "copy_files",
                    ..
                }
            ),
            "{err}"
        );

        release.send(()).unwrap();
        assert!(eventually(|| gate.running().is_none()).await);
        assert!(gate.overdue().is_none());
        assert_eq!(gate.run("copy_binaries", || 7).await.unwrap(), 7);
    }
}
