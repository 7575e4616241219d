//! Real-looking manifests survive parse -> serialize -> parse unchanged, and nothing in
//! them is dropped as unknown.

// Test-only crate: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fdb_shared::api::{FoundationDBBackup, FoundationDBCluster, FoundationDBRestore};
use fdb_shared::unknown_fields::decode_reporting_unknown_fields;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn round_trip<T>(yaml: &str) -> T
where
    T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug,
{
    let input: Value = serde_yaml_ng::from_str(yaml).unwrap();
    let (typed, warnings): (T, _) = decode_reporting_unknown_fields(&input).unwrap();
    assert_eq!(warnings, Vec::<String>::new(), "fields were dropped");
    let text = serde_yaml_ng::to_string(&typed).unwrap();
    let again: T = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(typed, again);
    typed
}

#[test]
fn production_cluster_round_trips() {
    let cluster: FoundationDBCluster =
        round_trip(include_str!("../../docs/examples/cluster-production.yaml"));
    let spec = &cluster.spec;
    assert_eq!(spec.version, "7.1.57");
    assert_eq!(spec.process_group_id_prefix(), "prod");
    assert!(
        spec.automation_options
            .maintenance_mode_options
            .use_maintenance_mode_checker()
    );
    assert_eq!(
        spec.automation_options
            .replacements
            .max_concurrent_replacements(),
        2
    );
    assert_eq!(spec.automation_options.ignore_pending_pods_seconds(), 300);
    let general = &spec.processes["general"];
    assert_eq!(
        general
            .volume_claim_template
            .as_ref()
            .and_then(|pvc| pvc.spec.as_ref())
            .and_then(|s| s.storage_class_name.as_deref()),
        Some("fast-ssd")
    );
}

#[test]
fn minimal_cluster_round_trips_and_takes_defaults() {
    let cluster: FoundationDBCluster =
        round_trip(include_str!("../../docs/examples/cluster-minimal.yaml"));
    let spec = &cluster.spec;
    assert!(spec.routing.use_dns_in_cluster_file());
    assert_eq!(spec.dns_domain(), "cluster.local");
    assert_eq!(spec.image_type().as_str(), "split");
    assert_eq!(spec.minimum_uptime_seconds_for_bounce(), 600);
    assert_eq!(
        spec.automation_options
            .replacements
            .failure_detection_time_seconds(),
        7200
    );
    assert_eq!(
        spec.automation_options
            .replacements
            .taint_replacement_time_seconds(),
        1800
    );
    assert_eq!(
        spec.automation_options
            .replacements
            .max_concurrent_replacements(),
        1
    );
    assert_eq!(spec.automation_options.deletion_mode().as_str(), "Zone");
    assert_eq!(
        spec.automation_options.pod_update_strategy().as_str(),
        "ReplaceTransactionSystem"
    );
    assert_eq!(spec.log_group("sample-cluster"), "sample-cluster");
    // Unset stays unset when written back.
    let json = serde_json::to_value(&cluster).unwrap();
    assert_eq!(json["spec"], serde_json::json!({"version": "7.1.57"}));
}

#[test]
fn cluster_status_round_trips() {
    let cluster: FoundationDBCluster = round_trip(include_str!("data/cluster-with-status.yaml"));
    let status = cluster.status.unwrap();
    assert_eq!(status.process_groups.len(), 2);
    assert!(status.process_groups[1].is_marked_for_removal());
    assert_eq!(status.generations.needs_shrink, Some(4));
    assert!(status.required_addresses.non_tls);
}

#[test]
fn backup_and_restore_round_trip() {
    let backup: FoundationDBBackup = round_trip(include_str!("../../docs/examples/backup.yaml"));
    assert_eq!(backup.spec.agent_count(), 3);
    assert_eq!(backup.spec.blob_store_configuration.bucket(), "fdb-backups");
    let restore: FoundationDBRestore = round_trip(include_str!("../../docs/examples/restore.yaml"));
    assert_eq!(restore.spec.key_ranges.len(), 1);
}
