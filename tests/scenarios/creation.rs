//! Creating clusters from nothing to Reconciled (issue 5's done criteria).

use std::collections::{BTreeMap, BTreeSet};

use fdb_e2e_tests::{fdb_str, groups_per_class, run, scenario, sha256_hex};
use fdb_shared::monitor_conf::substitute::substitute;
use fdb_simulation::result::StepResult;

/// Every check of a freshly created cluster that does not depend on its shape.
fn assert_created(step: &StepResult, redundancy: &str, coordinators: usize) {
    assert_eq!(step.reconciled, Some(true), "{:?}", step.stopped_because);
    let status = &step.cluster["status"];
    assert_eq!(
        status.pointer("/generations/reconciled"),
        step.cluster.pointer("/metadata/generation")
    );

    // The database: configured as desired, available, every process reporting.
    assert_eq!(step.fdb["available"], true);
    assert_eq!(step.fdb["configured"], true);
    assert_eq!(step.fdb["configuration"]["redundancy_mode"], redundancy);
    assert_eq!(step.fdb["configuration"]["storage_engine"], "ssd-2");
    let processes = step.fdb["processes"].as_array().unwrap();
    assert_eq!(processes.len(), step.pods.len(), "one process per pod");

    // The ConfigMap: the keys of docs/controller-model.md, "The `<cluster>-config`
    // ConfigMap".
    let config_map = step
        .config_maps
        .iter()
        .find(|config_map| config_map.name == "sample-config")
        .expect("the cluster's ConfigMap");
    let connection_string = fdb_str(step, "connectionString");
    assert_eq!(config_map.data["cluster-file"], connection_string);
    assert_eq!(config_map.data["running-version"], "7.1.57");
    let classes: BTreeSet<String> = groups_per_class(step).into_keys().collect();
    for class in &classes {
        assert!(
            !config_map.data[&format!("fdbmonitor-conf-{class}")].is_empty(),
            "monitor conf of {class}"
        );
    }

    // Every sidecar copied the cluster file and rendered the conf with its pod's values.
    let by_ip: BTreeMap<&str, &str> = step
        .pods
        .iter()
        .map(|pod| (pod.ip.as_deref().unwrap(), pod.node.as_deref().unwrap()))
        .collect();
    for pod in &step.pods {
        let files = &step.sidecars[&pod.name].files;
        assert_eq!(
            files["fdb.cluster"],
            sha256_hex(connection_string.as_bytes()),
            "{}",
            pod.name
        );
        let class = &pod.labels["foundationdb.org/fdb-process-class"];
        let ip = pod.ip.clone().unwrap();
        let node = pod.node.clone().unwrap();
        let vars = BTreeMap::from([
            ("BINARY_DIR".to_owned(), "/usr/bin".to_owned()),
            ("FDB_PUBLIC_IP".to_owned(), ip.clone()),
            ("FDB_POD_IP".to_owned(), ip),
            ("FDB_MACHINE_ID".to_owned(), node.clone()),
            ("FDB_ZONE_ID".to_owned(), node),
            (
                "FDB_INSTANCE_ID".to_owned(),
                pod.labels["foundationdb.org/fdb-process-group-id"].clone(),
            ),
            (
                "FDB_DNS_NAME".to_owned(),
                format!("{}.sample.default.svc.cluster.local", pod.name),
            ),
        ]);
        let template = &config_map.data[&format!("fdbmonitor-conf-{class}")];
        let expected = substitute(template, &vars).unwrap();
        assert_eq!(
            files["fdbmonitor.conf"],
            sha256_hex(expected.as_bytes()),
            "{}",
            pod.name
        );
    }

    // Coordinators: as many as the redundancy needs, each in its own zone.
    let addresses = step.fdb["coordinators"].as_array().unwrap();
    assert_eq!(addresses.len(), coordinators);
    let zones: BTreeSet<&str> = addresses
        .iter()
        .map(|address| {
            let ip = address.as_str().unwrap().rsplit_once(':').unwrap().0;
            by_ip[ip]
        })
        .collect();
    assert_eq!(zones.len(), coordinators, "coordinators in distinct zones");
}

#[test]
fn double_with_explicit_counts_reaches_reconciled_with_17_groups() {
    let result = run(
        &scenario(
            "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}}",
            "  - reconcile: {}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let step = &result.steps[0];
    assert_eq!(
        groups_per_class(step),
        BTreeMap::from([
            ("cluster_controller".to_owned(), 1),
            ("log".to_owned(), 4),
            ("stateless".to_owned(), 8),
            ("storage".to_owned(), 4),
        ])
    );
    assert_eq!(step.pods.len(), 17);
    assert_eq!(step.pvcs.len(), 8, "storage and log groups get a PVC");
    assert_created(step, "double", 3);
}

#[test]
fn single_reaches_reconciled_with_its_default_counts() {
    let result = run(
        &scenario(
            "{version: 7.1.57, databaseConfiguration: {redundancy_mode: single}}",
            "  - reconcile: {}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let step = &result.steps[0];
    assert_eq!(
        groups_per_class(step),
        BTreeMap::from([
            ("log".to_owned(), 3),
            ("stateless".to_owned(), 8),
            ("storage".to_owned(), 1),
        ])
    );
    assert_created(step, "single", 1);
}

#[test]
fn triple_reaches_reconciled_with_five_coordinators() {
    let result = run(
        &scenario(
            "{version: 7.1.57, databaseConfiguration: {redundancy_mode: triple}}",
            "  - reconcile: {}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let step = &result.steps[0];
    assert_eq!(
        groups_per_class(step),
        BTreeMap::from([
            ("log".to_owned(), 5),
            ("stateless".to_owned(), 10),
            ("storage".to_owned(), 5),
        ])
    );
    assert_created(step, "triple", 5);
}
