//! The interpreter against the production admin client: each command text the
//! builders produce (`fdb/fdbcli/commands.rs`, `backup_commands.rs`) goes through the
//! simulated tools and has the same typed effect as the typed call on the database.

use std::collections::BTreeMap;
use std::sync::Arc;

use fdb_operator::clock::{Clock, VirtualClock};
use fdb_operator::fdb::{
    AdminClient, AdminError, ExclusionTarget, FdbcliAdminClient, FdbcliConfig, LockValue,
    PendingUpgrade, RestartEntry, RestartList,
};
use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::{DatabaseConfiguration, ProcessClass, RedundancyMode, StorageEngine};

use super::SimulatedTools;
use crate::event_log::EventLog;
use crate::fdb::{ProcessLaunch, SimFdbSettings, SimulatedFdb};
use crate::recording_admin::RecordingAdmin;

const CONNECTION: &str = "sample:initial1@127.0.0.11:4501,127.0.0.12:4501,127.0.0.13:4501";
const BIN: &str = "/usr/bin/fdb";

fn v(text: &str) -> FdbVersion {
    text.parse().unwrap()
}

fn launch(class: ProcessClass, n: u8, version: &str) -> ProcessLaunch {
    let host = match class {
        ProcessClass::Log => 10,
        ProcessClass::Storage => 20,
        _ => 30,
    } + n;
    let instance = format!("{}-{n}", class.as_str());
    ProcessLaunch {
        address: ProcessAddress::new(format!("127.0.0.{host}"), 4501),
        other_addresses: Vec::new(),
        command_line: format!("/usr/bin/fdbserver --class={}", class.as_str()),
        class,
        locality: BTreeMap::from([
            ("instance_id".to_owned(), instance.clone()),
            ("zoneid".to_owned(), format!("zone-{n}")),
            ("machineid".to_owned(), format!("zone-{n}")),
        ]),
        version: v(version),
        cluster_file_contents: format!("{CONNECTION}\n"),
        pod: format!("sample-{instance}"),
        data_identity: format!("pvc:default/sample-{instance}/data"),
        coordination_file: None,
    }
}

/// A database of 8 processes on `version`, its recording admin, its tools, and a
/// production client of fdbcli `minor` with a cluster file on disk.
struct Fixture {
    fdb: SimulatedFdb,
    clock: VirtualClock,
    log: EventLog,
    tools: SimulatedTools,
    _dir: tempfile::TempDir,
    cluster_file: std::path::PathBuf,
}

impl Fixture {
    fn new(version: &str) -> Self {
        let clock = VirtualClock::fixed_epoch();
        let shared: Arc<dyn Clock> = Arc::new(clock.clone());
        let fdb = SimulatedFdb::new(shared.clone(), SimFdbSettings::default());
        for n in 1..=3 {
            fdb.start_process(launch(ProcessClass::Log, n, version));
            fdb.start_process(launch(ProcessClass::Storage, n, version));
        }
        for n in 1..=2 {
            fdb.start_process(launch(ProcessClass::Stateless, n, version));
        }
        let log = EventLog::new(shared);
        let admin = Arc::new(RecordingAdmin::new(Arc::new(fdb.clone()), log.clone()));
        let tools = SimulatedTools::new(admin, fdb.clone(), ["7.1", "7.3"].map(str::to_owned), BIN);
        let dir = tempfile::tempdir().unwrap();
        let cluster_file = dir.path().join("sample.cluster");
        std::fs::write(&cluster_file, format!("{CONNECTION}\n")).unwrap();
        Self {
            fdb,
            clock,
            log,
            tools,
            _dir: dir,
            cluster_file,
        }
    }

    fn client(&self, minor: &str) -> FdbcliAdminClient {
        let mut config =
            FdbcliConfig::new(format!("{BIN}/{minor}/fdbcli"), self.cluster_file.clone());
        config.trace_log_group = Some("fdb-kubernetes-operator".to_owned());
        FdbcliAdminClient::new(config).with_runner(Arc::new(self.tools.clone()))
    }

    async fn exec(&self, minor: &str, line: &str) -> super::Printed {
        let args: Vec<String> = [
            "-C",
            &self.cluster_file.display().to_string(),
            "--timeout",
            "10",
            "--exec",
            line,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        self.tools
            .run_tool(
                fdb_operator::fdb::FdbTool::Fdbcli,
                v(&format!("{minor}.0")),
                &args,
                "default",
                true,
            )
            .await
    }
}

fn double_ssd() -> DatabaseConfiguration {
    DatabaseConfiguration {
        redundancy_mode: Some(RedundancyMode::Double),
        storage_engine: Some(StorageEngine::Ssd2),
        logs: Some(3),
        ..Default::default()
    }
}

async fn configured() -> (Fixture, FdbcliAdminClient) {
    let fixture = Fixture::new("7.1.57");
    let client = fixture.client("7.1");
    client.configure(&double_ssd(), true).await.unwrap();
    fixture.clock.advance_seconds(10);
    (fixture, client)
}

#[tokio::test]
async fn configure_round_trips_into_the_typed_configuration() {
    let (fixture, client) = configured().await;
    let status = client.status().await.unwrap();
    assert!(status.is_available());
    let configuration = status.cluster.configuration.unwrap();
    assert_eq!(configuration.redundancy_mode, Some(RedundancyMode::Double));
    assert_eq!(configuration.storage_engine, Some(StorageEngine::Ssd2));
    assert_eq!(configuration.logs, Some(3));
    let change = DatabaseConfiguration {
        resolvers: Some(2),
        perpetual_storage_wiggle_locality: Some("zoneid:zone-1".to_owned()),
        ..Default::default()
    };
    client.configure(&change, false).await.unwrap();
    let after = client
        .status()
        .await
        .unwrap()
        .cluster
        .configuration
        .unwrap();
    assert_eq!(after.resolvers, Some(2));
    assert_eq!(
        after.perpetual_storage_wiggle_locality.as_deref(),
        Some("zoneid:zone-1")
    );
    // Again through `new`: FoundationDB's refusal, on stderr, exit 1.
    let error = client.configure(&double_ssd(), true).await.unwrap_err();
    assert!(
        matches!(&error, AdminError::Failed { stderr, code: Some(1), .. } if stderr.contains("Database already exists")),
        "{error:?}"
    );
    // Every command reached the recording layer.
    let actions: Vec<String> = fixture
        .log
        .events()
        .iter()
        .map(|e| e.action.clone())
        .collect();
    assert_eq!(
        actions.iter().filter(|a| *a == "configure").count(),
        3,
        "{actions:?}"
    );
}

#[tokio::test]
async fn exclusions_coordinators_maintenance_and_kill_round_trip() {
    let (fixture, client) = configured().await;
    let target = ExclusionTarget::instance_id("storage-3").unwrap();
    client
        .exclude(std::slice::from_ref(&target), false)
        .await
        .unwrap();
    let status = client.status().await.unwrap();
    let excluded: Vec<bool> = status
        .processes_of_instance("storage-3")
        .map(|(_, p)| p.excluded)
        .collect();
    assert_eq!(excluded, [true]);
    client.include(std::slice::from_ref(&target)).await.unwrap();
    assert!(
        client
            .status()
            .await
            .unwrap()
            .processes_of_instance("storage-3")
            .all(|(_, p)| !p.excluded)
    );

    let coordinators: Vec<ProcessAddress> = [21, 22, 23]
        .iter()
        .map(|h| ProcessAddress::new(format!("127.0.0.{h}"), 4501))
        .collect();
    let connection = client.change_coordinators(&coordinators).await.unwrap();
    assert_eq!(connection.coordinators, coordinators);
    // fdbcli rewrote its cluster file.
    let file = std::fs::read_to_string(&fixture.cluster_file).unwrap();
    assert_eq!(file.trim(), connection.to_string());
    fixture.clock.advance_seconds(10);

    client.set_maintenance_zone("zone-2", 600).await.unwrap();
    let status = client.status().await.unwrap();
    assert_eq!(status.cluster.maintenance_zone.as_deref(), Some("zone-2"));
    client.reset_maintenance_zone().await.unwrap();
    assert_eq!(
        client.status().await.unwrap().cluster.maintenance_zone,
        None
    );

    let victim = ProcessAddress::new("127.0.0.31", 4501);
    client.kill(std::slice::from_ref(&victim)).await.unwrap();
    let kills: Vec<String> = fixture
        .log
        .events()
        .iter()
        .filter(|e| e.action == "kill")
        .map(|e| e.detail.clone())
        .collect();
    assert_eq!(kills, ["kill 127.0.0.31:4501"]);
}

#[tokio::test]
async fn system_keys_round_trip_through_get_set_and_clear() {
    let (fixture, client) = configured().await;
    let now = fixture.clock.now_unix();
    assert_eq!(client.read_lock().await.unwrap(), None);
    let lock = LockValue::new("sample-a", now);
    client.write_lock(&lock).await.unwrap();
    assert_eq!(client.read_lock().await.unwrap(), Some(lock));

    client
        .update_deny_list(&["b".to_owned(), "c".to_owned()], &[])
        .await
        .unwrap();
    client
        .update_deny_list(&[], &["b".to_owned()])
        .await
        .unwrap();
    assert_eq!(client.deny_list().await.unwrap(), ["c"]);

    let entry = PendingUpgrade::new(&v("7.3.43"), "storage-1");
    client
        .update_pending_upgrades(std::slice::from_ref(&entry), &[])
        .await
        .unwrap();
    assert_eq!(client.pending_upgrades().await.unwrap(), vec![entry]);
    client.clear_pending_upgrades().await.unwrap();
    assert!(client.pending_upgrades().await.unwrap().is_empty());

    let restart = RestartEntry {
        owner: "sample".to_owned(),
        group: "storage-2".to_owned(),
        since: now,
    };
    client
        .update_restart_list(RestartList::Ready, std::slice::from_ref(&restart), &[])
        .await
        .unwrap();
    assert_eq!(
        client.restart_list(RestartList::Ready).await.unwrap(),
        vec![restart.clone()]
    );
    client
        .update_restart_list(RestartList::Ready, &[], std::slice::from_ref(&restart))
        .await
        .unwrap();
    assert!(
        client
            .restart_list(RestartList::Ready)
            .await
            .unwrap()
            .is_empty()
    );
    // A key the simulated database does not keep is refused, not answered empty.
    let printed = fixture
        .exec("7.1", "option on ACCESS_SYSTEM_KEYS; get \\xff/conf/x")
        .await;
    assert_eq!(printed.code, 1, "{printed:?}");
    let printed = fixture.exec("7.1", "get \\xff/conf/x").await;
    assert!(
        printed.stderr.contains("Key outside legal range"),
        "{printed:?}"
    );
    let printed = fixture.exec("7.1", "set a b").await;
    assert!(
        printed.stderr.contains("writemode must be enabled"),
        "{printed:?}"
    );
}

#[tokio::test]
async fn kill_of_an_unlisted_address_refuses_the_whole_command() {
    let (fixture, _) = configured().await;
    let printed = fixture
        .exec("7.1", "kill; kill 127.0.0.31:4501 10.99.99.99:4501")
        .await;
    assert_eq!(printed.code, 1, "{printed:?}");
    assert!(
        printed
            .stderr
            .contains("ERROR: process `10.99.99.99:4501' not recognized."),
        "{printed:?}"
    );
    assert!(
        printed
            .stdout
            .contains("The following 8 addresses can be killed:"),
        "{printed:?}"
    );
    assert!(
        !fixture.log.events().iter().any(|e| e.action == "kill"),
        "nothing killed"
    );
    // `kill ADDR` alone: the list was never loaded, so nothing is recognized.
    let printed = fixture.exec("7.1", "kill 127.0.0.31:4501").await;
    assert!(printed.stderr.contains("not recognized"), "{printed:?}");
    let printed = fixture.exec("7.1", "frobnicate").await;
    assert_eq!(printed.code, 1);
    assert_eq!(
        printed.stderr,
        "ERROR: Unknown command `frobnicate'. Try `help'?\n"
    );
}

#[tokio::test]
async fn a_tool_of_another_protocol_reaches_nothing_and_is_not_listed() {
    let (fixture, _) = configured().await;
    let old = fixture.client("7.3");
    let status = old.status().await.unwrap();
    assert!(!status.is_available());
    assert!(status.cluster.processes.is_empty());
    assert_eq!(status.client.coordinators.quorum_reachable, Some(false));
    let error = old.read_lock().await.unwrap_err();
    assert!(matches!(error, AdminError::Unavailable { .. }), "{error:?}");
    let printed = fixture.exec("7.3", "get x").await;
    assert!(
        printed.stdout.contains("The database is unavailable"),
        "{printed:?}"
    );
    assert!(
        printed
            .stderr
            .ends_with("Specified timeout reached -- exiting...\n")
    );
    // A tool the image lacks does not run at all.
    let missing = FdbcliAdminClient::new(FdbcliConfig::new(
        format!("{BIN}/7.4/fdbcli"),
        fixture.cluster_file.clone(),
    ))
    .with_runner(Arc::new(fixture.tools.clone()));
    assert!(matches!(
        missing.status().await,
        Err(AdminError::Spawn { .. })
    ));
}

#[tokio::test]
async fn every_run_is_a_client_for_ten_seconds_in_its_log_group() {
    let (fixture, client) = configured().await;
    let clients = client.connected_clients().await.unwrap();
    assert!(
        clients
            .iter()
            .any(|c| c.log_group == "fdb-kubernetes-operator" && c.version == v("7.1.57")),
        "{clients:?}"
    );
    fixture.exec("7.1", "status json").await;
    let clients = fixture.fdb.render_status_json();
    let groups = clients
        .pointer("/cluster/clients/supported_versions/0/connected_clients")
        .unwrap()
        .to_string();
    assert!(groups.contains("\"default\""), "{groups}");
    fixture.clock.advance_seconds(11);
    let status = fixture.fdb.render_status_json();
    assert_eq!(
        status.pointer("/cluster/clients/count"),
        Some(&serde_json::json!(0))
    );
}

#[tokio::test]
async fn backup_and_restore_command_lines_round_trip() {
    use fdb_operator::fdb::{BackupModify, BackupStart};
    let (fixture, client) = configured().await;
    let start = BackupStart {
        tag: "default".into(),
        url: "blobstore://a@b:443/c?bucket=fdb-backups".into(),
        snapshot_period_seconds: 3600,
        encryption_key_path: None,
    };
    client.start_backup(&start).await.unwrap();
    let status = client.backup_status("default").await.unwrap();
    assert_eq!(status, {
        let text = fixture.fdb.backup_status_text("default");
        fdb_shared::status_json::BackupStatus::parse_output(&text).unwrap()
    });
    // A second start on the tag: fdbbackup's refusal, exit 1.
    let error = client.start_backup(&start).await.unwrap_err();
    assert!(
        matches!(&error, AdminError::Failed { stderr, .. } if stderr.contains("already running")),
        "{error:?}"
    );
    let modify = BackupModify {
        tag: "default".into(),
        url: None,
        snapshot_period_seconds: Some(60),
        encryption_key_path: None,
    };
    client.modify_backup(&modify).await.unwrap();
    client.set_backups_paused(true).await.unwrap();
    client.set_backups_paused(false).await.unwrap();
    client.discontinue_backup("default").await.unwrap();
    assert_eq!(client.restore_status().await.unwrap().state, None);
    let actions: Vec<String> = fixture
        .log
        .events()
        .iter()
        .map(|e| e.action.clone())
        .collect();
    for action in [
        "backup-start",
        "backup-modify",
        "backup-pause",
        "backup-resume",
        "backup-discontinue",
    ] {
        assert!(
            actions.iter().any(|a| a == action),
            "{action} in {actions:?}"
        );
    }
}

#[tokio::test]
async fn a_blocking_exclude_waits_to_its_timeout_and_restore_and_delete_lines_round_trip() {
    use fdb_operator::fdb::RestoreStart;
    use fdb_operator::fdb::backup::KeyRange;
    let (fixture, client) = configured().await;
    // The data of storage-3 has to move first: fdbcli waits, then gives up at its
    // timeout; the exclusion itself is in place.
    let target = ExclusionTarget::instance_id("storage-3").unwrap();
    let error = client
        .exclude(std::slice::from_ref(&target), true)
        .await
        .unwrap_err();
    assert!(matches!(error, AdminError::Timeout { .. }), "{error:?}");
    assert!(
        fixture
            .fdb
            .snapshot()
            .excluded
            .contains(&target.to_string())
    );
    let restore = RestoreStart {
        url: "blobstore://a@b:443/none?bucket=fdb-backups".into(),
        key_ranges: vec![KeyRange::parse("a", "b").unwrap()],
        version: None,
        encryption_key_path: None,
        custom_parameters: Vec::new(),
    };
    // No backup there: fdbrestore's refusal comes back as a failed command.
    let error = client.start_restore(&restore).await.unwrap_err();
    assert!(matches!(error, AdminError::Failed { .. }), "{error:?}");
    let deleted = client
        .delete_backup_data("blobstore://a@b:443/none?bucket=fdb-backups")
        .await;
    let actions: Vec<String> = fixture
        .log
        .events()
        .iter()
        .map(|e| e.action.clone())
        .collect();
    assert!(actions.iter().any(|a| a == "restore-start"), "{actions:?}");
    assert!(
        actions.iter().any(|a| a == "backup-delete"),
        "{actions:?} {deleted:?}"
    );
}

/// How a cluster file reaches the database: forwards, remote contents, refusals.
mod reach;

#[tokio::test]
async fn status_minimal_is_one_line_of_availability() {
    let fixture = Fixture::new("7.1.57");
    // Not configured yet: no database to be available.
    let printed = fixture.exec("7.1", "status minimal").await;
    assert!(
        printed
            .stdout
            .contains("The database is unavailable; type `status' for more information."),
        "{printed:?}"
    );
    let (fixture, _) = configured().await;
    let printed = fixture.exec("7.1", "status minimal").await;
    assert_eq!(
        (printed.code, printed.stdout.as_str()),
        (0, "The database is available.\n")
    );
    let printed = fixture.exec("7.1", "status details").await;
    assert_eq!(printed.code, 1, "{printed:?}");
}

/// A fleet's databases behind one set of tools: each run reaches the one its cluster
/// file names.
mod routes;

/// `fdbbackup describe` and `expire` as a user runs them.
mod expiry;
