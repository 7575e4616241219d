//! The upgrade's kill while the database is unavailable (issue 26, sweep seed 18).

use super::*;

/// Issue 26, seed 18: a process that restarted on the staged target (log-2, in
/// `incompatible_connections`) holds the database unavailable; the kill goes ahead
/// without waiting for availability, includes it, and does not count log-2 as missing.
/// Unavailable with nothing on the target, the kill waits.
#[test]
fn a_process_already_on_the_target_lets_the_kill_go_ahead_while_unavailable() {
    let base = upgrading("version: 7.3.43").groups([group("log-1"), group("log-2")]);
    let hash = desired_hash(&base, "log-1");
    let ready = base.pods([
        staged_pod("sample-log-1", "log-1", "10.0.0.1", SIDECAR_73, Some(&hash)),
        staged_pod("sample-log-2", "log-2", "10.0.0.2", SIDECAR_73, Some(&hash)),
    ]);
    let mut db = reporting(&["log-1"]);
    db.client.database_status.available = Some(false);
    let unavailable = ready.clone().database(db.clone()).build();
    assert!(matches!(
        decide_bounce(&unavailable).unwrap(),
        UpgradeBounce::Wait(UpgradeWait::Unsafe(Refusal::Unavailable))
    ));
    db.cluster.incompatible_connections = vec!["10.0.0.2:4501".parse().unwrap()];
    let split = ready.database(db).build();
    let UpgradeBounce::KillAll {
        addresses,
        while_unavailable,
        ..
    } = decide_bounce(&split).unwrap()
    else {
        panic!("must kill");
    };
    assert!(while_unavailable);
    let listed: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    assert_eq!(listed, ["10.0.0.1:4501", "10.0.0.2:4501"]);
}
