//! The shipped binary when the API server goes away or its watches expire: the served
//! world's controls (`POST /simulation/control/v1/outage?seconds=N` and
//! `.../expire-watches`, docs/simulation.md) force what a real cluster does now and
//! then, in seconds of wall clock.

use std::path::Path;
use std::time::{Duration, Instant};

use super::serve_external::Operator;
use super::serve_run::World;

/// `POST PATH` on the users' listener, through `kubectl create --raw` (an empty body).
fn control(world: &World, path: &str) -> String {
    let empty = world.dir.path().join("empty-body");
    std::fs::write(&empty, "").unwrap();
    world.kubectl(&["create", "--raw", path, "-f", empty.to_str().unwrap()])
}

/// Leader-election flags with a short renew deadline (3 s), so that an outage of a few
/// seconds costs the leader its Lease; as replica `identity`.
pub(crate) fn quick_lease(identity: &str) -> Vec<&str> {
    vec![
        "--leader-election",
        "--leader-election-namespace",
        "default",
        "--leader-election-identity",
        identity,
        "--lease-duration",
        "4s",
        "--renew-deadline",
        "3s",
        "--retry-period",
        "500ms",
    ]
}

/// The Lease's holder now (empty: released or never taken).
fn holder(world: &World) -> String {
    world.kubectl(&[
        "get",
        "lease",
        "fdb-operator-leader",
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ])
}

/// Stand-in tools whose fdbcli first touches `marker`, then sleeps 30 s (a pass stuck in
/// fdbcli, as one waiting on an unavailable database), then runs the world's stand-in.
fn slow_tools(world: &World, marker: &Path) -> std::path::PathBuf {
    let slow = world.dir.path().join("slow-tools");
    for minor in ["7.1", "7.3", "7.4"] {
        let dir = slow.join(minor);
        std::fs::create_dir_all(&dir).unwrap();
        for tool in ["fdbcli", "fdbbackup", "fdbrestore"] {
            let real = world.tools.join(minor).join(tool);
            let script = format!(
                "#!/bin/sh\ntouch '{}'\nsleep 30\nexec '{}' \"$@\"\n",
                marker.display(),
                real.display()
            );
            let path = dir.join(tool);
            std::fs::write(&path, script).unwrap();
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    slow
}

/// SIGTERM while a pass runs (stuck in fdbcli) and the API server then goes away for 4 s:
/// the leader cannot renew the Lease while its reconcile finishes. That is still the
/// stop that was asked for: the reconcile is cancelled, the Lease released once the
/// API answers again, exit 0. Before, the failed renewal ended the process with exit 1
/// (`lost the leader lease`) and the Lease stayed taken.
#[test]
fn sigterm_while_a_pass_runs_and_the_lease_cannot_be_renewed_is_a_clean_stop() {
    let Some(world) = World::start() else { return };
    let marker = world.dir.path().join("fdbcli-started");
    let slow = slow_tools(&world, &marker);
    let mut flags = vec!["--fdb-binaries-dir", slow.to_str().unwrap()];
    flags.extend(quick_lease("replica-a"));
    let mut operator = Operator::start_with(
        &world.served.operator_kubeconfig(),
        &world.dir.path().join("operator"),
        &flags,
    );
    let started = Instant::now();
    while !marker.exists() {
        assert!(operator.running(), "{}", operator.log_tail());
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the operator never ran fdbcli\n{}",
            operator.log_tail()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(holder(&world), "replica-a");
    operator.terminate();
    control(&world, "/simulation/control/v1/outage?seconds=4");
    let stopped = Instant::now();
    assert_eq!(
        operator.exit_code(Duration::from_secs(30)),
        Some(0),
        "a stop asked for is a clean stop"
    );
    assert!(
        stopped.elapsed() < Duration::from_secs(15),
        "the stuck pass was not cancelled: {:?}",
        stopped.elapsed()
    );
    assert_eq!(holder(&world), "", "the Lease was not released");
    let (code, result) = world.served.stop();
    assert_eq!(code, Some(0), "violations: {}", result["violations"]);
}

/// The API server unreachable (503) for 12 s in the middle of a creation: the leader
/// stops acting once it cannot renew the Lease, stands by, takes the Lease again when
/// the API answers and finishes the cluster; the world sees no violation.
#[test]
fn the_leader_survives_an_api_outage_and_finishes_the_cluster() {
    let Some(world) = World::start() else { return };
    let mut operator = world.operator("operator", &quick_lease("replica-a"));
    world.cluster_until("{.status.generations}", Duration::from_secs(90), |out| {
        !out.is_empty()
    });
    control(&world, "/simulation/control/v1/outage?seconds=12");
    std::thread::sleep(Duration::from_secs(12));
    assert!(
        operator.running(),
        "the operator exited during the outage\n{}",
        operator.log_tail()
    );
    world.reconciled(Duration::from_secs(120));
    assert_eq!(holder(&world), "replica-a");
    let log = std::fs::read_to_string(world.dir.path().join("operator/operator.log")).unwrap();
    assert!(
        log.contains("standing by for it again"),
        "the outage did not cost the Lease: {}",
        operator.log_tail()
    );
    assert_eq!(operator.stop(), Some(0), "SIGTERM is a clean stop");
    let (code, result) = world.served.stop();
    assert_eq!(code, Some(0), "violations: {}", result["violations"]);
}

/// Every watch closed and the history compacted once the cluster is reconciled: the
/// operator's watchers resume from a resourceVersion the server no longer has, get 410
/// Gone and list again; a ConfigMap deleted after that is seen (a watch event, not the
/// 10-minute resync) and created again.
#[test]
fn expired_watches_are_relisted_and_later_changes_reconciled() {
    let Some(world) = World::start() else { return };
    let operator = world.operator("operator", &[]);
    world.reconciled(Duration::from_secs(120));
    let expired = control(&world, "/simulation/control/v1/expire-watches");
    assert!(expired.contains("compactedResourceVersion"), "{expired}");
    let uid = |world: &World| {
        world.kubectl(&[
            "get",
            "configmap",
            "sample-config",
            "-o",
            "jsonpath={.metadata.uid}",
            "--ignore-not-found",
        ])
    };
    let before = uid(&world);
    assert!(!before.is_empty());
    // Let the watchers meet the 410 and list again.
    std::thread::sleep(Duration::from_secs(3));
    world.kubectl(&["delete", "configmap", "sample-config"]);
    let started = Instant::now();
    loop {
        let now = uid(&world);
        if !now.is_empty() && now != before {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the deleted ConfigMap was not created again\n{}",
            operator.log_tail()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    world.reconciled(Duration::from_secs(60));
    assert_eq!(operator.stop(), Some(0), "SIGTERM is a clean stop");
    let (code, result) = world.served.stop();
    assert_eq!(code, Some(0), "violations: {}", result["violations"]);
}
