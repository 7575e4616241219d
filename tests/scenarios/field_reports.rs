//! Field reports of Go-operator users (FoundationDB/fdb-kubernetes-operator issues), each
//! as the scenario a careful operator must pass.

use fdb_e2e_tests::{run_file, violated};

fn assert_clean(result: &fdb_simulation::result::SimulationResult) {
    assert!(violated(result).is_empty(), "{:#?}", result.violations);
}

#[test]
fn every_pod_lost_at_once_with_dns_names_comes_back_from_the_pvcs() {
    let result = run_file("field-reports/every-pod-lost-dns.yaml", None);
    assert_clean(&result);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
}

#[test]
fn every_pod_evicted_while_the_database_is_down_is_recreated() {
    let result = run_file("field-reports/every-pod-evicted-while-down.yaml", None);
    assert_clean(&result);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
}

#[test]
fn three_data_hall_fallback_through_the_spec_while_a_hall_is_lost() {
    let result = run_file("field-reports/three-data-hall-fallback-spec.yaml", None);
    assert_clean(&result);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
}

#[test]
fn three_data_hall_fallback_by_hand_stays_until_the_hall_is_back() {
    let result = run_file("field-reports/three-data-hall-fallback-fdbcli.yaml", None);
    assert_clean(&result);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
}

#[test]
fn an_exclusion_included_again_while_unverifiable_does_not_let_the_pvc_go() {
    let result = run_file(
        "field-reports/exclusion-unverifiable-processes-missing.yaml",
        None,
    );
    assert_clean(&result);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
}

#[test]
fn a_drain_of_processes_missing_from_status_is_awaited() {
    let result = run_file("field-reports/exclusion-while-processes-missing.yaml", None);
    assert_clean(&result);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
}
