//! Shards and data distribution: placement, disks, failure detection and
//! re-replication, exclusions, lost data, redundancy and storage engine changes,
//! maintenance.

use std::collections::BTreeSet;

use super::*;

/// 240 shards: with 3 storage processes in double, exactly 160 replicas (1 GiB) each.
fn even() -> SimFdbSettings {
    SimFdbSettings {
        shards: 240,
        ..SimFdbSettings::default()
    }
}

const GIB: f64 = (1u64 << 30) as f64;

fn stored_bytes(status: &DatabaseStatus, host: u8) -> Option<i64> {
    process_for(status, host)?
        .roles
        .iter()
        .find(|r| r.role == "storage")?
        .stored_bytes
}

fn moving(status: &DatabaseStatus) -> i64 {
    let moving = &status.cluster.data.moving_data;
    moving.in_flight_bytes.unwrap_or(0) + moving.in_queue_bytes.unwrap_or(0)
}

fn placement(fdb: &SimulatedFdb) -> Vec<Vec<String>> {
    let state = fdb.lock();
    let data = state.data.as_ref().unwrap();
    data.shards
        .iter()
        .map(|s| s.replicas.keys().cloned().collect())
        .collect()
}

#[tokio::test]
async fn shards_are_placed_evenly_in_distinct_zones_and_deterministically() {
    let (fdb, _clock) = cluster_with(even()).await;
    assert_eq!(held(&fdb), [160, 160, 160]);
    {
        let state = fdb.lock();
        let data = state.data.as_ref().unwrap();
        assert_eq!(data.shards.len(), 240);
        // storageGiB x 3 storage processes / 2 replicas.
        assert!((data.shard_bytes * 240.0 - 1.5 * GIB).abs() < 1.0);
        for shard in &data.shards {
            let zones: BTreeSet<String> = shard
                .replicas
                .keys()
                .map(|disk| state.disks[disk].zone())
                .collect();
            assert_eq!(zones.len(), 2, "{shard:?}");
        }
    }
    let status = fdb.status().await.unwrap();
    assert_eq!(stored_bytes(&status, 21), Some(GIB as i64));
    assert_eq!(status.cluster.data.partitions_count, Some(240));
    assert_eq!(status.cluster.data.state.name.as_deref(), Some("healthy"));
    let snapshot = fdb.snapshot();
    for process in &snapshot.processes {
        let expected = (process.class == ProcessClass::Storage).then_some(160);
        assert_eq!(process.shards, expected, "{}", process.address);
    }
    assert_eq!(snapshot.lost_shards, 0);
    assert_eq!(snapshot.moved_mib, 0.0);

    let (again, _) = cluster_with(even()).await;
    assert_eq!(
        placement(&fdb),
        placement(&again),
        "same seed, same placement"
    );
    let (other, _) = cluster_with(SimFdbSettings { seed: 2, ..even() }).await;
    assert_ne!(placement(&fdb), placement(&other), "the seed decides ties");
}

#[tokio::test]
async fn replicas_live_on_the_disk_come_back_with_it_and_go_with_it() {
    let (fdb, _clock) = cluster_with(even()).await;
    // The pod is recreated at a new IP on the same PVC: same replicas, same process ID.
    fdb.stop_process(&address(21));
    let mut moved = launch(ProcessClass::Storage, 1, "7.1.57");
    moved.address = address(121);
    fdb.start_process(moved);
    let status = fdb.status().await.unwrap();
    assert_eq!(stored_bytes(&status, 121), Some(GIB as i64));
    assert!(
        process_for(&status, 21).is_none(),
        "the old address is gone"
    );
    assert_eq!(held(&fdb)[0], 160);

    // A new disk for the same group starts empty; the old disk keeps its replicas.
    fdb.stop_process(&address(22));
    let mut fresh = launch(ProcessClass::Storage, 2, "7.1.57");
    fresh.address = address(122);
    fresh.data_identity = "pvc:default/new-claim@uid-new/data".to_owned();
    fdb.start_process(fresh);
    let status = fdb.status().await.unwrap();
    assert_eq!(stored_bytes(&status, 122), Some(0));
    assert_eq!(fdb.replicas_held("storage-2"), 160);
    assert!(fdb.removal_risk("storage-2").is_some());

    // The old disk is deleted: its replicas are gone for good; the others still hold
    // a copy of each, so nothing is lost, and data distribution copies them again.
    fdb.remove_process(&address(22));
    assert_eq!(fdb.replicas_held("storage-2"), 0);
    assert_eq!(fdb.lost_shards(), 0);
    let status = fdb.status().await.unwrap();
    assert_eq!(status.cluster.data.state.name.as_deref(), Some("healing"));
    assert_eq!(
        status.cluster.data.state.min_replicas_remaining,
        Some(1),
        "{:?}",
        status.cluster.data
    );
    assert!(moving(&status) > 0);
}

#[tokio::test]
async fn a_silent_storage_process_is_re_replicated_after_failure_detection() {
    let (fdb, clock) = cluster_with(even()).await;
    let t0 = clock.now_unix();
    fdb.stop_process(&address(21));
    let status = fdb.status().await.unwrap();
    assert!(status.is_available());
    assert!(!status.is_healthy());
    assert_eq!(status.cluster.data.state.name.as_deref(), Some("healing"));
    assert_eq!(status.cluster.data.state.min_replicas_remaining, Some(1));
    // Data distribution has not declared it failed yet: its team trackers still count
    // its replicas.
    assert_eq!(
        status.cluster.data.team_trackers[0]
            .state
            .min_replicas_remaining,
        Some(2)
    );
    assert_eq!(status.cluster.full_replication, Some(false));
    assert_eq!(fdb.next_due(), Some(t0 + 60), "failure detection");

    advance(&fdb, &clock, 59);
    assert_eq!(held(&fdb), [160, 160, 160], "not failed yet");
    assert_eq!(moving(&fdb.status().await.unwrap()), 0);
    advance(&fdb, &clock, 1);
    assert!(moving(&fdb.status().await.unwrap()) > 0, "re-replicating");

    // storage-2 and storage-3 each send 80 shards (512 MiB) at 50 MiB/s: 10.24 s.
    advance(&fdb, &clock, 10);
    assert!(held(&fdb)[0] > 0);
    advance(&fdb, &clock, 1);
    assert_eq!(held(&fdb), [0, 240, 240], "the failed copies are dropped");
    let status = fdb.status().await.unwrap();
    assert!(status.is_healthy(), "{:?}", status.cluster.data);
    assert_eq!(fdb.snapshot().moved_mib, 1024.0);
    assert_eq!(
        status.cluster.data.moving_data.total_written_bytes,
        Some(1 << 30)
    );

    // Coming back does not resurrect the dropped copies.
    fdb.start_process(launch(ProcessClass::Storage, 1, "7.1.57"));
    assert_eq!(held(&fdb), [0, 240, 240]);
    assert_eq!(
        fdb.removal_risk("storage-1"),
        None,
        "its disk holds nothing"
    );
}

#[tokio::test]
async fn time_transitions_happen_at_their_time_even_when_nobody_looks() {
    let (fdb, clock) = cluster_with(even()).await;
    fdb.stop_process(&address(21));
    // Nobody looks for 200 s: detection at 60 s, moves done by 70.24 s.
    clock.advance_seconds(200);
    assert_eq!(held(&fdb), [0, 240, 240]);
    assert_eq!(fdb.next_due(), None, "nothing pending");
    assert_eq!(fdb.snapshot().moved_mib, 1024.0);
}

#[tokio::test]
async fn a_process_back_before_re_replication_completes_keeps_the_rest() {
    let (fdb, clock) = cluster_with(even()).await;
    fdb.stop_process(&address(21));
    advance(&fdb, &clock, 65);
    let during = held(&fdb)[0];
    assert!(0 < during && during < 160, "{during}");
    fdb.start_process(launch(ProcessClass::Storage, 1, "7.1.57"));
    let status = fdb.status().await.unwrap();
    // The re-replication is cancelled; what moves now is one shard of the background
    // rebalancing towards the server that came back with less.
    let shard_bytes = (1.5 * f64::from(1u32 << 30) / 240.0).round() as i64;
    assert_eq!(moving(&status), shard_bytes, "one shard");
    assert_eq!(
        status.cluster.data.state.name.as_deref(),
        Some("healthy_rebalancing")
    );
    assert!(status.is_healthy());
    assert_eq!(held(&fdb)[0], during);
    assert_eq!(held(&fdb).iter().sum::<usize>(), 480);
}

#[tokio::test]
async fn exclusion_completes_only_after_the_data_moved() {
    // exclusionSeconds set: a fully loaded process drains in that many seconds.
    let settings = SimFdbSettings {
        exclusion_seconds: Some(60),
        ..even()
    };
    let (fdb, clock) = cluster_with(settings).await;
    let target = ExclusionTarget::instance_id("storage-1").unwrap();
    fdb.exclude(std::slice::from_ref(&target), false)
        .await
        .unwrap();

    let report = fdb
        .exclusion_status(std::slice::from_ref(&target))
        .await
        .unwrap();
    assert!(
        report.incomplete[0].1.contains("still has roles: storage"),
        "{report:?}"
    );
    let status = fdb.status().await.unwrap();
    assert!(process_for(&status, 21).unwrap().excluded);
    assert_eq!(
        status.cluster.data.state.name.as_deref(),
        Some("healthy_removing_server")
    );
    assert_eq!(status.cluster.data.state.healthy, Some(true));
    let excluded = &status
        .cluster
        .configuration
        .as_ref()
        .unwrap()
        .excluded_servers;
    assert_eq!(
        excluded[0].locality.as_deref(),
        Some("locality_instance_id:storage-1")
    );

    advance(&fdb, &clock, 30);
    let status = fdb.status().await.unwrap();
    assert_eq!(
        stored_bytes(&status, 21),
        Some(GIB as i64 / 2),
        "half moved after half the time"
    );
    assert!(
        !fdb.exclusion_status(std::slice::from_ref(&target))
            .await
            .unwrap()
            .all_complete()
    );

    advance(&fdb, &clock, 30);
    let report = fdb
        .exclusion_status(std::slice::from_ref(&target))
        .await
        .unwrap();
    assert_eq!(report.complete, vec![target.clone()]);
    let status = fdb.status().await.unwrap();
    assert!(status.is_healthy());
    assert!(process_for(&status, 21).unwrap().roles.is_empty());
    assert_eq!(held(&fdb), [0, 240, 240]);

    fdb.include(&[target]).await.unwrap();
    let status = fdb.status().await.unwrap();
    assert!(!process_for(&status, 21).unwrap().excluded);
    assert!(process_for(&status, 21).unwrap().has_role("storage"));
}

#[tokio::test]
async fn exclusion_is_stuck_while_too_few_zones_remain() {
    let (fdb, clock) = configured_cluster().await;
    let targets = [
        ExclusionTarget::instance_id("storage-1").unwrap(),
        ExclusionTarget::instance_id("storage-2").unwrap(),
    ];
    fdb.exclude(&targets, false).await.unwrap();
    advance(&fdb, &clock, 3600);
    let report = fdb.exclusion_status(&targets).await.unwrap();
    assert_eq!(
        report.incomplete.len(),
        2,
        "one zone left cannot hold two replicas"
    );
    assert_eq!(fdb.snapshot().moved_mib, 0.0, "no team can be formed");

    let error = fdb.exclude(&targets, true).await.unwrap_err();
    assert!(
        matches!(error, AdminError::Timeout { .. }),
        "blocking exclude waits: {error}"
    );

    fdb.include(&targets[1..]).await.unwrap();
    advance(&fdb, &clock, 60);
    let report = fdb.exclusion_status(&targets[..1]).await.unwrap();
    assert!(report.all_complete(), "{report:?}");
}

#[tokio::test]
async fn excluding_a_dead_process_copies_its_shards_from_the_live_replicas() {
    let (fdb, clock) = cluster_with(even()).await;
    fdb.stop_process(&address(21));
    fdb.exclude(&[ExclusionTarget::instance_id("storage-1").unwrap()], false)
        .await
        .unwrap();
    // No failure detection wait: the exclusion moves the data at once.
    assert!(moving(&fdb.status().await.unwrap()) > 0);
    advance(&fdb, &clock, 11);
    assert_eq!(held(&fdb), [0, 240, 240]);
    assert_eq!(fdb.removal_risk("storage-1"), None);
}

#[tokio::test]
async fn removal_risk_follows_the_replicas_on_the_disk() {
    let (fdb, clock) = configured_cluster().await;
    let risk = fdb.removal_risk("storage-1").unwrap();
    assert!(risk.contains("is not excluded"), "{risk}");
    assert_eq!(
        fdb.removal_risk("stateless-1"),
        None,
        "stateless holds no data"
    );
    let risk = fdb.removal_risk("log-1").unwrap();
    assert!(
        risk.contains("log process") && risk.contains("not excluded"),
        "{risk}"
    );

    fdb.exclude(&[ExclusionTarget::instance_id("storage-1").unwrap()], false)
        .await
        .unwrap();
    let risk = fdb.removal_risk("storage-1").unwrap();
    assert!(risk.contains("still holds"), "{risk}");

    advance(&fdb, &clock, 61);
    assert_eq!(fdb.removal_risk("storage-1"), None);
    // Stopping the process (its pod deleted) keeps it safe: the disk is empty.
    fdb.stop_process(&address(21));
    assert_eq!(fdb.removal_risk("storage-1"), None);

    // A stopped process that was never excluded keeps its data on disk.
    fdb.stop_process(&address(22));
    let risk = fdb.removal_risk("storage-2").unwrap();
    assert!(risk.contains("is not excluded"), "{risk}");
}

#[tokio::test]
async fn shards_on_stopped_processes_are_missing_and_on_deleted_disks_lost() {
    let (fdb, clock) = cluster_with(even()).await;
    fdb.stop_process(&address(21));
    fdb.stop_process(&address(22));
    let status = fdb.status().await.unwrap();
    assert!(!status.is_available(), "80 shards have no live replica");
    assert_eq!(
        status.cluster.data.state.name.as_deref(),
        Some("missing_data")
    );
    assert_eq!(status.cluster.data.state.healthy, Some(false));
    assert_eq!(status.cluster.data.state.min_replicas_remaining, Some(0));
    assert_eq!(fdb.lost_shards(), 0, "unavailable, not lost");
    fdb.start_process(launch(ProcessClass::Storage, 1, "7.1.57"));
    assert!(fdb.status().await.unwrap().is_available());
    let outage = fdb.outages().pop().unwrap();
    assert_eq!(outage.cause, "shards without a live replica");
    assert_eq!(outage.end, Some(outage.start));

    fdb.stop_process(&address(21));
    fdb.remove_process(&address(21));
    fdb.remove_process(&address(22));
    assert_eq!(fdb.lost_shards(), 80);
    advance(&fdb, &clock, 3600);
    let status = fdb.status().await.unwrap();
    assert!(!status.is_available());
    assert_eq!(
        status.cluster.data.state.name.as_deref(),
        Some("missing_data")
    );
    assert_eq!(
        status.cluster.data.team_trackers[0]
            .state
            .min_replicas_remaining,
        Some(0)
    );
    assert_eq!(status.cluster.data.moving_data.in_flight_bytes, Some(0));
    let snapshot = fdb.snapshot();
    assert_eq!(snapshot.lost_shards, 80, "lost for good");
    let json = serde_json::to_value(&snapshot).unwrap();
    assert_eq!(json["lostShards"], 80);
    assert!(json.get("movedMiB").is_some());
    let cause = fdb.outages().last().unwrap().cause.clone();
    assert_eq!(cause, "shards without a live replica; then lost shards");
}

#[tokio::test]
async fn redundancy_changes_add_and_drop_replicas() {
    let (fdb, clock) = cluster_with(even()).await;
    let triple = DatabaseConfiguration {
        redundancy_mode: Some(RedundancyMode::Triple),
        ..Default::default()
    };
    fdb.configure(&triple, false).await.unwrap();
    advance(&fdb, &clock, 5);
    let status = fdb.status().await.unwrap();
    assert!(status.is_available());
    assert_eq!(status.cluster.data.state.name.as_deref(), Some("healing"));
    assert!(moving(&status) > 0);
    // 240 new replicas (1.5 GiB) from 3 sources at 50 MiB/s: about 10 s.
    advance(&fdb, &clock, 11);
    assert_eq!(held(&fdb), [240, 240, 240]);
    assert!(fdb.status().await.unwrap().is_healthy());
    assert_eq!(fdb.snapshot().moved_mib, 1536.0);

    fdb.configure(&double_ssd(), false).await.unwrap();
    assert_eq!(
        held(&fdb).iter().sum::<usize>(),
        480,
        "extra copies dropped"
    );
}

#[tokio::test]
async fn a_storage_engine_change_rewrites_every_replica() {
    let (fdb, clock) = cluster_with(even()).await;
    // FoundationDB refuses a new storage type while storage_migration_type is disabled
    // (fdbcli/ConfigureCommand.actor.cpp, STORAGE_MIGRATION_DISABLED), and changes nothing.
    let mut redwood = DatabaseConfiguration {
        storage_engine: Some(StorageEngine::SsdRedwood1Experimental),
        ..Default::default()
    };
    let Err(AdminError::Failed { stderr, code, .. }) = fdb.configure(&redwood, false).await else {
        panic!("an engine change without a migration type is refused");
    };
    assert_eq!(code, Some(1));
    assert!(
        stderr.starts_with(
            "ERROR: Storage engine type cannot be changed because storage_migration_type=disabled.\n"
        ),
        "{stderr}"
    );
    let status = fdb.status().await.unwrap();
    let configuration = status.cluster.configuration.unwrap();
    assert_eq!(configuration.storage_engine, Some(StorageEngine::Ssd2));
    // `ssd` is the engine `ssd-2` is: no change, no refusal.
    let ssd = DatabaseConfiguration {
        storage_engine: Some(StorageEngine::Ssd),
        ..Default::default()
    };
    fdb.configure(&ssd, false).await.unwrap();
    advance(&fdb, &clock, 5);
    assert!(
        fdb.status().await.unwrap().is_healthy(),
        "no replica rewritten"
    );
    // With a migration type in the same command, the change goes through.
    redwood.storage_migration_type = Some(StorageMigrationType::Aggressive);
    fdb.configure(&redwood, false).await.unwrap();
    advance(&fdb, &clock, 5);
    let status = fdb.status().await.unwrap();
    assert!(status.is_available() && !status.is_healthy());
    assert!(moving(&status) > 0);
    // Each storage process rewrites its 1 GiB at 50 MiB/s: 20.48 s from the configure.
    advance(&fdb, &clock, 16);
    let status = fdb.status().await.unwrap();
    assert!(status.is_healthy(), "{:?}", status.cluster.data);
    assert_eq!(fdb.snapshot().moved_mib, 3072.0);
    assert_eq!(held(&fdb), [160, 160, 160]);
}

#[tokio::test]
async fn no_re_replication_in_the_maintenance_zone_until_it_expires() {
    let (fdb, clock) = cluster_with(even()).await;
    let t0 = clock.now_unix();
    fdb.set_maintenance_zone("zone-1", 300).await.unwrap();
    fdb.stop_process(&address(21));
    assert_eq!(fdb.next_due(), Some(t0 + 300), "only the expiry");
    advance(&fdb, &clock, 299);
    assert_eq!(held(&fdb), [160, 160, 160]);
    assert_eq!(moving(&fdb.status().await.unwrap()), 0);
    // The failure is long detected: re-replication starts when the zone expires.
    advance(&fdb, &clock, 1);
    assert!(moving(&fdb.status().await.unwrap()) > 0);
    advance(&fdb, &clock, 11);
    assert_eq!(held(&fdb), [0, 240, 240]);

    // Reset explicitly: the same.
    let (fdb, clock) = cluster_with(even()).await;
    fdb.set_maintenance_zone("zone-1", 3600).await.unwrap();
    fdb.stop_process(&address(21));
    advance(&fdb, &clock, 120);
    assert_eq!(held(&fdb)[0], 160);
    fdb.reset_maintenance_zone().await.unwrap();
    advance(&fdb, &clock, 11);
    assert_eq!(held(&fdb)[0], 0);
}

#[tokio::test]
async fn a_slow_disk_is_reported_degraded_and_drains_ten_times_slower() {
    let settings = SimFdbSettings {
        exclusion_seconds: Some(60),
        ..even()
    };
    let (fdb, clock) = cluster_with(settings).await;
    fdb.set_io_latency("storage-1", Some(2000));
    let status = fdb.render_status_json();
    let processes = status["cluster"]["processes"].as_object().unwrap();
    let slow: Vec<&serde_json::Value> = processes
        .values()
        .filter(|p| p["locality"]["instance_id"] == "storage-1")
        .collect();
    assert_eq!(slow.len(), 1);
    assert_eq!(slow[0]["degraded"], true);
    let storage = slow[0]["roles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["role"] == "storage")
        .unwrap();
    assert_eq!(storage["read_latency_statistics"]["median"], 2.0);
    assert_eq!(status["cluster"]["degraded_processes"], 1);
    let fast = processes
        .values()
        .find(|p| p["locality"]["instance_id"] == "storage-2")
        .unwrap();
    assert!(fast.get("degraded").is_none(), "{fast}");

    // Its data leaves at a tenth of the rate: 60 s of drain take 600 s.
    let target = ExclusionTarget::instance_id("storage-1").unwrap();
    fdb.exclude(std::slice::from_ref(&target), false)
        .await
        .unwrap();
    advance(&fdb, &clock, 300);
    let status = fdb.status().await.unwrap();
    assert_eq!(stored_bytes(&status, 21), Some(GIB as i64 / 2));
    // Healed midway: the rest goes at the usual rate.
    fdb.heal_group("storage-1");
    advance(&fdb, &clock, 30);
    let report = fdb
        .exclusion_status(std::slice::from_ref(&target))
        .await
        .unwrap();
    assert_eq!(report.complete, vec![target]);
    assert!(
        fdb.render_status_json()["cluster"]["processes"]
            .as_object()
            .unwrap()
            .values()
            .all(|p| p.get("degraded").is_none())
    );
}

#[tokio::test]
async fn a_server_included_again_receives_data_back() {
    // storage-1 is excluded and drained, then included again: the background rebalancing
    // gives it shards back until no server holds more than 3 shards more than another.
    let (fdb, clock) = cluster_with(even()).await;
    let target = ExclusionTarget::instance_id("storage-1").unwrap();
    fdb.exclude(std::slice::from_ref(&target), false)
        .await
        .unwrap();
    advance(&fdb, &clock, 60);
    assert_eq!(held(&fdb), [0, 240, 240], "drained");
    assert_eq!(fdb.removal_risk("storage-1"), None, "nothing to lose yet");
    fdb.include(std::slice::from_ref(&target)).await.unwrap();
    advance(&fdb, &clock, 60);
    let after = held(&fdb);
    assert!(
        after[0] >= 157 && after[1] <= 163 && after[2] <= 163,
        "{after:?}"
    );
    assert_eq!(after.iter().sum::<usize>(), 480, "moves, not copies");
    let status = fdb.status().await.unwrap();
    assert_eq!(status.cluster.data.state.name.as_deref(), Some("healthy"));
    assert!(
        fdb.removal_risk("storage-1").is_some(),
        "its disk holds data again"
    );
}
