//! What the tools print when they cannot finish: a database that does not answer (no
//! quorum, unavailable, or a protocol the tool does not speak) and a run that reached
//! its `--timeout`.
//!
//! fdbcli starts a status check with every line and prints it after 5 s
//! (`checkStatus(timeWarning(5.0, "\nWARNING: Long delay (Ctrl-C to interrupt)\n"))` in
//! `fdbcli/fdbcli.actor.cpp`), whose minimal form says `The database is unavailable;
//! type `status' for more information.` (`fdbcli/StatusCommand.actor.cpp`); at the
//! timeout `timeExit` prints `Specified timeout reached -- exiting...` and the exit code
//! is 1. fdbbackup and fdbrestore wait the same way, without a status line.

use serde_json::{Value, json};

use super::output::Printed;

/// Why a run stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The database did not answer: the run waited to its timeout.
    Unavailable,
    /// The command took longer than the timeout.
    TimedOut,
}

/// What fdbcli printed by the time it gave up.
pub fn hang_output(stop: Stop) -> Printed {
    let mut printed = Printed::failed(1, "\nWARNING: Long delay (Ctrl-C to interrupt)\n");
    if stop == Stop::Unavailable {
        printed.out("\nThe database is unavailable; type `status' for more information.\n\n");
    }
    printed.err("Specified timeout reached -- exiting...\n");
    printed
}

/// What fdbbackup/fdbrestore printed by the time they gave up.
pub fn tool_hang_output(stop: Stop) -> Printed {
    let mut printed = Printed::failed(1, "");
    if stop == Stop::Unavailable {
        printed.err("ERROR: The database is unavailable\n");
    }
    printed.err("Specified timeout reached -- exiting...\n");
    printed
}

/// `status json` of a client that reaches no coordinator it can talk to (a tool of
/// another protocol, a cluster file naming no coordinator of the database): the client
/// section alone, as `StatusClient::statusFetcher` (`fdbclient/StatusClient.actor.cpp`)
/// builds it when `coordinatorsFetcher` reaches no quorum (`quorum_not_reachable`) and
/// the cluster section is missing (`cluster.layers._valid` false).
pub fn unreachable_status(cluster_file: &str, coordinators: &[String], now: i64) -> Value {
    let coordinators: Vec<Value> = coordinators
        .iter()
        .map(|address| json!({"address": address, "reachable": false}))
        .collect();
    json!({
        "client": {
            "cluster_file": {"path": cluster_file, "up_to_date": true},
            "coordinators": {"coordinators": coordinators, "quorum_reachable": false},
            "database_status": {"available": false, "healthy": false},
            "messages": [
                {"name": "quorum_not_reachable", "description": "Unable to reach a quorum of coordinators."}
            ],
            "timestamp": now,
        },
        "cluster": {"layers": {"_valid": false}},
    })
}
