//! `simulate --serve`: after the scenario's steps the world keeps running on the wall
//! clock (times `--speed`) while its API is served over HTTP; what users change there
//! wakes the operator, as a watch event would.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use jiff::SignedDuration;

use super::{RunError, RunOptions, Runner};
use crate::recording_admin::RecordingAdmin;
use crate::result::SimulationResult;
use crate::scenario::{Scenario, StepSpec};
use crate::serve::exec::SimulatedExec;
use crate::serve::{SERVED_ACTOR, ServeOptions, http, kubeconfig};

/// How often the served world catches up with the wall clock.
const TICK: Duration = Duration::from_millis(100);

/// Runs the scenario's steps, then serves the world until `shutdown` completes; the
/// result has one more step entry, `{"serve": {...}}`, taken when serving stopped.
pub async fn serve_scenario(
    scenario: &Scenario,
    options: RunOptions,
    serve: ServeOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<SimulationResult, RunError> {
    serve.validate()?;
    let wall = Instant::now();
    let mut runner = Runner::new(scenario.clone(), options).await?;
    let mut steps = runner.run_steps().await?;
    let index = steps.len();
    let served_from = runner.elapsed();
    let (passes, address) = runner.serve_until(index, &serve, shutdown).await?;
    let mut entry = runner.step_result(
        index,
        &StepSpec::default(),
        super::steps::StepOutcomeSummary {
            passes,
            ..Default::default()
        },
    )?;
    entry.step = serde_json::json!({"serve": {
        "address": address.to_string(),
        "speed": serve.speed,
        "seconds": runner.elapsed().saturating_sub(served_from),
    }});
    steps.push(entry);
    let mut result = runner.finish(steps).await;
    result.metrics.wall_millis = u64::try_from(wall.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(result)
}

impl Runner {
    /// Serves the API and keeps the world and the operator running until `shutdown`;
    /// returns the operator passes run meanwhile and the address served.
    async fn serve_until(
        &mut self,
        index: usize,
        serve: &ServeOptions,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(u64, std::net::SocketAddr), RunError> {
        // What happens while serving is logged under the serve entry of `steps`.
        self.log.set_position(crate::event_log::RunPosition {
            step: index,
            pass: self.total_passes,
        });
        let clock = std::sync::Arc::new(self.clock.clone());
        let execs = Arc::new(AtomicU64::new(0));
        let turn = Arc::new(tokio::sync::Mutex::new(()));
        let exec = SimulatedExec {
            api: self.api.clone(),
            // The user's commands, recorded and judged as the user's.
            admin: Arc::new(RecordingAdmin::for_user(
                Arc::new(self.fdb.clone()),
                self.log.clone(),
            )),
            fdb: self.fdb.clone(),
            on_change: Arc::new({
                let execs = execs.clone();
                move || {
                    execs.fetch_add(1, Ordering::Relaxed);
                }
            }),
            files: Arc::default(),
            turn: turn.clone(),
        };
        let server = http::start(&self.api, clock, serve.address, Some(exec)).await?;
        let address = server.address;
        if let Err(error) = kubeconfig::write(&serve.kubeconfig, address, &self.namespace) {
            server.stop().await;
            return Err(error.into());
        }
        self.say(&format!(
            "serving the Kubernetes API on http://{address} (kubeconfig {}), {}x speed; Ctrl-C stops",
            serve.kubeconfig.display(),
            serve.speed
        ));
        let outcome = self
            .follow_wall_clock(index, serve.speed, (&execs, &turn), shutdown)
            .await;
        server.stop().await;
        self.say("stopped serving");
        outcome.map(|passes| (passes, address))
    }

    /// The served phase's loop: the simulated clock follows the wall clock, users' writes
    /// wake the operator and are judged like a user's `act`. The world advances holding
    /// `turn`, so the users' commands run between two advances.
    async fn follow_wall_clock(
        &mut self,
        index: usize,
        speed: f64,
        (execs, turn): (&AtomicU64, &tokio::sync::Mutex<()>),
        shutdown: impl Future<Output = ()>,
    ) -> Result<u64, RunError> {
        tokio::pin!(shutdown);
        let started_wall = Instant::now();
        let started_sim = self.now();
        let mut passes = 0;
        let mut writes_seen = self.served_writes(execs);
        let mut execs_seen = execs.load(Ordering::Relaxed);
        let mut before = self.track()?;
        let mut events_before = self.log.len();
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                () = tokio::time::sleep(TICK) => {}
            }
            let _turn = turn.lock().await;
            let writes = self.served_writes(execs);
            if writes != writes_seen {
                writes_seen = writes;
                let execs_now = execs.load(Ordering::Relaxed);
                if execs_now != execs_seen {
                    // A user's command changed the database (a kill) at this very
                    // moment: an outage beginning now is the user's.
                    execs_seen = execs_now;
                    self.disrupted_by_others();
                }
                self.judge_action(&before, events_before, SERVED_ACTOR, false)
                    .await?;
                self.wake_operator();
            }
            // Bounded by the speed's check (`serve::check_speed`); never a panic here.
            let elapsed =
                SignedDuration::try_from_secs_f64(started_wall.elapsed().as_secs_f64() * speed)
                    .unwrap_or(SignedDuration::ZERO);
            let target = started_sim + elapsed;
            // At most one wall second's worth per round, so a world slower than the
            // clock lags behind instead of advancing ever longer between two looks at
            // `shutdown`.
            let most = i64::try_from(speed.ceil() as u64)
                .unwrap_or(i64::MAX)
                .max(1);
            let behind = target.duration_since(self.now()).as_secs().clamp(0, most);
            let summary = self
                .advance(index, u64::try_from(behind).unwrap_or(0))
                .await?;
            passes += summary.passes;
            before = self.track()?;
            events_before = self.log.len();
        }
        Ok(passes)
    }

    /// How many writes the served API's users made so far, `pods/exec` commands that
    /// changed the database included.
    fn served_writes(&self, execs: &AtomicU64) -> u64 {
        self.api
            .request_counts()
            .get(SERVED_ACTOR)
            .map_or(0, |c| c.create + c.update + c.patch + c.delete)
            + execs.load(Ordering::Relaxed)
    }
}
