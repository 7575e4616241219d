//! A reconciled cluster is left alone.

use fdb_e2e_tests::{run, scenario};
use fdb_simulation::result::EventSource;

#[test]
fn a_second_reconcile_makes_no_writes_and_reads_status_at_most_once_per_pass() {
    let result = run(
        &scenario(
            "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}}",
            "  - reconcile: {}\n  - reconcile: {}\n  - advance: 600\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    assert_eq!(result.steps[0].reconciled, Some(true));
    assert_eq!(result.steps[1].reconciled, Some(true));
    assert!(result.steps[1].passes >= 1);

    let later: Vec<_> = result
        .events
        .iter()
        .filter(|event| event.step >= 1)
        .collect();
    let kube_writes: Vec<_> = later
        .iter()
        .filter(|event| matches!(event.source, EventSource::K8s | EventSource::Operator))
        .collect();
    assert!(kube_writes.is_empty(), "Kubernetes writes: {kube_writes:?}");
    let admin_writes: Vec<_> = later
        .iter()
        .filter(|event| event.source == EventSource::Fdb)
        .collect();
    assert!(admin_writes.is_empty(), "admin commands: {admin_writes:?}");
    let copies: Vec<_> = later
        .iter()
        .filter(|event| event.source == EventSource::Sidecar && event.detail.starts_with("POST"))
        .collect();
    assert!(copies.is_empty(), "sidecar copies: {copies:?}");

    // The whole run: `status json` at most once per pass.
    assert!(
        result.metrics.status_json_calls <= result.metrics.passes,
        "{} status json calls in {} passes",
        result.metrics.status_json_calls,
        result.metrics.passes
    );
    // Time passing on a reconciled cluster changes nothing either.
    assert_eq!(result.steps[2].time, result.steps[1].time + 600);
    assert_eq!(
        result.steps[2].cluster["status"],
        result.steps[1].cluster["status"]
    );
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let yaml = scenario(
        "{version: 7.1.57, databaseConfiguration: {redundancy_mode: single}}",
        "  - reconcile: {}\n",
    );
    let mut first = run(&yaml, None);
    let mut second = run(&yaml, None);
    first.metrics.wall_millis = 0;
    second.metrics.wall_millis = 0;
    assert_eq!(
        serde_json::to_string(&first).unwrap(),
        serde_json::to_string(&second).unwrap()
    );
}
