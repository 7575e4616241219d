//! `recover-multi-region-cluster` against a served simulated world that lost a majority
//! of its coordinators for good (`scenarios/lost-coordinator-majority.yaml`): the
//! database stays down until the user runs the command, then comes back in the
//! surviving datacenter, losing only what that datacenter lacked, and the operator
//! reconciles. The world runs 20 times faster than the wall clock, so the restarted
//! processes come back while the plugin retries its forced recovery, as they do in a
//! real cluster (the Go command waits a minute for them).

// Test-only: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use serde_json::Value;
use support::*;

const SCENARIO: &str = include_str!("scenarios/lost-coordinator-majority.yaml");

fn dc2(world: &World) -> Value {
    world.get(
        "/apis/apps.foundationdb.org/v1beta2/namespaces/default/foundationdbclusters/test-cluster-dc2",
    )
}

#[test]
fn a_lost_coordinator_majority_comes_back_in_the_surviving_datacenter() {
    let world = World::serve(SCENARIO, 20.0);
    // 900 s after the loss the database is still down: nothing recovers it alone.
    let before = dc2(&world);
    assert_ne!(
        before["status"]["health"]["available"],
        Value::Bool(true),
        "{}",
        before["status"]
    );
    let ran = world.plugin(&[
        "recover-multi-region-cluster",
        "--wait=false",
        "test-cluster-dc2",
    ]);
    let (out, err) = (stdout(&ran), stderr(&ran));
    assert_eq!(ran.status.code(), Some(0), "{out}\n{err}");
    eprintln!("{out}");
    assert!(out.contains("Forced the recovery into dc2"), "{out}");
    // Triple redundancy in one region: five coordinators, dc2's three survivors and two
    // new ones holding a copy of the coordinated state.
    assert_eq!(
        out.matches("coordination files copied to").count(),
        2,
        "{out}"
    );
    world.eventually(
        "dc2's database is available and its cluster reconciled",
        |w| {
            let cluster = dc2(w);
            cluster["status"]["health"]["available"] == Value::Bool(true)
                && cluster["spec"]["skip"] != Value::Bool(true)
                && cluster["status"]["generations"]["reconciled"]
                    == cluster["metadata"]["generation"]
        },
    );
    // Once the database answers, the command refuses and changes nothing.
    let again = world.plugin(&[
        "recover-multi-region-cluster",
        "--wait=false",
        "test-cluster-dc2",
    ]);
    assert_eq!(again.status.code(), Some(1), "{}", stdout(&again));
    assert!(
        stderr(&again).contains("cluster is available, will abort any further actions"),
        "{}",
        stderr(&again)
    );
    let result = world.stop();
    // The world as it was when serving stopped.
    let fdb = &result.steps.last().unwrap().fdb;
    let forced = fdb["forcedRecoveries"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(forced.len(), 1, "{}", fdb);
    assert_eq!(forced[0]["dataCenter"], "dc2");
    // What dc2 lacked: at most the one write its log routers were behind by.
    assert!(
        forced[0]["lostWrites"].as_u64().unwrap() <= 1,
        "{}",
        forced[0]
    );
    assert_eq!(
        fdb["configuration"]["usable_regions"], 1,
        "{}",
        fdb["configuration"]
    );
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
}
