//! `simulate --serve`: after the scenario's steps the world keeps running on the wall
//! clock (times `--speed`) while its API is served over HTTP; what users change there
//! wakes the operator, as a watch event would.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use jiff::SignedDuration;

use super::{OPERATOR_ACTOR, RunError, RunOptions, Runner};
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
    let options = RunOptions {
        external_operator: options.external_operator || serve.external_operator,
        ..options
    };
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
        "externalOperator": serve.external_operator,
        "seconds": runner.elapsed().saturating_sub(served_from),
    }});
    steps.push(entry);
    let mut result = runner.finish(steps).await;
    result.metrics.wall_millis = u64::try_from(wall.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(result)
}

impl Runner {
    /// The simulated containers as an `act` step reaches them: the act wakes the
    /// operator once its command has ended (`act.rs`), and the world does not advance
    /// while the command runs, so there is no turn to wait for.
    pub(super) fn act_exec(&self) -> SimulatedExec {
        self.user_exec(Arc::new(|| {}), Arc::new(tokio::sync::Mutex::new(())))
    }

    /// The served `pods/exec` of the world's databases (the first cluster's and each
    /// fleet member's), whose commands are recorded and judged as the user's;
    /// `on_change` runs after a command that changed a database, `turn` is held while
    /// one runs.
    pub(super) fn user_exec(
        &self,
        on_change: Arc<dyn Fn() + Send + Sync>,
        turn: Arc<tokio::sync::Mutex<()>>,
    ) -> SimulatedExec {
        SimulatedExec {
            api: self.api.clone(),
            admin: Arc::new(RecordingAdmin::for_user(
                Arc::new(self.fdb.clone()),
                self.log.clone(),
            )),
            fdb: self.fdb.clone(),
            fleet: self.exec_fleet(),
            on_change,
            container_files: self.world.container_files(),
            turn,
        }
    }

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
            pass: self.passes.total(),
        });
        let clock = std::sync::Arc::new(self.clock.clock().clone());
        let execs = Arc::new(AtomicU64::new(0));
        let turn = Arc::new(tokio::sync::Mutex::new(()));
        let exec = self.user_exec(
            Arc::new({
                let execs = execs.clone();
                move || {
                    execs.fetch_add(1, Ordering::Relaxed);
                }
            }),
            turn.clone(),
        );
        let control = Arc::new(crate::serve::control::Control::new(self.api.clone()));
        let extras = http::Extras {
            exec: Some(exec),
            actor: SERVED_ACTOR,
            tools: None,
            turn: Some(turn.clone()),
            control: control.clone(),
        };
        let server = http::start(&self.api, clock.clone(), serve.address, extras).await?;
        let address = server.address;
        let operator = match self.operator_listener(serve, clock, &turn, control).await {
            Ok(operator) => operator,
            Err(error) => {
                server.stop().await;
                return Err(error);
            }
        };
        let operator_address = operator.as_ref().map(|listener| listener.address);
        if let Err(error) = self.write_kubeconfigs(serve, address, operator_address) {
            server.stop().await;
            if let Some(operator) = operator {
                operator.stop().await;
            }
            return Err(error);
        }
        self.say(&format!(
            "serving the Kubernetes API on http://{address} (kubeconfig {}), {}x speed; Ctrl-C stops",
            serve.kubeconfig.display(),
            serve.speed
        ));
        if let Some(operator_address) = operator_address {
            self.catch_up_with_the_wall_clock();
            self.say(&format!(
                "no operator of the world's own: run one with KUBECONFIG={} (served on \
                 http://{operator_address}; what arrives there is judged as the operator's)",
                serve.operator_kubeconfig().display()
            ));
        }
        let outcome = self
            .follow_wall_clock(index, serve.speed, (&execs, &turn), shutdown)
            .await;
        server.stop().await;
        if let Some(operator) = operator {
            operator.stop().await;
        }
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
        let mut operator_seen = self.external_mark();
        let mut objects = self.api.object_count();
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                () = tokio::time::sleep(TICK) => {}
            }
            let _turn = turn.lock().await;
            // Whether a judgement this tick settled the world (it does, to see what the
            // action took out of service).
            let mut settled = false;
            let writes = self.served_writes(execs);
            if writes != writes_seen {
                settled = true;
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
                // What the external operator did in the same round is judged from here.
                before = self.track()?;
                events_before = self.log.len();
            }
            if self.operators.external() {
                let seen = operator_seen;
                operator_seen = self
                    .judge_external_writes(operator_seen, &before, events_before)
                    .await?;
                settled |= operator_seen != seen;
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
            // With the operator outside, a tick whose judgement just settled the world
            // at this very instant has nothing left to advance: settling again found
            // what the first settle found (half of a served fleet's rounds while it was
            // being created, session 26). The world's own operator still gets its pass.
            let settled_now = settled && behind == 0 && self.operators.external();
            if settled_now {
                // What an advance ends with: the outages as they stand.
                self.check_outages();
                self.check_fleet_outages();
            } else {
                let summary = self
                    .advance(index, u64::try_from(behind).unwrap_or(0))
                    .await?;
                passes += summary.passes;
            }
            objects = self.collect_garbage(objects)?;
            before = self.track()?;
            events_before = self.log.len();
        }
        if self.operators.external() {
            // What the operator wrote since the last round, up to the stop, is judged too.
            let _turn = turn.lock().await;
            self.judge_external_writes(operator_seen, &before, events_before)
                .await?;
        }
        Ok(passes)
    }

    /// With `--external-operator`, the operator's own listener: whatever arrives there
    /// is the operator's (and the stand-in tools post there).
    async fn operator_listener(
        &self,
        serve: &ServeOptions,
        clock: Arc<fdb_operator::clock::VirtualClock>,
        turn: &Arc<tokio::sync::Mutex<()>>,
        control: Arc<crate::serve::control::Control>,
    ) -> Result<Option<http::RunningServer>, RunError> {
        if !serve.external_operator {
            return Ok(None);
        }
        let extras = http::Extras {
            exec: None,
            actor: OPERATOR_ACTOR,
            tools: serve.fdb_tools.is_some().then(|| self.served_tools(turn)),
            turn: Some(turn.clone()),
            control,
        };
        let own = std::net::SocketAddr::new(serve.address.ip(), 0);
        Ok(Some(http::start(&self.api, clock, own, extras).await?))
    }

    /// Writes the users' kubeconfig and, with an external operator, the operator's
    /// (before the users': a script waiting for the users' file finds both).
    fn write_kubeconfigs(
        &self,
        serve: &ServeOptions,
        address: std::net::SocketAddr,
        operator: Option<std::net::SocketAddr>,
    ) -> Result<(), RunError> {
        if let Some(operator) = operator {
            if let Some(tools) = &serve.fdb_tools {
                let dir = crate::serve::tool_files::write_tools(
                    &tools.dir,
                    &tools.program,
                    &self.tool_minors(),
                    operator,
                )
                .map_err(crate::serve::ServeError::from)?;
                self.say(&format!(
                    "stand-in FoundationDB tools in {} (run the operator with \
                     --fdb-binaries-dir {})",
                    dir.display(),
                    dir.display()
                ));
            }
            kubeconfig::write_operator(&serve.operator_kubeconfig(), operator, &self.namespace)?;
        }
        kubeconfig::write(&serve.kubeconfig, address, &self.namespace)?;
        Ok(())
    }

    /// With an external operator the world's clock is the wall clock: the steps started
    /// it at the real time; what they spent waiting for nothing is caught up here (a
    /// clock ahead of the wall, after `advance` steps, stays ahead by that much).
    fn catch_up_with_the_wall_clock(&self) {
        let wall = jiff::Timestamp::now();
        let behind = wall.duration_since(self.now());
        if behind > SignedDuration::ZERO {
            self.clock.advance(behind);
        } else if behind < -SignedDuration::from_secs(1) {
            self.say(&format!(
                "the world's clock is {}s ahead of the wall clock (the steps advanced it)",
                -behind.as_secs()
            ));
        }
    }

    /// The garbage collector of the served world: when objects went away since the last
    /// look (`objects` of them were stored then), dependents of absent owners are deleted
    /// (`kube/garbage.rs`). Returns the count now.
    fn collect_garbage(&mut self, objects: usize) -> Result<usize, RunError> {
        if self.api.object_count() < objects {
            let collected = self.api.collect_garbage()?;
            if !collected.is_empty() {
                self.say(&format!(
                    "garbage collector: deleted {} objects whose owners are gone{}",
                    collected.deleted.len(),
                    if collected.released.is_empty() {
                        String::new()
                    } else {
                        format!(", released {} from absent owners", collected.released.len())
                    }
                ));
                self.wake_operator();
            }
        }
        Ok(self.api.object_count())
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
