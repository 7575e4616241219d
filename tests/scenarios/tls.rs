//! TLS end to end (issue 12, item 3): the TLS quickstart (`docs/examples/quickstart-tls.yaml`)
//! reaches Reconciled with real TLS between the operator and the sidecars, and a sidecar
//! that does not accept the operator's certificate keeps the cluster from reconciling.

use fdb_e2e_tests::run;
use fdb_simulation::result::EventSource;

fn quickstart_tls() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/examples/quickstart-tls.yaml"
    );
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

#[test]
fn the_tls_quickstart_reaches_reconciled_over_https() {
    let result = run(&quickstart_tls(), None);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let step = &result.steps[0];
    assert_eq!(step.reconciled, Some(true), "{:?}", step.stopped_because);
    let connection_string = step.fdb["connectionString"].as_str().unwrap();
    assert!(
        connection_string.ends_with(":tls"),
        "TLS coordinators: {connection_string}"
    );
    for pod in &step.pods {
        let sidecar = pod
            .containers
            .iter()
            .find(|c| c.name == "foundationdb-kubernetes-sidecar")
            .unwrap();
        assert!(sidecar.args.iter().any(|a| a == "--tls"), "{}", pod.name);
        // Each sidecar wrote the cluster file the operator asked it for over https.
        assert!(
            step.sidecars[&pod.name].files.contains_key("fdb.cluster"),
            "{}",
            pod.name
        );
    }
    assert!(result.metrics.sidecar_requests > 0);
}

#[test]
fn sidecars_that_refuse_the_operator_certificate_keep_the_cluster_unreconciled() {
    let refusing = quickstart_tls().replace(
        "peerVerificationRules: \"S.CN=fdb-kubernetes-operator.foundationdb.example\"",
        "peerVerificationRules: \"S.CN=someone-else.foundationdb.example\"",
    );
    let refusing = refusing.replace(
        "  - reconcile: {}\n  - expect:",
        "  - reconcile: {maxPasses: 12}\n  - expect:",
    );
    let result = run(&refusing, None);
    let step = &result.steps[0];
    assert_eq!(step.reconciled, Some(false), "{:?}", step.stopped_because);
    let refused = result
        .events
        .iter()
        .filter(|event| event.source == EventSource::Sidecar && event.detail.ends_with("-> 401"))
        .count();
    assert!(refused > 0, "the sidecars answered 401 to the operator");
    assert!(
        result
            .violations
            .iter()
            .any(|v| v.invariant == "expectation-failed"),
        "{:?}",
        result.violations
    );
}
