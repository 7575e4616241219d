//! `imageType: unified` manifests: `explain` warns that they run as split, and the
//! controller does exactly that (issue 12, item 6).

use fdb_e2e_tests::{run, scenario};

#[test]
fn a_unified_manifest_reaches_reconciled_with_split_pods() {
    let result = run(
        &scenario(
            "{version: 7.1.57, imageType: unified, processCounts: {storage: 4, cluster_controller: 1}}",
            "  - reconcile: {}\n  - expect: {reconciled: true, available: true, pods: 17, processGroups: {storage: 4, log: 4, stateless: 8, cluster_controller: 1}, images: {main: \"foundationdb/foundationdb:7.1.57\"}}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let step = &result.steps[0];
    assert_eq!(step.reconciled, Some(true), "{:?}", step.stopped_because);
    for pod in &step.pods {
        assert_eq!(
            pod.annotations
                .get("foundationdb.org/image-type")
                .map(String::as_str),
            Some("split"),
            "{}",
            pod.name
        );
        let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "foundationdb-kubernetes-init",
                "foundationdb",
                "foundationdb-kubernetes-sidecar"
            ],
            "{}",
            pod.name
        );
    }
    // The user is told, once per batch of pods created, not on every pass.
    let told: Vec<_> = result
        .events
        .iter()
        .filter(|event| event.detail.contains("UnifiedImageRunsSplit"))
        .collect();
    assert!(!told.is_empty(), "no UnifiedImageRunsSplit event");
    assert!(told.len() <= 2, "{told:?}");
}
