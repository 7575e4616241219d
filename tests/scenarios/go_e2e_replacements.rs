//! The Go operator's end-to-end cases on automatic replacements (FoundationDB/
//! fdb-kubernetes-operator `e2e/test_operator/operator_test.go`, "enabling automatic
//! replacements"), run as Go runs them: `failureDetectionTimeSeconds: 30`
//! (`SetAutoReplacements(ctx, true, 30*time.Second)`). The Go cases partition pods
//! with chaos-mesh; here their processes stop reporting (`processMissing`), which is
//! what the operator sees of a partition.

use fdb_e2e_tests::{run, scenario, violated};
use fdb_simulation::result::{EventSource, SimulationResult, StepResult};

const SPEC: &str = "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}, automationOptions: {replacements: {enabled: true, failureDetectionTimeSeconds: 30, maxConcurrentReplacements: 1}}}";

fn has_pod(step: &StepResult, name: &str) -> bool {
    step.pods.iter().any(|p| p.name == name)
}

/// When each group was chosen for replacement, in order.
fn chosen(result: &SimulationResult) -> Vec<(u64, String)> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Operator && e.detail.starts_with("ReplacementChosen"))
        .map(|e| (e.time, e.detail.clone()))
        .collect()
}

/// "a Pod gets partitioned" / "should replace the partitioned Pod".
#[test]
fn go_e2e_operator_enabling_automatic_replacements_should_replace_the_partitioned_pod() {
    let steps = "  - reconcile: {}\n  - fault: {kind: processMissing, processGroup: stateless-1}\n  - expect: {within: 1800, reconciled: true, available: true}\n";
    let result = run(&scenario(SPEC, steps), None);
    assert!(violated(&result).is_empty(), "{:#?}", result.violations);
    assert!(has_pod(&result.steps[0], "sample-stateless-1"));
    let end = result.steps.last().unwrap();
    assert!(
        !has_pod(end, "sample-stateless-1"),
        "the partitioned pod is gone"
    );
    let chosen = chosen(&result);
    assert!(
        chosen.iter().any(|(_, note)| note.contains("stateless-1:")),
        "{chosen:?}"
    );
}

/// "more Pods are partitioned than the automatic replacement can replace concurrently":
/// three stateless pods partitioned, `maxConcurrentReplacements: 1`; all three are
/// replaced, one after the other.
#[test]
fn go_e2e_operator_more_pods_partitioned_than_replaced_concurrently_are_replaced_one_by_one() {
    let steps = "  - reconcile: {}\n  - fault: {kind: processMissing, processGroup: stateless-1}\n  - fault: {kind: processMissing, processGroup: stateless-2}\n  - fault: {kind: processMissing, processGroup: stateless-3}\n  - expect: {within: 3600, reconciled: true, available: true}\n";
    let result = run(&scenario(SPEC, steps), None);
    assert!(violated(&result).is_empty(), "{:#?}", result.violations);
    let end = result.steps.last().unwrap();
    for id in ["stateless-1", "stateless-2", "stateless-3"] {
        assert!(
            !has_pod(end, &format!("sample-{id}")),
            "{id} was not replaced"
        );
    }
    let chosen = chosen(&result);
    let of = |id: &str| {
        chosen
            .iter()
            .filter(|(_, note)| note.contains(&format!("{id}:")))
            .map(|(time, _)| *time)
            .next()
    };
    let mut times: Vec<u64> = ["stateless-1", "stateless-2", "stateless-3"]
        .iter()
        .map(|id| of(id).unwrap_or_else(|| panic!("{id} never chosen: {chosen:?}")))
        .collect();
    times.sort_unstable();
    times.dedup();
    assert_eq!(times.len(), 3, "chosen together: {chosen:?}");
}
