//! Unified-image clusters (issue 22): `imageType: unified` builds pods whose main
//! container runs fdb-kubernetes-monitor (simulated by the world as the real one
//! behaves: it reads the process configuration JSON of the ConfigMap and publishes what
//! it runs in pod annotations); the operator talks to them only through the Kubernetes
//! API. Each test states its end with `expect` and asserts that no invariant was
//! violated.

use fdb_e2e_tests::{run, scenario};
use fdb_simulation::result::{SimulationResult, StepResult};

const UNIFIED: &str = "{version: 7.1.57, imageType: unified, processCounts: {storage: 4, cluster_controller: 1}, minimumUptimeSecondsForBounce: 60}";
const KNOB: &str = "knob_disable_posix_kernel_aio";
const CURRENT: &str = "foundationdb.org/launcher-current-configuration";

fn kills(result: &SimulationResult) -> Vec<String> {
    result
        .events
        .iter()
        .filter(|e| e.action == "kill")
        .map(|e| e.detail.clone())
        .collect()
}

fn processes(step: &StepResult) -> &Vec<serde_json::Value> {
    step.fdb["processes"].as_array().unwrap()
}

fn assert_unified_pods(step: &StepResult, image: &str) {
    assert_eq!(step.pods.len(), 17);
    for pod in &step.pods {
        assert_eq!(
            pod.annotations
                .get("foundationdb.org/image-type")
                .map(String::as_str),
            Some("unified"),
            "{}",
            pod.name
        );
        let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            ["foundationdb", "foundationdb-kubernetes-sidecar"],
            "{}",
            pod.name
        );
        assert!(
            pod.containers.iter().all(|c| c.image == image),
            "{}: {:?}",
            pod.name,
            pod.containers
        );
        assert!(pod.annotations.contains_key(CURRENT), "{}", pod.name);
    }
}

#[test]
fn the_unified_quickstart_reaches_reconciled_with_monitor_pods() {
    let result = run(
        &scenario(
            UNIFIED,
            "  - reconcile: {}\n  - expect: {reconciled: true, available: true, pods: 17, processGroups: {storage: 4, log: 4, stateless: 8, cluster_controller: 1}, images: {main: \"foundationdb/fdb-kubernetes-monitor:7.1.57\"}}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let step = &result.steps[1];
    assert_eq!(step.reconciled, Some(true), "{:?}", step.stopped_because);
    assert_unified_pods(step, "foundationdb/fdb-kubernetes-monitor:7.1.57");
    // No HTTP sidecar: the operator never called one.
    assert!(
        !result
            .events
            .iter()
            .any(|e| e.source == fdb_simulation::result::EventSource::Sidecar),
        "a sidecar was called"
    );
    // Every process runs from the monitor's own data directory and process ID.
    for process in processes(step) {
        let line = process["commandLine"].as_str().unwrap();
        assert!(line.contains("--datadir=/var/fdb/data/1"), "{line}");
        assert!(line.contains("--locality_process_id="), "{line}");
    }
}

#[test]
fn a_knob_change_on_unified_pods_bounces_every_process_once() {
    let result = run(
        &scenario(
            UNIFIED,
            "  - reconcile: {}\n  - advance: 600\n  - expect: {within: 600, reconciled: true, available: true}\n  - apply: {spec: {processes: {general: {customParameters: [\"knob_disable_posix_kernel_aio=1\"]}}}}\n  - expect: {within: 600, reconciled: true, available: true}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let kills = kills(&result);
    assert_eq!(kills.len(), 1, "{kills:?}");
    let before = &result.steps[2];
    let after = &result.steps[4];
    assert_eq!(after.reconciled, Some(true), "{:?}", after.stopped_because);
    assert_eq!(
        kills[0].split_whitespace().count() - 1,
        processes(before).len()
    );
    assert!(
        processes(after)
            .iter()
            .all(|p| p["commandLine"].as_str().unwrap().contains(KNOB))
    );
    let recoveries =
        after.fdb["recoveries"].as_u64().unwrap() - before.fdb["recoveries"].as_u64().unwrap();
    assert!(recoveries <= 3, "{recoveries} recoveries");
}

#[test]
fn a_unified_upgrade_copies_the_binaries_kills_once_and_ends_on_the_new_image() {
    let result = run(
        &scenario(
            UNIFIED,
            "  - reconcile: {}\n  - apply: {spec: {version: 7.3.43}}\n  - expect: {within: 7200, reconciled: true, available: true, version: \"7.3.43\", runningVersion: \"7.3.43\", images: {main: \"foundationdb/fdb-kubernetes-monitor:7.3.43\", sidecar: \"foundationdb/fdb-kubernetes-monitor:7.3.43\"}}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let kills = kills(&result);
    assert_eq!(kills.len(), 1, "{kills:?}");
    assert_eq!(kills[0].split_whitespace().count(), 1 + 17, "{}", kills[0]);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
    assert!(
        processes(last).iter().all(|p| p["version"] == "7.3.43"),
        "{:?}",
        processes(last)
    );
    assert!(
        last.fdb["recoveries"].as_u64().unwrap_or(0) <= 3 + 1,
        "{}",
        last.fdb["recoveries"]
    );
    // The sidecar-mode containers took the new image before the kill.
    let kill_at = result
        .events
        .iter()
        .position(|e| e.action == "kill")
        .unwrap();
    let sidecar_patches = result.events[..kill_at]
        .iter()
        .filter(|e| {
            e.action == "patch"
                && e.target.starts_with("pod/")
                && e.detail.contains("spec.containers")
        })
        .count();
    assert!(sidecar_patches >= 17, "{sidecar_patches}");
    assert_unified_pods(last, "foundationdb/fdb-kubernetes-monitor:7.3.43");
}

fn with_world(world: &str, spec: &str, steps: &str) -> String {
    scenario(spec, steps).replacen("cluster:\n", &format!("world:\n{world}cluster:\n"), 1)
}

fn deleted_pods(result: &SimulationResult) -> Vec<String> {
    result
        .events
        .iter()
        .filter(|e| e.action == "delete" && e.target.starts_with("pod/"))
        .map(|e| e.target.clone())
        .collect()
}

#[test]
fn day_two_a_unified_shrink_excludes_then_removes_one_storage_group() {
    let result = run(
        &with_world(
            "  nodes: 8\n  zones: 4\n",
            UNIFIED,
            "  - reconcile: {}\n  - apply: {spec: {processCounts: {storage: 3}}}\n  - expect: {within: 3600, reconciled: true, available: true, processGroups: {storage: 3}, excluded: []}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let last = result.steps.last().unwrap();
    assert_eq!(last.pods.len(), 16);
    let deleted = deleted_pods(&result);
    assert_eq!(deleted.len(), 1, "{deleted:?}");
    assert!(deleted[0].contains("-storage-"), "{deleted:?}");
}

#[test]
fn day_two_a_failed_unified_pod_is_replaced() {
    let result = run(
        &with_world(
            "  nodes: 12\n  zones: 4\n",
            "{version: 7.1.57, imageType: unified, processCounts: {storage: 4, cluster_controller: 1}, automationOptions: {replacements: {failureDetectionTimeSeconds: 600}}}",
            "  - reconcile: {}\n  - fault: {kind: podFailed, processGroup: stateless-1}\n  - expect: {within: 3600, reconciled: true, available: true, processGroups: {storage: 4, stateless: 8, cluster_controller: 1}, excluded: []}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
    assert!(
        !last.pods.iter().any(|p| p.name == "sample-stateless-1"),
        "stateless-1 was not replaced"
    );
    assert_unified_pods(last, "foundationdb/fdb-kubernetes-monitor:7.1.57");
}

#[test]
fn day_two_a_unified_template_change_rolls_every_pod() {
    let result = run(
        &with_world(
            "  nodes: 9\n",
            UNIFIED,
            "  - reconcile: {}\n  - apply: {spec: {processes: {general: {podTemplate: {spec: {containers: [{name: foundationdb, env: [{name: ROLLOUT, value: \"1\"}]}]}}}}}}\n  - expect: {within: 7200, reconciled: true, available: true, pods: 17, processGroups: {storage: 4, log: 4, stateless: 8, cluster_controller: 1}}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
    assert_unified_pods(last, "foundationdb/fdb-kubernetes-monitor:7.1.57");
    // Storage pods were recreated on their PVCs, never replaced.
    let storage_deletions: Vec<String> = deleted_pods(&result)
        .into_iter()
        .filter(|p| p.contains("-storage-"))
        .collect();
    assert_eq!(storage_deletions.len(), 4, "{storage_deletions:?}");
}

#[test]
fn migrating_split_to_unified_replaces_every_group_without_losing_data() {
    let result = run(
        &with_world(
            "  nodes: 12\n  zones: 4\n",
            "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}}",
            "  - reconcile: {}\n  - apply: {spec: {imageType: unified}}\n  - expect: {within: 14400, reconciled: true, available: true, pods: 17, processGroups: {storage: 4, log: 4, stateless: 8, cluster_controller: 1}, excluded: []}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
    assert_unified_pods(last, "foundationdb/fdb-kubernetes-monitor:7.1.57");
}

#[test]
fn migrating_unified_back_to_split_replaces_every_group_without_losing_data() {
    let result = run(
        &with_world(
            "  nodes: 12\n  zones: 4\n",
            UNIFIED,
            "  - reconcile: {}\n  - apply: {spec: {imageType: split}}\n  - expect: {within: 14400, reconciled: true, available: true, pods: 17, processGroups: {storage: 4, log: 4, stateless: 8, cluster_controller: 1}, excluded: [], images: {main: \"foundationdb/foundationdb:7.1.57\"}}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
    for pod in &last.pods {
        assert_eq!(
            pod.annotations
                .get("foundationdb.org/image-type")
                .map(String::as_str),
            Some("split"),
            "{}",
            pod.name
        );
    }
}
