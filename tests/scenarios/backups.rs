//! Backups and restores (issue 13): the Go operator's backup sample on the quickstart
//! cluster, pause and resume, modify, stop, deletion with `deletionPolicy: stop`, a
//! restore into an emptied database, and a backup without agents. Every scenario states
//! its expected end with `expect` steps and must violate no invariant.

use fdb_e2e_tests::{run_file, run_without_operator, violated};
use fdb_simulation::result::{EventSource, SimulationResult};

fn assert_clean(result: &SimulationResult) {
    assert!(violated(result).is_empty(), "{:#?}", result.violations);
}

/// The admin commands of `action` (`backup-start`, `backup-modify`, ...), in order.
fn commands(result: &SimulationResult, action: &str) -> Vec<String> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == action)
        .map(|e| e.detail.clone())
        .collect()
}

#[test]
fn the_go_sample_runs_pauses_resumes_modifies_once_and_stops() {
    let result = run_file("backups/go-sample-lifecycle.yaml", None);
    assert_clean(&result);
    let running = &result.steps[1];
    let agents: Vec<&str> = running
        .pods
        .iter()
        .filter(|p| p.name.starts_with("test-cluster-backup-agents-"))
        .map(|p| p.phase.as_str())
        .collect();
    assert_eq!(agents, ["Running", "Running"]);
    let url =
        "blobstore://seaweedfs@seaweedfs:8333/test-cluster?bucket=fdb-backups&secure_connection=0";
    let snapshots = running.blob_store[url]["snapshots"].as_array().unwrap();
    assert_eq!(snapshots.len(), 1, "{:#?}", running.blob_store);
    assert_eq!(
        commands(&result, "backup-start"),
        [format!("fdbbackup start -d {url} -s 3600 -t default -z")]
    );
    assert_eq!(commands(&result, "backup-pause").len(), 1);
    assert_eq!(commands(&result, "backup-resume").len(), 1);
    assert_eq!(
        commands(&result, "backup-modify"),
        ["fdbbackup modify -t default -s 1800"]
    );
    assert_eq!(
        commands(&result, "backup-discontinue"),
        ["fdbbackup discontinue -t default"]
    );
    // Stopped: the blob store keeps what was written, and no snapshot follows.
    let end = result.steps.last().unwrap();
    let before = end.blob_store[url]["snapshots"].as_array().unwrap().len();
    assert!(before >= 2, "{:#?}", end.blob_store);
}

#[test]
fn deleting_a_backup_with_the_stop_policy_stops_it_first() {
    let result = run_file("backups/delete-with-stop-policy.yaml", None);
    assert_clean(&result);
    assert_eq!(
        commands(&result, "backup-discontinue"),
        [
            "fdbbackup discontinue -t default",
            "fdbbackup discontinue -t scratch"
        ]
    );
    // `cleanup` deleted the scratch backup's files; `stop` kept the nightly ones.
    assert_eq!(
        commands(&result, "backup-delete"),
        ["fdbbackup delete -d blobstore://backup@s3.example:443/scratch?bucket=backups"]
    );
    let end = result.steps.last().unwrap();
    let urls: Vec<&String> = end.blob_store.keys().collect();
    assert_eq!(
        urls,
        ["blobstore://backup@s3.example:443/nightly?bucket=backups"]
    );
    let discontinue = result
        .events
        .iter()
        .position(|e| e.action == "backup-discontinue")
        .expect("the backup was discontinued");
    let finalizer_removed = result
        .events
        .iter()
        .rposition(|e| e.target == "foundationdbbackup/nightly" && e.action == "patch")
        .expect("the finalizer was removed");
    assert!(discontinue < finalizer_removed, "{:#?}", result.events);
    let end = result.steps.last().unwrap();
    assert!(end.backups.is_empty(), "{:#?}", end.backups);
    assert!(
        !end.pods
            .iter()
            .any(|p| p.name.starts_with("nightly-backup-agents")),
        "the agents went with the backup"
    );
}

#[test]
fn a_restore_into_the_emptied_database_brings_back_the_backed_up_data() {
    let result = run_file("backups/restore-after-clear.yaml", None);
    assert_clean(&result);
    let digest = |index: usize| {
        result.steps[index].fdb["dataDigest"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // Steps: 4 advance, 5 clearData, 6 apply the restore, 7 expect.
    let before_clear = digest(4);
    assert_ne!(before_clear, "empty");
    assert_eq!(digest(5), "empty");
    let restored = digest(7);
    assert_ne!(restored, "empty");
    // The user wrote after the backup stopped: the restore brings back the backed-up
    // version, not what was there just before the clear.
    assert_ne!(restored, before_clear);
    let starts = commands(&result, "restore-start");
    assert_eq!(
        starts,
        ["fdbrestore start -r blobstore://backup@s3.example:443/sample?bucket=fdb-backups"]
    );
}

/// Field report #2496: a user's `fdbbackup expire` in an agent pod, refused without
/// `--force`, then deleting every snapshot; the operator leaves the backup running, and
/// the restore after the next snapshot brings the data back.
#[test]
fn a_user_s_expiry_of_every_snapshot_leaves_the_backup_running_until_the_next_one() {
    let result = run_file("backups/user-expiry.yaml", None);
    assert_clean(&result);
    let execs: Vec<String> = result
        .events
        .iter()
        .filter(|e| e.action == "exec")
        .map(|e| format!("{} -> {}", e.target, e.detail.lines().next().unwrap_or("")))
        .collect();
    assert_eq!(execs.len(), 4, "{execs:#?}");
    assert!(
        execs
            .iter()
            .all(|e| e.contains("pod/sample-backup-agents-")),
        "{execs:#?}"
    );
    assert!(execs[0].ends_with("exit 1"), "{execs:#?}");
    // The operator neither restarted nor modified the backup the user expired.
    assert_eq!(commands(&result, "backup-start").len(), 1);
    assert!(commands(&result, "backup-modify").is_empty());
    assert_eq!(commands(&result, "restore-start").len(), 1);
}

#[test]
fn a_backup_without_running_agents_says_so() {
    let result = run_file("backups/no-agents.yaml", None);
    assert_clean(&result);
    // Steps: 1 expect the message, 2 advance 900 s, 3 expect still stuck.
    let stuck = &result.steps[3];
    let snapshots = stuck
        .blob_store
        .values()
        .map(|c| c["snapshots"].as_array().map_or(0, Vec::len))
        .sum::<usize>();
    assert_eq!(
        snapshots, 0,
        "no snapshot without agents: {:#?}",
        stuck.blob_store
    );
    assert_eq!(stuck.fdb["backupAgents"], 0);
    let pending: Vec<&str> = stuck
        .pods
        .iter()
        .filter(|p| p.name.starts_with("stuck-backup-agents-"))
        .map(|p| p.phase.as_str())
        .collect();
    assert_eq!(pending, ["Pending", "Pending"]);
    assert_eq!(result.steps.last().unwrap().fdb["backupAgents"], 2);
}

#[test]
fn an_encrypted_backup_never_moves_to_an_unencrypted_destination() {
    // The scenario's expectations: the destination stays (encrypted) on 7.1 and with
    // the image's 7.3.43 tools; plan.rs unit tests check the status message.
    let result = run_file("backups/encrypted-destination.yaml", None);
    assert_clean(&result);
}

#[test]
fn evicted_backup_agents_are_replaced_and_the_backup_goes_on() {
    let result = run_file("backups/agents-evicted.yaml", None);
    assert_clean(&result);
    // The evicted pods stay (Failed, Evicted) next to the agents that replaced them.
    let evicted = result.steps[2]
        .pods
        .iter()
        .filter(|p| p.name.starts_with("sample-backup-agents") && p.phase == "Failed")
        .count();
    assert!(evicted >= 1, "{:?}", result.steps[2].pods);
}

#[test]
fn backup_agent_pods_stuck_in_a_terminal_state_are_deleted() {
    // FoundationDB/fdb-kubernetes-operator PR 2508.
    let result = run_file("backups/agents-terminal-deleted.yaml", None);
    assert_clean(&result);
    let agents = |step: usize, phase: &str| {
        result.steps[step]
            .pods
            .iter()
            .filter(|p| p.name.starts_with("sample-backup-agents") && p.phase == phase)
            .count()
    };
    assert_eq!(agents(2, "Failed"), 2, "{:?}", result.steps[2].pods);
    assert_eq!(agents(4, "Failed"), 0, "{:?}", result.steps[4].pods);
    assert_eq!(agents(4, "Running"), 2, "{:?}", result.steps[4].pods);
}

#[test]
fn an_operator_crash_right_after_a_start_starts_nothing_twice() {
    let result = run_file("backups/restart-after-start.yaml", None);
    assert_clean(&result);
    assert_eq!(commands(&result, "backup-start").len(), 1);
    assert_eq!(commands(&result, "restore-start").len(), 1);
    let crashes: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.detail.starts_with("the operator crashed"))
        .map(|e| e.target.as_str())
        .collect();
    assert_eq!(
        crashes,
        ["foundationdbbackup/sample", "foundationdbrestore/sample"]
    );
}

#[test]
fn without_an_operator_the_backup_expectations_fail() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/backups/go-sample-lifecycle.yaml");
    let yaml = std::fs::read_to_string(path).unwrap();
    let result = run_without_operator(&yaml, None);
    assert_eq!(violated(&result), ["expectation-failed"]);
    assert!(
        result.violations[0].detail.contains("backups.test-cluster"),
        "{:#?}",
        result.violations
    );
    assert!(
        result
            .events
            .iter()
            .all(|e| !e.action.starts_with("backup-"))
    );
}
