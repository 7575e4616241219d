//! The global operator lock (issue 10): with locks in use, an operator whose lock ID is
//! on the deny list changes nothing in the database until `allow: true` removes it.

use fdb_e2e_tests::run_file;
use fdb_simulation::result::{EventSource, SimulationResult};

/// `(step, detail)` of every `fdb` event of `action`.
fn admin_events<'a>(result: &'a SimulationResult, action: &str) -> Vec<(usize, &'a str)> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == action)
        .map(|e| (e.step, e.detail.as_str()))
        .collect()
}

#[test]
fn a_denied_lock_id_cannot_configure_the_database_until_allowed_again() {
    let result = run_file("locks/denied-lock-id.yaml", None);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let configures = admin_events(&result, "configure");
    assert_eq!(configures.len(), 2, "{configures:?}");
    assert!(
        configures[0].1.starts_with("configure new"),
        "{configures:?}"
    );
    // The change waited for the whole denial (steps 2-5) and went through after allow.
    assert_eq!(configures[1].0, 6, "{configures:?}");
    assert!(configures[1].1.contains("logs=4"), "{configures:?}");
    let denied = &result.steps[4];
    assert_eq!(denied.fdb["configuration"]["logs"], 3);
    // The status shows the database's deny list, as the Go operator reports it.
    assert_eq!(
        denied.cluster["status"]["locks"]["lockDenyList"],
        serde_json::json!(["dc1"])
    );
    assert_eq!(
        denied.cluster["status"]["generations"]["needsConfigurationChange"],
        2
    );
    let lock_commands: Vec<&str> = admin_events(&result, "lock")
        .into_iter()
        .map(|(_, detail)| detail)
        .collect();
    assert_eq!(lock_commands[0], "deny list +[dc1] -[]");
    assert_eq!(lock_commands[1], "deny list +[] -[dc1]");
    // No lock was taken while denied.
    assert!(
        admin_events(&result, "lock")
            .iter()
            .all(|(step, detail)| !detail.starts_with("lock dc1") || *step == 6)
    );
    let last = result.steps.last().unwrap();
    assert_eq!(last.fdb["configuration"]["logs"], 4);
    // Allowed again: the database's deny list is empty, and so is the status's.
    assert!(
        last.cluster["status"]["locks"]["lockDenyList"].is_null(),
        "{}",
        last.cluster["status"]
    );
}

#[test]
fn a_locked_upgrade_agrees_through_the_pending_list_and_kills_once() {
    let result = run_file("locks/locked-upgrade.yaml", None);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let kills = admin_events(&result, "kill");
    assert_eq!(kills.len(), 1, "{kills:?}");
    // Every process of the database, at once.
    assert_eq!(
        kills[0].1.split_whitespace().count(),
        1 + 17,
        "{}",
        kills[0].1
    );
    let pending = admin_events(&result, "pending-upgrades");
    let kill_at = result
        .events
        .iter()
        .position(|e| e.action == "kill")
        .unwrap();
    let added_at = result
        .events
        .iter()
        .position(|e| e.action == "pending-upgrades" && e.detail.starts_with("upgrades +["))
        .expect("the groups were added to the pending-upgrade list");
    assert!(added_at < kill_at, "{pending:?}");
    let added = &result.events[added_at].detail;
    assert_eq!(added.matches("7.3.43/dc1-").count(), 17, "{added}");
    // The kill's instance cleared the list once the database was back.
    assert_eq!(pending.len(), 2, "{pending:?}");
    assert_eq!(pending[1].1, "clearrange upgrades/", "{pending:?}");
    let cleared_at = result
        .events
        .iter()
        .position(|e| e.detail == "clearrange upgrades/")
        .unwrap();
    assert!(cleared_at > kill_at);
    // The lock was taken before the list was written.
    let locked_at = result
        .events
        .iter()
        .position(|e| e.action == "lock" && e.detail.starts_with("lock dc1"))
        .unwrap();
    assert!(locked_at < added_at);
    let last = result.steps.last().unwrap();
    assert_eq!(last.fdb["pendingUpgrades"], serde_json::json!([]));
    let processes = last.fdb["processes"].as_array().unwrap();
    assert!(
        processes.iter().all(|p| p["version"] == "7.3.43"),
        "{processes:?}"
    );
}

#[test]
fn a_crash_right_after_the_locked_kill_neither_kills_again_nor_blocks() {
    let result = run_file("locks/locked-upgrade-crash.yaml", None);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    assert!(
        result
            .events
            .iter()
            .any(|e| e.detail.contains("crashed right after its action"))
    );
    let kills = admin_events(&result, "kill");
    assert_eq!(kills.len(), 1, "{kills:?}");
    let last = result.steps.last().unwrap();
    let processes = last.fdb["processes"].as_array().unwrap();
    assert!(
        processes.iter().all(|p| p["version"] == "7.3.43"),
        "{processes:?}"
    );
    // The list was never cleared (the crash came first); its entries name the target
    // the database now runs, and nothing waited on them.
    let left = last.fdb["pendingUpgrades"].as_array().unwrap();
    assert_eq!(left.len(), 17, "{left:?}");
    assert!(
        left.iter()
            .all(|e| e.as_str().unwrap().starts_with("7.3.43/dc1-"))
    );
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
}

#[test]
fn an_instance_waiting_for_pods_gives_the_lock_up_for_the_others() {
    // FoundationDB/fdb-kubernetes-operator#2524: kc1 (lock for an hour) waits for a pod
    // that cannot be scheduled; kc2's exclusion must not wait for kc1's lock to expire.
    let result = run_file("locks/release-while-pods-wait.yaml", None);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let locks: Vec<(usize, &str)> = admin_events(&result, "lock");
    // kc1 released its lock (written back expired) before kc2 took one, and kc2 took it
    // while kc1 was still not reconciled (its pod pending, steps 7-10).
    let kc2_took = locks
        .iter()
        .position(|(_, detail)| detail.starts_with("lock kc2"))
        .expect("kc2 took the lock");
    assert!((7..=9).contains(&locks[kc2_took].0), "{locks:?}");
    let expiry = |detail: &str| -> Option<(i64, i64)> {
        let range = detail.split_whitespace().nth(2)?;
        let (start, end) = range.split_once("..")?;
        Some((start.parse().ok()?, end.parse().ok()?))
    };
    let kc1_last = locks[..kc2_took]
        .iter()
        .rev()
        .find(|(_, detail)| detail.starts_with("lock kc1"))
        .and_then(|(_, detail)| expiry(detail))
        .expect("kc1 wrote the lock before kc2");
    let (kc2_start, _) = expiry(locks[kc2_took].1).unwrap();
    assert!(kc1_last.1 <= kc2_start, "kc1 still held it: {locks:?}");
    assert!(
        kc1_last.1 - kc1_last.0 < 3600,
        "kc1's last write is a release, not a one-hour take: {locks:?}"
    );
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
}
