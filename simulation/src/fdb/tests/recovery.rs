//! Recoveries, kills and restarts, outages, fault tolerance, service gaps.

use std::collections::BTreeSet;

use super::*;

fn tolerance(status: &DatabaseStatus) -> (Option<i64>, Option<i64>) {
    let tolerance = &status.cluster.fault_tolerance;
    (
        tolerance.max_zone_failures_without_losing_data,
        tolerance.max_zone_failures_without_losing_availability,
    )
}

#[tokio::test]
async fn kill_restarts_after_restart_seconds_from_the_current_conf_and_binary() {
    let (fdb, clock) = configured_cluster().await;
    advance(&fdb, &clock, 600);
    let before = fdb.status().await.unwrap();
    let storage = process_for(&before, 21).unwrap().clone();
    assert_eq!(
        storage.uptime_seconds,
        Some(605.0),
        "started before the first recovery"
    );
    let recoveries = fdb.snapshot().recoveries;

    let t0 = clock.now_unix();
    fdb.kill(&[address(21)]).await.unwrap();
    assert!(
        process_for(&fdb.status().await.unwrap(), 21).is_none(),
        "down until restarted"
    );
    assert_eq!(fdb.next_due(), Some(t0 + 5));
    advance(&fdb, &clock, 4);
    assert!(fdb.take_kill_requests().is_empty(), "fdbmonitor waits");
    advance(&fdb, &clock, 1);
    assert_eq!(fdb.take_kill_requests(), vec![address(21)]);
    assert!(fdb.take_kill_requests().is_empty());
    let mut relaunch = launch(ProcessClass::Storage, 1, "7.1.60");
    relaunch.command_line.push_str(" --knob_new=1");
    fdb.start_process(relaunch.clone());

    let after = fdb.status().await.unwrap();
    let restarted = process_for(&after, 21).unwrap();
    assert_eq!(restarted.uptime_seconds, Some(0.0));
    assert_eq!(
        restarted.command_line.as_ref(),
        Some(&relaunch.command_line)
    );
    assert_eq!(restarted.version, Some(v("7.1.60")));
    assert_eq!(
        fdb.snapshot().recoveries,
        recoveries,
        "storage kills cause no recovery"
    );
    assert!(after.is_available());
    assert!(fdb.outages().is_empty());

    // Killing the transaction system: one recovery per kill batch.
    let generation = after.cluster.generation.unwrap();
    let t1 = clock.now_unix();
    fdb.kill(&[address(11), address(12), address(31)])
        .await
        .unwrap();
    assert!(!fdb.status().await.unwrap().is_available());
    advance(&fdb, &clock, 5);
    assert_eq!(restart_due(&fdb, "7.1.57"), 3);
    let status = fdb.status().await.unwrap();
    assert!(!status.is_available(), "recovering");
    assert_ne!(
        status.cluster.recovery_state.name.as_deref(),
        Some("fully_recovered")
    );
    advance(&fdb, &clock, 5);
    let status = fdb.status().await.unwrap();
    assert!(status.is_available());
    assert_eq!(fdb.snapshot().recoveries, recoveries + 1);
    assert!(status.cluster.generation.unwrap() > generation);
    assert_eq!(
        status.cluster.recovery_state.seconds_since_last_recovered,
        Some(0.0)
    );
    assert_eq!(
        fdb.outages(),
        vec![Outage {
            start: t1,
            end: Some(t1 + 10),
            cause: "recovery after kill of 3 processes".to_owned(),
            recovery_seconds: 5,
        }]
    );
}

#[tokio::test]
async fn a_cluster_wide_kill_is_one_outage_of_restart_plus_recovery_with_exact_times() {
    let (fdb, clock) = configured_cluster().await;
    let recoveries = fdb.snapshot().recoveries;
    let everyone: Vec<ProcessAddress> = all_launches("7.1.57")
        .into_iter()
        .map(|l| l.address)
        .collect();
    let t0 = clock.now_unix();
    fdb.kill(&everyone).await.unwrap();
    assert_eq!(fdb.next_due(), Some(t0 + 5));
    clock.advance_seconds(5);
    assert_eq!(restart_due(&fdb, "7.1.57"), 8);
    assert_eq!(fdb.next_due(), Some(t0 + 10), "the recovery's end");
    // Nobody looks until much later: the outage still ends at its time.
    clock.advance_seconds(100);
    assert_eq!(
        fdb.outages(),
        vec![Outage {
            start: t0,
            end: Some(t0 + 10),
            cause: "recovery after kill of 8 processes".to_owned(),
            recovery_seconds: 5,
        }]
    );
    assert_eq!(fdb.snapshot().recoveries, recoveries + 1);
    assert_eq!(
        fdb.snapshot().moved_mib,
        0.0,
        "back before failure detection"
    );
}

#[tokio::test]
async fn configure_and_coordinator_changes_recover_and_block_admin_commands_meanwhile() {
    let (fdb, clock) = configured_cluster().await;
    assert_eq!(fdb.snapshot().recoveries, 1, "configure new");
    let t0 = clock.now_unix();
    let change = DatabaseConfiguration {
        logs: Some(2),
        ..Default::default()
    };
    fdb.configure(&change, false).await.unwrap();
    let status = fdb.status().await.unwrap();
    assert!(!status.is_available());
    assert!(!status.client.database_status.available.unwrap());
    assert_eq!(status.cluster.database_available, Some(false));
    assert_eq!(
        status.cluster.recovery_state.name.as_deref(),
        Some("initializing_transaction_servers")
    );
    let error = fdb
        .exclude(&[ExclusionTarget::instance_id("storage-1").unwrap()], false)
        .await
        .unwrap_err();
    assert!(matches!(error, AdminError::Unavailable { .. }), "{error}");
    advance(&fdb, &clock, 5);
    assert!(fdb.status().await.unwrap().is_available());
    assert_eq!(fdb.snapshot().recoveries, 2);

    fdb.change_coordinators(&[address(11), address(12), address(21)])
        .await
        .unwrap();
    assert!(!fdb.snapshot().available);
    advance(&fdb, &clock, 5);
    assert_eq!(fdb.snapshot().recoveries, 3);
    let causes: Vec<String> = fdb.outages().into_iter().map(|o| o.cause).collect();
    assert_eq!(
        causes,
        [
            "recovery after configure",
            "recovery after coordinators change"
        ]
    );
    assert_eq!(fdb.outages()[0].start, t0);
}

#[tokio::test]
async fn excluding_or_stopping_a_transaction_process_recovers() {
    let (fdb, clock) = configured_cluster().await;
    fdb.exclude(&[ExclusionTarget::instance_id("log-1").unwrap()], false)
        .await
        .unwrap();
    assert!(!fdb.snapshot().available);
    advance(&fdb, &clock, 5);
    let status = fdb.status().await.unwrap();
    assert!(status.is_available());
    let roles: Vec<&str> = process_for(&status, 11)
        .unwrap()
        .roles
        .iter()
        .map(|r| r.role.as_str())
        .collect();
    assert_eq!(roles, ["coordinator"], "its log moved away");
    assert_eq!(fdb.snapshot().recoveries, 2);
    assert!(
        fdb.outages()[0]
            .cause
            .contains("transaction process 127.0.0.11:4501 excluded"),
        "{:?}",
        fdb.outages()
    );

    fdb.stop_process(&address(31));
    advance(&fdb, &clock, 5);
    assert_eq!(fdb.snapshot().recoveries, 3);
}

#[tokio::test]
async fn slow_recovery_lasts_until_cleared() {
    let (fdb, clock) = configured_cluster().await;
    fdb.set_recovery_override(Some(60));
    fdb.kill(&[address(31)]).await.unwrap();
    advance(&fdb, &clock, 59);
    assert!(!fdb.snapshot().available);
    advance(&fdb, &clock, 1);
    assert!(fdb.snapshot().available);

    fdb.set_recovery_override(Some(600));
    fdb.kill(&[address(32)]).await.unwrap();
    advance(&fdb, &clock, 10);
    assert!(!fdb.snapshot().available);
    // Healing ends the recovery once the normal duration has passed.
    fdb.heal_all();
    assert!(fdb.snapshot().available);
}

#[tokio::test]
async fn ignore_kill_keeps_a_group_running_through_kills() {
    let (fdb, clock) = configured_cluster().await;
    fdb.set_ignore_kill("storage-1", true);
    fdb.kill(&[address(21), address(22)]).await.unwrap();
    let status = fdb.status().await.unwrap();
    assert!(process_for(&status, 21).is_some(), "survived");
    assert!(process_for(&status, 22).is_none());
    advance(&fdb, &clock, 5);
    assert_eq!(fdb.take_kill_requests(), [address(22)]);
    fdb.heal_group("storage-1");
    fdb.kill(&[address(21)]).await.unwrap();
    assert!(process_for(&fdb.status().await.unwrap(), 21).is_none());
}

#[tokio::test]
async fn fault_tolerance_counts_storage_zones_logs_and_coordinators() {
    let (fdb, clock) = configured_cluster().await;
    assert_eq!(tolerance(&fdb.status().await.unwrap()), (Some(1), Some(1)));
    // One storage zone down: some shards have a single live replica.
    fdb.stop_process(&address(21));
    assert_eq!(tolerance(&fdb.status().await.unwrap()), (Some(0), Some(0)));
    fdb.start_process(launch(ProcessClass::Storage, 1, "7.1.57"));
    assert_eq!(tolerance(&fdb.status().await.unwrap()), (Some(1), Some(1)));
    // One coordinator (and log zone) down: the next loses the quorum.
    fdb.stop_process(&address(13));
    advance(&fdb, &clock, 5);
    let status = fdb.status().await.unwrap();
    assert!(status.is_available());
    assert_eq!(tolerance(&status), (Some(0), Some(0)));

    let gaps = fdb.service_gaps();
    assert_eq!(gaps.coordinators, 3);
    assert_eq!(gaps.coordinators_down, 1);
    assert_eq!(gaps.log_zones_down, BTreeSet::from(["zone-3".to_owned()]));
    assert!(gaps.storage_zones_down.is_empty());
    fdb.stop_process(&address(22));
    let gaps = fdb.service_gaps();
    assert_eq!(
        gaps.storage_zones_down,
        BTreeSet::from(["zone-2".to_owned()])
    );
    // An excluded log is not missed.
    fdb.exclude(&[ExclusionTarget::instance_id("log-3").unwrap()], false)
        .await
        .unwrap();
    assert!(fdb.service_gaps().log_zones_down.is_empty());
}

/// FoundationDB counts every zone with a process able to host a log toward the
/// availability fault tolerance, storage processes included (their fitness for the log
/// role is the worst, not never: `machineClassFitness` in fdbrpc/Locality.cpp, used by
/// `getExtraTLogEligibleZones` in fdbserver/Status.actor.cpp). With a log excluded, the
/// three storage zones still leave one zone to spare in double redundancy.
#[tokio::test]
async fn storage_zones_count_as_able_to_host_logs() {
    let (fdb, clock) = configured_cluster().await;
    fdb.exclude(&[ExclusionTarget::instance_id("log-3").unwrap()], false)
        .await
        .unwrap();
    advance(&fdb, &clock, 30);
    let status = fdb.status().await.unwrap();
    assert!(status.is_available());
    assert_eq!(tolerance(&status).1, Some(1), "availability tolerance");
}

/// Every process back on its disk at a new address (`127.0.0.1xx`): the connection string
/// names addresses nobody answers at, so the database stays down; processes started with
/// a cluster file naming the same cluster at the new addresses reach the coordinators'
/// disks, and the database comes back with that connection string. A file naming
/// addresses where no coordinator disk answers changes nothing.
#[tokio::test]
async fn coordinators_back_at_new_addresses_are_reached_through_a_rewritten_cluster_file() {
    let (fdb, clock) = configured_cluster().await;
    let moved = |launch: &ProcessLaunch, file: &str| {
        let mut moved = launch.clone();
        let host = launch.address.host.rsplit('.').next().unwrap();
        moved.address = ProcessAddress::new(format!("127.0.1.{host}"), 4501);
        moved.cluster_file_contents = format!("{file}\n");
        moved
    };
    for launch in all_launches("7.1.57") {
        fdb.stop_process(&launch.address);
    }
    for launch in all_launches("7.1.57") {
        fdb.start_process(moved(&launch, CONNECTION));
    }
    advance(&fdb, &clock, 60);
    assert!(
        !fdb.snapshot().available,
        "the old addresses answer no more"
    );
    // Addresses of storage processes, which hold no coordinated state: nothing changes.
    let elsewhere = "sample:initial1@127.0.1.21:4501,127.0.1.22:4501,127.0.1.23:4501";
    fdb.start_process(moved(
        &launch(ProcessClass::Storage, 1, "7.1.57"),
        elsewhere,
    ));
    assert_eq!(fdb.connection_string().unwrap().to_string(), CONNECTION);
    // Another cluster ID: nothing changes either.
    let other = "sample:other1@127.0.1.11:4501,127.0.1.12:4501,127.0.1.13:4501";
    fdb.start_process(moved(&launch(ProcessClass::Log, 1, "7.1.57"), other));
    assert_eq!(fdb.connection_string().unwrap().to_string(), CONNECTION);
    let fixed = "sample:initial1@127.0.1.11:4501,127.0.1.12:4501,127.0.1.13:4501";
    for launch in all_launches("7.1.57") {
        fdb.start_process(moved(&launch, fixed));
    }
    assert_eq!(fdb.connection_string().unwrap().to_string(), fixed);
    advance(&fdb, &clock, 60);
    assert!(
        fdb.snapshot().available,
        "back from the coordinators' disks"
    );
}
