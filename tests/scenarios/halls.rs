//! three_data_hall clusters (issue 24, halls): processes take their `data_hall` locality
//! from their node's `topology.kubernetes.io/zone` label (fdb-kubernetes-monitor with
//! `ENABLE_NODE_WATCH`), the database spreads storage teams over three halls and its
//! logs over two, and the operator configures three_data_hall only once every process
//! reports a hall, with nine coordinators, three per hall. World: 9 nodes in 3 halls
//! (`world.zones: 3`, halls `zone-0..2`).

use std::collections::BTreeMap;

use fdb_e2e_tests::{run_file, violated};
use fdb_simulation::result::{EventSource, SimulationResult, StepResult};

/// Per data hall, the coordinators of the step's database (by resolved address).
fn coordinators_per_hall(step: &StepResult) -> BTreeMap<String, usize> {
    let coordinators: Vec<&str> = step.fdb["coordinators"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    let mut per_hall = BTreeMap::new();
    for process in step.fdb["processes"].as_array().unwrap() {
        let address = process["address"].as_str().unwrap();
        if coordinators.contains(&address) {
            let hall = process["locality"]["data_hall"]
                .as_str()
                .unwrap_or("<none>")
                .to_owned();
            *per_hall.entry(hall).or_insert(0) += 1;
        }
    }
    per_hall
}

/// The data hall of every process, with the node zone label of its pod.
fn halls_match_nodes(step: &StepResult) {
    for process in step.fdb["processes"].as_array().unwrap() {
        let hall = process["locality"]["data_hall"].as_str();
        assert!(
            matches!(hall, Some("zone-0" | "zone-1" | "zone-2")),
            "{process}"
        );
    }
}

fn redundancy(step: &StepResult) -> &str {
    step.fdb["configuration"]["redundancy_mode"]
        .as_str()
        .unwrap_or_default()
}

fn admin_events<'a>(result: &'a SimulationResult, action: &str) -> Vec<&'a str> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == action)
        .map(|e| e.detail.as_str())
        .collect()
}

#[test]
fn the_go_three_data_hall_sample_reconciles_and_survives_one_hall() {
    let result = run_file("halls/go-sample.yaml", None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    let reconciled = &result.steps[1];
    assert_eq!(redundancy(reconciled), "three_data_hall");
    halls_match_nodes(reconciled);
    let expected: BTreeMap<String, usize> = ["zone-0", "zone-1", "zone-2"]
        .into_iter()
        .map(|hall| (hall.to_owned(), 3))
        .collect();
    assert_eq!(coordinators_per_hall(reconciled), expected);
    // One hall down: still available (step 3's expect held); two: not (step 7's held).
    assert!(result.steps[5].fdb["available"].as_bool().unwrap());
    assert_eq!(result.steps.last().unwrap().fdb["lostShards"], 0);
}

#[test]
fn switching_to_three_data_hall_rolls_the_localities_out_first() {
    let result = run_file("halls/switch.yaml", None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    let end = result.steps.last().unwrap();
    assert_eq!(redundancy(end), "three_data_hall");
    halls_match_nodes(end);
    let per_hall = coordinators_per_hall(end);
    assert_eq!(per_hall.values().sum::<usize>(), 9, "{per_hall:?}");
    assert!(per_hall.values().all(|n| *n == 3), "{per_hall:?}");
    // three_data_hall was configured once, after a kill rolled the localities out.
    let configures = admin_events(&result, "configure");
    let three: Vec<_> = configures
        .iter()
        .filter(|c| c.contains("three_data_hall"))
        .collect();
    assert_eq!(three.len(), 1, "{configures:?}");
    let first_kill = result
        .events
        .iter()
        .position(|e| e.source == EventSource::Fdb && e.action == "kill")
        .expect("a bounce rolled the locality out");
    let configure = result
        .events
        .iter()
        .position(|e| e.action == "configure" && e.detail.contains("three_data_hall"))
        .unwrap();
    assert!(
        first_kill < configure,
        "configured before the localities were out"
    );
}

#[test]
fn three_data_hall_without_localities_waits_and_a_configure_anyway_is_caught() {
    let result = run_file("halls/no-localities.yaml", None);
    // The operator waited: still double and available after 300 s (step 4's expect).
    let waited = &result.steps[4];
    assert_eq!(redundancy(waited), "double");
    assert!(
        result.steps[3]
            .waits
            .iter()
            .any(|w| w.contains("data_hall")),
        "{:?}",
        result.steps[3].waits
    );
    // The broken operator's configure left the database unable to recover (it also
    // skipped the lock three_data_hall clusters use: `lock-not-held`).
    assert!(
        violated(&result).contains(&"unavailable-by-operator".to_owned()),
        "{:#?}",
        result.violations
    );
}

#[test]
fn coordinators_in_two_halls_are_caught_when_a_hall_is_lost() {
    let result = run_file("halls/coordinators-two-halls.yaml", None);
    // (The broken operator also skipped the lock: `lock-not-held`.)
    assert!(
        result
            .violations
            .iter()
            .any(|v| v.invariant == "expectation-failed"
                && v.detail.contains("available: expected true")),
        "{:#?}",
        result.violations
    );
}
