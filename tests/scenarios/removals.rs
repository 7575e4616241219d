//! Removals and replacements (issue 9, Day-2 I): shrinks, requested removals, automatic
//! and misconfiguration replacements, stuck resources, operator crashes mid-removal.
//! Every scenario states its expected end with an `expect` step and must violate no
//! invariant.

use fdb_e2e_tests::{run, run_file, scenario, violated};
use fdb_operator::simulation::result::{EventSource, SimulationResult, StepResult};

fn storage_groups(step: &StepResult) -> Vec<(String, String)> {
    step.cluster["status"]["processGroups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["processClass"] == "storage")
        .map(|g| {
            (
                g["processGroupID"].as_str().unwrap().to_owned(),
                g["faultDomain"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn admin_commands(result: &SimulationResult, action: &str) -> Vec<String> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == action)
        .map(|e| e.detail.clone())
        .collect()
}

fn assert_clean(result: &SimulationResult) {
    assert!(violated(result).is_empty(), "{:#?}", result.violations);
}

#[test]
fn shrinking_storage_excludes_removes_and_includes_one_group() {
    let result = run_file("removals/shrink-storage.yaml", None);
    assert_clean(&result);
    let end = result.steps.last().unwrap();
    let survivors = storage_groups(end);
    assert_eq!(survivors.len(), 3, "{survivors:?}");
    let zones: std::collections::BTreeSet<_> = survivors.iter().map(|(_, z)| z).collect();
    assert_eq!(zones.len(), 3, "survivors in distinct zones: {survivors:?}");
    let excludes = admin_commands(&result, "exclude");
    let includes = admin_commands(&result, "include");
    assert_eq!(excludes.len(), 1, "{excludes:?}");
    assert_eq!(includes.len(), 1, "{includes:?}");
    let removed = excludes[0].rsplit(':').next().unwrap().to_owned();
    assert!(includes[0].ends_with(&removed), "{includes:?}");
    assert!(!survivors.iter().any(|(id, _)| *id == removed));
    // The pod went before the PVC, and both after the exclusion completed.
    let order: Vec<&str> = result
        .events
        .iter()
        .filter(|e| {
            (e.source == EventSource::K8s && e.action == "delete")
                || (e.source == EventSource::Fdb
                    && ["exclude", "include"].contains(&e.action.as_str()))
        })
        .filter(|e| e.detail.contains(&removed) || e.target.contains(&removed))
        .map(|e| e.action.as_str())
        .collect();
    assert_eq!(
        order,
        ["exclude", "delete", "delete", "include"],
        "{order:?}"
    );
}
