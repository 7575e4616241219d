//! Two `fdb-operator run --leader-election` replicas against a served world without its
//! own operator: one leads, it is SIGKILLed, the other takes the Lease over and goes on;
//! SIGTERM releases the Lease; every write is judged as the operator's.

use std::time::{Duration, Instant};

use super::serve::{Served, kubectl};
use super::serve_external::{Operator, scenario_without_steps};

/// The Lease's holder, waiting (wall clock, at most 90 s) until `done` accepts it.
fn holder_when(
    kubectl: &std::path::Path,
    kubeconfig: &std::path::Path,
    done: impl Fn(&str) -> bool,
) -> String {
    let started = Instant::now();
    loop {
        let out = super::serve::run(
            kubectl,
            kubeconfig,
            &[
                "get",
                "lease",
                "fdb-operator-leader",
                "-o",
                "jsonpath={.spec.holderIdentity}",
            ],
        );
        let holder = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if out.status.success() && done(&holder) {
            return holder;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the Lease never got there; holder {holder:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn a_standby_replica_takes_over_when_the_leader_is_killed() {
    let Some(kubectl) = kubectl() else { return };
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
    let users = served.kubeconfig.clone();
    let operators = served.operator_kubeconfig();
    let replica = |identity: &str| {
        let work = scenarios.path().join(identity);
        let mut flags = vec!["--fdb-binaries-dir", tools.to_str().unwrap()];
        flags.extend(super::serve_outage::quick_lease(identity));
        Operator::start_with(&operators, &work, &flags)
    };
    let mut a = Some(replica("replica-a"));
    let mut b = Some(replica("replica-b"));
    let leader = holder_when(&kubectl, &users, |h| h == "replica-a" || h == "replica-b");
    // The leader reconciles: the cluster's ConfigMap appears.
    super::serve::eventually(&kubectl, &users, &["get", "configmaps"], |out| {
        out.contains("sample-config")
    });
    let survivor = if leader == "replica-a" {
        a.take().unwrap().kill();
        b.take().unwrap()
    } else {
        b.take().unwrap().kill();
        a.take().unwrap()
    };
    let next = holder_when(&kubectl, &users, |h| !h.is_empty() && h != leader);
    assert_ne!(next, leader);
    // It keeps renewing: still the holder after twice the lease duration.
    std::thread::sleep(Duration::from_secs(8));
    assert_eq!(holder_when(&kubectl, &users, |_| true), next);
    assert_eq!(survivor.stop(), Some(0), "SIGTERM is a clean stop");
    holder_when(&kubectl, &users, str::is_empty);

    let (code, result) = served.stop();
    assert_eq!(code, Some(0), "violations: {}", result["violations"]);
    let events = result["events"].as_array().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["target"] == "configmap/sample-config" && e["by"] == "operator"),
        "{events:?}"
    );
}
