//! How a tool's cluster file reaches the database (a former coordinator's forward, the
//! contents a served stand-in sends), and the refusals of `exclude`.

use super::*;

#[tokio::test]
async fn a_former_coordinator_forwards_an_old_cluster_file_until_its_disk_is_gone() {
    let (fixture, client) = configured().await;
    let coordinators: Vec<ProcessAddress> = [21, 22, 23]
        .iter()
        .map(|h| ProcessAddress::new(format!("127.0.0.{h}"), 4501))
        .collect();
    let moved = client.change_coordinators(&coordinators).await.unwrap();
    fixture.clock.advance_seconds(10);
    // Another operator instance still holds the first connection string.
    let stale = fixture._dir.path().join("other.cluster");
    let other = || {
        std::fs::write(&stale, format!("{CONNECTION}\n")).unwrap();
        FdbcliAdminClient::new(FdbcliConfig::new(
            format!("{BIN}/7.1/fdbcli"),
            stale.clone(),
        ))
        .with_runner(Arc::new(fixture.tools.clone()))
    };
    let status = other().status().await.unwrap();
    assert!(status.is_available(), "{status:?}");
    assert_eq!(status.cluster.connection_string.as_ref(), Some(&moved));
    // The client kept the new connection string in its cluster file.
    assert_eq!(
        std::fs::read_to_string(&stale).unwrap().trim(),
        moved.to_string()
    );
    // Only the key the forward was stored under is forwarded.
    std::fs::write(&stale, CONNECTION.replace("initial1", "unknown1") + "\n").unwrap();
    let unknown = FdbcliAdminClient::new(FdbcliConfig::new(
        format!("{BIN}/7.1/fdbcli"),
        stale.clone(),
    ))
    .with_runner(Arc::new(fixture.tools.clone()));
    assert!(unknown.status().await.unwrap().cluster.processes.is_empty());
    // The forward lives on the former coordinators' disks: gone with them.
    for host in 11..=13 {
        fixture
            .fdb
            .remove_process(&ProcessAddress::new(format!("127.0.0.{host}"), 4501));
    }
    let status = other().status().await.unwrap();
    assert!(status.cluster.processes.is_empty(), "{status:?}");
    assert_eq!(status.client.coordinators.quorum_reachable, Some(false));
}

#[tokio::test]
async fn exclude_refuses_too_little_free_space_unless_forced_and_warns_of_coordinators() {
    let storage = "locality_instance_id:storage-1 locality_instance_id:storage-2 locality_instance_id:storage-3";
    for (version, text) in [
        (
            "7.1.57",
            "ERROR: This exclude may cause the total free space in the cluster to drop below 10%.\nType `exclude FORCE <ADDRESS...>' to exclude without checking free space.\n",
        ),
        (
            "7.3.43",
            "ERROR: This exclude may cause the total available space in the cluster to drop below 10%.\nType `exclude FORCE failed <ADDRESS...>' to exclude without performing safety checks.\n",
        ),
    ] {
        let fixture = Fixture::new(version);
        let minor = &version[..3];
        fixture
            .client(minor)
            .configure(&double_ssd(), true)
            .await
            .unwrap();
        fixture.clock.advance_seconds(10);
        // Every storage server excluded: refused, nothing excluded.
        let printed = fixture
            .exec(minor, &format!("exclude no_wait {storage}"))
            .await;
        assert_eq!(
            (printed.code, printed.stderr.as_str()),
            (1, text),
            "{version}"
        );
        assert!(fixture.fdb.snapshot().excluded.is_empty(), "{version}");
        // FORCE skips the check.
        let printed = fixture
            .exec(minor, &format!("exclude FORCE no_wait {storage}"))
            .await;
        assert_eq!(printed.code, 0, "{printed:?}");
        assert_eq!(fixture.fdb.snapshot().excluded.len(), 3, "{version}");
    }
    // A coordinator excluded: a warning on stderr, exit 0.
    let (fixture, _) = configured().await;
    let printed = fixture.exec("7.1", "exclude no_wait 127.0.0.11:4501").await;
    assert_eq!(printed.code, 0, "{printed:?}");
    assert_eq!(
        printed.stderr,
        "WARNING: 127.0.0.11:4501 is a coordinator!\n"
    );
    assert!(
        printed.stdout.contains("Type `help coordinators'"),
        "{printed:?}"
    );
}

/// A served world's stand-in sends the cluster file's contents: the path in its
/// arguments is shown, never opened here, and a coordinators change comes back as the
/// file's new contents for the stand-in to write, the path left alone.
#[tokio::test]
async fn a_remote_tool_reaches_the_database_through_the_contents_it_sent() {
    let fixture = Fixture::new("7.1.57");
    let elsewhere = "/nonexistent/operator/sample.cluster";
    let args = |line: &str| -> Vec<String> {
        ["-C", elsewhere, "--timeout", "10", "--exec", line]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    };
    let run = |line: &str, contents: Option<&str>| {
        let args = args(line);
        let contents = contents.map(str::to_owned);
        let tools = fixture.tools.clone();
        async move {
            tools
                .run_remote_tool(
                    fdb_operator::fdb::FdbTool::Fdbcli,
                    v("7.1.57"),
                    &args,
                    "default",
                    contents.as_deref(),
                )
                .await
        }
    };
    let contents = format!("{CONNECTION}\n");
    let configured = run("configure new double ssd", Some(&contents)).await;
    assert_eq!(configured.printed.code, 0, "{configured:?}");
    assert!(configured.new_cluster_file.is_none());
    fixture.clock.advance_seconds(10);

    let changed = run(
        "coordinators 127.0.0.21:4501 127.0.0.22:4501 127.0.0.23:4501",
        Some(&contents),
    )
    .await;
    assert_eq!(changed.printed.stdout, "Coordination state changed\n");
    let new_file = changed.new_cluster_file.unwrap();
    assert!(new_file.contains("127.0.0.21:4501"), "{new_file}");
    assert!(!std::path::Path::new(elsewhere).exists());

    // Another database's name reaches nothing, as a real fdbcli waits to its timeout.
    let other = contents.replacen("sample:", "other:", 1);
    let unreached = run("exclude 127.0.0.21:4501", Some(&other)).await;
    assert_eq!(unreached.printed.code, 1);
    assert!(
        unreached.printed.stderr.contains("timeout reached"),
        "{unreached:?}"
    );
    let unknown = run("nonsense", Some(&new_file)).await;
    assert_eq!(unknown.printed.code, 1);
    assert_eq!(
        unknown.printed.stderr,
        "ERROR: Unknown command `nonsense'. Try `help'?\n"
    );
    let none = run("status json", None).await;
    assert_eq!(none.printed.code, 1);
    assert!(none.printed.stderr.contains("1515"), "{none:?}");
}

/// `storageMetricsMissing`: a storage role without its metrics in `status json`, and
/// every exclusion refused as each version's fdbcli prints it (even of a process that
/// serves no storage), until the metrics are back; FORCE skips the check.
#[tokio::test]
async fn exclude_refuses_while_a_storage_server_reports_no_metrics() {
    let tail_71 = "Please try the exclude again in 30 seconds.\nType `exclude FORCE <ADDRESS...>' to exclude without checking free space.\n";
    let tail_73 = "Please try the exclude again in 30 seconds.\nType `exclude FORCE failed <ADDRESS...>' to exclude without performing safety checks.\n";
    let tail_74 = "Please try the exclude again in 30 seconds.\nCall set(\"0xff0xff/management/options/exclude/force\", ...) first to exclude without checking available space.\nType `exclude FORCE failed <ADDRESS...>' to exclude without performing safety checks.\n";
    let free = "ERROR: Could not calculate the impact of this exclude on the total free space in the cluster.\n";
    let available = "ERROR: Could not calculate the impact of this exclude on the total available space in the cluster.\n";
    for (version, text) in [
        ("7.1.57", format!("{free}{tail_71}")),
        ("7.3.43", format!("{available}{tail_73}")),
        ("7.4.5", format!("{available}{tail_74}")),
    ] {
        let fixture = Fixture::new(version);
        let minor = &version[..3];
        let printed = fixture.exec(minor, "configure new double ssd").await;
        assert_eq!(printed.code, 0, "{printed:?}");
        fixture.clock.advance_seconds(10);
        fixture.fdb.set_storage_metrics_missing("storage-2", true);
        let status = fixture.fdb.render_status_json();
        let storage_roles: Vec<&serde_json::Value> = status["cluster"]["processes"]
            .as_object()
            .unwrap()
            .values()
            .filter(|p| p["locality"]["instance_id"] == "storage-2")
            .flat_map(|p| p["roles"].as_array().unwrap())
            .filter(|r| r["role"] == "storage")
            .collect();
        assert_eq!(storage_roles.len(), 1, "{version}");
        assert!(
            storage_roles[0].get("kvstore_used_bytes").is_none(),
            "{version}"
        );
        let printed = fixture
            .exec(minor, "exclude no_wait locality_instance_id:log-1")
            .await;
        assert_eq!(
            (printed.code, printed.stderr.as_str()),
            (1, text.as_str()),
            "{version}"
        );
        assert!(fixture.fdb.snapshot().excluded.is_empty(), "{version}");
        if minor != "7.4" {
            // The production client: a retryable failure, told apart as this refusal.
            let target = fdb_operator::fdb::ExclusionTarget::instance_id("log-1").unwrap();
            let error = fixture
                .client(minor)
                .exclude(&[target], false)
                .await
                .unwrap_err();
            assert!(error.is_transient(), "{error:?}");
            assert_eq!(
                error.exclude_refusal(),
                Some(fdb_operator::fdb::fdbcli::refusals::ExcludeRefusal::MetricsMissing),
                "{error:?}"
            );
        }
        let printed = fixture
            .exec(minor, "exclude FORCE no_wait locality_instance_id:log-1")
            .await;
        assert_eq!(printed.code, 0, "{version}: {printed:?}");
        // A log excluded: the recovery passes first.
        fixture.clock.advance_seconds(10);
        fixture.fdb.set_storage_metrics_missing("storage-2", false);
        let printed = fixture
            .exec(minor, "exclude no_wait locality_instance_id:log-2")
            .await;
        assert_eq!(printed.code, 0, "{version}: {printed:?}");
        assert_eq!(fixture.fdb.snapshot().excluded.len(), 2, "{version}");
    }
}

/// `force_recovery_with_data_loss` as fdbcli runs it: its usage line without exactly one
/// DCID, nothing printed and nothing changed while the database commits, the wait to
/// the timeout when no cluster controller can be elected.
#[tokio::test]
async fn force_recovery_prints_its_usage_does_nothing_on_a_committing_database_or_waits() {
    let (fixture, _client) = configured().await;
    let usage = fixture.exec("7.1", "force_recovery_with_data_loss").await;
    assert_eq!(usage.code, 1);
    assert_eq!(
        usage.stdout,
        "Usage: force_recovery_with_data_loss <DCID>\n"
    );
    let noop = fixture
        .exec("7.1", "force_recovery_with_data_loss dc1")
        .await;
    assert_eq!((noop.code, noop.stdout.as_str()), (0, ""), "{noop:?}");
    assert!(fixture.fdb.forced_recoveries().is_empty());
    for n in 11..=12 {
        fixture
            .fdb
            .stop_process(&ProcessAddress::new(format!("127.0.0.{n}"), 4501));
    }
    let waits = fixture
        .exec("7.1", "force_recovery_with_data_loss dc1")
        .await;
    assert_eq!(waits.code, 1);
    assert!(
        waits.stderr.contains("Specified timeout reached"),
        "{waits:?}"
    );
}
