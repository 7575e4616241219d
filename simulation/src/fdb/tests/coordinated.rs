//! The coordinated state on the coordinators' disks (`fdb/coordinated_state.rs`) and
//! forced recoveries (`fdb/forced_recovery.rs`).

use super::*;

/// The launch of process `n` of `class` again, at the same address, on a new disk (a
/// pod recreated at the same name with a new PVC), with `file` in its data directory.
fn on_new_disk(class: ProcessClass, n: u8, file: Option<String>) -> ProcessLaunch {
    let mut launch = launch(class, n, "7.1.57");
    launch.data_identity = format!("{}-new", launch.data_identity);
    launch.coordination_file = file;
    launch
}

/// Coordinators 11 and 12 lose their disks and come back on new ones with `file`,
/// while 13 is down (no recovery in between writes the state to the new disks); then
/// 13 comes back on its disk.
async fn two_coordinators_on_new_disks(file: impl Fn() -> Option<String>) -> SimulatedFdb {
    let (fdb, clock) = configured_cluster().await;
    fdb.stop_process(&address(13));
    for n in [1, 2] {
        fdb.remove_process(&address(10 + n));
    }
    for n in [1, 2] {
        fdb.start_process(on_new_disk(ProcessClass::Log, n, file()));
    }
    fdb.start_process(launch(ProcessClass::Log, 3, "7.1.57"));
    advance(&fdb, &clock, 600);
    fdb
}

#[tokio::test]
async fn coordinators_on_fresh_disks_do_not_make_a_quorum() {
    let fdb = two_coordinators_on_new_disks(|| None).await;
    // Two of three coordinators answer, but only one holds the state: no recovery.
    assert!(!fdb.snapshot().available);
    assert!(fdb.coordination_file(&address(11)).is_none());
    assert!(fdb.coordination_file(&address(13)).is_some());
}

#[tokio::test]
async fn one_fresh_coordinator_of_three_lets_the_others_answer() {
    // Any two replies out of the three include one holding the state: FoundationDB
    // reads the highest generation among them.
    let (fdb, clock) = configured_cluster().await;
    fdb.remove_process(&address(11));
    fdb.start_process(on_new_disk(ProcessClass::Log, 1, None));
    advance(&fdb, &clock, 60);
    assert!(fdb.snapshot().available);
    // The next recovery writes its generation to every coordinator it reaches: the
    // fresh one holds the state from then on.
    assert!(fdb.coordination_file(&address(11)).is_none());
    fdb.stop_process(&address(31));
    fdb.stop_process(&address(32));
    advance(&fdb, &clock, 1);
    assert!(fdb.coordination_file(&address(11)).is_some());
}

#[tokio::test]
async fn files_of_another_content_are_not_the_state() {
    let fdb = two_coordinators_on_new_disks(|| Some("something else\n".into())).await;
    assert!(!fdb.snapshot().available);
}

#[tokio::test]
async fn a_copy_of_the_coordination_files_brings_the_quorum_back() {
    let (probe, _clock) = configured_cluster().await;
    // The same seed gives the same database identity: the copy is this database's.
    let content = probe.coordination_file(&address(13)).unwrap();
    assert!(content.starts_with("FoundationDB coordinated state"));
    let fdb = two_coordinators_on_new_disks(|| Some(content.clone())).await;
    assert!(fdb.snapshot().available);
    assert!(fdb.coordination_file(&address(11)).is_some());
}

#[tokio::test]
async fn a_coordinator_restarted_on_its_disk_keeps_its_state() {
    let (fdb, clock) = configured_cluster().await;
    for n in [1, 2] {
        fdb.stop_process(&address(10 + n));
    }
    advance(&fdb, &clock, 60);
    assert!(!fdb.snapshot().available);
    for n in [1, 2] {
        fdb.start_process(launch(ProcessClass::Log, n, "7.1.57"));
    }
    advance(&fdb, &clock, 60);
    assert!(fdb.snapshot().available);
}

#[tokio::test]
async fn a_coordinators_change_writes_the_state_to_the_new_coordinators() {
    let (fdb, clock) = configured_cluster().await;
    fdb.change_coordinators(&[address(21), address(22), address(23)])
        .await
        .unwrap();
    advance(&fdb, &clock, 30);
    assert!(fdb.coordination_file(&address(21)).is_some());
    // The old coordinators' disks are gone; the new ones hold the state.
    for n in 1..=3 {
        fdb.remove_process(&address(10 + n));
        fdb.start_process(on_new_disk(ProcessClass::Log, n, None));
    }
    fdb.stop_process(&address(21));
    fdb.start_process(launch(ProcessClass::Storage, 1, "7.1.57"));
    advance(&fdb, &clock, 60);
    assert!(fdb.snapshot().available);
}

/// The small cluster in `dc1` (the primary) and `dc2` (the remote), two usable regions,
/// the coordinators moved to dc2's logs; 55 s after the start.
async fn two_regions() -> (SimulatedFdb, VirtualClock) {
    let clock = VirtualClock::fixed_epoch();
    let fdb = SimulatedFdb::new(Arc::new(clock.clone()), SimFdbSettings::default());
    for (index, dc) in ["dc1", "dc2"].into_iter().enumerate() {
        for mut process in all_launches("7.1.57") {
            process.locality.insert("dcid".to_owned(), dc.to_owned());
            if index == 1 {
                let host = process.address.host.replace("127.0.0.", "127.0.1.");
                process.address = ProcessAddress::new(host, 4501);
                for key in ["instance_id", "zoneid", "machineid"] {
                    let value = format!("{dc}-{}", process.locality[key]);
                    process.locality.insert(key.to_owned(), value);
                }
                process.data_identity = format!("{}-{dc}", process.data_identity);
            }
            fdb.start_process(process);
        }
    }
    let regions: Vec<fdb_shared::api::database_configuration::Region> =
        serde_json::from_value(serde_json::json!([
            {"datacenters": [{"id": "dc1", "priority": 1}]},
            {"datacenters": [{"id": "dc2", "priority": 0}]},
        ]))
        .unwrap();
    let configuration = DatabaseConfiguration {
        regions,
        usable_regions: Some(2),
        ..double_ssd()
    };
    fdb.configure(&configuration, true).await.unwrap();
    advance(&fdb, &clock, 30);
    let remote = [11, 12, 13].map(|n| ProcessAddress::new(format!("127.0.1.{n}"), 4501));
    fdb.change_coordinators(&remote).await.unwrap();
    advance(&fdb, &clock, 25);
    assert!(fdb.snapshot().available);
    (fdb, clock)
}

fn lose_dc1(fdb: &SimulatedFdb) {
    for launch in all_launches("7.1.57") {
        fdb.remove_process(&launch.address);
    }
}

#[tokio::test]
async fn losing_the_primary_without_satellites_waits_for_a_forced_recovery() {
    let (fdb, clock) = two_regions().await;
    let before_the_last_write = fdb.snapshot().data_digest;
    advance(&fdb, &clock, 10);
    assert!(fdb.snapshot().available);
    let with_the_last_write = fdb.snapshot().data_digest;
    assert_ne!(before_the_last_write, with_the_last_write);
    // At 65 s dc1 is gone: its logs held the commits dc2's logs lagged behind on.
    lose_dc1(&fdb);
    advance(&fdb, &clock, 600);
    assert!(
        !fdb.snapshot().available,
        "no failover without the old logs"
    );
    // A datacenter the regions do not have recovers nothing: fdbcli waits.
    assert_eq!(
        fdb.force_recovery_with_data_loss("dc9"),
        Err(ForceRecoveryHang::UnknownDataCenter("dc9".into()))
    );
    let forced = fdb.force_recovery_with_data_loss("dc2").unwrap().unwrap();
    assert_eq!(forced.data_center, "dc2");
    assert_eq!(forced.lost_writes, 1, "{forced:?}");
    assert_eq!(fdb.snapshot().data_digest, before_the_last_write);
    advance(&fdb, &clock, 30);
    let snapshot = fdb.snapshot();
    assert!(snapshot.available);
    assert_eq!(snapshot.forced_recoveries, vec![forced]);
    let configuration = snapshot.configuration.unwrap();
    assert_eq!(configuration.usable_regions, Some(1));
    let priorities: Vec<(String, Option<i32>)> = configuration
        .regions
        .iter()
        .map(|r| (r.datacenters[0].id.clone(), r.datacenters[0].priority))
        .collect();
    assert_eq!(
        priorities,
        [("dc2".to_owned(), Some(1)), ("dc1".to_owned(), Some(-1))]
    );
    // Once recovered, the command does nothing.
    assert_eq!(fdb.force_recovery_with_data_loss("dc2"), Ok(None));
}

#[tokio::test]
async fn a_forced_recovery_needs_a_cluster_controller_and_the_coordinated_state() {
    let (fdb, clock) = two_regions().await;
    lose_dc1(&fdb);
    // Two of dc2's three coordinators lose their disks too.
    for n in [11, 12] {
        fdb.remove_process(&ProcessAddress::new(format!("127.0.1.{n}"), 4501));
    }
    advance(&fdb, &clock, 60);
    assert_eq!(
        fdb.force_recovery_with_data_loss("dc2"),
        Err(ForceRecoveryHang::NoClusterController)
    );
    // Back on fresh disks: a cluster controller, but no state to recover from.
    for n in [11, 12] {
        let mut launch = launch(ProcessClass::Log, n - 10, "7.1.57");
        launch.address = ProcessAddress::new(format!("127.0.1.{n}"), 4501);
        launch.locality.insert("dcid".to_owned(), "dc2".to_owned());
        launch.data_identity = format!("fresh-{n}");
        fdb.start_process(launch);
    }
    advance(&fdb, &clock, 60);
    assert_eq!(
        fdb.force_recovery_with_data_loss("dc2"),
        Err(ForceRecoveryHang::NoCoordinatedState)
    );
    assert!(fdb.forced_recoveries().is_empty());
}
