//! How a pass's decisions grow with the number of process groups: every step's
//! `decide` and the snapshot's index over N and 4N groups (pods, PVCs and processes all
//! present). Linear work takes about 4 times as long at 4N; the old scans of every
//! object per group took 16 times. Ignored by default (timing); run with
//! `cargo test -p fdb-operator --lib scale -- --ignored --nocapture`.

use std::time::{Duration, Instant};

use fdb_shared::status_json::DatabaseStatus;
use k8s_openapi::api::core::v1::Pod;

use super::fixtures::{Fixture, database, group};
use super::model::desired::pod_options;
use super::model::pod::{build_pod, build_pvc};
use super::safety;
use super::steps::{
    add_pods, add_process_groups, add_pvcs, add_services, generate_initial_cluster_file,
    update_config_map, update_database_configuration, update_labels, update_pod_config,
    update_status,
};

/// A reconciled-looking cluster of `n` storage groups, each with its pod (running, on
/// its own node), PVC and reporting process.
fn fixture(n: usize) -> Fixture {
    let spec =
        format!("{{version: 7.1.57, processCounts: {{storage: {n}, log: -1, stateless: -1}}}}");
    let ids: Vec<String> = (1..=n).map(|i| format!("storage-{i}")).collect();
    let groups: Vec<_> = ids.iter().map(|id| group(id)).collect();
    let base = Fixture::new(&spec).groups(groups.clone());
    let cluster = base.clone().build().cluster().clone();
    let mut pods: Vec<Pod> = Vec::new();
    let mut pvcs = Vec::new();
    for (i, g) in groups.iter().enumerate() {
        let mut pod = build_pod(&cluster, g, &pod_options(&cluster, g)).unwrap();
        let spec = pod.spec.get_or_insert_with(Default::default);
        spec.node_name = Some(format!("node-{i}"));
        pod.status = Some(serde_json::from_value(serde_json::json!({
            "phase": "Running", "podIP": format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256)
        })).unwrap());
        pods.push(pod);
        pvcs.extend(build_pvc(&cluster, g).unwrap());
    }
    let processes: serde_json::Map<String, serde_json::Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            (
                format!("p{i}"),
                serde_json::json!({
                    "address": format!("10.{}.{}.{}:4501", i / 65536, (i / 256) % 256, i % 256),
                    "uptime_seconds": 1000.0,
                    "locality": {"instance_id": id, "zoneid": format!("node-{i}")}
                }),
            )
        })
        .collect();
    let db: DatabaseStatus = database(serde_json::json!({
        "client": {"database_status": {"available": true, "healthy": true},
                   "coordinators": {"quorum_reachable": true, "coordinators": [
                       {"address": "10.0.0.0:4501", "reachable": true},
                       {"address": "10.0.0.1:4501", "reachable": true},
                       {"address": "10.0.0.2:4501", "reachable": true}]}},
        "cluster": {"processes": processes}
    }));
    base.connection_string("sample:abc@10.0.0.0:4501,10.0.0.1:4501,10.0.0.2:4501")
        .status(|s| s.configured = true)
        .cluster(|c| c.spec.routing.use_dns_in_cluster_file = Some(false))
        .pods(pods)
        .pvcs(pvcs)
        .database(db)
}

/// The time of building the snapshot (validation and index) and of every step's decision.
fn decide_all(fixture: &Fixture) -> Duration {
    let started = Instant::now();
    let rebuilt = fixture.clone().build();
    update_status::decide(&rebuilt).unwrap();
    add_process_groups::decide(&rebuilt);
    add_services::decide(&rebuilt).unwrap();
    add_pvcs::decide(&rebuilt).unwrap();
    add_pods::decide(&rebuilt).unwrap();
    generate_initial_cluster_file::decide(&rebuilt).unwrap();
    update_config_map::decide(&rebuilt).unwrap();
    update_pod_config::decide(&rebuilt).unwrap();
    update_labels::decide(&rebuilt);
    update_database_configuration::decide(&rebuilt);
    crate::controller::coordinators::change::decide(
        &rebuilt,
        &crate::controller::pass::plan::PassFacts::default(),
    );
    safety::zone_budget(&rebuilt);
    started.elapsed()
}

#[test]
#[ignore = "timing: run on demand"]
fn a_pass_decides_in_time_linear_in_process_groups() {
    let (small, large) = (250, 1000);
    let (a, b) = (fixture(small), fixture(large));
    decide_all(&a);
    let best = |f: &Fixture| (0..3).map(|_| decide_all(f)).min().unwrap_or_default();
    let (t_small, t_large) = (best(&a), best(&b));
    let ratio = t_large.as_secs_f64() / t_small.as_secs_f64();
    eprintln!(
        "{small} groups: {t_small:?} ({:?}/group); {large} groups: {t_large:?} ({:?}/group); ratio {ratio:.1}",
        t_small / u32::try_from(small).unwrap(),
        t_large / u32::try_from(large).unwrap(),
    );
    assert!(ratio < 8.0, "4x the groups took {ratio:.1}x the time");
}
