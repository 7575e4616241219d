//! The upgrade's kill refused while coordinators kept out of it would hold the old
//! version's quorum (issue 25, "upgrading a cluster and no coordinator is restarted").

use super::*;
use k8s_openapi::api::core::v1::Pod;

const GROUPS: [&str; 4] = ["log-1", "log-2", "log-3", "storage-1"];

/// Every group staged and reporting (10.0.0.1-4), the coordinators on log-1..log-3,
/// with `buggify.ignoreDuringRestart` naming `ignored`.
fn decide_with_ignored(ignored: &str) -> UpgradeBounce {
    let base = upgrading(&format!(
        "{{version: 7.3.43, buggify: {{ignoreDuringRestart: [{ignored}]}}}}"
    ))
    .connection_string("sample:abc@10.0.0.1:4501,10.0.0.2:4501,10.0.0.3:4501")
    .groups(GROUPS.map(group));
    let pods: Vec<Pod> = GROUPS
        .iter()
        .enumerate()
        .map(|(n, id)| {
            let ip = format!("10.0.0.{}", n + 1);
            let hash = desired_hash(&base, id);
            staged_pod(&format!("sample-{id}"), id, &ip, SIDECAR_73, Some(&hash))
        })
        .collect();
    let snapshot = base.pods(pods).database(reporting(&GROUPS)).build();
    decide_bounce(&snapshot).unwrap()
}

#[test]
fn the_kill_is_refused_while_no_majority_of_the_coordinators_would_restart() {
    let decision = decide_with_ignored("log-1, log-2, log-3");
    let UpgradeBounce::Wait(UpgradeWait::QuorumKept(kept)) = decision else {
        panic!("the kill must be refused: {decision:?}");
    };
    assert_eq!(
        kept.kept,
        [
            "log-1 (10.0.0.1:4501)",
            "log-2 (10.0.0.2:4501)",
            "log-3 (10.0.0.3:4501)"
        ]
    );
    assert_eq!((kept.restarted, kept.total), (0, 3));
    let text = kept.to_string();
    assert!(
        text.contains("ignoreDuringRestart: log-1 (10.0.0.1:4501)"),
        "{text}"
    );
    // One coordinator restarted of three is no majority either.
    let decision = decide_with_ignored("log-2, log-3");
    let UpgradeBounce::Wait(UpgradeWait::QuorumKept(kept)) = decision else {
        panic!("the kill must be refused: {decision:?}");
    };
    assert_eq!((kept.restarted, kept.total), (1, 3));
}

#[test]
fn the_kill_goes_on_when_a_majority_of_the_coordinators_restarts() {
    let decision = decide_with_ignored("log-1, storage-1");
    let UpgradeBounce::KillAll { addresses, .. } = decision else {
        panic!("must kill: {decision:?}");
    };
    let listed: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    assert_eq!(listed, ["10.0.0.2:4501", "10.0.0.3:4501"]);
}
