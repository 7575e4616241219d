//! Clusters that depend on Kubernetes behaving as a real cluster does.

use fdb_e2e_tests::run;

/// The quickstart example with `routing.publicIPSource: service`.
fn quickstart_with_service_ips() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/examples/quickstart.yaml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let anchor = "      cluster_controller: 1\n";
    assert!(
        text.contains(anchor),
        "the quickstart example changed shape"
    );
    text.replace(
        anchor,
        &format!("{anchor}    routing:\n      publicIPSource: service\n"),
    )
}

#[test]
fn with_service_ips_the_quickstart_reaches_reconciled_on_cluster_ips() {
    // Each process group's Service gets a cluster IP, which the operator hands to its pod
    // as the public address; without one it waits forever.
    let result = run(&quickstart_with_service_ips(), None);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let step = &result.steps[0];
    assert_eq!(step.reconciled, Some(true), "{:?}", step.stopped_because);
    assert_eq!(step.fdb["available"], true);
    let addresses: Vec<&str> = step.fdb["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["address"].as_str().unwrap())
        .collect();
    assert_eq!(addresses.len(), 17);
    assert!(
        addresses.iter().all(|a| a.starts_with("10.96.")),
        "processes advertise their service IP: {addresses:?}"
    );
    assert!(
        step.pods
            .iter()
            .all(|p| p.ip.as_deref().is_some_and(|ip| ip.starts_with("127.0."))),
        "the operator still reaches the sidecars at the pod IPs"
    );
    for pod in &step.pods {
        for container in &pod.containers {
            assert_eq!(container.restart_count, 0, "{}", pod.name);
            assert!(
                container.image_id.contains("@sha256:"),
                "{}: {container:?}",
                pod.name
            );
        }
    }
}
