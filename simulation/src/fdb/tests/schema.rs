//! Every `status json` the world renders validates against FoundationDB's schema of its
//! version (`JSONSchemas::statusSchema` in fdbclient/Schemas.cpp, kept per release in
//! shared/tests/data/status-schema) with `schemaMatch`'s rules.

use std::sync::Arc;

use fdb_operator::fdb::BackupStart;
use fdb_shared::status_json::schema::schema_mismatches;
use serde_json::Value;

use super::*;
use fdb_operator::clock::VirtualClock;

/// The schema of FoundationDB's `minor` release, as the world's own check matches it.
fn schema(minor: &str) -> Value {
    foundationdb_schema(minor)
        .cloned()
        .unwrap_or_else(|| panic!("no schema for {minor}"))
}

/// Panics with every mismatch of the document rendered now.
fn assert_valid(fdb: &SimulatedFdb, minor: &str, shape: &str) -> Value {
    let rendered = fdb.render_status_json();
    let errors = schema_mismatches(&schema(minor), &rendered);
    assert!(
        errors.is_empty(),
        "{shape} on {minor}:\n{}\n{}",
        errors.join("\n"),
        serde_json::to_string_pretty(&rendered).unwrap()
    );
    rendered
}

/// A configured database on `version`, its first recovery over.
async fn cluster_at(version: &str) -> (SimulatedFdb, VirtualClock) {
    let clock = VirtualClock::fixed_epoch();
    let fdb = SimulatedFdb::new(Arc::new(clock.clone()), SimFdbSettings::default());
    for process in all_launches(version) {
        fdb.start_process(process);
    }
    assert_valid(&fdb, &version[..3], "unconfigured");
    // What the operator configures by default (`configure new double ssd-2 logs=3
    // proxies=3 resolvers=1 usable_regions=1`), without resolvers.
    let configuration = DatabaseConfiguration {
        proxies: Some(3),
        ..double_ssd()
    };
    fdb.configure(&configuration, true).await.unwrap();
    assert_valid(&fdb, &version[..3], "recovering after configure new");
    advance(&fdb, &clock, 5);
    (fdb, clock)
}

const VERSIONS: [(&str, &str); 3] = [
    ("7.1.57", "7.3.63"),
    ("7.3.63", "7.4.5"),
    ("7.4.5", "7.4.6"),
];

#[tokio::test]
async fn fresh_databases_validate() {
    for (version, _) in VERSIONS {
        let (fdb, _) = cluster_at(version).await;
        assert_valid(&fdb, &version[..3], "fresh");
    }
}

#[tokio::test]
async fn exclusions_maintenance_clients_and_faults_validate() {
    for (version, _) in VERSIONS {
        let minor = &version[..3];
        let (fdb, clock) = cluster_at(version).await;
        fdb.connect_client(ClientInfo {
            address: "10.9.0.1:4000".to_owned(),
            version: v(version),
            protocol_version: None,
            log_group: "app".to_owned(),
        });
        fdb.exclude(&[ExclusionTarget::Address(address(21))], false)
            .await
            .unwrap();
        fdb.exclude(
            &[ExclusionTarget::Locality(
                fdb_operator::fdb::locality_filter::LocalityFilter::instance_id("storage-2")
                    .unwrap(),
            )],
            false,
        )
        .await
        .unwrap();
        fdb.set_maintenance_zone("zone-3", 300).await.unwrap();
        fdb.set_io_error("log-1", true);
        fdb.set_io_latency("storage-3", Some(200));
        advance(&fdb, &clock, 20);
        assert_valid(&fdb, minor, "exclusions, maintenance, faults");
        fdb.stop_process(&address(22));
        advance(&fdb, &clock, 120);
        assert_valid(&fdb, minor, "a storage process lost");
    }
}

#[tokio::test]
async fn mid_upgrade_and_no_quorum_validate() {
    for (version, target) in VERSIONS {
        let minor = &version[..3];
        let (fdb, clock) = cluster_at(version).await;
        // Two processes restarted early on the target: incompatible connections.
        fdb.start_process(launch(ProcessClass::Stateless, 1, target));
        fdb.start_process(launch(ProcessClass::Storage, 3, target));
        advance(&fdb, &clock, 10);
        assert_valid(&fdb, minor, "mid-upgrade");
        for n in 1..=3 {
            fdb.stop_process(&address(10 + n));
        }
        assert_valid(&fdb, minor, "no quorum");
    }
}

#[tokio::test]
async fn backups_validate() {
    for (version, _) in VERSIONS {
        let minor = &version[..3];
        let (fdb, clock) = cluster_at(version).await;
        fdb.set_backup_agents(2);
        fdb.start_backup(&BackupStart {
            tag: "default".to_owned(),
            url: "blobstore://minio@minio:9000/sample?bucket=backups".to_owned(),
            snapshot_period_seconds: 864_000,
            encryption_key_path: None,
        })
        .await
        .unwrap();
        advance(&fdb, &clock, 60);
        assert_valid(&fdb, minor, "backup running");
        fdb.set_backups_paused(true).await.unwrap();
        assert_valid(&fdb, minor, "backup paused");
    }
}

/// The keys FoundationDB always reports for an available database (fdbserver/Status.actor.cpp
/// `clusterGetStatus`, `processStatusFetcher`; `toJSON` in fdbclient/DatabaseConfiguration.cpp),
/// which the schema cannot ask for: it lets any key be missing.
#[tokio::test]
async fn what_foundationdb_always_reports_is_there() {
    let cluster_keys = [
        "active_tss_count",
        "bounce_impact",
        "clients",
        "cluster_controller_timestamp",
        "configuration",
        "connection_string",
        "data",
        "database_available",
        "database_lock_state",
        "datacenter_lag",
        "degraded_processes",
        "fault_tolerance",
        "full_replication",
        "generation",
        "incompatible_connections",
        "layers",
        "logs",
        "machines",
        "messages",
        "processes",
        "protocol_version",
        "qos",
        "recovery_state",
    ];
    let process_keys = [
        "address",
        "class_source",
        "class_type",
        "command_line",
        "cpu",
        "disk",
        "excluded",
        "fault_domain",
        "locality",
        "machine_id",
        "memory",
        "messages",
        "network",
        "roles",
        "run_loop_busy",
        "uptime_seconds",
        "version",
    ];
    for (version, _) in VERSIONS {
        let (fdb, _) = cluster_at(version).await;
        let status = assert_valid(&fdb, &version[..3], "fresh");
        let cluster = &status["cluster"];
        for key in cluster_keys {
            assert!(
                cluster.get(key).is_some(),
                "{version}: cluster.{key} missing"
            );
        }
        for process in cluster["processes"].as_object().unwrap().values() {
            for key in process_keys {
                assert!(
                    process.get(key).is_some(),
                    "{version}: process {key} missing"
                );
            }
        }
        let configuration = &cluster["configuration"];
        let mut expected = vec![
            ("log_spill", serde_json::json!(2)),
            ("storage_migration_type", serde_json::json!("disabled")),
            ("perpetual_storage_wiggle_engine", serde_json::json!("none")),
            ("usable_regions", serde_json::json!(1)),
            ("tenant_mode", serde_json::json!("disabled")),
            ("commit_proxies", serde_json::json!(2)),
            ("grv_proxies", serde_json::json!(1)),
        ];
        if version >= "7.3" {
            expected.push(("encryption_at_rest_mode", serde_json::json!("disabled")));
            expected.push(("resolvers", serde_json::json!(1)));
        }
        for (key, value) in expected {
            assert_eq!(configuration[key], value, "{version}: configuration.{key}");
        }
        assert_eq!(cluster["database_lock_state"]["locked"], false);
    }
}

/// Engine names as each version prints them: 7.3 names Redwood `ssd-redwood-1` whatever
/// name configured it, 7.1 names the log/storage pair (`memory` is `memory-2`), 7.4
/// renames the radix tree.
#[tokio::test]
async fn engine_names_are_rendered_as_each_version_prints_them() {
    let cases = [
        (
            "7.1.57",
            StorageEngine::SsdRedwood1Experimental,
            "ssd-redwood-1-experimental",
        ),
        (
            "7.3.63",
            StorageEngine::SsdRedwood1Experimental,
            "ssd-redwood-1",
        ),
        ("7.3.63", StorageEngine::SsdRedwood1, "ssd-redwood-1"),
        ("7.1.57", StorageEngine::Memory, "memory-2"),
        ("7.1.57", StorageEngine::Memory1, "memory-1"),
        ("7.3.63", StorageEngine::Memory1, "memory"),
        ("7.3.63", StorageEngine::Ssd, "ssd-2"),
        (
            "7.3.63",
            StorageEngine::MemoryRadixtreeBeta,
            "memory-radixtree-beta",
        ),
        (
            "7.4.5",
            StorageEngine::MemoryRadixtreeBeta,
            "memory-radixtree",
        ),
    ];
    for (version, engine, reported) in cases {
        let clock = VirtualClock::fixed_epoch();
        let fdb = SimulatedFdb::new(Arc::new(clock.clone()), SimFdbSettings::default());
        for process in all_launches(version) {
            fdb.start_process(process);
        }
        let configuration = DatabaseConfiguration {
            storage_engine: Some(engine.clone()),
            ..double_ssd()
        };
        fdb.configure(&configuration, true).await.unwrap();
        advance(&fdb, &clock, 5);
        let status = assert_valid(&fdb, &version[..3], "configured");
        assert_eq!(
            status["cluster"]["configuration"]["storage_engine"], reported,
            "{engine:?} on {version}"
        );
    }
}

/// The protocol each version reports (flow/ProtocolVersion.h at release-7.1,
/// flow/ProtocolVersions.cmake at release-7.3 and -7.4).
#[tokio::test]
async fn protocol_versions_are_the_releases() {
    for (version, protocol) in [
        ("7.1.57", "fdb00b071010000"),
        ("7.3.63", "fdb00b073000000"),
        ("7.4.5", "fdb00b074000000"),
    ] {
        let (fdb, _) = cluster_at(version).await;
        let status = fdb.render_status_json();
        assert_eq!(status["cluster"]["protocol_version"], protocol, "{version}");
        assert_eq!(
            status["client"]["coordinators"]["coordinators"][0]["protocol"],
            format!("0{protocol}"),
            "{version}"
        );
    }
}

/// Two regions: the same small cluster in `dc1` and `dc2`.
#[tokio::test]
async fn two_regions_validate() {
    for (version, _) in VERSIONS {
        let clock = VirtualClock::fixed_epoch();
        let fdb = SimulatedFdb::new(Arc::new(clock.clone()), SimFdbSettings::default());
        for (index, dc) in ["dc1", "dc2"].into_iter().enumerate() {
            for mut process in all_launches(version) {
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
        let status = assert_valid(&fdb, &version[..3], "two regions");
        assert_eq!(
            status["cluster"]["configuration"]["regions"]
                .as_array()
                .map(Vec::len),
            Some(2)
        );
    }
}

/// The 7.1 schema without `cluster.qos`, which the world always renders.
fn schema_without_qos(minor: &str) -> Option<&'static Value> {
    static STRICTER: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    (minor == "7.1").then(|| {
        STRICTER.get_or_init(|| {
            let mut schema = schema("7.1");
            schema["cluster"].as_object_mut().unwrap().remove("qos");
            schema
        })
    })
}

/// The world's own check sees every document it renders, through the typed status and
/// `render_status_json` alike, and reports a mismatch once, naming the key path and the
/// versions; against the real schema the same documents pass.
#[tokio::test]
async fn a_rendered_key_off_the_schema_is_reported_once_naming_its_path() {
    let (fdb, clock) = cluster_at("7.1.57").await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = {
        let seen = seen.clone();
        Arc::new(move |line: String| seen.lock().unwrap().push(line))
    };
    fdb.check_statuses(StatusCheck::new(sink.clone()));
    fdb.status().await.unwrap();
    fdb.render_status_json();
    assert!(seen.lock().unwrap().is_empty(), "{seen:?}");

    fdb.check_statuses(StatusCheck::with_schemas(sink, schema_without_qos));
    fdb.status().await.unwrap();
    advance(&fdb, &clock, 10);
    fdb.render_status_json();
    assert_eq!(
        *seen.lock().unwrap(),
        ["status json of 7.1.57 against Schemas.cpp of 7.1: ERROR: Unknown key `.cluster.qos'"]
    );
}
