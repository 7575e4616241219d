//! `simulate --serve --external-operator --fdb-tools-dir DIR`: the stand-in tools reach
//! the served world's database through the cluster file's contents and answer as the
//! real tools of their version; their arguments never pass through a shell.

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

    // No database answers yet (nothing has created it): `status json` has the client
    // section alone, anything else waits to its timeout, as the real fdbcli does.
    let status = tool(
        &fdbcli,
        &["-C", cluster, "--timeout", "10", "--exec", "status json"],
    );
    assert_eq!(status.status.code(), Some(0), "{status:?}");
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(
        json.pointer("/client/coordinators/quorum_reachable"),
        Some(&serde_json::Value::Bool(false)),
        "{json}"
    );

    // Arguments never pass through a shell.
    let marker = scenarios.path().join("ran");
    let text = format!(
        "status json; configure new double ssd $(touch {})",
        marker.display()
    );
    let hung = tool(&fdbcli, &["-C", cluster, "--timeout", "5", "--exec", &text]);
    assert_eq!(hung.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&hung.stderr).contains("Specified timeout reached"),
        "{hung:?}"
    );
    assert!(!marker.exists(), "an argument went through a shell");
    let backup = tool(
        &tools.join("7.1").join("fdbbackup"),
        &["status", "-C", cluster],
    );
    assert_eq!(backup.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&backup.stderr).contains("ERROR: The database is unavailable"),
        "{backup:?}"
    );
    let usage = tool(&fdbcli, &["-C", cluster, "--exec", "status", "extra"]);
    assert_eq!(usage.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&usage.stderr).starts_with("Usage: fdbcli"));

    // As the real tools: no cluster file, no database.
    let without = tool(&fdbcli, &["--exec", "status json"]);
    assert_eq!(without.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&without.stderr).contains("1515 No cluster file found"),
        "{without:?}"
    );
    let missing = tool(
        &fdbcli,
        &["-C", "/nonexistent/fdb.cluster", "--exec", "status json"],
    );
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("unable to read the cluster file"));

    let (code, result) = served.stop();
    assert_eq!(code, Some(0), "{}", result["violations"]);
}
