//! The served world's stand-in tools over a fleet (`simulate --serve
//! --external-operator` with `fleet:`): each run reaches the database the cluster file
//! it was given names, and a connection string of no database reaches none.

use std::collections::BTreeSet;

use super::*;
use crate::fdbcli::RoutedTools;
use crate::serve::tools::{ServedTools, ToolRequest, run_tool};

const OTHER: &str = "other:second2@127.0.1.11:4501,127.0.1.12:4501,127.0.1.13:4501";

/// A second database of 8 processes on 7.1.57, named `other`, on other hosts.
fn other_database(clock: &VirtualClock) -> SimulatedFdb {
    let shared: Arc<dyn Clock> = Arc::new(clock.clone());
    let fdb = SimulatedFdb::new(shared, SimFdbSettings::default());
    let classes = [
        (ProcessClass::Log, 3),
        (ProcessClass::Storage, 3),
        (ProcessClass::Stateless, 2),
    ];
    for (class, count) in classes {
        for n in 1..=count {
            let mut process = launch(class, n, "7.1.57");
            process.address.host = process.address.host.replacen("127.0.0.", "127.0.1.", 1);
            process.cluster_file_contents = format!("{OTHER}\n");
            process.pod = process.pod.replacen("sample-", "other-", 1);
            fdb.start_process(process);
        }
    }
    fdb
}

fn request(line: &str, cluster_file: &str) -> ToolRequest {
    ToolRequest {
        tool: "fdbcli".to_owned(),
        version: "7.1".to_owned(),
        args: [
            "-C",
            "/operator/fdb.cluster",
            "--timeout",
            "10",
            "--exec",
            line,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect(),
        env: BTreeMap::new(),
        cluster_file: Some(cluster_file.to_owned()),
    }
}

#[tokio::test]
async fn each_members_cluster_file_reaches_its_own_database() {
    let fixture = Fixture::new("7.1.57");
    let other = other_database(&fixture.clock);
    let other_tools = SimulatedTools::new(
        Arc::new(other.clone()),
        other.clone(),
        ["7.1".to_owned()],
        BIN,
    );
    let served = ServedTools {
        tools: RoutedTools::new(fixture.tools.clone(), vec![other_tools]),
        minors: BTreeSet::from(["7.1".to_owned()]),
        turn: Arc::default(),
    };
    let first_file = format!("{CONNECTION}\n");
    let other_file = format!("{OTHER}\n");

    let configured = run_tool(&served, &request("configure new single ssd", &other_file)).await;
    assert_eq!(configured.exit_code, 0, "{configured:?}");
    assert!(other.snapshot().configured, "the member's database");
    assert!(!fixture.fdb.snapshot().configured, "not the first's");

    let configured = run_tool(&served, &request("configure new double ssd", &first_file)).await;
    assert_eq!(configured.exit_code, 0, "{configured:?}");
    fixture.clock.advance_seconds(10);
    let mode = |fdb: &SimulatedFdb| {
        fdb.snapshot()
            .configuration
            .map(|c| c.redundancy_mode)
            .unwrap()
    };
    assert_eq!(mode(&fixture.fdb), Some(RedundancyMode::Double));
    assert_eq!(mode(&other), Some(RedundancyMode::Single));

    // `status json` through each file describes that database.
    for (file, description) in [(&first_file, "sample:"), (&other_file, "other:")] {
        let status = run_tool(&served, &request("status json", file)).await;
        assert_eq!(status.exit_code, 0, "{status:?}");
        let json: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
        let connection = json
            .pointer("/cluster/connection_string")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        assert!(connection.starts_with(description), "{connection}");
    }

    // A connection string of no database of the world reaches none: the real fdbcli
    // waits for coordinators that never answer, it never falls back to another.
    let unknown = "third:third3@127.0.2.11:4501\n";
    let excluded = run_tool(&served, &request("exclude 127.0.0.21:4501", unknown)).await;
    assert_eq!(excluded.exit_code, 1, "{excluded:?}");
    assert!(excluded.stderr.contains("timeout reached"), "{excluded:?}");
    assert!(fixture.fdb.snapshot().excluded.is_empty());
    assert!(other.snapshot().excluded.is_empty());
}
