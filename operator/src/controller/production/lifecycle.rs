//! How `fdb-operator run` stops and how a leader steps down.
//!
//! One source of stop requests for everything ([`StopSignals`]): the signal handlers are
//! installed once, when the operator starts, so a SIGTERM is never lost between two
//! listeners (kube-runtime's `shutdown_on_signal` installs its own only when its
//! controller is first polled, and the backup controllers theirs). The first signal asks
//! for a graceful stop, a second one forces it.
//!
//! A graceful stop lets the running reconciles finish within the grace period
//! (`--graceful-shutdown-timeout`, as controller-runtime's `GracefulShutdownTimeout` in
//! the Go operator's manager) while the Lease is still renewed; a second signal, the end
//! of the grace or a lost Lease cancels them (every step is safe to interrupt and redo).
//! A stop asked for is a clean stop whatever happens meanwhile: exit 0, never an error.

use std::future::Future;
use std::time::Duration;

use futures::FutureExt;
use futures::future::{self, BoxFuture, Shared};
use tokio::sync::watch;

/// Default `--graceful-shutdown-timeout`: less than a pod's default
/// `terminationGracePeriodSeconds` (30 s), so the Lease is released before the kubelet's
/// SIGKILL.
pub(crate) const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(20);

/// A stop request that any number of tasks await.
pub(crate) type StopFuture = Shared<BoxFuture<'static, ()>>;

/// When the operator stops: `graceful` completes on the first request, `forced` on a
/// second signal (never for an embedder's future).
#[derive(Clone)]
pub(crate) struct StopSignals {
    /// Stop starting reconciles; let the running ones finish within the grace.
    pub(crate) graceful: StopFuture,
    /// Cancel the running reconciles at once.
    pub(crate) forced: StopFuture,
}

impl StopSignals {
    /// Stops on SIGINT or SIGTERM: the handlers are installed now, before anything
    /// runs, and every later signal is counted.
    pub(crate) fn from_signals() -> Self {
        let (count, counted) = watch::channel(0_u32);
        tokio::spawn(count_signals(count));
        Self {
            graceful: at_least(counted.clone(), 1),
            forced: at_least(counted, 2),
        }
    }

    /// Stops gracefully when `shutdown` completes; nothing forces it.
    pub(crate) fn on(shutdown: StopFuture) -> Self {
        Self {
            graceful: shutdown,
            forced: future::pending::<()>().boxed().shared(),
        }
    }

    /// Whether a stop was asked for.
    pub(crate) fn requested(&self) -> bool {
        self.graceful.peek().is_some()
    }
}

/// Completes once `counted` reached `n` signals (never if the counter is gone).
fn at_least(mut counted: watch::Receiver<u32>, n: u32) -> StopFuture {
    async move {
        if counted.wait_for(|count| *count >= n).await.is_err() {
            future::pending::<()>().await;
        }
    }
    .boxed()
    .shared()
}

/// Counts SIGINT and SIGTERM into `count` for as long as anyone listens.
async fn count_signals(count: watch::Sender<u32>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut terminate), Ok(mut interrupt)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::error!("cannot install the SIGTERM and SIGINT handlers");
            return;
        };
        loop {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
            count.send_modify(|count| *count = count.saturating_add(1));
            match *count.borrow() {
                1 => tracing::info!(
                    "stopping: running reconciles finish first (a second signal cancels them)"
                ),
                _ => tracing::info!("stopping now: running reconciles are cancelled"),
            }
            if count.is_closed() {
                return;
            }
        }
    }
    #[cfg(not(unix))]
    loop {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        count.send_modify(|count| *count = count.saturating_add(1));
    }
}

/// How a spell of reconciling ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// A stop was asked for: the controller stopped, its running reconciles finished
    /// or were cancelled.
    Stopped,
    /// The Lease was lost before any stop was asked for: the running reconciles were
    /// dropped at once (another replica may take over soon).
    LeaseLost,
}

/// Runs `controller` (which stops by itself on `stop.graceful`, once its running
/// reconciles finished) while `hold` keeps the Lease; see the module's comment for what
/// ends it and when.
pub(crate) async fn reconcile_until_stopped(
    controller: impl Future<Output = ()>,
    hold: impl Future<Output = ()>,
    stop: &StopSignals,
    grace: Duration,
) -> Ended {
    tokio::pin!(controller, hold);
    tokio::select! {
        () = &mut controller => return Ended::Stopped,
        () = &mut hold => {
            if !stop.requested() {
                return Ended::LeaseLost;
            }
        }
        () = stop.graceful.clone() => {
            let finished = tokio::select! {
                () = &mut controller => true,
                () = &mut hold => {
                    tracing::warn!("the leader lease was lost while stopping: running reconciles cancelled");
                    false
                }
                () = stop.forced.clone() => false,
                () = tokio::time::sleep(grace) => {
                    tracing::warn!(?grace, "running reconciles did not finish within the graceful shutdown timeout: cancelled");
                    false
                }
            };
            if finished {
                tracing::info!("the controller stopped; running reconciles finished");
            }
        }
    }
    Ended::Stopped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stop_on(receiver: tokio::sync::oneshot::Receiver<()>) -> StopSignals {
        StopSignals::on(
            async move {
                let _ = receiver.await;
            }
            .boxed()
            .shared(),
        )
    }

    #[tokio::test]
    async fn a_lease_lost_while_stopping_is_a_clean_stop() {
        let (send, receive) = tokio::sync::oneshot::channel();
        let stop = stop_on(receive);
        let _ = send.send(());
        let lost = tokio::time::sleep(Duration::from_millis(50));
        let started = tokio::time::Instant::now();
        let stuck_pass = future::pending::<()>();
        let ended = reconcile_until_stopped(stuck_pass, lost, &stop, Duration::from_secs(60)).await;
        assert_eq!(ended, Ended::Stopped);
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "cancelled at the loss"
        );
    }

    #[tokio::test]
    async fn a_lease_lost_while_running_steps_down() {
        let (_send, receive) = tokio::sync::oneshot::channel();
        let stop = stop_on(receive);
        let lost = tokio::time::sleep(Duration::from_millis(50));
        let ended =
            reconcile_until_stopped(future::pending(), lost, &stop, Duration::from_secs(60)).await;
        assert_eq!(ended, Ended::LeaseLost);
    }

    #[tokio::test]
    async fn running_reconciles_get_the_grace_and_no_more() {
        let (send, receive) = tokio::sync::oneshot::channel();
        let stop = stop_on(receive);
        let _ = send.send(());
        let started = tokio::time::Instant::now();
        let grace = Duration::from_millis(200);
        let ended =
            reconcile_until_stopped(future::pending(), future::pending(), &stop, grace).await;
        assert_eq!(ended, Ended::Stopped);
        assert!(started.elapsed() >= grace);
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    #[tokio::test]
    async fn a_finished_controller_ends_the_stop_at_once() {
        let (send, receive) = tokio::sync::oneshot::channel();
        let stop = stop_on(receive);
        let _ = send.send(());
        let controller = tokio::time::sleep(Duration::from_millis(50));
        let started = tokio::time::Instant::now();
        let ended = reconcile_until_stopped(
            controller,
            future::pending(),
            &stop,
            Duration::from_secs(60),
        )
        .await;
        assert_eq!(ended, Ended::Stopped);
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}
