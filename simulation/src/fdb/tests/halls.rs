//! three_data_hall and its fallback: storage teams across data halls, and what the
//! fallback changes while a hall is lost.

use std::collections::BTreeSet;

use super::*;

/// Six logs and six storage processes, two of each per hall (`hall-1` .. `hall-3`), each
/// in its own zone, and two stateless processes.
fn hall_launches() -> Vec<ProcessLaunch> {
    let mut launches = Vec::new();
    for n in 1..=6u8 {
        for class in [ProcessClass::Log, ProcessClass::Storage] {
            let mut launch = launch(class, n, "7.1.57");
            launch
                .locality
                .insert("data_hall".to_owned(), format!("hall-{}", (n - 1) % 3 + 1));
            launches.push(launch);
        }
    }
    for n in 1..=2 {
        let mut launch = launch(ProcessClass::Stateless, n, "7.1.57");
        launch
            .locality
            .insert("data_hall".to_owned(), "hall-1".to_owned());
        launches.push(launch);
    }
    launches
}

fn configuration(mode: RedundancyMode) -> DatabaseConfiguration {
    DatabaseConfiguration {
        redundancy_mode: Some(mode),
        storage_engine: Some(StorageEngine::Ssd2),
        logs: Some(4),
        ..Default::default()
    }
}

/// The data halls of each shard's replicas, as a sorted list per shard.
fn shard_halls(fdb: &SimulatedFdb) -> Vec<Vec<String>> {
    let state = fdb.lock();
    let data = state.data.as_ref().unwrap();
    data.shards
        .iter()
        .map(|shard| {
            shard
                .replicas
                .keys()
                .map(|disk| state.disks[disk].launch.locality["data_hall"].clone())
                .collect()
        })
        .collect()
}

#[tokio::test]
async fn the_fallback_keeps_two_replicas_in_distinct_halls_and_heals_without_the_lost_hall() {
    let clock = VirtualClock::fixed_epoch();
    let fdb = SimulatedFdb::new(Arc::new(clock.clone()), SimFdbSettings::default());
    let launches = hall_launches();
    for launch in &launches {
        fdb.start_process(launch.clone());
    }
    fdb.configure(&configuration(RedundancyMode::ThreeDataHall), true)
        .await
        .unwrap();
    advance(&fdb, &clock, 60);
    for halls in shard_halls(&fdb) {
        let distinct: BTreeSet<&String> = halls.iter().collect();
        assert_eq!((halls.len(), distinct.len()), (3, 3), "{halls:?}");
    }

    // hall-2 is lost: three_data_hall's teams cannot get their third hall back.
    for launch in launches
        .iter()
        .filter(|l| l.locality["data_hall"] == "hall-2")
    {
        fdb.stop_process(&launch.address);
    }
    advance(&fdb, &clock, 600);
    let status = fdb.status().await.unwrap();
    assert!(status.is_available());
    assert!(!status.is_healthy(), "{:?}", status.cluster.data.state);

    // The fallback: 2 replicas in distinct halls (fdbclient/ManagementAPI.actor.cpp,
    // `configForToken`), which the two halls left can hold.
    fdb.configure(&configuration(RedundancyMode::ThreeDataHallFallback), false)
        .await
        .unwrap();
    advance(&fdb, &clock, 600);
    let status = fdb.status().await.unwrap();
    assert!(status.is_available());
    assert!(status.is_healthy(), "{:?}", status.cluster.data.state);
    assert_eq!(
        status
            .cluster
            .configuration
            .as_ref()
            .and_then(|c| c.redundancy_mode.clone()),
        Some(RedundancyMode::ThreeDataHallFallback)
    );
    for halls in shard_halls(&fdb) {
        let live: Vec<&String> = halls.iter().filter(|h| *h != "hall-2").collect();
        let distinct: BTreeSet<&String> = live.iter().copied().collect();
        assert_eq!(
            (live.len(), distinct.len()),
            (2, 2),
            "one replica in each live hall: {halls:?}"
        );
    }
}
