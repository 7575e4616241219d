//! `simulate --serve --external-operator --fdb-tools-dir DIR`: the stand-in tools reach
//! the served world's database through the cluster file, run what they support and
//! refuse the rest, saying so; their arguments never pass through a shell.

use std::path::Path;
use std::process::{Command, Output};

use super::serve::Served;
use super::serve_external::scenario_without_steps;

fn tool(path: &Path, args: &[&str]) -> Output {
    Command::new(path)
        .args(args)
        .env_remove("FDB_CLUSTER_FILE")
        .output()
        .unwrap()
}

#[test]
fn stand_in_tools_reach_the_served_database_through_the_cluster_file() {
    let scenarios = tempfile::tempdir().unwrap();
    let scenario = scenario_without_steps(scenarios.path());
    let tools = scenarios.path().join("tools");
    let served = Served::start_with(
        &scenario,
        &[
            "--external-operator",
            "--fdb-tools-dir",
            tools.to_str().unwrap(),
        ],
    );
    for minor in ["7.1", "7.3", "7.4"] {
        for name in ["fdbcli", "fdbbackup", "fdbrestore"] {
            assert!(tools.join(minor).join(name).is_file(), "{minor}/{name}");
        }
    }
    let fdbcli = tools.join("7.1").join("fdbcli");
    let cluster_file = scenarios.path().join("fdb.cluster");
    std::fs::write(&cluster_file, "sample:abc123@127.0.0.1:4501\n").unwrap();
    let cluster = cluster_file.to_str().unwrap();

    let status = tool(
        &fdbcli,
        &["-C", cluster, "--timeout", "10", "--exec", "status json"],
    );
    assert_eq!(status.status.code(), Some(0), "{status:?}");
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert!(json.get("cluster").is_some(), "{json}");

    // Not supported yet: refused whole, nothing run, exit 1, saying so.
    let marker = scenarios.path().join("ran");
    let text = format!(
        "status json; configure new double ssd $(touch {})",
        marker.display()
    );
    let refused = tool(&fdbcli, &["-C", cluster, "--exec", &text]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("not supported by the stand-in yet"),
        "{refused:?}"
    );
    assert!(refused.stdout.is_empty(), "nothing ran: {refused:?}");
    assert!(!marker.exists(), "an argument went through a shell");
    let backup = tool(
        &tools.join("7.1").join("fdbbackup"),
        &["status", "-C", cluster],
    );
    assert_eq!(backup.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&backup.stderr).contains("not supported by the stand-in yet"));

    // As the real tools: no cluster file, no database.
    let without = tool(&fdbcli, &["--exec", "status json"]);
    assert_eq!(without.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&without.stderr).contains("no cluster file"));
    let missing = tool(
        &fdbcli,
        &["-C", "/nonexistent/fdb.cluster", "--exec", "status json"],
    );
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("unable to read the cluster file"));

    let (code, result) = served.stop();
    assert_eq!(code, Some(0), "{}", result["violations"]);
}
