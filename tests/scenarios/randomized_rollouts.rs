//! Randomized rollouts with replacements, evictions and crash loops in flight (issue 38
//! item 4): the class of the triple-redundancy stall
//! (`rollouts/triple-rollout-replacement-eviction.yaml`, seed 105 of a fresh generator).
//! Each seed draws a redundancy mode (triple and single twice as often as double), 4 or
//! 5 zones of three nodes each, a failure detection time, then 3 to 5 of: a template
//! rollout with a user's eviction or a group fault landing while it runs, a group fault
//! before a rollout, an operator crash after a deletion or a coordinator change, a node
//! down. Then everything heals and the cluster must be Reconciled with no invariant
//! violated, as in `randomized.rs`.
//!
//! `FDB_ROLLOUT_SEEDS` picks the seeds as `FDB_RANDOMIZED_SEEDS` does (a count, a list or
//! a range); without it, two seeds run (CI). `FDB_RANDOMIZED_DUMP` with
//! `dump_the_rollout_scenarios` writes them for `fdb-operator simulate`.

use std::fmt::Write as _;

use super::randomized::{assert_each_passes, parse_seeds, run_generated};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Seeds of the default (CI) run.
const DEFAULT_SEEDS: [u64; 2] = [1, 2];

/// Process groups a fault or an eviction may name.
const GROUPS: [&str; 5] = ["storage-1", "storage-3", "storage-5", "log-1", "log-2"];
/// Group faults that keep a replacement or a wait in flight during a rollout.
const GROUP_FAULTS: [&str; 3] = ["sidecarUnreachable", "processCrashLoop", "processMissing"];
const REDUNDANCY: [&str; 5] = ["triple", "single", "triple", "single", "double"];
const CRASH_AFTER: [&str; 3] = ["delete", "coordinators", "exclude"];

fn pick<'a>(rng: &mut ChaCha8Rng, items: &[&'a str]) -> &'a str {
    items[rng.random_range(0..items.len())]
}

fn rollout(steps: &mut String, env: &mut u32, class: &str) {
    *env += 1;
    let _ = writeln!(
        steps,
        "  - apply: {{spec: {{processes: {{{class}: {{podTemplate: {{spec: {{containers: [{{name: foundationdb, env: [{{name: CHAOS_ROLLOUT, value: \"{env}\"}}]}}]}}}}}}}}}}}}"
    );
}

fn group_fault(rng: &mut ChaCha8Rng, steps: &mut String) {
    let kind = pick(rng, &GROUP_FAULTS);
    let group = pick(rng, &GROUPS);
    let _ = writeln!(steps, "  - fault: {{kind: {kind}, processGroup: {group}}}");
}

/// The scenario of one seed.
fn scenario(seed: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let redundancy = pick(&mut rng, &REDUNDANCY);
    let zones: u32 = rng.random_range(4..=5);
    let nodes = zones * 3;
    let failure_detection = pick(&mut rng, &["600", "1200"]);
    let mut steps = String::new();
    let mut env = 0;
    for _ in 0..rng.random_range(3..=5) {
        match rng.random_range(0..6) {
            0 | 1 => {
                // A rollout, then an eviction or a fault while it runs.
                let class = pick(&mut rng, &["storage", "log", "general"]);
                rollout(&mut steps, &mut env, class);
                let _ = writeln!(steps, "  - advance: {}", rng.random_range(10..=300));
                if rng.random_bool(0.5) {
                    let group = pick(&mut rng, &GROUPS);
                    let (class, nth) = group.rsplit_once('-').expect("GROUPS are class-number");
                    let _ = writeln!(
                        steps,
                        "  - act: {{as: user, evict: {{processClass: {class}, nth: {nth}}}}}"
                    );
                } else {
                    group_fault(&mut rng, &mut steps);
                }
            }
            2 => {
                // A fault first (a replacement in flight), then a rollout.
                group_fault(&mut rng, &mut steps);
                let _ = writeln!(steps, "  - advance: {}", rng.random_range(600..=1800));
                rollout(&mut steps, &mut env, "storage");
            }
            3 => {
                let action = pick(&mut rng, &CRASH_AFTER);
                let _ = writeln!(steps, "  - restartOperator: {{after: {action}}}");
            }
            4 => {
                let node = rng.random_range(1..=nodes);
                let _ = writeln!(steps, "  - fault: {{kind: nodeDown, node: node-{node}}}");
            }
            _ => group_fault(&mut rng, &mut steps),
        }
        let _ = writeln!(steps, "  - advance: {}", rng.random_range(30..=1200));
    }
    format!(
        "name: rollouts-{seed}
seed: {seed}
world:
  nodes: {nodes}
  zones: {zones}
cluster:
  apiVersion: apps.foundationdb.org/v1beta2
  kind: FoundationDBCluster
  metadata: {{name: sample, namespace: default}}
  spec:
    version: 7.1.57
    databaseConfiguration: {{redundancy_mode: {redundancy}}}
    processCounts: {{storage: 6, log: 3, stateless: 6, cluster_controller: 1}}
    minimumUptimeSecondsForBounce: 60
    automationOptions:
      replacements: {{enabled: true, failureDetectionTimeSeconds: {failure_detection}}}
steps:
  - reconcile: {{}}
{steps}  - heal: {{all: true}}
  - expect: {{within: 14400, reconciled: true, available: true}}
"
    )
}

/// `FDB_ROLLOUT_SEEDS`: a count (`20`: seeds 1..=20), a list (`7,42`) or a range
/// (`150..160`); the default seeds without it.
fn seeds() -> Vec<u64> {
    match std::env::var("FDB_ROLLOUT_SEEDS") {
        Ok(text) => {
            parse_seeds(&text).unwrap_or_else(|why| panic!("FDB_ROLLOUT_SEEDS={text:?}: {why}"))
        }
        Err(_) => DEFAULT_SEEDS.to_vec(),
    }
}

#[test]
fn rollouts_with_replacements_evictions_and_crash_loops_converge() {
    assert_each_passes(&seeds(), |&seed| {
        run_generated(&format!("seed {seed}"), &scenario(seed))
    });
}

#[test]
fn the_rollout_generator_is_deterministic_and_draws_the_class() {
    assert_eq!(scenario(3), scenario(3));
    let all: Vec<String> = (1..=40).map(scenario).collect();
    let distinct: std::collections::BTreeSet<&String> = all.iter().collect();
    assert_eq!(distinct.len(), all.len());
    for needle in [
        "redundancy_mode: triple",
        "redundancy_mode: single",
        "zones: 4",
        "zones: 5",
        "evict:",
        "processCrashLoop",
        "CHAOS_ROLLOUT",
    ] {
        assert!(all.iter().any(|yaml| yaml.contains(needle)), "{needle}");
    }
}

/// Writes each seed's scenario to `$FDB_RANDOMIZED_DUMP/rollouts-<seed>.yaml`.
#[test]
#[ignore = "a tool, not a test: writes the scenarios for fdb-operator simulate"]
fn dump_the_rollout_scenarios() {
    let dir = std::env::var("FDB_RANDOMIZED_DUMP").expect("FDB_RANDOMIZED_DUMP: a directory");
    for seed in seeds() {
        let path = std::path::Path::new(&dir).join(format!("rollouts-{seed}.yaml"));
        std::fs::write(&path, scenario(seed)).expect("the dump directory is writable");
    }
}
