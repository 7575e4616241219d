//! Several operator instances on one database (issues 10 item 5 and 11 item 4): two
//! FoundationDBClusters (`kc1`, `kc2`, locks on through `faultDomain.zoneCount`) share
//! one database, each with its own operator instance. The world's `lock-not-held`
//! invariant judges that every admin write comes from the instance the database's lock
//! key names.

use fdb_e2e_tests::{run_file, violated};
use fdb_simulation::result::{Event, EventSource, SimulationResult};

/// The admin commands (`fdb` events) of `action`.
fn admin<'a>(result: &'a SimulationResult, action: &str) -> Vec<&'a Event> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == action)
        .collect()
}

fn issuer(event: &Event) -> &str {
    event.issuer.as_deref().unwrap_or_default()
}

/// Both clusters shrink by one storage group: one exclusion serves both instances (the
/// exclusion lists, docs/ha.md "Exclusions across instances"), each instance includes
/// its own group again, and every admin write comes from the lock's holder (the world's
/// `lock-not-held`).
#[test]
fn a_shrink_of_both_clusters_is_excluded_once_and_included_by_each_instance_under_the_lock() {
    let result = run_file("multi/shrink-both.yaml", None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    let excludes = admin(&result, "exclude");
    let includes = admin(&result, "include");
    // One command excluded both instances' storage groups.
    assert_eq!(excludes.len(), 1, "{excludes:?}");
    for group in ["kc1-storage-", "kc2-storage-"] {
        assert!(excludes[0].detail.contains(group), "{excludes:?}");
    }
    // Each instance included its own storage group again.
    for (cluster, group) in [("kc1", "kc1-storage-"), ("kc2", "kc2-storage-")] {
        assert!(
            includes
                .iter()
                .any(|e| issuer(e) == cluster && e.detail.contains(group)),
            "{includes:?}"
        );
    }
    // The excluding instance took the lock (under its own ID) before it excluded.
    let excluder = issuer(excludes[0]).to_owned();
    let locked = result
        .events
        .iter()
        .position(|e| e.action == "lock" && e.detail.starts_with(&format!("lock {excluder} ")))
        .expect("the lock was taken");
    let excluded = result
        .events
        .iter()
        .position(|e| e.action == "exclude")
        .unwrap();
    assert!(locked < excluded, "{excluder}");
    // The first instance done gave the lock up (written back expired) before the other
    // took it, rather than keeping it its full 10 minutes.
    let lock_events: Vec<&Event> = admin(&result, "lock")
        .into_iter()
        .filter(|e| e.detail.starts_with("lock "))
        .collect();
    let first = issuer(lock_events[0]).to_owned();
    let other_at = lock_events
        .iter()
        .position(|e| issuer(e) != first)
        .expect("the other instance took the lock");
    let given_up = lock_events[..other_at].iter().any(|e| {
        let span = e.detail.split_whitespace().nth(2).unwrap_or_default();
        let (start, end) = span.split_once("..").unwrap();
        end.parse::<i64>().unwrap() - start.parse::<i64>().unwrap() < 600
    });
    assert!(given_up, "{lock_events:?}");
    let last = result.steps.last().unwrap();
    let storage = last.fdb["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["class"] == "storage")
        .count();
    assert_eq!(storage, 3 + 2);
    assert_eq!(last.fdb["excluded"], serde_json::json!([]));
}

#[test]
fn an_instance_ignoring_the_lock_is_caught_and_the_holder_is_not() {
    let result = run_file("multi/ignore-lock.yaml", None);
    assert_eq!(
        violated(&result),
        ["lock-not-held"],
        "{:#?}",
        result.violations
    );
    let caught = result
        .violations
        .iter()
        .find(|v| v.invariant == "lock-not-held")
        .unwrap();
    assert!(caught.detail.contains("kc2"), "{}", caught.detail);
    assert!(
        caught.detail.contains("\"kc1\" held the operator lock"),
        "{}",
        caught.detail
    );
    // The same kill by the instance holding the lock is no violation of the lock.
    let counterpart = run_file("multi/holder-acts.yaml", None);
    assert!(
        counterpart.violations.is_empty(),
        "{:#?}",
        counterpart.violations
    );
    let kill = admin(&counterpart, "kill");
    assert_eq!(kill.len(), 1, "{kill:?}");
    assert_eq!(issuer(kill[0]), "kc1");
}

#[test]
fn an_upgrade_of_both_clusters_kills_once_after_both_instances_agreed() {
    let result = run_file("multi/upgrade-both.yaml", None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    let kills = admin(&result, "kill");
    assert_eq!(kills.len(), 1, "{kills:?}");
    let kill_at = result
        .events
        .iter()
        .position(|e| e.action == "kill")
        .unwrap();
    // Both instances added their groups to the pending-upgrade list before the kill.
    for cluster in ["kc1", "kc2"] {
        let added = result.events[..kill_at].iter().any(|e| {
            e.action == "pending-upgrades"
                && issuer(e) == cluster
                && e.detail.contains(&format!("7.3.43/{cluster}-storage-1"))
        });
        assert!(added, "{cluster} did not add its groups before the kill");
    }
    // One kill of every process of the database (both clusters: 11 + 7).
    let killed = kills[0].detail.split_whitespace().count() - 1;
    assert_eq!(killed, 18, "{}", kills[0].detail);
    let last = result.steps.last().unwrap();
    let processes = last.fdb["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 18);
    assert!(
        processes.iter().all(|p| p["version"] == "7.3.43"),
        "{processes:?}"
    );
    assert_eq!(last.fdb["pendingUpgrades"], serde_json::json!([]));
}
