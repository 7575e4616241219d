//! Field reports of Go-operator users (FoundationDB/fdb-kubernetes-operator issues), each
//! as the scenario a careful operator must pass.

use fdb_e2e_tests::{run_file, violated};

/// Runs the scenario: no invariant violated, and Reconciled at its end.
fn assert_passes_reconciled(path: &str) {
    let result = run_file(path, None);
    assert!(violated(&result).is_empty(), "{:#?}", result.violations);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
}

#[test]
fn every_pod_lost_at_once_with_dns_names_comes_back_from_the_pvcs() {
    assert_passes_reconciled("field-reports/every-pod-lost-dns.yaml");
}

#[test]
fn every_pod_evicted_while_the_database_is_down_is_recreated() {
    assert_passes_reconciled("field-reports/every-pod-evicted-while-down.yaml");
}

#[test]
fn three_data_hall_fallback_through_the_spec_while_a_hall_is_lost() {
    assert_passes_reconciled("field-reports/three-data-hall-fallback-spec.yaml");
}

#[test]
fn three_data_hall_fallback_by_hand_stays_until_the_hall_is_back() {
    assert_passes_reconciled("field-reports/three-data-hall-fallback-fdbcli.yaml");
}

#[test]
fn an_exclusion_included_again_while_unverifiable_does_not_let_the_pvc_go() {
    assert_passes_reconciled("field-reports/exclusion-unverifiable-processes-missing.yaml");
}

#[test]
fn a_drain_of_processes_missing_from_status_is_awaited() {
    assert_passes_reconciled("field-reports/exclusion-while-processes-missing.yaml");
}

#[test]
fn an_ip_family_change_replaces_every_group_onto_the_new_family() {
    assert_passes_reconciled("field-reports/ip-family-to-6-fixed-ips.yaml");
}

#[test]
fn an_ip_family_change_back_with_the_unified_image_and_dns_names() {
    assert_passes_reconciled("field-reports/ip-family-to-4-unified-dns.yaml");
}

#[test]
fn an_ip_family_the_network_lacks_keeps_the_running_processes_and_says_why() {
    let result = run_file("field-reports/ip-family-missing.yaml", None);
    assert!(violated(&result).is_empty(), "{:#?}", result.violations);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
    let waiting = &result.steps[3];
    let pending: Vec<&str> = waiting
        .pods
        .iter()
        .filter(|pod| pod.phase == "Pending" && pod.ip.is_none())
        .map(|pod| pod.name.as_str())
        .collect();
    assert_eq!(pending.len(), 11, "every replacement waits for its sandbox");
    let operator: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.action == "event" && e.detail.contains("PodIPFamilyUnavailable"))
        .map(|e| e.detail.as_str())
        .collect();
    assert!(
        operator
            .iter()
            .all(|detail| detail.contains("spec.routing.podIPFamily: 6")),
        "{operator:#?}"
    );
    assert!(
        !operator.is_empty() && operator.len() <= 20,
        "the user is told which field asks for the family, as a reminder and not once per pass: {operator:#?}"
    );
}
