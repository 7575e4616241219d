//! One `fdb-operator run` over a served fleet (`fleet:`, each member its own database):
//! the stand-in tools reach each cluster's database through the cluster file the
//! operator gives them, and `kubectl exec` into a member's pod reaches that member's
//! database; the world judges every database and reports no violation.

use std::time::Duration;

use super::serve_run::{World, operator_events};

/// Two small clusters, each its own database, created together from nothing.
const FLEET: &str = "name: shipped-binary-fleet
seed: 2
world:
  nodes: 17
  configMapDelaySeconds: 1
cluster:
  apiVersion: apps.foundationdb.org/v1beta2
  kind: FoundationDBCluster
  metadata: {name: sample, namespace: default}
  spec:
    version: 7.1.57
    databaseConfiguration: {redundancy_mode: double}
    processCounts: {storage: 3, log: 2, stateless: 2, cluster_controller: 1}
fleet:
  - apiVersion: apps.foundationdb.org/v1beta2
    kind: FoundationDBCluster
    metadata: {name: second, namespace: default}
    spec:
      version: 7.1.57
      databaseConfiguration: {redundancy_mode: double}
      processCounts: {storage: 3, log: 2, stateless: 2, cluster_controller: 1}
steps: []
";

/// The connection string `fdbcli --exec 'status json'` reports inside pod `pod`.
fn connection_seen_from(world: &World, pod: &str) -> String {
    let out = world.kubectl(&[
        "exec",
        pod,
        "-c",
        "foundationdb",
        "--",
        "fdbcli",
        "--exec",
        "status json",
    ]);
    let status: serde_json::Value = serde_json::from_str(&out).unwrap();
    status["cluster"]["connection_string"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn one_shipped_binary_reconciles_a_fleet_each_cluster_on_its_own_database() {
    let Some(world) = World::start_scenario(FLEET) else {
        return;
    };
    let operator = world.operator("operator", &[]);
    for name in ["sample", "second"] {
        world.named_reconciled(name, Duration::from_secs(240));
    }
    let connection = |name: &str| {
        world.named_cluster_until(
            name,
            "{.status.connectionString}",
            Duration::from_secs(10),
            |out| out.starts_with(&format!("{name}:")),
        )
    };
    let (sample, second) = (connection("sample"), connection("second"));
    assert_ne!(sample, second);
    // Each cluster's pods reach their own database through `kubectl exec`.
    assert_eq!(connection_seen_from(&world, "second-storage-1"), second);
    assert_eq!(connection_seen_from(&world, "sample-storage-1"), sample);
    assert_eq!(operator.stop(), Some(0), "SIGTERM is a clean stop");

    let (code, result) = world.served.stop();
    assert_eq!(code, Some(0), "violations: {}", result["violations"]);
    assert_eq!(
        result["metrics"]["passes"], 0,
        "the world runs no passes of its own for the fleet"
    );
    let configured: Vec<&str> = operator_events(&result, "configure")
        .iter()
        .filter(|e| e["detail"].as_str().unwrap_or("").contains("new"))
        .filter_map(|e| e["issuer"].as_str())
        .collect();
    for name in ["sample", "second"] {
        assert!(
            configured.contains(&name),
            "{name}'s database was never configured by the operator's fdbcli: {configured:?}"
        );
    }
}
