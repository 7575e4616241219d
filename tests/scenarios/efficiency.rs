//! What a creation costs (issue 12): Kubernetes writes, status writes, sidecar requests
//! and LISTs of a 17-group creation, read from the result's metrics and events.

use fdb_e2e_tests::{run, scenario};

#[test]
fn a_17_group_creation_writes_little_and_asks_the_sidecars_little() {
    let result = run(
        &scenario(
            "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}}",
            "  - reconcile: {}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let step = &result.steps[0];
    assert_eq!(step.reconciled, Some(true), "{:?}", step.stopped_because);
    assert_eq!(step.pods.len(), 17);

    // The least a creation must write: every object once, every pod's configuration
    // annotation once, the ConfigMap once more when the connection string is known, and
    // three status writes (the new groups before their objects, the connection string
    // before the ConfigMap gets it, the reconciled status).
    let objects = step.pods.len() + step.pvcs.len() + step.services.len() + step.config_maps.len();
    let minimum = objects + step.pods.len() + 1 + 3;
    let requests = &result.metrics.api_requests;
    let writes = requests.create + requests.update + requests.patch + requests.delete;
    let events = result
        .events
        .iter()
        .filter(|e| e.action == "event" && e.target.starts_with("event/"))
        .count() as u64;
    let object_writes = writes - events;
    assert!(
        object_writes as f64 <= 1.5 * minimum as f64,
        "{object_writes} Kubernetes writes (besides {events} Events) for a minimum of {minimum}"
    );

    // At most one status write per pass.
    let mut status_writes_per_pass = std::collections::BTreeMap::new();
    for event in &result.events {
        if event.target.ends_with("/status") && event.target.starts_with("foundationdbcluster/") {
            *status_writes_per_pass.entry(event.pass).or_insert(0) += 1;
        }
    }
    assert!(
        status_writes_per_pass.values().all(|&n| n == 1),
        "status writes per pass: {status_writes_per_pass:?}"
    );

    assert!(
        result.metrics.sidecar_requests <= 100,
        "{} sidecar requests",
        result.metrics.sidecar_requests
    );

    // Reads come from the watch caches: one LIST per cached kind, when they start.
    assert_eq!(requests.list, 4, "{requests:?}");
    assert_eq!(requests.watch, 4, "{requests:?}");
}
