//! `fdb-operator simulate`: runs a scenario's steps against the simulated world with the
//! real operator, and produces the result document.
//!
//! Time is virtual. Between operator passes the world settles (kubelet, fdbmonitor,
//! database); a pass that asks to be requeued after `d` lets the clock run `d` forward,
//! and anything the world does in between (a ConfigMap projection falling due) wakes the
//! operator early, as a watch event would in a real cluster.

mod act;
mod act_exec;
mod act_plugin;
mod database_judge;
mod databases;
mod exclusion_check;
mod expect;
mod external;
mod fdb_bridge;
mod fleet_members;
mod harness;
mod instances;
mod live;
mod observe;
mod operators;
mod pass_judge;
mod pass_schedule;
mod resources;
mod rollout_progress;
mod scenario_clock;
mod setup;
mod snapshot_boot;
mod status_check;
mod steps;
mod world_views;
mod write_observer;

use std::sync::Arc;
use std::time::Instant;

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::validation::ValidatedCluster;
use jiff::Timestamp;
use serde_json::Value;

use crate::event_log::{EventLog, RunPosition};
use crate::fdb::SimulatedFdb;
use crate::kube::{ApiError, FakeApiServer, ResourceKey};
use crate::result::{self, ApiRequestCounts, RunMetrics, SimulationResult};
use crate::scenario::{self, Scenario};
use crate::world::{World, WorldError};
use fdb_operator::clock::VirtualClock;

pub use act::ACT_AS_OPERATOR_ACTOR;
pub use databases::{Databases, WorldDatabase};
pub use harness::{
    FleetRoute, OPERATOR_ACTOR, OperatorIdentity, OperatorTools, SIDECAR_REQUEST_WATCHDOG,
    USER_ACTOR, new_operator_context, operator_kube_client, simulated_sidecar_client_settings,
};
pub use live::serve_scenario;

/// Where progress lines go (stderr for the CLI, nowhere in tests).
pub type ProgressSink = Arc<dyn Fn(&str) + Send + Sync>;

/// How to run a scenario.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// The loopback block (second octet) the run's sidecars listen in; `None` picks one
    /// no other run on the machine holds. Pod IPs are `127.0.y.z` either way (the result
    /// does not depend on the block); the run holds the block until it ends.
    pub ip_block: Option<u8>,
    /// Receives one line per pass and step.
    pub progress: Option<ProgressSink>,
    /// Runs the scenario with an operator that does nothing (its passes report
    /// "requeue" without acting): a test of the world itself, which must then fail the
    /// scenario's `expect` steps.
    pub operator_disabled: bool,
    /// The operator's executor rules (mutation tests switch one off to prove a
    /// scenario catches it).
    pub executor_rules: fdb_operator::controller::ExecutorRules,
    /// Run the world without its own operator (`simulate --serve --external-operator`):
    /// the clock starts at the real current time, the steps may only set up the world
    /// and make user changes, and an operator outside reconciles through the served API.
    pub external_operator: bool,
    /// The `kubectl-fdb` binary `act: {kubectlFdb: [...]}` steps run; `None`: the one on
    /// the `PATH`, as kubectl finds it.
    pub kubectl_fdb: Option<std::path::PathBuf>,
}

/// Why a scenario could not be run (as opposed to: it ran and broke an invariant).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The scenario's cluster manifest is not a valid FoundationDBCluster.
    #[error("cluster: {0}")]
    InvalidCluster(String),
    /// The simulated Kubernetes API refused a request of the runner.
    #[error("simulated Kubernetes API")]
    Api(#[from] ApiError),
    /// The world runtime failed.
    #[error("simulated world")]
    World(#[from] WorldError),
    /// The operator's sidecar clients could not be built.
    #[error("sidecar clients")]
    Sidecar(#[from] fdb_shared::sidecar::SidecarClientError),
    /// The run's TLS material (`world.tls`) could not be made.
    #[error("world.tls")]
    Tls(#[from] crate::tls::TlsSetupError),
    /// A request to an in-process sidecar got no answer within its real-time watchdog
    /// ([`harness::SIDECAR_REQUEST_WATCHDOG`]): the machine stalled. Recording it as a
    /// simulated fault would make the result depend on the machine, so the run stops.
    #[error(
        "the machine stalled: {0} (real-time watchdog: a simulated outcome must not depend on it)"
    )]
    Stalled(String),
    /// An `act` step (or a fault) could not be carried out: what it names does not
    /// exist, or the world refused it.
    #[error("act: {0}")]
    Act(String),
    /// The scenario needs the world's own operator, which `--external-operator` leaves
    /// out: the step or field is named.
    #[error("--external-operator: {0}")]
    ExternalOperator(String),
    /// The world's API could not be served (`simulate --serve`).
    #[error("serve")]
    Serve(#[from] crate::serve::ServeError),
}

impl RunError {
    /// Whether the error is the scenario's fault (exit 2) rather than the simulator's.
    pub fn is_invalid_scenario(&self) -> bool {
        matches!(
            self,
            Self::InvalidCluster(_) | Self::Act(_) | Self::ExternalOperator(_)
        )
    }
}

/// Most passes one `advance` step may run (a guard against a requeue loop).
const ADVANCE_PASS_LIMIT: u64 = 10_000;

/// A scenario run in progress.
pub struct Runner {
    scenario: Scenario,
    seed: u64,
    /// The virtual clock and the progress lines stamped with it.
    clock: scenario_clock::ScenarioClock,
    api: FakeApiServer,
    fdb: SimulatedFdb,
    world: World,
    log: EventLog,
    /// The operator instances: the first cluster's, the other clusters'.
    operators: operators::Operators,
    namespace: String,
    name: String,
    /// The passes so far and when the operator's controllers next run.
    passes: pass_schedule::Passes,
    /// The first database's invariant monitor and the history its checks read.
    judged: database_judge::DatabaseJudge,
    /// How long the first database's recoveries and restarts take.
    recovery: database_judge::RecoveryTiming,
    /// The fleet's databases and what each is judged by.
    fleet: Vec<fleet_members::FleetView>,
    /// See [`RunOptions::kubectl_fdb`].
    kubectl_fdb: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("scenario", &self.scenario.name)
            .field("seed", &self.seed)
            .field("passes", &self.passes.total())
            .finish_non_exhaustive()
    }
}

/// Runs a whole scenario and returns its result.
pub async fn run_scenario(
    scenario: &Scenario,
    options: RunOptions,
) -> Result<SimulationResult, RunError> {
    let wall = Instant::now();
    let runner = Runner::new(scenario.clone(), options).await?;
    let mut result = runner.run().await?;
    result.metrics.wall_millis = u64::try_from(wall.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(result)
}

/// Checks the scenario's cluster manifest the way the operator will, so a broken
/// manifest is reported as an invalid scenario naming the field.
fn validate_cluster(manifest: &Value) -> Result<FoundationDBCluster, RunError> {
    let (cluster, _unknown) = fdb_shared::unknown_fields::decode_reporting_unknown_fields::<
        FoundationDBCluster,
    >(manifest)
    .map_err(|error| RunError::InvalidCluster(error.to_string()))?;
    ValidatedCluster::new(cluster)
        .map(ValidatedCluster::into_inner)
        .map_err(|invalid| RunError::InvalidCluster(invalid.to_string()))
}

/// The cluster manifest in `default` when it names no namespace.
fn in_default_namespace(mut manifest: Value) -> Value {
    if manifest.pointer("/metadata/namespace").is_none()
        && let Some(metadata) = manifest.get_mut("metadata").and_then(Value::as_object_mut)
    {
        metadata.insert("namespace".into(), Value::from("default"));
    }
    manifest
}

/// What a snapshot's boot puts the capture into.
struct Boot<'a> {
    world: &'a mut World,
    fdb: &'a SimulatedFdb,
    /// The run's certificates for the capture's TLS placeholders
    /// (`scenario/snapshot_secrets.rs`).
    placeholder_pki: Option<&'a crate::tls::SimulatedPki>,
}

/// The scenario's own objects, then the cluster (or the snapshot's objects), then its
/// backups, all created as the user.
async fn create_user_objects(
    scenario: &Scenario,
    manifest: Value,
    namespace: &str,
    api: &FakeApiServer,
    boot: Boot<'_>,
    options: &RunOptions,
) -> Result<(), RunError> {
    for object in &scenario.objects {
        api.create_as(
            USER_ACTOR,
            scenario::objects::in_namespace(object, namespace),
        )?;
    }
    match &scenario.snapshot {
        Some(snapshot) => {
            let line = snapshot_boot::boot(snapshot, api, boot).await?;
            if let Some(progress) = &options.progress {
                progress(&line);
            }
        }
        None => {
            api.create_as(USER_ACTOR, manifest)?;
        }
    }
    for backup in &scenario.backups {
        let mut backup = backup.clone();
        if let Some(metadata) = backup.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.insert("namespace".into(), Value::from(namespace));
        }
        api.create_as(USER_ACTOR, backup)?;
    }
    Ok(())
}

impl Runner {
    /// Builds the world and creates the scenario's cluster object.
    pub async fn new(scenario: Scenario, options: RunOptions) -> Result<Self, RunError> {
        let seed = options.seed.unwrap_or_else(|| scenario.seed());
        let manifest = in_default_namespace(scenario.cluster.clone());
        let cluster = validate_cluster(&manifest)?;
        let namespace = cluster.metadata.namespace.clone().unwrap_or_default();
        let name = cluster.metadata.name.clone().unwrap_or_default();

        if options.external_operator {
            external::check_scenario(&scenario)?;
        }
        let virtual_clock = external::start_time(options.external_operator)
            .map_or_else(VirtualClock::fixed_epoch, VirtualClock::starting_at);
        let run_clock = scenario_clock::ScenarioClock::new(virtual_clock, options.progress.clone());
        let (clock, start) = (run_clock.clock(), run_clock.start());
        let api = FakeApiServer::new(Arc::new(clock.clone()), seed);
        let settings = setup::fdb_settings(&scenario.world, seed);
        let (recovery_seconds, restart_seconds) =
            (settings.recovery_seconds, settings.restart_seconds);
        let fdb = SimulatedFdb::new(Arc::new(clock.clone()), settings);
        let clients = setup::connect_clients(&scenario.world.clients, &fdb);
        let setup::Assembled {
            log,
            mut world,
            sidecar_tls,
            placeholder_pki,
            judge,
            context,
            fleet,
            instances,
        } = setup::assemble(&setup::RunBase {
            scenario: &scenario,
            options: &options,
            seed,
            api: &api,
            fdb: &fdb,
            clock,
            namespace: &namespace,
            name: &name,
        })?;
        let booted = Boot {
            world: &mut world,
            fdb: &fdb,
            placeholder_pki: placeholder_pki.as_ref(),
        };
        create_user_objects(&scenario, manifest, &namespace, &api, booted, &options).await?;
        let mut runner = Self {
            scenario,
            seed,
            // An external operator's passes are its own: the world schedules none.
            passes: pass_schedule::Passes::new(
                (!options.external_operator).then_some(start),
                start,
            ),
            judged: database_judge::DatabaseJudge::new(clients),
            recovery: database_judge::RecoveryTiming::new(recovery_seconds, restart_seconds),
            clock: run_clock,
            api,
            fdb,
            world,
            log,
            namespace,
            name,
            operators: operators::Operators::new(context, instances, sidecar_tls, judge, &options),
            fleet,
            kubectl_fdb: options.kubectl_fdb.clone(),
        };
        // With the first: one operator watches them all from the start.
        runner.create_fleet()?;
        Ok(runner)
    }

    /// Runs every step, then shuts the world down.
    pub async fn run(mut self) -> Result<SimulationResult, RunError> {
        let step_results = self.run_steps().await?;
        Ok(self.finish(step_results).await)
    }

    /// Runs every step, then hands the world's API server and database to `at_end`
    /// (e.g. to capture a snapshot of the cluster as it ended), then shuts the world down.
    pub async fn run_then<F, Fut, T>(mut self, at_end: F) -> Result<(SimulationResult, T), RunError>
    where
        F: FnOnce(FakeApiServer, SimulatedFdb) -> Fut,
        Fut: std::future::Future<Output = T>,
    {
        let step_results = self.run_steps().await?;
        Ok(self.finish_then(step_results, at_end).await)
    }

    /// Runs every step of the scenario; one result per step.
    async fn run_steps(&mut self) -> Result<Vec<result::StepResult>, RunError> {
        let mut step_results = Vec::new();
        let specs = self.scenario.steps.clone();
        for (index, spec) in specs.iter().enumerate() {
            let Some(step) = spec.to_step() else { continue };
            self.log.set_position(RunPosition {
                step: index,
                pass: self.passes.total(),
            });
            let outcome = self.run_step(index, &step).await?;
            let snapshot = self.step_result(index, spec, outcome)?;
            step_results.push(snapshot);
        }
        Ok(step_results)
    }

    /// The result document of the run, then the world shut down.
    async fn finish(self, step_results: Vec<result::StepResult>) -> SimulationResult {
        self.finish_then(step_results, |_, _| async {}).await.0
    }

    /// The result document of the run; `at_end` gets the world's API server and database
    /// before the world shuts down.
    async fn finish_then<F, Fut, T>(
        self,
        step_results: Vec<result::StepResult>,
        at_end: F,
    ) -> (SimulationResult, T)
    where
        F: FnOnce(FakeApiServer, SimulatedFdb) -> Fut,
        Fut: std::future::Future<Output = T>,
    {
        let counts = self
            .api
            .request_counts()
            .get(OPERATOR_ACTOR)
            .cloned()
            .unwrap_or_default();
        let counters = self.log.counters();
        let mut violations = self.judged.monitor.violations().to_vec();
        violations.extend(self.fleet_violations());
        let result = SimulationResult {
            name: self.scenario.name.clone(),
            seed: self.seed,
            violations,
            steps: step_results,
            events: self.log.events(),
            tool_runs: self.log.tool_runs(),
            metrics: RunMetrics {
                passes: self.passes.total(),
                api_requests: ApiRequestCounts {
                    get: counts.get,
                    list: counts.list,
                    watch: counts.watch,
                    create: counts.create,
                    update: counts.update,
                    patch: counts.patch,
                    delete: counts.delete,
                },
                status_json_calls: counters.status_json_calls,
                admin_commands: counters.admin_commands,
                sidecar_requests: counters.sidecar_requests,
                wall_millis: 0,
                backup_restore_passes: self.passes.resource_passes_run,
            },
        };
        self.api.set_write_observer(None);
        let captured = at_end(self.api.clone(), self.fdb.clone()).await;
        self.world.shutdown().await;
        (result, captured)
    }

    fn cluster_key(&self) -> ResourceKey {
        ResourceKey::new(
            "apps.foundationdb.org",
            "v1beta2",
            "foundationdbclusters",
            &self.namespace,
            &self.name,
        )
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Simulated seconds since the start.
    fn elapsed(&self) -> u64 {
        self.clock.elapsed()
    }

    fn say(&self, line: &str) {
        self.clock.say(line);
    }
}
