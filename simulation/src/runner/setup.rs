//! Building a run: the simulated databases' settings, the world (its nodes, network,
//! kubelet and databases), the scenario's clients, the run's TLS material, and the first
//! cluster's operator.

use std::sync::Arc;

use crate::fdb::{SimFdbSettings, SimulatedFdb};
use crate::kube::FakeApiServer;
use crate::scenario::{self, Scenario};
use crate::world::{HostBlock, World, WorldOptions};
use fdb_operator::clock::VirtualClock;
use fdb_operator::controller::Context;
use fdb_operator::fdb::ClientInfo;

use super::databases::Databases;
use super::fleet_members::FleetView;
use super::harness::{self, OperatorIdentity, USER_ACTOR, new_operator_context};
use super::instances::Instance;
use super::status_check::check_statuses;
use super::write_observer::observe_writes;
use super::{EventLog, RunError, RunOptions, external};
use crate::invariants::lock_judge::{AdminWriteJudge, LockJudge};

/// The simulated nodes, network and kubelet, reporting the run's IP block.
pub(super) fn build_world(
    scenario: &Scenario,
    options: &RunOptions,
    seed: u64,
    api: &FakeApiServer,
    fdb: &SimulatedFdb,
    fleet: &[FleetView],
    clock: &VirtualClock,
) -> Result<World, RunError> {
    let databases = Databases::new(
        fdb.clone(),
        fleet.iter().map(FleetView::world_database).collect(),
    );
    let mut world_options = WorldOptions::from_scenario(&scenario.world, seed);
    if scenario.snapshot.is_some() {
        // The captured nodes are the world's nodes.
        world_options.nodes = None;
        world_options.zones = None;
    }
    world_options.host_block = options.ip_block.map_or(HostBlock::Free, HostBlock::Fixed);
    let world = if options.external_operator {
        // An operator outside reaches the sidecars at the pods' IPs, as in a real
        // cluster: the pods get their IPs in the block the sidecars listen in.
        external::world_at_pod_ips(
            world_options,
            options.ip_block,
            api,
            &Arc::new(databases),
            clock,
        )?
    } else {
        World::new(
            world_options,
            api.clone(),
            Arc::new(databases),
            clock.clone(),
        )?
    };
    if let Some(progress) = &options.progress {
        let (block, lock) = world.host_block();
        progress(&format!(
            "pod IPs 127.{}.y.z served on 127.{block}.y.z (block held through {})",
            world.network().pod_block(),
            lock.display()
        ));
        progress(&format!(
            "world files in {} (removed when the run ends, however it ends)",
            world.root().display()
        ));
    }
    Ok(world)
}

/// The simulated database's settings: the scenario's world values, or the defaults.
pub(super) fn fdb_settings(world: &scenario::WorldSettings, seed: u64) -> SimFdbSettings {
    SimFdbSettings {
        storage_gib: world.storage_gib.unwrap_or(scenario::DEFAULT_STORAGE_GIB),
        shards: world.shards.unwrap_or(scenario::DEFAULT_SHARDS),
        move_mib_per_second: world
            .move_mib_per_second
            .unwrap_or(scenario::DEFAULT_MOVE_MIB_PER_SECOND),
        // Only when the scenario sets it: it then defines the movement rate.
        exclusion_seconds: world.exclusion_seconds,
        failure_detection_seconds: world
            .failure_detection_seconds
            .unwrap_or(scenario::DEFAULT_FAILURE_DETECTION_SECONDS),
        recovery_seconds: world
            .recovery_seconds
            .unwrap_or(scenario::DEFAULT_RECOVERY_SECONDS),
        restart_seconds: world
            .restart_seconds
            .unwrap_or(scenario::DEFAULT_RESTART_SECONDS),
        seed,
    }
}

/// Connects the scenario's clients (those with a version that parses) to the database.
pub(super) fn connect_clients(
    clients: &[scenario::ClientSpec],
    fdb: &SimulatedFdb,
) -> Vec<ClientInfo> {
    let mut connected = Vec::new();
    for client in clients {
        if let Ok(version) = client.version.parse() {
            let client = ClientInfo {
                address: client.address.clone(),
                version,
                protocol_version: None,
                log_group: client.log_group.clone(),
            };
            fdb.connect_client(client.clone());
            connected.push(client);
        }
    }
    connected
}

/// `world.tls`: generates the run's PKI, creates the pods' Secret and writes the
/// operator's own files; returns where they are (nothing without `world.tls`).
pub(super) fn install_world_tls(
    api: &FakeApiServer,
    world: &World,
    cluster: &str,
    namespace: &str,
    settings: &scenario::WorldSettings,
) -> Result<Option<fdb_shared::sidecar::SidecarClientTls>, RunError> {
    let Some(tls) = &settings.tls else {
        return Ok(None);
    };
    let pki = crate::tls::SimulatedPki::generate(cluster)?;
    let secret = pki.pod_secret(namespace, &tls.secret);
    let secret = crate::kube::typed_json(&secret)
        .map_err(|e| RunError::InvalidCluster(format!("world.tls secret: {e}")))?;
    api.create_as(USER_ACTOR, secret)?;
    Ok(Some(pki.write_operator_files(
        &world.root().join("operator-tls"),
    )?))
}

/// What a run is assembled from.
pub(super) struct RunBase<'a> {
    pub scenario: &'a Scenario,
    pub options: &'a RunOptions,
    pub seed: u64,
    pub api: &'a FakeApiServer,
    /// The first cluster's database.
    pub fdb: &'a SimulatedFdb,
    pub clock: &'a VirtualClock,
    pub namespace: &'a str,
    /// The first cluster's name.
    pub name: &'a str,
}

/// The parts of a run built around its API server and first database.
pub(super) struct Assembled {
    pub log: EventLog,
    pub world: World,
    pub sidecar_tls: Option<fdb_shared::sidecar::SidecarClientTls>,
    /// The run's certificates for a capture's TLS placeholders
    /// (`scenario/snapshot_secrets.rs`).
    pub placeholder_pki: Option<crate::tls::SimulatedPki>,
    pub judge: Arc<dyn AdminWriteJudge>,
    /// The first cluster's operator, which reconciles the fleet's clusters too.
    pub context: Context,
    pub fleet: Vec<FleetView>,
    pub instances: Vec<Instance>,
}

/// The events log (its status and write observers on), the fleet's databases, the
/// world, the run's TLS material, the first cluster's operator, and the instances of
/// the other clusters.
pub(super) fn assemble(base: &RunBase<'_>) -> Result<Assembled, RunError> {
    let (scenario, api, fdb, clock) = (base.scenario, base.api, base.fdb, base.clock);
    let log = EventLog::new(Arc::new(clock.clone()));
    check_statuses(fdb, &log);
    observe_writes(api, &log);
    let settings = fdb_settings(&scenario.world, base.seed);
    let fleet = FleetView::all(scenario, &settings, clock, api, base.namespace, &log);
    let world = build_world(scenario, base.options, base.seed, api, fdb, &fleet, clock)?;
    let sidecar_tls = install_world_tls(api, &world, base.name, base.namespace, &scenario.world)?;
    let placeholder_pki = match (&sidecar_tls, &scenario.snapshot) {
        (None, Some(snapshot)) => super::snapshot_boot::placeholder_pki(snapshot, base.name)?,
        _ => None,
    };
    let sidecar_tls = match &placeholder_pki {
        Some(pki) => Some(pki.write_operator_files(&world.root().join("operator-tls"))?),
        None => sidecar_tls,
    };
    let judge: Arc<dyn AdminWriteJudge> =
        Arc::new(LockJudge::new(api.clone(), fdb.clone(), base.namespace));
    let identity = OperatorIdentity {
        cluster: base.name.to_owned(),
        judge: judge.clone(),
        tools: harness::OperatorTools::of_world(&scenario.world),
        database: base.name.to_owned(),
        fleet: fleet.iter().map(FleetView::route).collect(),
    };
    let mut context = new_operator_context(
        harness::operator_kube_client(api, &log),
        fdb,
        clock,
        &log,
        world.network(),
        sidecar_tls.as_ref(),
        &identity,
    )?;
    context.settings.executor_rules = base.options.executor_rules;
    crate::scenario::operator_flags::apply_operator_flags(&scenario.world, &mut context.settings);
    let now = fdb_operator::clock::Clock::now(clock);
    let mut instances = Instance::all(&scenario.clusters, base.namespace);
    if !base.options.external_operator {
        // With an operator outside, the fleet's passes are its own: the world schedules
        // none (it judges each member after the operator's writes, `external.rs`).
        instances.extend(Instance::fleet_members(
            &scenario.fleet,
            base.namespace,
            &context,
            now,
        ));
    }
    Ok(Assembled {
        log,
        world,
        sidecar_tls,
        placeholder_pki,
        judge,
        context,
        fleet,
        instances,
    })
}
