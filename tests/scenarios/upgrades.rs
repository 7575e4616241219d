//! Upgrades (issue 11): an incompatible upgrade stages the new binaries through the
//! sidecars and restarts every process at once; a patch upgrade makes no cluster-wide
//! kill; an incompatible downgrade is refused; clients, unreachable sidecars, an operator
//! crash and a process that ignores the kill are all survived.
//!
//! The one cluster-wide kill of an upgrade is judged by `unavailable-by-operator` (a
//! restart plus a recovery), not by `fault-tolerance-exceeded`; every test here asserts
//! that no invariant at all was violated.

use fdb_e2e_tests::{run, scenario};
use fdb_simulation::result::SimulationResult;

const SPEC_71: &str = "{version: 7.1.57, processCounts: {storage: 4, cluster_controller: 1}, minimumUptimeSecondsForBounce: 60}";
const SPEC_73: &str = "{version: 7.3.43, processCounts: {storage: 4, cluster_controller: 1}, minimumUptimeSecondsForBounce: 60}";

/// Every violation, as `invariant: detail`.
fn violations(result: &SimulationResult) -> Vec<String> {
    result
        .violations
        .iter()
        .map(|v| format!("{}: {}", v.invariant, v.detail))
        .collect()
}

fn kills(result: &SimulationResult) -> Vec<String> {
    result
        .events
        .iter()
        .filter(|e| e.action == "kill")
        .map(|e| e.detail.clone())
        .collect()
}

fn operator_events(result: &SimulationResult, reason: &str) -> Vec<String> {
    result
        .events
        .iter()
        .filter(|e| e.action == "event" && e.detail.starts_with(reason))
        .map(|e| e.detail.clone())
        .collect()
}

fn with_world(world: &str, spec: &str, steps: &str) -> String {
    scenario(spec, steps).replacen("cluster:\n", &format!("world:\n{world}cluster:\n"), 1)
}

const UPGRADE: &str = "  - reconcile: {}\n  - apply: {spec: {version: 7.3.43}}\n";

/// Asserts the pieces of the upgrade this branch owns, on the last step.
fn assert_upgraded(result: &SimulationResult) {
    let last = result.steps.last().unwrap();
    let processes = last.fdb["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 17);
    assert!(
        processes.iter().all(|p| p["version"] == "7.3.43"),
        "{processes:?}"
    );
    assert_eq!(last.cluster["status"]["runningVersion"], "7.3.43");
    let config = last
        .config_maps
        .iter()
        .find(|c| c.name == "sample-config")
        .unwrap();
    assert_eq!(config.data["running-version"], "7.3.43");
    // Exactly one kill, naming every process.
    let kills = kills(result);
    assert_eq!(kills.len(), 1, "{kills:?}");
    assert_eq!(kills[0].split_whitespace().count(), 1 + 17, "{}", kills[0]);
    // Sidecar images changed before the kill, and nothing else of a pod was patched.
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
    assert!(
        result.events[kill_at..]
            .iter()
            .all(|e| !(e.action == "patch"
                && e.target.starts_with("pod/")
                && e.detail.contains("spec.containers")))
    );
    assert!(
        last.fdb["recoveries"].as_u64().unwrap_or(0) <= 3 + 1,
        "{}",
        last.fdb["recoveries"]
    );
}

/// Asserts the cluster ended on the new images having seen at most
/// 2 x (log + stateless groups) + 5 non-storage process groups (issue 11): each
/// transaction-system group replaced once, and a few more at most.
fn assert_few_groups_ever_seen(result: &SimulationResult) {
    let non_storage: std::collections::BTreeSet<&str> = result
        .events
        .iter()
        .filter(|e| e.action == "create")
        .filter_map(|e| e.target.strip_prefix("pod/"))
        .filter(|name| !name.contains("-storage-"))
        .collect();
    // The 17-group double cluster: 4 log, 8 stateless and 1 cluster controller groups.
    let limit = 2 * (4 + 8) + 5;
    assert!(
        non_storage.len() <= limit,
        "{} non-storage groups seen: {non_storage:?}",
        non_storage.len()
    );
}

#[test]
fn the_readme_main_job_creates_the_quickstart_cluster_and_upgrades_it() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/examples/quickstart-upgrade.yaml"
    );
    let result = run(&std::fs::read_to_string(path).unwrap(), None);
    assert_eq!(violations(&result), Vec::<String>::new());
    assert_upgraded(&result);
    assert_few_groups_ever_seen(&result);
    let last = result.steps.last().unwrap();
    assert_eq!(last.reconciled, Some(true), "{:?}", last.stopped_because);
}

/// Issue 36: the quickstart upgrade with the operator reaching the database as in
/// production, through `fdbcli --exec` texts run by the tools of each version
/// (`/usr/bin/fdb/7.1/fdbcli`, then `7.3`). Every tool run is a client of the database
/// for 10 s, listed in its log group: the operator image's `fdb-kubernetes-operator`,
/// which the client check ignores, so its own connections never hold the upgrade. One
/// kill, at most three recoveries for the whole upgrade.
#[test]
fn the_quickstart_upgrade_runs_each_versions_tools_and_lists_the_operators_connections() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/examples/quickstart-upgrade.yaml"
    );
    let result = run(&std::fs::read_to_string(path).unwrap(), None);
    assert_eq!(violations(&result), Vec::<String>::new());
    assert_upgraded(&result);
    let clients = |step: &fdb_simulation::result::StepResult| -> Vec<String> {
        step.fdb["clients"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c.as_str().map(str::to_owned))
            .collect()
    };
    let before = clients(&result.steps[1]);
    assert!(
        before
            .iter()
            .any(|c| c.ends_with(" 7.1.57 fdb-kubernetes-operator")),
        "the operator's 7.1 fdbcli is a listed client: {before:?}"
    );
    let last = result.steps.last().unwrap();
    let after = clients(last);
    assert!(
        after
            .iter()
            .any(|c| c.ends_with(" 7.3.43 fdb-kubernetes-operator")),
        "the operator's 7.3 fdbcli is a listed client: {after:?}"
    );
    assert!(
        after.iter().all(|c| !c.contains(" 7.1.57 ")),
        "no 7.1 client can reach a 7.3 database: {after:?}"
    );
    let upgrade_started = result.steps[2].time;
    let recoveries: Vec<&serde_json::Value> = last.fdb["recoveryLog"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["started"].as_u64().is_some_and(|t| t >= upgrade_started))
        .collect();
    assert!(
        !recoveries.is_empty() && recoveries.len() <= 3,
        "{recoveries:?}"
    );
}

#[test]
fn an_incompatible_upgrade_stages_through_the_sidecars_and_kills_every_process_once() {
    let result = run(
        &scenario(
            SPEC_71,
            &format!(
                "{UPGRADE}  - expect: {{within: 3600, version: \"7.3.43\", runningVersion: \"7.3.43\", available: true}}\n"
            ),
        ),
        None,
    );
    assert_eq!(violations(&result), Vec::<String>::new());
    assert_upgraded(&result);
    assert_eq!(operator_events(&result, "UpgradeBounce").len(), 1);
    let last = result.steps.last().unwrap();
    for (pod, sidecar) in &last.sidecars {
        assert!(
            sidecar.binaries.iter().any(|b| b == "bin/7.3.43/fdbserver"),
            "{pod}: {:?}",
            sidecar.binaries
        );
    }
}

#[test]
fn an_incompatible_upgrade_ends_reconciled_on_the_new_images() {
    let result = run(
        &scenario(
            SPEC_71,
            &format!(
                "{UPGRADE}  - expect: {{within: 7200, reconciled: true, available: true, version: \"7.3.43\", runningVersion: \"7.3.43\", images: {{main: \"foundationdb/foundationdb:7.3.43\", sidecar: \"foundationdb/foundationdb-kubernetes-sidecar:7.3.43-1\"}}}}\n"
            ),
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    assert_upgraded(&result);
    assert_few_groups_ever_seen(&result);
}

#[test]
fn a_connected_old_client_holds_the_upgrade_until_it_disconnects() {
    let world =
        "  clients:\n    - {address: \"10.9.0.1:4000\", version: \"7.1.57\", logGroup: app}\n";
    let result = run(
        &with_world(
            world,
            SPEC_71,
            &format!(
                "{UPGRADE}  - advance: 1200\n  - fault: {{kind: clientDisconnected, address: \"10.9.0.1:4000\"}}\n  - expect: {{within: 3600, version: \"7.3.43\", runningVersion: \"7.3.43\"}}\n"
            ),
        ),
        None,
    );
    assert_eq!(violations(&result), Vec::<String>::new());
    let held = &result.steps[2];
    assert_eq!(held.cluster["status"]["runningVersion"], "7.1.57");
    let blocked = operator_events(&result, "IncompatibleClients");
    assert!(!blocked.is_empty());
    assert!(
        blocked[0].contains("10.9.0.1:4000 (log group app"),
        "{}",
        blocked[0]
    );
    assert!(
        result
            .events
            .iter()
            .all(|e| e.action != "kill" || e.step >= 3)
    );
    assert_upgraded(&result);
}

#[test]
fn an_ignored_log_group_does_not_hold_the_upgrade() {
    let world =
        "  clients:\n    - {address: \"10.9.0.1:4000\", version: \"7.1.57\", logGroup: app}\n";
    let spec = SPEC_71.replace(
        "}",
        ", automationOptions: {ignoreLogGroupsForUpgrade: [app, fdb-kubernetes-operator]}}",
    );
    let result = run(
        &with_world(
            world,
            &spec,
            &format!(
                "{UPGRADE}  - expect: {{within: 3600, version: \"7.3.43\", runningVersion: \"7.3.43\"}}\n"
            ),
        ),
        None,
    );
    assert!(operator_events(&result, "IncompatibleClients").is_empty());
    assert_eq!(kills(&result).len(), 1);
    // The ignored client cannot talk to 7.3: the world reports that, and the user chose it.
    let others: Vec<String> = violations(&result)
        .into_iter()
        .filter(|v| !v.starts_with("client-incompatible-upgrade"))
        .collect();
    assert_eq!(others, Vec::<String>::new());
}

#[test]
fn a_patch_upgrade_makes_no_cluster_wide_kill_and_no_staging() {
    let result = run(
        &scenario(
            SPEC_71,
            "  - reconcile: {}\n  - apply: {spec: {version: 7.1.63}}\n  - reconcile: {maxPasses: 30}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    assert!(kills(&result).is_empty());
    assert!(
        !result
            .events
            .iter()
            .any(|e| e.step >= 1 && e.action == "patch" && e.detail.contains("spec.containers"))
    );
    assert!(operator_events(&result, "UnsupportedVersionChange").is_empty());
}

#[test]
fn an_incompatible_downgrade_is_refused_and_nothing_changes() {
    let result = run(
        &scenario(
            SPEC_73,
            "  - reconcile: {}\n  - apply: {spec: {version: 7.1.57}}\n  - reconcile: {maxPasses: 10}\n  - expect: {version: \"7.3.43\", runningVersion: \"7.3.43\", available: true, images: {main: \"foundationdb/foundationdb:7.3.43\"}}\n",
        ),
        None,
    );
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let refused = operator_events(&result, "UnsupportedVersionChange");
    assert!(!refused.is_empty());
    assert!(
        refused[0].contains("downgrade from the running version 7.3.43"),
        "{}",
        refused[0]
    );
    let writes: Vec<_> = result
        .events
        .iter()
        .filter(|e| e.step >= 2 && e.source != fdb_simulation::result::EventSource::Operator)
        .filter(|e| {
            matches!(
                e.action.as_str(),
                "create" | "patch" | "delete" | "kill" | "exclude" | "configure"
            )
        })
        .filter(|e| !e.target.contains("foundationdbcluster"))
        .collect();
    assert!(writes.is_empty(), "{writes:#?}");
}

#[test]
fn an_unreachable_sidecar_during_staging_holds_the_kill_until_it_heals() {
    let result = run(
        &scenario(
            SPEC_71,
            "  - reconcile: {}\n  - fault: {kind: sidecarUnreachable, processGroup: stateless-3}\n  - apply: {spec: {version: 7.3.43}}\n  - advance: 1200\n  - heal: {processGroup: stateless-3}\n  - expect: {within: 3600, version: \"7.3.43\", runningVersion: \"7.3.43\"}\n",
        ),
        None,
    );
    assert_eq!(violations(&result), Vec::<String>::new());
    assert_eq!(
        result.steps[3].cluster["status"]["runningVersion"],
        "7.1.57"
    );
    assert!(
        result
            .events
            .iter()
            .all(|e| e.action != "kill" || e.step >= 4)
    );
    assert_upgraded(&result);
}

#[test]
fn a_missing_binary_during_staging_holds_the_kill_until_it_heals() {
    let result = run(
        &scenario(
            SPEC_71,
            "  - reconcile: {}\n  - fault: {kind: binaryMissing, processGroup: log-2, version: \"7.3.43\"}\n  - apply: {spec: {version: 7.3.43}}\n  - advance: 1200\n  - heal: {processGroup: log-2}\n  - expect: {within: 3600, version: \"7.3.43\", runningVersion: \"7.3.43\"}\n",
        ),
        None,
    );
    assert_eq!(violations(&result), Vec::<String>::new());
    assert_eq!(
        result.steps[3].cluster["status"]["runningVersion"],
        "7.1.57"
    );
    assert_upgraded(&result);
}

#[test]
fn an_operator_crash_right_after_the_kill_converges_without_a_second_kill() {
    let result = run(
        &scenario(
            SPEC_71,
            "  - reconcile: {}\n  - restartOperator: {after: kill}\n  - apply: {spec: {version: 7.3.43}}\n  - expect: {within: 3600, version: \"7.3.43\", runningVersion: \"7.3.43\"}\n",
        ),
        None,
    );
    assert_eq!(violations(&result), Vec::<String>::new());
    assert!(
        result
            .events
            .iter()
            .any(|e| e.detail.contains("crashed right after its action"))
    );
    assert_upgraded(&result);
}

#[test]
fn an_operator_crash_during_staging_converges() {
    let result = run(
        &scenario(
            SPEC_71,
            &format!(
                "{UPGRADE}  - reconcile: {{maxPasses: 1}}\n  - restartOperator: {{}}\n  - expect: {{within: 3600, version: \"7.3.43\", runningVersion: \"7.3.43\"}}\n"
            ),
        ),
        None,
    );
    assert_eq!(violations(&result), Vec::<String>::new());
    assert_upgraded(&result);
}

#[test]
fn a_process_that_ignores_the_kill_gets_its_pod_recreated() {
    let result = run(
        &scenario(
            SPEC_71,
            "  - reconcile: {}\n  - fault: {kind: ignoreKill, processGroup: stateless-2}\n  - apply: {spec: {version: 7.3.43}}\n  - expect: {within: 3600, version: \"7.3.43\", runningVersion: \"7.3.43\", available: true}\n  - advance: 300\n",
        ),
        None,
    );
    assert_eq!(violations(&result), Vec::<String>::new());
    assert!(
        result
            .events
            .iter()
            .any(|e| e.action == "delete" && e.target == "pod/sample-stateless-2")
    );
    assert_eq!(
        operator_events(&result, "IncompatibleProcessRemoved").len(),
        1
    );
    assert_upgraded(&result);
}

/// Issue 26: the three coordinators ignore kills during the upgrade (healed after
/// 600 s). The first kill leaves them on 7.1 and the others on 7.3: the database is down
/// and only a kill that reaches them brings it back. The kill is retried with a back-off
/// (30 s doubled, at most 300 s), not every pass (it was every 5 s: about 100 kills of
/// every process for this fault), and the upgrade ends once the fault heals.
#[test]
fn a_kill_the_coordinators_ignore_is_retried_with_a_backoff() {
    let result = run(
        &scenario(
            SPEC_71,
            "  - reconcile: {}\n  - fault: {kind: ignoreKill, processGroup: log-1}\n  - fault: {kind: ignoreKill, processGroup: log-2}\n  - fault: {kind: ignoreKill, processGroup: log-3}\n  - apply: {spec: {version: 7.3.43}}\n  - advance: 600\n  - heal: {processGroup: log-1}\n  - heal: {processGroup: log-2}\n  - heal: {processGroup: log-3}\n  - expect: {within: 3600, version: \"7.3.43\", runningVersion: \"7.3.43\", available: true}\n",
        ),
        None,
    );
    let times: Vec<u64> = result
        .events
        .iter()
        .filter(|e| e.action == "kill")
        .map(|e| e.time)
        .collect();
    assert!(times.len() >= 3 && times.len() <= 6, "{times:?}");
    // Each wait between kills at least 30 s; from the second on (the first also waits
    // for the recovery pacing), never shorter than the one before.
    let gaps: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|gap| *gap >= 30), "{gaps:?}");
    assert!(gaps[1..].windows(2).all(|w| w[1] >= w[0]), "{gaps:?}");
    // The first kill's outage is the fault's doing; the retries cause no other.
    let outages: Vec<String> = violations(&result)
        .into_iter()
        .filter(|v| v.starts_with("unavailable-by-operator"))
        .collect();
    assert_eq!(outages.len(), 1, "{outages:?}");
    assert!(
        result
            .violations
            .iter()
            .all(|v| v.invariant != "expectation-failed"),
        "{:?}",
        violations(&result)
    );
}

#[test]
fn an_operator_without_the_targets_tools_never_starts_the_upgrade() {
    // The operator image holds only the 7.1 tools: it could not read the database once
    // the kill restarted it on 7.3, so nothing of the upgrade may start.
    let world = "  operatorTools: [\"7.1\"]\n";
    let result = run(
        &with_world(
            world,
            SPEC_71,
            &format!(
                "{UPGRADE}  - advance: 1800\n  - expect: {{within: 600, available: true, runningVersion: \"7.1.57\"}}\n"
            ),
        ),
        None,
    );
    assert_eq!(violations(&result), Vec::<String>::new());
    assert_eq!(kills(&result), Vec::<String>::new());
    let missing = operator_events(&result, "MissingFdbTools");
    assert!(
        !missing.is_empty(),
        "a Warning Event names the missing tools"
    );
    assert!(
        missing[0]
            .contains("no fdbcli for FoundationDB 7.3.43: /usr/bin/fdb/7.3/fdbcli does not exist"),
        "{}",
        missing[0]
    );
    let last = result.steps.last().unwrap();
    assert_eq!(last.cluster["status"]["runningVersion"], "7.1.57");
    let processes = last.fdb["processes"].as_array().unwrap();
    assert!(
        processes.iter().all(|p| p["version"] == "7.1.57"),
        "{processes:?}"
    );
    // Nothing staged: no sidecar holds a 7.3 binary.
    for (pod, sidecar) in &last.sidecars {
        assert!(
            sidecar.binaries.iter().all(|b| !b.contains("7.3.43")),
            "{pod}: {:?}",
            sidecar.binaries
        );
    }
}

#[test]
fn a_users_restart_onto_the_staged_binary_is_followed_by_the_operators_kill_at_once() {
    let result = fdb_e2e_tests::run_file("upgrades/user-restart-onto-staged-binary.yaml", None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    let kills: Vec<_> = result
        .events
        .iter()
        .filter(|e| e.action == "kill")
        .map(|e| (e.time, e.by.clone()))
        .collect();
    assert_eq!(
        kills.len(),
        2,
        "the user's kill and the operator's: {kills:?}"
    );
    let (user_at, operator_at) = (kills[0].0, kills[1].0);
    assert!(
        operator_at - user_at <= 30,
        "the operator's kill came {} s after the user's",
        operator_at - user_at
    );
}

#[test]
fn an_incompatible_upgrade_from_7_3_to_7_4_ends_reconciled_on_the_new_images() {
    // FoundationDB 7.4 speaks its own protocol: the same staged binaries and one kill as
    // 7.1 -> 7.3, with the 7.4 tools of the operator's image once the kill restarted
    // every process.
    let result = run(
        &scenario(
            SPEC_73,
            "  - reconcile: {}\n  - apply: {spec: {version: 7.4.5}}\n  - expect: {within: 7200, reconciled: true, available: true, version: \"7.4.5\", runningVersion: \"7.4.5\", images: {main: \"foundationdb/foundationdb:7.4.5\", sidecar: \"foundationdb/foundationdb-kubernetes-sidecar:7.4.5-1\"}}\n",
        ),
        None,
    );
    assert_eq!(violations(&result), Vec::<String>::new());
    let last = result.steps.last().unwrap();
    let processes = last.fdb["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 17);
    assert!(
        processes.iter().all(|p| p["version"] == "7.4.5"),
        "{processes:?}"
    );
    assert_eq!(last.cluster["status"]["runningVersion"], "7.4.5");
    let kills = kills(&result);
    assert_eq!(kills.len(), 1, "{kills:?}");
    assert_eq!(kills[0].split_whitespace().count(), 1 + 17, "{}", kills[0]);
    assert_eq!(operator_events(&result, "UpgradeBounce").len(), 1);
    assert!(
        last.fdb["recoveries"].as_u64().unwrap_or(0) <= 3 + 1,
        "{}",
        last.fdb["recoveries"]
    );
}
