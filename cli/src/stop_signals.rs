//! SIGINT and SIGTERM during `fdb-operator simulate`: honoured at once, whatever the run
//! is doing. While `--serve` serves, the first signal stops serving and the result is
//! written as usual (`simulation.md`, Additions v3); at any other moment, or at a second
//! signal, the run is abandoned: the worlds' directories are removed
//! (`simulation/src/world/live_roots.rs`) and the process exits with 128 + the signal's
//! number, as a shell reports a process the signal ended, with no result written.
//!
//! The signals are taken on a thread of their own, so a run busy on every worker of its
//! runtime (a long `advance`) cannot delay them.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Notify;

/// Where the run is, as the signal thread sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// A signal abandons the run.
    Running,
    /// `--serve` is serving: a signal stops it gracefully.
    Serving,
    /// A graceful stop was asked for: another signal abandons the run.
    Stopping,
}

#[derive(Debug)]
struct Shared {
    phase: Mutex<Phase>,
    stop: Notify,
}

/// The stop handler of a `simulate` run, listening from [`StopSignals::install`] on.
#[derive(Debug, Clone)]
pub struct StopSignals {
    shared: Arc<Shared>,
}

impl StopSignals {
    /// Starts listening for SIGINT and SIGTERM (their default action, ending the process
    /// with the world's directory left behind, no longer applies).
    pub fn install() -> Result<Self, String> {
        let shared = Arc::new(Shared {
            phase: Mutex::new(Phase::Running),
            stop: Notify::new(),
        });
        let (ready, listening) = std::sync::mpsc::channel();
        let thread_shared = shared.clone();
        std::thread::Builder::new()
            .name("stop-signals".to_owned())
            .spawn(move || listen(&thread_shared, &ready))
            .map_err(|error| format!("cannot start the signal thread: {error}"))?;
        match listening.recv() {
            Ok(Ok(())) => Ok(Self { shared }),
            Ok(Err(error)) => Err(error),
            Err(_) => Err("the signal thread ended before listening".to_owned()),
        }
    }

    /// Completes at the first signal once it is polled: from its first poll on, a
    /// signal stops gracefully instead of abandoning the run (`--serve`'s served phase).
    pub fn graceful_stop(&self) -> impl Future<Output = ()> + use<> {
        let shared = self.shared.clone();
        async move {
            {
                let mut phase = shared.phase.lock().unwrap_or_else(PoisonError::into_inner);
                if *phase == Phase::Running {
                    *phase = Phase::Serving;
                }
            }
            shared.stop.notified().await;
        }
    }
}

/// The signal thread: registers both signals, says so through `ready`, then handles
/// each signal as it comes.
fn listen(shared: &Shared, ready: &std::sync::mpsc::Sender<Result<(), String>>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            let _ = ready.send(Err(format!("cannot start the signal runtime: {error}")));
            return;
        }
    };
    runtime.block_on(async {
        let registered = signal(SignalKind::interrupt())
            .and_then(|interrupt| Ok((interrupt, signal(SignalKind::terminate())?)));
        let (mut interrupt, mut terminate) = match registered {
            Ok(signals) => signals,
            Err(error) => {
                let _ = ready.send(Err(format!("cannot listen for signals: {error}")));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        loop {
            let (name, number) = tokio::select! {
                _ = interrupt.recv() => ("SIGINT", 2),
                _ = terminate.recv() => ("SIGTERM", 15),
            };
            handle(shared, name, number);
        }
    });
}

/// One signal: a graceful stop while serving, else the run abandoned.
fn handle(shared: &Shared, name: &str, number: i32) {
    let mut phase = shared.phase.lock().unwrap_or_else(PoisonError::into_inner);
    if *phase == Phase::Serving {
        *phase = Phase::Stopping;
        shared.stop.notify_one();
        eprintln!("{name}: stopping, then writing the result (signal again to stop at once)");
        return;
    }
    eprintln!("{name}: the run is abandoned and its world removed; no result written");
    for (root, error) in fdb_simulation::world::live_roots::remove_live_roots() {
        eprintln!("error: cannot remove {}: {error}", root.display());
    }
    std::process::exit(128 + number);
}
