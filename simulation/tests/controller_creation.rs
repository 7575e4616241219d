//! The creation path end to end: the real controller against the in-memory API server,
//! the simulated world (kubelet, real sidecars, fdbmonitor, DNS) and the simulated
//! FoundationDB, until Reconciled; then a pass that must write nothing; and a restart
//! (a new Context) in the middle of the creation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use fdb_operator::clock::{Clock, VirtualClock};
use fdb_operator::controller::HttpSidecarProvider;
use fdb_operator::controller::{
    AdminClientProvider, Context, PassOutcome, SidecarProvider, run_pass,
};
use fdb_operator::fdb::{
    AdminClient, AdminError, ClientInfo, ExclusionTarget, LockValue, PendingUpgrade,
};
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::{DatabaseConfiguration, FoundationDBCluster};
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::sidecar::{SidecarApi, SidecarClientError, SidecarClientFactory};
use fdb_shared::status_json::DatabaseStatus;
use fdb_simulation::fdb::{SimFdbSettings, SimulatedFdb};
use fdb_simulation::kube::FakeApiServer;
use fdb_simulation::world::{World, WorldOptions};
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod};
use serde_json::json;

/// Counts of what the operator asked of the database and the sidecars.
#[derive(Debug, Default)]
struct Counters {
    status_calls: AtomicUsize,
    admin_writes: AtomicUsize,
    sidecar_copies: AtomicUsize,
}

/// The simulated database, counting calls.
#[derive(Debug)]
struct CountingAdmin {
    fdb: SimulatedFdb,
    counters: Arc<Counters>,
}

impl CountingAdmin {
    fn write(&self) {
        self.counters.admin_writes.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl AdminClient for CountingAdmin {
    async fn status(&self) -> Result<DatabaseStatus, AdminError> {
        self.counters.status_calls.fetch_add(1, Ordering::SeqCst);
        self.fdb.status().await
    }
    async fn configure(&self, c: &DatabaseConfiguration, new: bool) -> Result<(), AdminError> {
        self.write();
        self.fdb.configure(c, new).await
    }
    async fn exclude(&self, t: &[ExclusionTarget], blocking: bool) -> Result<(), AdminError> {
        self.write();
        self.fdb.exclude(t, blocking).await
    }
    async fn include(&self, t: &[ExclusionTarget]) -> Result<(), AdminError> {
        self.write();
        self.fdb.include(t).await
    }
    async fn change_coordinators(
        &self,
        c: &[ProcessAddress],
    ) -> Result<ConnectionString, AdminError> {
        self.write();
        self.fdb.change_coordinators(c).await
    }
    async fn kill(&self, a: &[ProcessAddress]) -> Result<(), AdminError> {
        self.write();
        self.fdb.kill(a).await
    }
    async fn set_maintenance_zone(&self, zone: &str, seconds: u64) -> Result<(), AdminError> {
        self.write();
        self.fdb.set_maintenance_zone(zone, seconds).await
    }
    async fn reset_maintenance_zone(&self) -> Result<(), AdminError> {
        self.write();
        self.fdb.reset_maintenance_zone().await
    }
    async fn read_lock(&self) -> Result<Option<LockValue>, AdminError> {
        self.fdb.read_lock().await
    }
    async fn write_lock(&self, lock: &LockValue) -> Result<(), AdminError> {
        self.write();
        self.fdb.write_lock(lock).await
    }
    async fn deny_list(&self) -> Result<Vec<String>, AdminError> {
        self.fdb.deny_list().await
    }
    async fn update_deny_list(&self, add: &[String], remove: &[String]) -> Result<(), AdminError> {
        self.write();
        self.fdb.update_deny_list(add, remove).await
    }
    async fn pending_upgrades(&self) -> Result<Vec<PendingUpgrade>, AdminError> {
        self.fdb.pending_upgrades().await
    }
    async fn update_pending_upgrades(
        &self,
        add: &[PendingUpgrade],
        remove: &[PendingUpgrade],
    ) -> Result<(), AdminError> {
        self.write();
        self.fdb.update_pending_upgrades(add, remove).await
    }
    async fn clear_pending_upgrades(&self) -> Result<(), AdminError> {
        self.write();
        self.fdb.clear_pending_upgrades().await
    }
    async fn connected_clients(&self) -> Result<Vec<ClientInfo>, AdminError> {
        self.fdb.connected_clients().await
    }
}

struct SimAdminProvider(Arc<CountingAdmin>);

impl AdminClientProvider for SimAdminProvider {
    fn admin_for(&self, _: &FoundationDBCluster) -> Result<Arc<dyn AdminClient>, AdminError> {
        Ok(self.0.clone())
    }
}

/// The real HTTP sidecar client, counting copies.
struct CountingSidecar {
    inner: Arc<dyn SidecarApi>,
    counters: Arc<Counters>,
}

#[async_trait::async_trait]
impl SidecarApi for CountingSidecar {
    async fn ready(&self) -> Result<(), SidecarClientError> {
        self.inner.ready().await
    }
    async fn substitutions(&self) -> Result<BTreeMap<String, String>, SidecarClientError> {
        self.inner.substitutions().await
    }
    async fn check_hash(&self, rel: &str) -> Result<Option<String>, SidecarClientError> {
        self.inner.check_hash(rel).await
    }
    async fn is_present(&self, rel: &str) -> Result<bool, SidecarClientError> {
        self.inner.is_present(rel).await
    }
    async fn copy_files(&self) -> Result<(), SidecarClientError> {
        self.counters.sidecar_copies.fetch_add(1, Ordering::SeqCst);
        self.inner.copy_files().await
    }
    async fn copy_binaries(&self) -> Result<(), SidecarClientError> {
        self.counters.sidecar_copies.fetch_add(1, Ordering::SeqCst);
        self.inner.copy_binaries().await
    }
    async fn copy_libraries(&self) -> Result<(), SidecarClientError> {
        self.counters.sidecar_copies.fetch_add(1, Ordering::SeqCst);
        self.inner.copy_libraries().await
    }
    async fn copy_monitor_conf(&self) -> Result<(), SidecarClientError> {
        self.counters.sidecar_copies.fetch_add(1, Ordering::SeqCst);
        self.inner.copy_monitor_conf().await
    }
}

struct CountingSidecars {
    http: HttpSidecarProvider,
    counters: Arc<Counters>,
}

impl SidecarProvider for CountingSidecars {
    fn sidecar_for(
        &self,
        cluster: &FoundationDBCluster,
        pod: &Pod,
    ) -> Result<Arc<dyn SidecarApi>, SidecarClientError> {
        Ok(Arc::new(CountingSidecar {
            inner: self.http.sidecar_for(cluster, pod)?,
            counters: self.counters.clone(),
        }))
    }
}

struct Sim {
    clock: VirtualClock,
    api: FakeApiServer,
    fdb: SimulatedFdb,
    world: World,
    counters: Arc<Counters>,
    ctx: Context,
}

fn context(
    sim_api: &FakeApiServer,
    fdb: &SimulatedFdb,
    clock: &VirtualClock,
) -> (Context, Arc<Counters>) {
    let counters = Arc::new(Counters::default());
    let admin = CountingAdmin {
        fdb: fdb.clone(),
        counters: counters.clone(),
    };
    let sidecars = CountingSidecars {
        http: HttpSidecarProvider::new(SidecarClientFactory::new(None).unwrap(), false),
        counters: counters.clone(),
    };
    let mut ctx = Context::new(
        sim_api.client("operator"),
        Arc::new(SimAdminProvider(Arc::new(admin))),
        Arc::new(sidecars),
        Arc::new(clock.clone()),
    );
    ctx.settings.publish_events = true;
    (ctx, counters)
}

fn sim(ip_block: u8, redundancy: &str) -> Sim {
    let clock = VirtualClock::fixed_epoch();
    let api = FakeApiServer::new(Arc::new(clock.clone()), 1);
    let fdb = SimulatedFdb::new(Arc::new(clock.clone()), SimFdbSettings::default());
    let options = WorldOptions {
        ip_block,
        ..WorldOptions::default()
    };
    let world = World::new(options, api.clone(), Arc::new(fdb.clone()), clock.clone()).unwrap();
    let (ctx, counters) = context(&api, &fdb, &clock);
    api.create_as(
        "user",
        json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample", "namespace": "default"},
            "spec": {"version": "7.1.57",
                     "databaseConfiguration": {"redundancy_mode": redundancy},
                     "processCounts": {"storage": 4, "cluster_controller": 1}}
        }),
    )
    .unwrap();
    Sim {
        clock,
        api,
        fdb,
        world,
        counters,
        ctx,
    }
}

/// Runs passes (the world settling before each, the clock following the requeues) until
/// the cluster is reconciled or `max_passes` ran. Returns the passes run.
async fn run_until_reconciled(sim: &mut Sim, max_passes: usize) -> (usize, bool) {
    for pass in 1..=max_passes {
        sim.world.settle().await.unwrap();
        match run_pass(&sim.ctx, "default", "sample").await {
            Ok(report) if report.reconciled => return (pass, true),
            Ok(report) => {
                eprintln!(
                    "pass {pass} at +{}: {:?}",
                    sim.clock.now_unix() % 100_000,
                    report.outcome
                );
                let delay = match report.outcome {
                    PassOutcome::Requeue { delay, .. } => delay.as_secs().max(1),
                    PassOutcome::Completed => 5,
                };
                sim.clock.advance_seconds(i64::try_from(delay).unwrap());
            }
            Err(error) => {
                eprintln!("pass {pass} failed: {error}");
                sim.clock.advance_seconds(5);
            }
        }
    }
    (max_passes, false)
}

fn cluster(sim: &Sim) -> FoundationDBCluster {
    sim.api
        .get_typed::<FoundationDBCluster>(Some("default"), "sample")
        .unwrap()
        .unwrap()
}

fn operator_writes(sim: &Sim) -> Vec<String> {
    sim.api
        .take_write_log()
        .into_iter()
        .filter(|w| w.actor == "operator")
        .map(|w| format!("{w:?}"))
        .collect()
}

async fn assert_created(sim: &Sim, redundancy: &str, coordinators: usize) {
    let cluster = cluster(sim);
    let status = cluster.status.clone().unwrap();
    let mut classes = BTreeMap::new();
    for group in &status.process_groups {
        assert!(group.process_group_conditions.is_empty(), "{group:?}");
        *classes.entry(group.process_class.as_str()).or_insert(0) += 1;
    }
    let ids: BTreeSet<_> = status
        .process_groups
        .iter()
        .map(|g| &g.process_group_id)
        .collect();
    assert_eq!(ids.len(), status.process_groups.len(), "duplicate IDs");
    let stateless = if redundancy == "single" {
        7
    } else if redundancy == "triple" {
        9
    } else {
        8
    };
    let logs = if redundancy == "triple" {
        5
    } else if redundancy == "single" {
        3
    } else {
        4
    };
    assert_eq!(classes["storage"], 4);
    assert_eq!(classes["log"], logs);
    assert_eq!(classes["stateless"], stateless);
    assert_eq!(classes["cluster_controller"], 1);
    assert!(status.configured);
    assert!(status.health.available);
    assert_eq!(status.generations.reconciled, cluster.metadata.generation);

    let pvcs: Vec<PersistentVolumeClaim> = sim.api.list_typed(Some("default")).unwrap();
    assert_eq!(pvcs.len(), 4 + logs);

    let connection_string = status.connection_string.clone().unwrap();
    let config_map: ConfigMap = sim
        .api
        .get_typed(Some("default"), "sample-config")
        .unwrap()
        .unwrap();
    let data = config_map.data.unwrap();
    let keys: Vec<_> = data.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "cluster-file",
            "fdbmonitor-conf-cluster_controller",
            "fdbmonitor-conf-log",
            "fdbmonitor-conf-stateless",
            "fdbmonitor-conf-storage",
            "running-version"
        ]
    );
    assert_eq!(data["cluster-file"], connection_string);

    let pods: Vec<Pod> = sim.api.list_typed(Some("default")).unwrap();
    assert_eq!(pods.len(), status.process_groups.len());
    let mut node_of = BTreeMap::new();
    for pod in &pods {
        let name = pod.metadata.name.clone().unwrap();
        let group = &pod.metadata.labels.as_ref().unwrap()["foundationdb.org/fdb-process-group-id"];
        let ip = pod.status.as_ref().unwrap().pod_ip.clone().unwrap();
        let dir = sim
            .world
            .pod_volume_dir("default", &name, "dynamic-conf")
            .unwrap();
        let cluster_file = std::fs::read_to_string(dir.join("fdb.cluster")).unwrap();
        assert_eq!(cluster_file, connection_string, "{name}");
        let conf = std::fs::read_to_string(dir.join("fdbmonitor.conf")).unwrap();
        assert!(
            conf.contains(&format!("public_address = {ip}:4501")),
            "{name}: {conf}"
        );
        assert!(
            conf.contains(&format!("locality_instance_id = {group}")),
            "{name}: {conf}"
        );
        node_of.insert(name, pod.spec.as_ref().unwrap().node_name.clone().unwrap());
    }

    let parsed = ConnectionString::parse(&connection_string).unwrap();
    assert_eq!(parsed.coordinators.len(), coordinators);
    let zones: BTreeSet<_> = parsed
        .coordinators
        .iter()
        .map(|c| {
            let pod = c.host.split('.').next().unwrap();
            node_of[pod].clone()
        })
        .collect();
    assert_eq!(
        zones.len(),
        coordinators,
        "coordinators share zones: {connection_string}"
    );

    let snapshot = sim.fdb.snapshot();
    assert!(snapshot.available && snapshot.configured);
    let configuration = snapshot.configuration.unwrap();
    assert_eq!(configuration.redundancy_mode.unwrap().as_str(), redundancy);
    assert_eq!(configuration.storage_engine.unwrap().as_str(), "ssd-2");
    assert_eq!(snapshot.processes.len(), status.process_groups.len());
}

async fn assert_quiet_pass(sim: &mut Sim) {
    sim.world.settle().await.unwrap();
    sim.clock.advance_seconds(30);
    sim.world.settle().await.unwrap();
    operator_writes(sim);
    let status_before = sim.counters.status_calls.load(Ordering::SeqCst);
    let admin_before = sim.counters.admin_writes.load(Ordering::SeqCst);
    let copies_before = sim.counters.sidecar_copies.load(Ordering::SeqCst);
    let report = run_pass(&sim.ctx, "default", "sample").await.unwrap();
    assert!(report.reconciled, "{report:?}");
    assert_eq!(operator_writes(sim), Vec::<String>::new());
    assert_eq!(
        sim.counters.admin_writes.load(Ordering::SeqCst),
        admin_before
    );
    assert!(sim.counters.status_calls.load(Ordering::SeqCst) - status_before <= 1);
    assert_eq!(
        sim.counters.sidecar_copies.load(Ordering::SeqCst),
        copies_before
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_cluster_is_created_and_a_second_pass_writes_nothing() {
    let mut sim = sim(161, "double");
    let start = sim.clock.now_unix();
    let (passes, reconciled) = run_until_reconciled(&mut sim, 150).await;
    let cluster = cluster(&sim);
    assert!(
        reconciled,
        "not reconciled after {passes} passes: {:#?}",
        cluster.status
    );
    eprintln!(
        "double: reconciled after {passes} passes, {} simulated seconds",
        sim.clock.now_unix() - start
    );
    assert_created(&sim, "double", 3).await;
    assert_quiet_pass(&mut sim).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_and_triple_clusters_are_created() {
    for (block, redundancy, coordinators) in [(162, "single", 1), (163, "triple", 5)] {
        let mut sim = sim(block, redundancy);
        let (passes, reconciled) = run_until_reconciled(&mut sim, 150).await;
        assert!(
            reconciled,
            "{redundancy}: not reconciled after {passes} passes"
        );
        assert_created(&sim, redundancy, coordinators).await;
        assert_quiet_pass(&mut sim).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_operator_converges_to_the_same_result() {
    let mut sim = sim(164, "double");
    // Run part of the creation: groups allocated, pods created, cluster file chosen.
    for _ in 0..4 {
        sim.world.settle().await.unwrap();
        if let Ok(report) = run_pass(&sim.ctx, "default", "sample").await
            && let PassOutcome::Requeue { delay, .. } = report.outcome
        {
            sim.clock
                .advance_seconds(i64::try_from(delay.as_secs().max(1)).unwrap());
        }
    }
    assert!(!cluster(&sim).status.unwrap().process_groups.is_empty());
    // Drop every piece of in-memory operator state.
    let (ctx, counters) = context(&sim.api, &sim.fdb, &sim.clock);
    sim.ctx = ctx;
    sim.counters = counters;
    let (passes, reconciled) = run_until_reconciled(&mut sim, 150).await;
    assert!(
        reconciled,
        "not reconciled after {passes} passes after the restart"
    );
    assert_created(&sim, "double", 3).await;
    assert_quiet_pass(&mut sim).await;
}
