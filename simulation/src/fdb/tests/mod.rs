//! Physics of the simulated database. A small cluster: logs 127.0.0.11-13 (the
//! coordinators), storage 21-23, stateless 31-32; the n-th of each class in `zone-n`.

mod basics;
mod coordinated;
mod data;
mod faults;
mod halls;
mod maintenance;
mod recovery;
mod schema;

use std::collections::BTreeMap;
use std::sync::Arc;

use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::{
    DatabaseConfiguration, ProcessClass, RedundancyMode, StorageEngine, StorageMigrationType,
};
use fdb_shared::status_json::{DatabaseStatus, ProcessStatus};

use super::*;
use fdb_operator::clock::VirtualClock;
pub(super) use fdb_operator::fdb::{
    AdminClient, AdminError, ClientInfo, ExclusionTarget, LockValue,
};

pub(super) const CONNECTION: &str =
    "sample:initial1@127.0.0.11:4501,127.0.0.12:4501,127.0.0.13:4501";

pub(super) fn v(text: &str) -> FdbVersion {
    text.parse().unwrap()
}

pub(super) fn address(host: u8) -> ProcessAddress {
    ProcessAddress::new(format!("127.0.0.{host}"), 4501)
}

/// The n-th process of a class, on its own disk.
pub(super) fn launch(class: ProcessClass, n: u8, version: &str) -> ProcessLaunch {
    let host = match class {
        ProcessClass::Log => 10,
        ProcessClass::Storage => 20,
        _ => 30,
    } + n;
    let instance = format!("{}-{n}", class.as_str());
    let locality = BTreeMap::from([
        ("instance_id".to_owned(), instance.clone()),
        ("zoneid".to_owned(), format!("zone-{n}")),
        ("machineid".to_owned(), format!("zone-{n}")),
    ]);
    ProcessLaunch {
        address: address(host),
        other_addresses: Vec::new(),
        command_line: format!(
            "/usr/bin/fdbserver --class={} --locality_instance_id={instance} --public_address=127.0.0.{host}:4501",
            class.as_str()
        ),
        class,
        locality,
        version: v(version),
        cluster_file_contents: format!("{CONNECTION}\n"),
        pod: format!("sample-{instance}"),
        data_identity: format!("pvc:default/sample-{instance}-data@uid-{instance}/data"),
        coordination_file: None,
    }
}

pub(super) fn all_launches(version: &str) -> Vec<ProcessLaunch> {
    let mut launches = Vec::new();
    for n in 1..=3 {
        launches.push(launch(ProcessClass::Log, n, version));
        launches.push(launch(ProcessClass::Storage, n, version));
    }
    for n in 1..=2 {
        launches.push(launch(ProcessClass::Stateless, n, version));
    }
    launches
}

pub(super) fn double_ssd() -> DatabaseConfiguration {
    DatabaseConfiguration {
        redundancy_mode: Some(RedundancyMode::Double),
        storage_engine: Some(StorageEngine::Ssd2),
        logs: Some(3),
        ..Default::default()
    }
}

/// A configured, recovered database with default settings.
pub(super) async fn configured_cluster() -> (SimulatedFdb, VirtualClock) {
    cluster_with(SimFdbSettings::default()).await
}

/// A configured database with these settings, its first recovery over.
pub(super) async fn cluster_with(settings: SimFdbSettings) -> (SimulatedFdb, VirtualClock) {
    let clock = VirtualClock::fixed_epoch();
    let recovery = settings.recovery_seconds;
    let fdb = SimulatedFdb::new(Arc::new(clock.clone()), settings);
    for process in all_launches("7.1.57") {
        fdb.start_process(process);
    }
    fdb.configure(&double_ssd(), true).await.unwrap();
    advance(&fdb, &clock, recovery);
    assert!(fdb.snapshot().available, "recovered after configure new");
    (fdb, clock)
}

/// Lets `seconds` pass and the database see it.
pub(super) fn advance(fdb: &SimulatedFdb, clock: &VirtualClock, seconds: u64) {
    clock.advance_seconds(i64::try_from(seconds).unwrap());
    fdb.tick();
}

pub(super) fn process_for(status: &DatabaseStatus, host: u8) -> Option<&ProcessStatus> {
    status
        .cluster
        .processes
        .values()
        .find(|p| p.address.as_ref() == Some(&address(host)))
}

/// Shards held per storage group.
pub(super) fn held(fdb: &SimulatedFdb) -> [usize; 3] {
    [1, 2, 3].map(|n| fdb.replicas_held(&format!("storage-{n}")))
}

/// Brings killed processes back from the same launch once their restart is due.
pub(super) fn restart_due(fdb: &SimulatedFdb, version: &str) -> usize {
    let due = fdb.take_kill_requests();
    for address in &due {
        let relaunch = all_launches(version)
            .into_iter()
            .find(|l| &l.address == address)
            .unwrap();
        fdb.start_process(relaunch);
    }
    due.len()
}
