//! Processes, configuration, versions, coordinators, status rendering, locks.

use super::*;

#[tokio::test]
async fn an_unconfigured_database_becomes_available_after_configure_new() {
    let clock = VirtualClock::fixed_epoch();
    let fdb = SimulatedFdb::new(Arc::new(clock.clone()), SimFdbSettings::default());
    for process in all_launches("7.1.57") {
        fdb.start_process(process);
    }
    let status = fdb.status().await.unwrap();
    assert!(status.client.coordinators.quorum_reachable.unwrap());
    assert!(!status.is_available());
    assert!(status.cluster.configuration.is_none());
    assert!(status.cluster.has_message("unreadable_configuration"));
    let error = fdb.configure(&double_ssd(), false).await.unwrap_err();
    assert!(
        error.to_string().contains("configure double ssd-2 logs=3"),
        "{error}"
    );

    fdb.configure(&double_ssd(), true).await.unwrap();
    let status = fdb.status().await.unwrap();
    assert!(!status.is_available(), "recovering");
    assert_eq!(
        status.cluster.recovery_state.name.as_deref(),
        Some("initializing_transaction_servers")
    );
    clock.advance_seconds(5);
    let status = fdb.status().await.unwrap();
    assert!(status.is_available() && status.is_healthy());
    // What was configured, and what 7.1.57 reports whether configured or not.
    assert_eq!(
        status.cluster.configuration,
        Some(DatabaseConfiguration {
            excluded_servers: Vec::new(),
            log_spill: Some(2),
            perpetual_storage_wiggle: Some(0),
            perpetual_storage_wiggle_engine: Some(StorageEngine::None),
            perpetual_storage_wiggle_locality: Some("0".to_owned()),
            storage_migration_type: Some(StorageMigrationType::Disabled),
            usable_regions: Some(1),
            ..double_ssd()
        })
    );
    assert!(
        fdb.configure(&double_ssd(), true).await.is_err(),
        "already exists"
    );
    let roles: Vec<String> = status
        .cluster
        .processes
        .values()
        .flat_map(|p| p.roles.iter().map(|r| r.role.clone()))
        .collect();
    for role in [
        "master",
        "cluster_controller",
        "log",
        "storage",
        "commit_proxy",
        "grv_proxy",
        "resolver",
        "coordinator",
    ] {
        assert!(
            roles.iter().any(|r| r == role),
            "{role} missing in {roles:?}"
        );
    }
    assert_eq!(fdb.snapshot().recoveries, 1);
}

#[tokio::test]
async fn incompatible_versions_are_unavailable_until_all_run_one_version() {
    let (fdb, clock) = configured_cluster().await;
    let everyone: Vec<ProcessAddress> = all_launches("7.1.57")
        .into_iter()
        .map(|l| l.address)
        .collect();
    fdb.kill(&everyone).await.unwrap();
    assert!(fdb.take_kill_requests().is_empty(), "fdbmonitor waits");
    clock.advance_seconds(5);
    assert_eq!(fdb.take_kill_requests().len(), everyone.len());

    // Only the logs (the coordinators) and stateless come back on 7.3.
    for launch_spec in all_launches("7.3.43") {
        if launch_spec.class != ProcessClass::Storage {
            fdb.start_process(launch_spec);
        }
    }
    for n in 1..=3 {
        fdb.start_process(launch(ProcessClass::Storage, n, "7.1.57"));
    }
    let status = fdb.status().await.unwrap();
    assert!(
        !status.is_available(),
        "storage on 7.1 cannot join a 7.3 database"
    );
    assert_eq!(status.cluster.incompatible_connections.len(), 3);
    assert!(
        status
            .cluster
            .processes
            .values()
            .all(|p| p.version == Some(v("7.3.43")))
    );
    let error = fdb
        .exclude(&[ExclusionTarget::instance_id("storage-1").unwrap()], false)
        .await
        .unwrap_err();
    assert!(matches!(error, AdminError::Unavailable { .. }), "{error}");

    for n in 1..=3 {
        fdb.start_process(launch(ProcessClass::Storage, n, "7.3.43"));
    }
    // The recovery began when the 7.3 coordinators came back.
    clock.advance_seconds(5);
    let status = fdb.status().await.unwrap();
    assert!(status.is_available());
    assert!(status.cluster.incompatible_connections.is_empty());
    assert_eq!(status.cluster.running_version(), Some(v("7.3.43")));
    assert_eq!(fdb.snapshot().version, Some(v("7.3.43")));
}

#[tokio::test]
async fn coordinator_majority_on_split_versions_decides() {
    let (fdb, clock) = configured_cluster().await;
    // One coordinator restarts on 7.3: the 7.1 majority keeps the database (after the
    // recovery its kill caused: it held a log).
    fdb.kill(&[address(11)]).await.unwrap();
    clock.advance_seconds(5);
    assert_eq!(fdb.take_kill_requests(), [address(11)]);
    fdb.start_process(launch(ProcessClass::Log, 1, "7.3.43"));
    clock.advance_seconds(5);
    let status = fdb.status().await.unwrap();
    assert!(status.is_available());
    assert_eq!(status.cluster.incompatible_connections, vec![address(11)]);
    // A second coordinator down: no quorum at all.
    fdb.stop_process(&address(12));
    let status = fdb.status().await.unwrap();
    assert!(!status.is_available());
    assert_eq!(status.client.coordinators.quorum_reachable, Some(false));
}

#[tokio::test]
async fn rendered_status_round_trips_through_the_model() {
    let (fdb, clock) = configured_cluster().await;
    fdb.connect_client(ClientInfo {
        address: "10.9.0.1:4000".to_owned(),
        version: v("7.1.57"),
        protocol_version: None,
        log_group: "app".to_owned(),
    });
    fdb.set_maintenance_zone("zone-2", 300).await.unwrap();
    clock.advance_seconds(5);
    let rendered = fdb.render_status_json();
    let text = format!(
        "Using cluster file.\n{}",
        serde_json::to_string_pretty(&rendered).unwrap()
    );
    let parsed = DatabaseStatus::parse_fdbcli_output(&text).unwrap();
    assert_eq!(parsed, fdb.status().await.unwrap());

    let snapshot = fdb.snapshot();
    assert_eq!(parsed.cluster.processes.len(), snapshot.processes.len());
    for process in &snapshot.processes {
        let entry = parsed
            .cluster
            .processes
            .values()
            .find(|p| {
                p.address.as_ref().map(ToString::to_string).as_ref() == Some(&process.address)
            })
            .unwrap();
        assert_eq!(entry.class_type, Some(process.class));
        assert_eq!(entry.command_line.as_ref(), Some(&process.command_line));
        assert_eq!(entry.version, Some(process.version));
        assert_eq!(
            entry.locality.instance_id,
            process.locality.get("instance_id").cloned()
        );
        let roles: Vec<String> = entry.roles.iter().map(|r| r.role.clone()).collect();
        assert_eq!(roles, process.roles);
        assert_eq!(
            entry.under_maintenance,
            process.locality["zoneid"] == "zone-2"
        );
    }
    assert_eq!(
        parsed
            .cluster
            .connection_string
            .as_ref()
            .map(ToString::to_string),
        snapshot.connection_string
    );
    assert_eq!(parsed.cluster.maintenance_zone.as_deref(), Some("zone-2"));
    assert_eq!(parsed.cluster.maintenance_seconds_remaining, Some(295.0));
    let clients = fdb.connected_clients().await.unwrap();
    assert_eq!(clients.len(), 1);
    assert_eq!(clients[0].log_group, "app");
    assert_eq!(
        parsed.cluster.data.team_trackers[0]
            .state
            .min_replicas_remaining,
        Some(2)
    );
    assert_eq!(parsed.cluster.logs[0].log_interfaces.len(), 3);
    assert_eq!(
        parsed
            .cluster
            .fault_tolerance
            .max_zone_failures_without_losing_availability,
        Some(1)
    );
}

#[tokio::test]
async fn coordinators_change_with_a_new_generation() {
    let (fdb, clock) = configured_cluster().await;
    let old = fdb.connection_string().unwrap();
    let new = fdb
        .change_coordinators(&[address(21), address(22), address(23)])
        .await
        .unwrap();
    assert_eq!(new.description, old.description);
    assert_ne!(new.generation_id, old.generation_id);
    assert_eq!(fdb.connection_string(), Some(new.clone()));
    let status = fdb.status().await.unwrap();
    assert!(process_for(&status, 21).unwrap().has_role("coordinator"));
    assert!(!process_for(&status, 11).unwrap().has_role("coordinator"));
    let error = fdb.change_coordinators(&[address(21)]).await.unwrap_err();
    assert!(
        matches!(error, AdminError::Unavailable { .. }),
        "recovering from the change: {error}"
    );
    clock.advance_seconds(5);
    let error = fdb.change_coordinators(&[address(99)]).await.unwrap_err();
    assert!(error.to_string().contains("127.0.0.99:4501"), "{error}");
}

#[tokio::test]
async fn dns_coordinators_resolve_through_the_dns_locality() {
    let clock = VirtualClock::fixed_epoch();
    let fdb = SimulatedFdb::new(Arc::new(clock.clone()), SimFdbSettings::default());
    for mut process in all_launches("7.1.57") {
        let name = format!("{}.sample.default.svc.cluster.local", process.pod);
        process.locality.insert("dns_name".to_owned(), name);
        process.cluster_file_contents = "sample:abc@sample-log-1.sample.default.svc.cluster.local:4501,sample-log-2.sample.default.svc.cluster.local:4501,sample-log-3.sample.default.svc.cluster.local:4501".to_owned();
        fdb.start_process(process);
    }
    fdb.configure(&double_ssd(), true).await.unwrap();
    clock.advance_seconds(5);
    assert!(fdb.status().await.unwrap().is_available());
    assert_eq!(
        fdb.snapshot().coordinators,
        ["127.0.0.11:4501", "127.0.0.12:4501", "127.0.0.13:4501"]
    );
}

#[tokio::test]
async fn locks_deny_list_and_injected_timeouts() {
    let (fdb, _clock) = configured_cluster().await;
    assert_eq!(fdb.read_lock().await.unwrap(), None);
    let lock = LockValue::new("sample", 100);
    fdb.write_lock(&lock).await.unwrap();
    assert_eq!(fdb.read_lock().await.unwrap(), Some(lock));
    fdb.update_deny_list(&["a".to_owned(), "b".to_owned()], &[])
        .await
        .unwrap();
    fdb.update_deny_list(&[], &["a".to_owned()]).await.unwrap();
    assert_eq!(fdb.deny_list().await.unwrap(), ["b"]);

    fdb.set_timeout_rate(1.0);
    let error = fdb.status().await.unwrap_err();
    assert!(matches!(error, AdminError::Timeout { .. }));
    fdb.set_timeout_rate(0.5);
    let mut outcomes = Vec::new();
    for _ in 0..40 {
        outcomes.push(fdb.status().await.is_ok());
    }
    assert!(outcomes.contains(&true) && outcomes.contains(&false));
}

/// Turning TLS on: processes that listen on their TLS address and still on their plain
/// one keep the plain coordinators reachable; a switch to the TLS address alone loses
/// them (the connection string names each coordinator by port and kind).
#[tokio::test]
async fn coordinators_are_reached_on_any_address_of_their_kind_a_process_listens_on() {
    let (fdb, clock) = configured_cluster().await;
    let restart_logs = |fdb: &SimulatedFdb, keep_plain: bool| {
        for n in 1..=3 {
            let mut launch = launch(ProcessClass::Log, n, "7.1.57");
            let plain = launch.address.clone();
            launch.address = ProcessAddress::new(plain.host.clone(), 4500).with_tls(true);
            if keep_plain {
                launch.other_addresses = vec![plain];
            }
            fdb.start_process(launch);
        }
    };
    let plain: Vec<ProcessAddress> = (11..=13).map(address).collect();
    fdb.kill(&plain).await.unwrap();
    restart_logs(&fdb, true);
    advance(&fdb, &clock, 120);
    assert!(
        fdb.snapshot().available,
        "both addresses: the quorum is kept"
    );
    let tls: Vec<ProcessAddress> = plain
        .iter()
        .map(|a| ProcessAddress::new(a.host.clone(), 4500).with_tls(true))
        .collect();
    fdb.kill(&tls).await.unwrap();
    restart_logs(&fdb, false);
    advance(&fdb, &clock, 600);
    assert!(
        !fdb.snapshot().available,
        "TLS only: no process answers the plain coordinators"
    );
}
