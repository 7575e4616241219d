//! The production controller (`fdb-operator run`'s code path: kube-runtime's `Controller`
//! with its watches, the requeue mapping, the error policy, the metrics endpoint and
//! graceful shutdown) against the simulated world: the in-memory API server, the world
//! (kubelet, scheduler, real sidecars, fdbmonitor) and the simulated FoundationDB.
//!
//! kube-runtime schedules requeues on real tokio time while the world runs on a virtual
//! clock, so the test shortens the operator's waits ([`OperatorSettings`] and
//! [`RequeuePolicy`]) and keeps the resync at its production value: after the cluster is
//! reconciled only a watch event can bring the controller back within the test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fdb_operator::clock::{Clock, VirtualClock};
use fdb_operator::controller::HttpSidecarProvider;
use fdb_operator::controller::RequeuePolicy;
use fdb_operator::controller::{Context, OperatorSettings};
use fdb_operator::controller::{OperatorMetrics, PassLabels};
use fdb_operator::controller::{RunError, RunOptions, run_until};
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::sidecar::SidecarClientFactory;
use fdb_simulation::fdb::{SimFdbSettings, SimulatedFdb};
use fdb_simulation::kube::{DeleteOptions, FakeApiServer, PatchType, ResourceKey};
use fdb_simulation::world::{World, WorldOptions};
use jiff::SignedDuration;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod};
use serde_json::json;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

#[path = "production_controller/support.rs"]
mod support;
use support::{GatedAdmin, GatedAdminProvider, RecentLog, StatusGate, init_tracing};

/// Most world rounds (settle, advance the clock, let the controller run) per phase.
const MAX_ITERATIONS: usize = 3000;
/// Real time allowed per phase; only a safety net behind [`MAX_ITERATIONS`].
const PHASE_DEADLINE: Duration = Duration::from_secs(30);
/// Longer than any requeue or back-off of the test settings except the resync (the
/// longest is `kube_wait * 6` = 300 ms): a controller finishing no pass for this long
/// has nothing scheduled before the resync.
const IDLE_WINDOW: Duration = Duration::from_millis(400);

/// The world, the database and the running production controller.
struct Sim {
    clock: VirtualClock,
    api: FakeApiServer,
    fdb: SimulatedFdb,
    world: World,
    metrics: Arc<OperatorMetrics>,
    gate: Arc<StatusGate>,
    controller: JoinHandle<Result<(), RunError>>,
    stop: Option<oneshot::Sender<()>>,
    /// What the world did in its last settles (for failure messages).
    world_log: Vec<String>,
    /// The operator's recent requeues and warnings (for failure messages).
    log: RecentLog,
}

/// Waits short enough that a test runs in seconds of real time.
fn test_settings() -> OperatorSettings {
    OperatorSettings {
        kube_wait: Duration::from_millis(50),
        config_map_wait: Duration::from_millis(50),
        database_wait: Duration::from_millis(50),
        controller_name: "fdb-operator-production-test".to_owned(),
        publish_events: true,
        // Production concurrency: the sidecars of several pods are asked at once.
        ..OperatorSettings::default()
    }
}

/// The production requeue policy with short waits, but the production resync: a
/// reconciled cluster is only looked at again because of a watch event.
fn test_requeue_policy() -> RequeuePolicy {
    RequeuePolicy {
        min_delay: Duration::from_millis(20),
        transient_backoff: Duration::from_millis(50),
        error_backoff: Duration::from_millis(100),
        unreconciled: Duration::from_millis(50),
        ..RequeuePolicy::default()
    }
}

fn start(ip_block: u8) -> Sim {
    let log = init_tracing();
    let clock = VirtualClock::fixed_epoch();
    let api = FakeApiServer::new(Arc::new(clock.clone()), 1);
    let fdb = SimulatedFdb::new(Arc::new(clock.clone()), SimFdbSettings::default());
    let options = WorldOptions {
        ip_block,
        ..WorldOptions::default()
    };
    let world = World::new(options, api.clone(), Arc::new(fdb.clone()), clock.clone()).unwrap();
    let gate = Arc::new(StatusGate::default());
    let admin = GatedAdmin {
        fdb: fdb.clone(),
        gate: gate.clone(),
    };
    let sidecars = HttpSidecarProvider::new(SidecarClientFactory::new(None).unwrap(), false);
    let mut ctx = Context::new(
        api.client("operator"),
        Arc::new(GatedAdminProvider(Arc::new(admin))),
        Arc::new(sidecars),
        Arc::new(clock.clone()),
    );
    ctx.settings = test_settings();
    let metrics = ctx.metrics.clone();
    api.create_as(
        "user",
        json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample", "namespace": "default"},
            "spec": {"version": "7.1.57",
                     "databaseConfiguration": {"redundancy_mode": "double"},
                     "processCounts": {"storage": 4, "cluster_controller": 1}}
        }),
    )
    .unwrap();
    let options = RunOptions {
        namespace: Some("default".to_owned()),
        metrics_address: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        requeue: test_requeue_policy(),
        ..RunOptions::default()
    };
    let (stop, stopped) = oneshot::channel::<()>();
    let controller = tokio::spawn(run_until(ctx, options, async move {
        let _ = stopped.await;
    }));
    Sim {
        clock,
        api,
        fdb,
        world,
        metrics,
        gate,
        controller,
        stop: Some(stop),
        world_log: Vec::new(),
        log,
    }
}

fn cluster(sim: &Sim) -> FoundationDBCluster {
    sim.api
        .get_typed::<FoundationDBCluster>(Some("default"), "sample")
        .unwrap()
        .unwrap()
}

fn passes(metrics: &OperatorMetrics) -> u64 {
    ["completed", "requeue", "error"]
        .into_iter()
        .map(|result| metrics.passes.get_or_create(&PassLabels { result }).get())
        .sum()
}

/// What the test last saw, for failure messages: the cluster's status, which steps ran
/// and asked to wait or failed (metrics), the operator's Events, the world's last actions.
fn diagnostics(sim: &Sim) -> String {
    let mut text = String::new();
    let cluster = cluster(sim);
    let status = cluster.status.clone().unwrap_or_default();
    let _ = writeln!(
        text,
        "generation {:?}, generations {:?}\nconfigured {}, available {}, connection string {:?}",
        cluster.metadata.generation,
        status.generations,
        status.configured,
        status.health.available,
        status.connection_string,
    );
    for group in &status.process_groups {
        if !group.process_group_conditions.is_empty() {
            let conditions: Vec<_> = group
                .process_group_conditions
                .iter()
                .map(|c| format!("{:?}", c.condition_type))
                .collect();
            let _ = writeln!(text, "  {}: {conditions:?}", group.process_group_id);
        }
    }
    let _ = writeln!(text, "metrics (steps run, requeues, failures):");
    for line in sim.metrics.encode().lines() {
        let wanted = [
            "reconcile_passes_total",
            "requeues_total",
            "step_failures_total",
        ]
        .iter()
        .any(|name| line.contains(name))
            || line.contains("step_duration_seconds_count");
        if wanted && !line.starts_with('#') {
            let _ = writeln!(text, "  {line}");
        }
    }
    let _ = writeln!(text, "end state problems: {:#?}", end_state_problems(sim));
    let _ = writeln!(text, "recent requeues and warnings of the operator:");
    for line in sim.log.lines() {
        let _ = writeln!(text, "  {line}");
    }
    let _ = writeln!(text, "events:");
    for event in sim.api.list("events.k8s.io", "events", Some("default")) {
        let _ = writeln!(
            text,
            "  {} {}: {}",
            event["type"].as_str().unwrap_or(""),
            event["reason"].as_str().unwrap_or(""),
            event["note"].as_str().unwrap_or(""),
        );
    }
    let _ = writeln!(
        text,
        "last world actions (newest first): {:?}",
        sim.world_log.iter().rev().take(10).collect::<Vec<_>>()
    );
    let _ = writeln!(
        text,
        "controller task finished: {}",
        sim.controller.is_finished()
    );
    text
}

/// Drives the world while the controller runs, until `done` holds: settles the world,
/// advances the virtual clock (to the next timed world event, a ConfigMap projection,
/// else by a second) and gives the controller's tasks a few real milliseconds. The
/// controller waits in real time meanwhile, with the short test delays.
async fn drive_until(sim: &mut Sim, what: &str, done: impl Fn(&Sim) -> bool) {
    let started = Instant::now();
    for _ in 0..MAX_ITERATIONS {
        let report = sim.world.settle().await.unwrap();
        sim.world_log.extend(
            report
                .events
                .iter()
                .map(|e| format!("{} {}", e.action, e.target)),
        );
        if done(sim) {
            return;
        }
        assert!(
            !sim.controller.is_finished(),
            "the controller stopped before {what}\n{}",
            diagnostics(sim)
        );
        if started.elapsed() > PHASE_DEADLINE {
            break;
        }
        let now = sim.clock.now();
        let step = sim
            .world
            .next_due()
            .map(|due| due.duration_since(now))
            .filter(SignedDuration::is_positive)
            .unwrap_or(SignedDuration::from_secs(1));
        sim.clock.advance(step);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!(
        "gave up waiting for {what} after {:?}\n{}",
        started.elapsed(),
        diagnostics(sim)
    );
}

/// Waits until the controller finishes no pass for [`IDLE_WINDOW`]: from then on only a
/// watch event (or the ten-minute resync) starts the next pass.
async fn wait_until_idle(sim: &Sim, what: &str) {
    for _ in 0..100 {
        let before = passes(&sim.metrics);
        tokio::time::sleep(IDLE_WINDOW).await;
        if passes(&sim.metrics) == before {
            return;
        }
    }
    panic!(
        "the controller kept reconciling {what}\n{}",
        diagnostics(sim)
    );
}

fn reconciled(sim: &Sim) -> bool {
    let cluster = cluster(sim);
    let reconciled = cluster
        .status
        .as_ref()
        .and_then(|s| s.generations.reconciled);
    reconciled.is_some() && reconciled == cluster.metadata.generation
}

/// What differs from the end state of a created double cluster with 4 storage and 1
/// cluster controller (the checks of the creation scenario); empty when it is reached.
fn end_state_problems(sim: &Sim) -> Vec<String> {
    let mut problems = Vec::new();
    let cluster = cluster(sim);
    let Some(status) = cluster.status.clone() else {
        return vec!["the cluster has no status".to_owned()];
    };
    if !reconciled(sim) {
        problems.push("generations.reconciled is not metadata.generation".to_owned());
    }
    let mut classes = BTreeMap::new();
    for group in &status.process_groups {
        if !group.process_group_conditions.is_empty() {
            problems.push(format!("{} has conditions", group.process_group_id));
        }
        *classes.entry(group.process_class.as_str()).or_insert(0) += 1;
    }
    let expected = BTreeMap::from([
        ("cluster_controller", 1),
        ("log", 4),
        ("stateless", 8),
        ("storage", 4),
    ]);
    if classes != expected {
        problems.push(format!("process groups per class {classes:?}"));
    }
    if !status.configured || !status.health.available {
        problems.push("status: not configured or not available".to_owned());
    }
    let pvcs: Vec<PersistentVolumeClaim> = sim.api.list_typed(Some("default")).unwrap();
    if pvcs.len() != 8 {
        problems.push(format!(
            "{} PVCs, not one per storage and log group",
            pvcs.len()
        ));
    }
    let Some(connection_string) = status.connection_string.clone() else {
        problems.push("no connection string".to_owned());
        return problems;
    };
    let config_map: Option<ConfigMap> =
        sim.api.get_typed(Some("default"), "sample-config").unwrap();
    let data = config_map.and_then(|c| c.data).unwrap_or_default();
    if data.get("cluster-file") != Some(&connection_string)
        || data.get("running-version").map(String::as_str) != Some("7.1.57")
    {
        problems.push(format!("ConfigMap data {data:?}"));
    }

    let pods: Vec<Pod> = sim.api.list_typed(Some("default")).unwrap();
    if pods.len() != 17 {
        problems.push(format!("{} pods", pods.len()));
    }
    let mut node_of = BTreeMap::new();
    for pod in &pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        if let Err(problem) = check_pod_files(sim, pod, &connection_string) {
            problems.push(format!("pod {name}: {problem}"));
        }
        let node = pod.spec.as_ref().and_then(|spec| spec.node_name.clone());
        node_of.insert(name, node);
    }

    let coordinators = match ConnectionString::parse(&connection_string) {
        Ok(parsed) => parsed.coordinators,
        Err(error) => {
            problems.push(format!("connection string {connection_string:?}: {error}"));
            Vec::new()
        }
    };
    let zones: BTreeSet<_> = coordinators
        .iter()
        .map(|c| {
            node_of
                .get(c.host.split('.').next().unwrap_or_default())
                .cloned()
                .flatten()
        })
        .collect();
    if coordinators.len() != 3 || zones.len() != 3 || zones.contains(&None) {
        problems.push(format!(
            "coordinators not 3 in distinct zones: {connection_string}"
        ));
    }

    let snapshot = sim.fdb.snapshot();
    let configuration = snapshot.configuration.clone().unwrap_or_default();
    let redundancy = configuration.redundancy_mode.map(|m| m.as_str().to_owned());
    let engine = configuration.storage_engine.map(|e| e.as_str().to_owned());
    if !snapshot.available
        || !snapshot.configured
        || redundancy.as_deref() != Some("double")
        || engine.as_deref() != Some("ssd-2")
    {
        problems.push(format!(
            "database: available {}, configured {}, redundancy {redundancy:?}, engine {engine:?}",
            snapshot.available, snapshot.configured
        ));
    }
    if snapshot.processes.len() != 17 {
        problems.push(format!("{} database processes", snapshot.processes.len()));
    }
    problems
}

/// The files the pod's sidecar wrote: the cluster file, and the monitor conf with the
/// pod's own address and process group.
fn check_pod_files(sim: &Sim, pod: &Pod, connection_string: &str) -> Result<(), String> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    let group = labels
        .get("foundationdb.org/fdb-process-group-id")
        .ok_or("no process group label")?;
    let ip = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .ok_or("no IP")?;
    let dir = sim
        .world
        .pod_volume_dir("default", name, "dynamic-conf")
        .ok_or("not running")?;
    let read = |file: &str| {
        std::fs::read_to_string(dir.join(file)).map_err(|e| format!("cannot read {file}: {e}"))
    };
    if read("fdb.cluster")? != connection_string {
        return Err("fdb.cluster is not the connection string".to_owned());
    }
    let conf = read("fdbmonitor.conf")?;
    if !conf.contains(&format!("public_address = {ip}:4501"))
        || !conf.contains(&format!("locality_instance_id = {group}"))
    {
        return Err(format!("fdbmonitor.conf is not rendered for it:\n{conf}"));
    }
    Ok(())
}

/// Asserts the end state of a created cluster ([`end_state_problems`]).
fn assert_created(sim: &Sim) {
    let problems = end_state_problems(sim);
    assert!(
        problems.is_empty(),
        "not the created cluster: {problems:#?}\n{}",
        diagnostics(sim)
    );
}

fn uid_of_pod(sim: &Sim, name: &str) -> Option<String> {
    let pod: Option<Pod> = sim.api.get_typed(Some("default"), name).unwrap();
    pod.and_then(|pod| pod.metadata.uid)
}

/// Whether the pod runs with a new uid and its sidecar wrote the cluster file.
fn pod_replaced(sim: &Sim, name: &str, old_uid: &str) -> bool {
    let Some(pod) = sim.api.get_typed::<Pod>(Some("default"), name).unwrap() else {
        return false;
    };
    let connection_string = cluster(sim).status.unwrap().connection_string.unwrap();
    let fresh =
        pod.metadata.uid.as_deref() != Some(old_uid) && pod.metadata.deletion_timestamp.is_none();
    let cluster_file = sim
        .world
        .pod_volume_dir("default", name, "dynamic-conf")
        .and_then(|dir| std::fs::read_to_string(dir.join("fdb.cluster")).ok());
    fresh && cluster_file.as_deref() == Some(connection_string.as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn production_controller_creates_a_cluster_follows_watches_and_stops_gracefully() {
    let mut sim = start(150);

    // Creation: everything after the first pass is driven by the controller's watches and
    // its requeues.
    drive_until(&mut sim, "the cluster to be reconciled", reconciled).await;
    assert_created(&sim);

    // The ConfigMap watch: with the controller idle (nothing scheduled before the
    // ten-minute resync), a deleted ConfigMap comes back.
    wait_until_idle(&sim, "after the creation").await;
    let config_map_key = ResourceKey::new("", "v1", "configmaps", "default", "sample-config");
    let old_config_map = sim.api.get(&config_map_key).unwrap()["metadata"]["uid"].clone();
    sim.api
        .delete_as("user", &config_map_key, DeleteOptions::default())
        .unwrap();
    let what = "the deleted ConfigMap to be recreated (the ConfigMap watch)";
    drive_until(&mut sim, what, |sim| {
        sim.api
            .get(&config_map_key)
            .is_some_and(|c| c["metadata"]["uid"] != old_config_map)
    })
    .await;

    // The Pod watch: with the controller idle, a deleted pod is recreated once its
    // deletion finishes, and its sidecar is given the cluster file.
    wait_until_idle(&sim, "after recreating the ConfigMap").await;
    let pod_name = "sample-stateless-1";
    let old_uid = uid_of_pod(&sim, pod_name).unwrap();
    let pod_key = ResourceKey::new("", "v1", "pods", "default", pod_name);
    sim.api
        .delete_as("user", &pod_key, DeleteOptions::default())
        .unwrap();
    let what = "the deleted pod to be recreated and configured (the Pod watch)";
    drive_until(&mut sim, what, |sim| pod_replaced(sim, pod_name, &old_uid)).await;
    drive_until(
        &mut sim,
        "the cluster to be back in its created state",
        |sim| end_state_problems(sim).is_empty(),
    )
    .await;

    // The FoundationDBCluster watch: with the controller idle, a metadata change starts
    // a reconcile. It is held in `status json` while the stop is asked for: graceful
    // shutdown finishes it before the controller ends.
    wait_until_idle(&sim, "after recreating the pod").await;
    let guard = sim.gate.close().await;
    let cluster_key = ResourceKey::new(
        "apps.foundationdb.org",
        "v1beta2",
        "foundationdbclusters",
        "default",
        "sample",
    );
    sim.api
        .patch_as(
            "user",
            &cluster_key,
            PatchType::Merge,
            &json!({"metadata": {"annotations": {"test/poke": "1"}}}),
            false,
        )
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), sim.gate.entered.notified())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "a metadata change did not start a reconcile\n{}",
                diagnostics(&sim)
            )
        });
    // One reconcile at a time per cluster: the one held in the gate is the only one.
    let passes_before = passes(&sim.metrics);
    sim.stop.take().unwrap().send(()).unwrap();
    // Whatever stops on the signal has had time to do so; the controller must still be
    // waiting for the reconcile it started.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !sim.controller.is_finished(),
        "the controller ended while a reconcile was still running"
    );
    assert_eq!(passes(&sim.metrics), passes_before);
    drop(guard);
    let result = tokio::time::timeout(Duration::from_secs(20), &mut sim.controller)
        .await
        .expect("the controller did not stop after the shutdown signal")
        .expect("the controller task panicked");
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(
        passes(&sim.metrics),
        passes_before + 1,
        "the reconcile in flight was finished, and no other started"
    );
    sim.world.shutdown().await;
}
