//! The status model against real `status json` captures.

use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::{ProcessClass, RedundancyMode, StorageEngine};
use fdb_shared::status_json::{BackupStatus, DatabaseStatus};

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn parses_the_7_1_capture_with_typed_fields() {
    let status = DatabaseStatus::parse_fdbcli_output(&fixture("status-7.1.0-rc1.json")).unwrap();
    assert!(status.is_available());
    assert!(status.is_healthy());
    assert_eq!(status.client.coordinators.quorum_reachable, Some(true));
    assert_eq!(status.client.coordinators.coordinators.len(), 3);
    assert_eq!(
        status.client.coordinators.coordinators[0].address,
        Some(ProcessAddress::parse("10.1.18.253:4501").unwrap())
    );

    let cluster = &status.cluster;
    let connection = cluster.connection_string.as_ref().unwrap();
    assert_eq!(connection.description, "test_cluster");
    assert_eq!(connection.coordinators.len(), 3);
    let configuration = cluster.configuration.as_ref().unwrap();
    assert_eq!(configuration.redundancy_mode, Some(RedundancyMode::Double));
    assert_eq!(configuration.storage_engine, Some(StorageEngine::Ssd2));
    assert_eq!(configuration.logs, Some(3));
    assert!(configuration.excluded_servers.is_empty());
    assert_eq!(
        cluster.recovery_state.name.as_deref(),
        Some("fully_recovered")
    );
    assert_eq!(cluster.recovery_state.active_generations, Some(1));
    assert!(cluster.recovery_state.seconds_since_last_recovered.unwrap() > 76.0);
    assert_eq!(cluster.data.state.name.as_deref(), Some("healthy"));
    assert_eq!(
        cluster.data.team_trackers[0].state.min_replicas_remaining,
        Some(2)
    );
    assert_eq!(cluster.full_replication, Some(true));
    assert_eq!(cluster.generation, Some(2));
    assert_eq!(
        cluster
            .fault_tolerance
            .max_zone_failures_without_losing_availability,
        Some(1)
    );
    assert_eq!(cluster.qos.worst_queue_bytes_log_server, Some(12144));
    assert_eq!(cluster.logs[0].log_interfaces.len(), 3);
    assert_eq!(cluster.bounce_impact.can_clean_bounce, Some(true));
    let backup = cluster.layers.backup.as_ref().unwrap();
    assert_eq!(backup.tags["default"].running_backup, Some(true));

    let log = &cluster.processes["105bf6c041f8ec315d03e889c2746ecf"];
    assert_eq!(log.class_type, Some(ProcessClass::Log));
    assert_eq!(log.locality.instance_id.as_deref(), Some("log-3"));
    assert_eq!(log.locality.zoneid.as_deref(), Some("test-cluster-log-3"));
    assert_eq!(
        log.version,
        Some("7.1.0-rc1".parse::<FdbVersion>().unwrap())
    );
    assert!(log.has_role("log"));
    assert!(!log.excluded);
    assert!(log.uptime_seconds.unwrap() > 85.0);
    assert!(
        log.command_line
            .as_deref()
            .unwrap()
            .starts_with("/usr/bin/fdbserver --class=log")
    );
    assert_eq!(
        cluster.running_version(),
        Some("7.1.0-rc1".parse().unwrap())
    );

    let clients = &cluster.clients.supported_versions;
    assert!(
        clients
            .iter()
            .any(|v| v.client_version == Some("6.2.30".parse().unwrap()))
    );
    assert_eq!(
        clients[0].connected_clients[0].log_group,
        "fdb-kubernetes-operator"
    );
}

#[test]
fn parses_the_capture_with_unreachable_processes() {
    let status =
        DatabaseStatus::parse_fdbcli_output(&fixture("status-unreachable-processes.json")).unwrap();
    let cluster = &status.cluster;
    assert!(cluster.has_message("unreachable_processes"));
    let unreachable = &cluster.messages[0].unreachable_processes[0];
    assert_eq!(
        unreachable.address,
        Some(ProcessAddress::parse("100.82.115.41:4500:tls").unwrap())
    );
    let stub = &cluster.processes["cab524af333b068af5d3caaeb867b5aa"];
    assert!(stub.is_unreachable_stub());
    assert_eq!(stub.class_type, Some(ProcessClass::Test));
    assert!(stub.address.as_ref().unwrap().tls);

    let storage = &cluster.processes["0abbe75dc25d886c2db49d8e74c3e8ce"];
    assert_eq!(storage.locality.process_id.as_deref(), Some("storage-4-1"));
    assert_eq!(
        storage.locality.processid.as_deref(),
        Some("0abbe75dc25d886c2db49d8e74c3e8ce")
    );
    assert_eq!(
        status.processes_of_instance("storage-4").count(),
        2,
        "two storage servers per pod"
    );
    let configuration = cluster.configuration.as_ref().unwrap();
    assert_eq!(configuration.redundancy_mode, Some(RedundancyMode::Triple));
    assert!(!status.is_healthy());
    assert!(status.is_available());
}

#[test]
fn fdbcli_preamble_and_odd_values_are_tolerated() {
    let text = format!(
        "Using cluster file `/var/fdb.cluster'.\n{}",
        r#"{"cluster": {"processes": {"a": {"address": "not an address", "class_type": "blob_worker",
            "version": "x", "roles": [{"role": "storage", "new_field": 1}], "unknown": {}}},
            "incompatible_connections": ["10.0.0.9:4501", "junk"], "connection_string": "bad"}}"#
    );
    let status = DatabaseStatus::parse_fdbcli_output(&text).unwrap();
    let process = &status.cluster.processes["a"];
    assert_eq!(process.address, None);
    assert_eq!(process.class_type, None);
    assert_eq!(process.version, None);
    assert!(process.has_role("storage"));
    assert_eq!(status.cluster.incompatible_connections.len(), 1);
    assert_eq!(status.cluster.connection_string, None);
}

#[test]
fn parses_the_backup_status() {
    let status = BackupStatus::parse_output(&fixture("backup-status-6.2.json")).unwrap();
    assert_eq!(status.tag.as_deref(), Some("default"));
    assert_eq!(
        status.uid.as_deref(),
        Some("3874300eea1e154e4079530b381f71c3")
    );
    assert_eq!(status.status.name.as_deref(), Some("Running"));
    assert_eq!(status.status.running, Some(true));
    assert_eq!(
        status.destination_url.as_deref(),
        Some("blobstore://minio@minio-service:9000/sample-cluster?bucket=fdb-backups")
    );
    assert_eq!(status.backup_agents_paused, Some(false));
    let snapshot_end = status.latest_snapshot_end.as_ref().unwrap();
    assert_eq!(snapshot_end.version, Some(334_573_197));
    assert_eq!(snapshot_end.epoch_seconds, Some(1_588_041_700));
    assert_eq!(
        status.latest_log_end.as_ref().and_then(|p| p.version),
        Some(334_508_757)
    );
    // 6.2 has no LatestRestorablePoint; the field stays empty.
    assert_eq!(status.latest_restorable_point, None);
}
