//! Multi-region clusters (issue 24): three FoundationDBClusters, one per datacenter and
//! one operator instance each, share one database (the Go operator's `multi_dc`
//! sample). The world holds the `regions` configuration as FoundationDB does: it refuses
//! to change `regions` and `usable_regions` in one command, recruits the transaction
//! system in the primary datacenter, satellite logs in its region's satellites, and
//! remote logs and log routers in the other region.

use std::collections::BTreeMap;

use fdb_e2e_tests::{run_file, run_with};
use fdb_operator::controller::ExecutorRules;
use fdb_simulation::result::{Event, EventSource, SimulationResult, StepResult};
use fdb_simulation::runner::RunOptions;

/// The `configure` commands the instances issued, in order (`done`: the ones that
/// succeeded; else the refused ones, whose detail ends with ` -> <category>: <error>`).
fn configures(result: &SimulationResult, done: bool) -> Vec<&Event> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == "configure")
        .filter(|e| e.detail.contains(" -> ") != done)
        .collect()
}

/// The datacenter of the running process at `address`.
fn dc_at<'a>(step: &'a StepResult, address: &str) -> Option<&'a str> {
    step.fdb["processes"]
        .as_array()?
        .iter()
        .find(|p| p["address"] == address)?["locality"]["dcid"]
        .as_str()
}

/// Datacenters of the processes playing `role`, with how many each.
fn role_dcs(step: &StepResult, role: &str) -> BTreeMap<String, usize> {
    let mut dcs = BTreeMap::new();
    for process in step.fdb["processes"].as_array().unwrap() {
        let plays = process["roles"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| *r == role)
            .count();
        if plays > 0 {
            let dc = process["locality"]["dcid"].as_str().unwrap_or("none");
            *dcs.entry(dc.to_owned()).or_insert(0) += plays;
        }
    }
    dcs
}

/// The steps whose coordinators put more than three (a third of nine) in one datacenter
/// (the coordinators of reporting processes, by their `dcid`), with the count per
/// datacenter.
fn crowded_coordinators(result: &SimulationResult) -> Vec<(usize, BTreeMap<String, usize>)> {
    result
        .steps
        .iter()
        .filter_map(|step| {
            let coordinators = step.fdb["coordinators"].as_array()?;
            let mut per_dc: BTreeMap<String, usize> = BTreeMap::new();
            for coordinator in coordinators {
                if let Some(dc) = dc_at(step, coordinator.as_str()?) {
                    *per_dc.entry(dc.to_owned()).or_insert(0) += 1;
                }
            }
            // Nine coordinators over three datacenters: three each at most.
            per_dc
                .values()
                .any(|n| *n > 3)
                .then_some((step.index, per_dc))
        })
        .collect()
}

#[test]
fn the_multi_dc_sample_migrates_from_one_region_to_two_in_order() {
    let result = run_file("regions/migrate.yaml", None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    assert_eq!(crowded_coordinators(&result), []);
    assert_eq!(
        configures(&result, false).len(),
        0,
        "a configure was refused"
    );
    let configures = configures(&result, true);
    let details: Vec<&str> = configures.iter().map(|e| e.detail.as_str()).collect();
    // dc2's region joins at -1 while one region is usable, then usable_regions rises
    // alone, then dc2 gets its priority; no command changes both.
    let joined = details
        .iter()
        .position(|d| d.contains(r#"{"id":"dc2","priority":-1}"#) && d.contains("usable_regions=1"))
        .unwrap_or_else(|| panic!("{details:#?}"));
    let usable = details
        .iter()
        .position(|d| d.contains("usable_regions=2"))
        .unwrap_or_else(|| panic!("{details:#?}"));
    let prioritized = details
        .iter()
        .position(|d| d.contains(r#"{"id":"dc2","priority":0}"#))
        .unwrap_or_else(|| panic!("{details:#?}"));
    assert!(joined < usable && usable < prioritized, "{details:#?}");
    let last = result.steps.last().unwrap();
    let configuration = &last.fdb["configuration"];
    assert_eq!(configuration["usable_regions"], 2, "{configuration}");
    assert_eq!(
        configuration["regions"][1]["datacenters"][0],
        serde_json::json!({"id": "dc2", "priority": 0})
    );
    // Nine coordinators, three per datacenter.
    let coordinators = last.fdb["coordinators"].as_array().unwrap();
    assert_eq!(coordinators.len(), 9, "{coordinators:?}");
    let mut per_dc: BTreeMap<&str, usize> = BTreeMap::new();
    for coordinator in coordinators {
        let dc = dc_at(last, coordinator.as_str().unwrap()).unwrap_or("none");
        *per_dc.entry(dc).or_insert(0) += 1;
    }
    assert_eq!(
        per_dc,
        BTreeMap::from([("dc1", 3), ("dc2", 3), ("dc3", 3)]),
        "{coordinators:?}"
    );
    // The primary (dc1) holds the stateless roles, the satellite (dc3) its logs, the
    // remote (dc2) its logs and the log routers.
    assert_eq!(role_dcs(last, "master").keys().collect::<Vec<_>>(), ["dc1"]);
    assert_eq!(role_dcs(last, "router").keys().collect::<Vec<_>>(), ["dc2"]);
    let logs = role_dcs(last, "log");
    assert_eq!(logs.get("dc3"), Some(&2), "{logs:?}");
    assert!(logs.get("dc2").is_some_and(|n| *n > 0), "{logs:?}");
    // Three routers (one per primary log) on dc2's four processes: as FoundationDB's
    // cluster controller places them (log and storage classes fit a router equally, the
    // processes with fewer roles first), one on each storage process and the third
    // beside a remote log.
    assert_eq!(
        role_dcs(last, "router"),
        BTreeMap::from([("dc2".to_owned(), 3)])
    );
    let beside_a_log = last.fdb["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            let roles = p["roles"].as_array().unwrap();
            roles.iter().any(|r| r == "log") && roles.iter().any(|r| r == "router")
        })
        .count();
    assert_eq!(beside_a_log, 1, "{}", last.fdb["processes"]);
}

/// Mutation test of the region order: an operator that configures the desired regions
/// and `usable_regions` at once is refused by the database (as FoundationDB refuses
/// both in one command) and never gets there; the operator with the order gets there
/// in two commands, the new region at -1 first.
#[test]
fn an_operator_configuring_regions_and_usable_regions_at_once_is_refused() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/regions/at-once.yaml"
    );
    let yaml = std::fs::read_to_string(path).unwrap();
    let ordered = run_with(&yaml, RunOptions::default());
    assert!(ordered.violations.is_empty(), "{:#?}", ordered.violations);
    assert_eq!(configures(&ordered, false).len(), 0);
    let done = configures(&ordered, true);
    let details: Vec<&str> = done.iter().map(|e| e.detail.as_str()).collect();
    let joined = details.iter().position(|d| {
        d.contains(r#"{"id":"dc2","priority":-1}"#) && d.contains("usable_regions=1")
    });
    let usable = details.iter().position(|d| d.contains("usable_regions=2"));
    assert!(
        joined.is_some() && usable.is_some() && joined < usable,
        "{details:#?}"
    );
    let last = ordered.steps.last().unwrap();
    assert_eq!(last.fdb["configuration"]["usable_regions"], 2);

    let broken = run_with(
        &yaml,
        RunOptions {
            executor_rules: ExecutorRules {
                region_order: false,
                ..ExecutorRules::default()
            },
            ..RunOptions::default()
        },
    );
    let refused = configures(&broken, false);
    assert!(
        refused.iter().any(|e| e.detail.contains("simultaneously")),
        "{refused:#?}"
    );
    assert!(
        configures(&broken, true)
            .iter()
            .all(|e| !e.detail.contains("usable_regions=2")),
        "{:#?}",
        broken.events
    );
    let last = broken.steps.last().unwrap();
    assert_eq!(last.fdb["configuration"]["usable_regions"], 1);
}

/// The step of `result` whose scenario text has this key (`fault`, `heal`), the first.
fn step_of<'a>(result: &'a SimulationResult, key: &str) -> &'a StepResult {
    result
        .steps
        .iter()
        .find(|s| s.step.get(key).is_some())
        .unwrap_or_else(|| panic!("no {key} step"))
}

/// The instance IDs of the reporting processes of datacenter `dc`.
fn groups_in(step: &StepResult, dc: &str) -> Vec<String> {
    let mut ids: Vec<String> = step.fdb["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["locality"]["dcid"] == dc)
        .filter_map(|p| p["locality"]["instance_id"].as_str().map(str::to_owned))
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

#[test]
fn a_lost_primary_datacenter_fails_over_and_is_rebuilt_after_the_detection_time() {
    let result = run_file("regions/lost-primary.yaml", None);
    // Nothing lost, no invariant violated, every expectation met (Reconciled at the end).
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    // While dc1 is lost, the coordinators are not moved into dc2 and dc3 alone (a
    // majority in one of them): they wait for dc1's replacements.
    assert_eq!(crowded_coordinators(&result), []);
    let fault = step_of(&result, "fault");
    let lost = groups_in(&result.steps[fault.index - 1], "dc1");
    assert_eq!(lost.len(), 4, "{lost:?}");
    // The database failed over: right after the loss, the transaction system is in dc2.
    let after = &result.steps[fault.index + 1];
    assert_eq!(
        role_dcs(after, "master").keys().collect::<Vec<_>>(),
        ["dc2"]
    );
    assert_eq!(after.fdb["available"], true);
    // The lost groups were replaced, not before the failure detection time (300 s):
    // none is marked for removal right after the loss, and their exclusion (which
    // follows the mark) comes after it.
    let marked = |step: &StepResult| -> Vec<String> {
        step.cluster["status"]["processGroups"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| !g["removalTimestamp"].is_null())
            .filter_map(|g| g["processGroupID"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(marked(after), Vec::<String>::new());
    let excluded = result
        .events
        .iter()
        .find(|e| e.source == EventSource::Fdb && e.action == "exclude")
        .expect("the lost groups were excluded");
    assert!(excluded.time >= fault.time + 300, "{excluded:?}");
    for group in &lost {
        assert!(excluded.detail.contains(group.as_str()), "{excluded:?}");
    }
    // Rebuilt: dc1 runs four new groups, the nine coordinators are three per
    // datacenter again and none is a lost process.
    let rebuilt = &result.steps[fault.index + 2];
    let now = groups_in(rebuilt, "dc1");
    assert_eq!(now.len(), 4, "{now:?}");
    assert!(now.iter().all(|g| !lost.contains(g)), "{now:?}");
    let coordinators = rebuilt.fdb["coordinators"].as_array().unwrap();
    assert_eq!(coordinators.len(), 9);
    let mut per_dc: BTreeMap<&str, usize> = BTreeMap::new();
    for coordinator in coordinators {
        let dc = dc_at(rebuilt, coordinator.as_str().unwrap()).unwrap_or("none");
        *per_dc.entry(dc).or_insert(0) += 1;
    }
    assert_eq!(
        per_dc,
        BTreeMap::from([("dc1", 3), ("dc2", 3), ("dc3", 3)]),
        "{coordinators:?}"
    );
    // The recoveries since moved the transaction system back to dc1 (its region has the
    // higher priority).
    assert_eq!(
        role_dcs(rebuilt, "master").keys().collect::<Vec<_>>(),
        ["dc1"]
    );
    // After dc1's nodes came back, the three instances reconciled (the expectations).
    let healed = step_of(&result, "heal");
    assert!(
        result.steps[healed.index..]
            .iter()
            .all(|s| s.fdb["available"] == true)
    );
}

/// Issue 38 item 7: the primary datacenter is lost for less than the failure detection
/// time while dc1's operator instance restarts twice. The database fails over to dc2 at
/// once and stays available through the outage, nothing is marked for removal, and
/// when dc1 returns the transaction system moves back there and every instance is
/// Reconciled (the expectations) with nothing lost.
#[test]
fn a_primary_datacenter_that_returns_is_rebuilt_in_place_while_its_instance_restarts() {
    let result = run_file("regions/lost-primary-returns.yaml", None);
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    let fault = step_of(&result, "fault");
    let healed = step_of(&result, "heal");
    let lost = groups_in(&result.steps[fault.index - 1], "dc1");
    assert_eq!(lost.len(), 4, "{lost:?}");
    let outage = &result.steps[fault.index + 1..healed.index];
    assert!(
        outage
            .iter()
            .any(|s| s.step.get("restartOperator").is_some())
    );
    for step in outage {
        assert_eq!(step.fdb["available"], true, "step {}", step.index);
        assert_eq!(
            role_dcs(step, "master").keys().collect::<Vec<_>>(),
            ["dc2"],
            "step {}",
            step.index
        );
        let marked: Vec<&serde_json::Value> = step.cluster["status"]["processGroups"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| !g["removalTimestamp"].is_null())
            .collect();
        assert!(marked.is_empty(), "step {}: {marked:?}", step.index);
    }
    // The same four groups run in dc1 again, and the primary is dc1's once more.
    let last = result.steps.last().unwrap();
    assert_eq!(groups_in(last, "dc1"), lost);
    assert_eq!(role_dcs(last, "master").keys().collect::<Vec<_>>(), ["dc1"]);
    assert_eq!(last.fdb["lostShards"], 0);
}

/// The index of the first step whose scenario text mentions `needle`.
fn step_mentioning(result: &SimulationResult, needle: &str) -> usize {
    result
        .steps
        .iter()
        .position(|s| s.step.to_string().contains(needle))
        .unwrap_or_else(|| panic!("no step mentions {needle}"))
}

/// The kills the instances issued from `time` on that the database took (not refused).
fn kills_since(result: &SimulationResult, time: u64) -> Vec<&Event> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == "kill" && e.time >= time)
        .filter(|e| !e.detail.contains(" -> "))
        .collect()
}

/// Issue 24: a knob added to the three clusters of one database restarts every process
/// of the database once (one kill, one recovery), not once per instance: the instances
/// agree through the restart lists in the database. Mutation test: with each instance
/// killing its own processes alone (the rule off), there are several kills and the
/// world flags dc2's kill of its two storage zones at once.
#[test]
fn a_knob_rollout_across_three_instances_bounces_once() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/regions/knob.yaml");
    let yaml = std::fs::read_to_string(path).unwrap();
    let result = run_with(&yaml, RunOptions::default());
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    let knob = step_mentioning(&result, "knob_max_trace_lines");
    let before = &result.steps[knob - 1];
    let last = result.steps.last().unwrap();
    let kills = kills_since(&result, result.steps[knob].time);
    assert_eq!(kills.len(), 1, "{kills:#?}");
    let processes = last.fdb["processes"].as_array().unwrap().len();
    assert_eq!(
        kills[0].detail.matches(':').count(),
        processes,
        "one kill of every process: {kills:#?}"
    );
    let recoveries =
        last.fdb["recoveries"].as_i64().unwrap() - before.fdb["recoveries"].as_i64().unwrap();
    assert_eq!(recoveries, 1, "{}", last.fdb["recoveryLog"]);
    // Every process runs the knob: the three instances are Reconciled at the end (the
    // scenario's `expect`s), which they are not while a process runs an outdated
    // command line.

    let broken = run_with(
        &yaml,
        RunOptions {
            executor_rules: ExecutorRules {
                shared_restarts: false,
                ..ExecutorRules::default()
            },
            ..RunOptions::default()
        },
    );
    let knob = step_mentioning(&broken, "knob_max_trace_lines");
    let kills = kills_since(&broken, broken.steps[knob].time);
    assert!(kills.len() > 1, "{kills:#?}");
    assert!(
        broken
            .violations
            .iter()
            .any(|v| format!("{v:?}").contains("fault-tolerance-exceeded")),
        "{:#?}",
        broken.violations
    );
}

/// The recoveries of `result` from the step mentioning `needle` to the end.
fn recoveries_since(result: &SimulationResult, needle: &str) -> i64 {
    let before = &result.steps[step_mentioning(result, needle) - 1];
    let last = result.steps.last().unwrap();
    last.fdb["recoveries"].as_i64().unwrap() - before.fdb["recoveries"].as_i64().unwrap()
}

/// The 3-DC upgrade scenario (`regions/upgrade.yaml`).
fn upgrade_yaml() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/regions/upgrade.yaml"
    );
    std::fs::read_to_string(path).unwrap()
}

/// Issue 24's bound on the recoveries of the 3-DC upgrade.
const MOST_UPGRADE_RECOVERIES: i64 = 4;

/// Issue 24: a 7.1 -> 7.3 upgrade of the three instances of one database (the
/// `multi_dc` layout on two regions, `regions/upgrade.yaml`): one kill of every process
/// of the database; the log groups of every instance, replaced for the new image, are
/// excluded together through the exclusion lists (one recovery, not one per instance)
/// and the coordinators leave them in one move (no instance places one on a group
/// another listed); dc2's storage groups, which run the remote log routers (FoundationDB
/// places them there: log and storage classes fit a router equally, fewer roles first),
/// are replaced with them and excluded in the same command, so no pod deletion stops a
/// router; nothing lost (no invariant violated) and every instance Reconciled on 7.3
/// (the scenario's `expect`s). At most 4 recoveries (3 here: the kill, the coordinators'
/// move, the exclusion; 6 when dc2's storage pods were deleted one by one; the Go
/// operator's HA upgrade test expects 8-9). About 27 s of CPU in debug, most of it the
/// migration to two regions.
#[test]
fn a_three_dc_upgrade_takes_at_most_four_recoveries() {
    let result = run_with(&upgrade_yaml(), RunOptions::default());
    assert!(result.violations.is_empty(), "{:#?}", result.violations);
    let upgrade = step_mentioning(&result, "7.3.43");
    let kills = kills_since(&result, result.steps[upgrade].time);
    assert_eq!(kills.len(), 1, "{kills:#?}");
    let last = result.steps.last().unwrap();
    let recoveries = recoveries_since(&result, "7.3.43");
    assert!(
        recoveries <= MOST_UPGRADE_RECOVERIES,
        "{recoveries}: {}",
        last.fdb["recoveryLog"]
    );
    // One exclusion command for the seven log groups of the three instances and dc2's
    // two storage groups (the routers' hosts).
    let excludes: Vec<&Event> = result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == "exclude")
        .filter(|e| e.time >= result.steps[upgrade].time && !e.detail.contains(" -> "))
        .collect();
    assert_eq!(excludes.len(), 1, "{excludes:#?}");
    for group in [
        "dc1-log-1",
        "dc2-log-1",
        "dc3-log-1",
        "dc2-storage-1",
        "dc2-storage-2",
    ] {
        assert!(excludes[0].detail.contains(group), "{excludes:#?}");
    }
}

/// Mutation test of [`a_three_dc_upgrade_takes_at_most_four_recoveries`]: with the
/// shared exclusions off, each instance excludes its own groups and moves the
/// coordinators off them: beyond the bound.
#[test]
fn a_three_dc_upgrade_without_shared_exclusions_exceeds_four_recoveries() {
    let broken = run_with(
        &upgrade_yaml(),
        RunOptions {
            executor_rules: ExecutorRules {
                shared_exclusions: false,
                ..ExecutorRules::default()
            },
            ..RunOptions::default()
        },
    );
    let more = recoveries_since(&broken, "7.3.43");
    assert!(
        more > MOST_UPGRADE_RECOVERIES,
        "{more}: {}",
        broken.steps.last().unwrap().fdb["recoveryLog"]
    );
}
