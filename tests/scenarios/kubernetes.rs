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

#[test]
fn a_drained_node_empties_and_its_pods_come_back_on_added_nodes() {
    let yaml = fdb_e2e_tests::scenario(
        "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}}",
        "  - reconcile: {}\n  - act: {as: user, addNodes: 2}\n  - act: {as: user, drain: node-6}\n  - expect: {within: 900, reconciled: true, available: true, pods: 17}\n",
    );
    let result = run(&yaml, None);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let drained = &result.steps[2];
    assert!(
        result
            .events
            .iter()
            .any(|e| e.action == "evict" && e.by.as_deref() == Some("user")),
        "the drain evicted through the API"
    );
    let last = result.steps.last().unwrap();
    assert!(
        last.pods
            .iter()
            .all(|pod| pod.node.as_deref() != Some("node-6")),
        "nothing runs on the cordoned node: {:?}",
        last.pods
            .iter()
            .map(|p| (&p.name, &p.node))
            .collect::<Vec<_>>()
    );
    assert!(drained.pods.len() <= 17);
}

#[test]
fn passes_are_at_least_a_second_apart_so_the_clock_never_freezes() {
    let yaml = fdb_e2e_tests::scenario(
        "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}}",
        "  - fault: {kind: sidecarUnreachable, processGroup: storage-1}\n  - reconcile: {maxPasses: 40}\n",
    );
    let result = run(&yaml, None);
    let mut pass_times: Vec<(u64, u64)> = result
        .events
        .iter()
        .filter(|e| e.pass > 0)
        .map(|e| (e.pass, e.time))
        .collect();
    pass_times.dedup_by_key(|(pass, _)| *pass);
    assert!(pass_times.len() > 10, "{pass_times:?}");
    for pair in pass_times.windows(2) {
        assert!(
            pair[1].1 > pair[0].1,
            "pass {} at {} s and pass {} at {} s: the clock froze",
            pair[0].0,
            pair[0].1,
            pair[1].0,
            pair[1].1
        );
    }
}

#[test]
fn a_restricting_operator_creates_nothing_for_a_template_asking_for_the_host_until_it_complies() {
    use fdb_simulation::result::EventSource;
    let result = fdb_e2e_tests::run_file("tenants/pod-template-restricted.yaml", None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    let refused: Vec<&str> = result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Operator && e.detail.starts_with("PodTemplateRefused"))
        .map(|e| e.detail.as_str())
        .collect();
    assert!(!refused.is_empty(), "no PodTemplateRefused Event");
    for field in [
        "spec.processes.general.podTemplate.spec.hostNetwork",
        "spec.processes.general.podTemplate.spec.initContainers[0].securityContext.privileged",
    ] {
        assert!(
            refused[0].contains(field),
            "{field} not named: {}",
            refused[0]
        );
    }
    // The allowed service account is not named.
    assert!(!refused[0].contains("serviceAccountName"), "{}", refused[0]);
    let refused_step = &result.steps[0];
    assert!(
        refused_step.pods.is_empty(),
        "pods created for a refused template"
    );
    assert!(
        refused_step.pvcs.is_empty(),
        "claims created for a refused template"
    );
    assert_eq!(result.steps.last().unwrap().reconciled, Some(true));
}
