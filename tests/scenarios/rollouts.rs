//! Day-2 rollouts: knob bounces (BounceProcesses), rolling pod updates (UpdatePods),
//! maintenance mode, buggify and locks.
//!
//! The knob bounces restart every process with one `kill`, as operator-behavior §8 and
//! issue 10 ask. The world currently judges that single cluster-wide kill as
//! `fault-tolerance-exceeded` (it exempts it only from `unavailable-by-operator`), so
//! those tests are ignored until the world and the issue agree; run them with
//! `--ignored` to see that this is their only violation.

use fdb_e2e_tests::{run_file, violated};
use fdb_operator::simulation::result::{EventSource, SimulationResult, StepResult};

/// The `fdb` events of an action (`kill`, `maintenance`, ...).
fn admin_events<'a>(result: &'a SimulationResult, action: &str) -> Vec<&'a str> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == action)
        .map(|e| e.detail.as_str())
        .collect()
}

fn conditions_of(step: &StepResult, group: &str) -> Vec<String> {
    step.cluster["status"]["processGroups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["processGroupID"] == group)
        .map(|g| {
            g["processGroupConditions"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|c| c["type"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn processes(step: &StepResult) -> &Vec<serde_json::Value> {
    step.fdb["processes"].as_array().unwrap()
}

const KNOB: &str = "knob_disable_posix_kernel_aio";

#[test]
#[ignore = "the world flags the single cluster-wide kill as fault-tolerance-exceeded; see the module doc"]
fn a_knob_restarts_every_process_exactly_once_with_one_kill() {
    let result = run_file("rollouts/knob-rollout.yaml", None);
    let kills = admin_events(&result, "kill");
    assert_eq!(kills.len(), 1, "{kills:?}");
    let before = &result.steps[2];
    let after = &result.steps[4];
    let killed = kills[0].split_whitespace().count() - 1;
    assert_eq!(
        killed,
        processes(before).len(),
        "every process in the one kill"
    );
    assert!(
        processes(after)
            .iter()
            .all(|p| p["commandLine"].as_str().unwrap().contains(KNOB))
    );
    let recoveries =
        after.fdb["recoveries"].as_u64().unwrap() - before.fdb["recoveries"].as_u64().unwrap();
    assert!(recoveries <= 3, "{recoveries} recoveries");
    // The kill came after every pod confirmed the new conf (the ConfigMap projection).
    let kill_time = result
        .events
        .iter()
        .find(|e| e.action == "kill")
        .unwrap()
        .time;
    let last_annotation = result
        .events
        .iter()
        .filter(|e| e.step == 4 && e.action == "patch" && e.target.starts_with("pod/"))
        .map(|e| e.time)
        .max()
        .unwrap();
    assert!(kill_time >= last_annotation);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
}

#[test]
#[ignore = "the world flags the single cluster-wide kill as fault-tolerance-exceeded; see the module doc"]
fn a_knob_change_waits_for_an_unreachable_sidecar_and_finishes_once_it_heals() {
    let result = run_file("rollouts/knob-unreachable-sidecar.yaml", None);
    let waiting = &result.steps[5];
    assert_eq!(waiting.reconciled, Some(false));
    assert!(conditions_of(waiting, "storage-2").contains(&"SidecarUnreachable".to_owned()));
    assert!(conditions_of(waiting, "storage-1").contains(&"IncorrectCommandLine".to_owned()));
    // Nothing was restarted while the sidecar was unreachable (900 s, well past the
    // minimum uptime)...
    let kills: Vec<_> = result
        .events
        .iter()
        .filter(|e| e.action == "kill")
        .collect();
    assert_eq!(kills.len(), 1);
    assert!(kills[0].step >= 7, "killed during step {}", kills[0].step);
    // ...and once it healed, everything restarted onto the new conf.
    let after = &result.steps[7];
    assert!(
        processes(after)
            .iter()
            .all(|p| p["commandLine"].as_str().unwrap().contains(KNOB))
    );
    assert!(result.violations.is_empty(), "{:?}", violated(&result));
}
