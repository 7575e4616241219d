//! Randomized day-2 scenarios (issue 9): each seed builds a scenario that mixes faults
//! (missing processes, failed pods, unreachable sidecars, pods stuck terminating, nodes
//! down), spec changes (storage count, `processGroupsToRemove`, a knob) and operator
//! crashes right after one of its actions, then heals everything. The world's invariants
//! must hold throughout, and the cluster must converge to Reconciled once faults heal.
//! A user eviction names the Nth live pod of a class, chosen when it runs (issue 26: a
//! pod named when the scenario is written may be gone by then, replaced by the operator).
//!
//! The default run (CI) holds thirty short seeds and two full ones.
//! `FDB_RANDOMIZED_SEEDS` picks the seeds instead: a count (`20`: seeds 1..=20), a list
//! (`7,42`; one seed: `156,`) or a range (`150..160`), at full length unless
//! `FDB_RANDOMIZED_LENGTH=short`. A failure prints the seed and the whole scenario, to
//! rerun with `fdb-operator simulate`.

use std::fmt::Write as _;

use fdb_e2e_tests::run;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Seeds of a default (CI) run at short length (issue 26: at least 30 seeds in CI). A
/// short seed mixes one or two actions drawn by the same generator and costs about half
/// a full one, so thirty of them cover the redundancy modes, deletion modes, update
/// strategies, faults, rollouts and crashes within CI's budget; see docs/simulation.md
/// for the measured costs. Seed 26 (short: a rollout in triple redundancy whose last pod
/// hosts a coordinator that could not move anywhere) passes since UpdatePods replaces
/// such a group, but costs 113 s of CPU in debug: its class is held by the cheaper
/// `sweep/not-reconciled-coordinator-cannot-move.yaml`, and seed 31 keeps its place.
/// Seed 21 (76.6 s of CPU, 214 passes: one pod at a time with the 120 s recovery wait
/// between them) gave its place to seed 32 (about 13 s) to keep CI within its budget;
/// the sweep still runs it.
const DEFAULT_SHORT_SEEDS: [u64; 30] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 23, 24, 25, 27, 28,
    29, 30, 31, 32,
];

/// Seeds of a default run at full length (three to five actions at once), for the
/// interactions a short seed cannot mix. Seed 6 (single redundancy, a failed and
/// stuck-terminating storage pod replaced before its data moved off) is one: its pod went
/// away with the only replica of its data on its PVC, and a group marked for removal got
/// no pod back, so its exclusion waited forever on the unavailable database (fixed in
/// AddPods). A sweep (`FDB_RANDOMIZED_SEEDS=200`, in release) covers many more.
const DEFAULT_FULL_SEEDS: [u64; 2] = [1, 6];

/// Seeds run at once.
const PARALLEL_RUNS: usize = 2;

const NODES: u32 = 12;
const GROUPS: [&str; 6] = [
    "storage-1",
    "storage-2",
    "storage-3",
    "log-1",
    "log-2",
    "stateless-1",
];
const GROUP_FAULTS: [&str; 4] = [
    "processMissing",
    "podFailed",
    "sidecarUnreachable",
    "podStuckTerminating",
];
const CRASH_AFTER: [&str; 9] = [
    "exclude",
    "include",
    "delete",
    "kill",
    "coordinators",
    "create",
    "patch",
    "configure",
    "maintenance",
];
const REDUNDANCY: [&str; 3] = ["single", "double", "triple"];
const DELETION_MODES: [&str; 3] = ["Zone", "ProcessGroup", "All"];
const UPDATE_STRATEGIES: [&str; 3] = ["ReplaceTransactionSystem", "Replace", "Delete"];
/// Zones of the world (`node-i` is in `zone-(i mod ZONES)`).
const ZONES: u32 = 4;

/// `FDB_RANDOMIZED_SEEDS`, when set: a count (`20`: seeds 1..=20), a list (`7,42`; one
/// seed: `156,`) or a range (`150..160`, both ends included).
fn seeds() -> Option<Vec<u64>> {
    let text = std::env::var("FDB_RANDOMIZED_SEEDS").ok()?;
    Some(parse_seeds(&text).unwrap_or_else(|why| panic!("FDB_RANDOMIZED_SEEDS={text:?}: {why}")))
}

/// See [`seeds`] (the rollout generator reads `FDB_ROLLOUT_SEEDS` the same way).
pub(super) fn parse_seeds(text: &str) -> Result<Vec<u64>, String> {
    let number = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|e| format!("{s:?} is not a seed: {e}"))
    };
    if text.contains(',') {
        text.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(number)
            .collect()
    } else if let Some((from, to)) = text.split_once("..") {
        Ok((number(from)?..=number(to)?).collect())
    } else {
        Ok((1..=number(text)?).collect())
    }
}

#[test]
fn seeds_are_a_count_a_list_or_a_range() {
    assert_eq!(parse_seeds("3"), Ok(vec![1, 2, 3]));
    assert_eq!(parse_seeds("7, 42"), Ok(vec![7, 42]));
    assert_eq!(parse_seeds("156,"), Ok(vec![156]));
    assert_eq!(parse_seeds("150..152"), Ok(vec![150, 151, 152]));
    assert!(
        parse_seeds("x")
            .unwrap_err()
            .contains("\"x\" is not a seed")
    );
}

/// The seeds to run and their length: the seeds of `FDB_RANDOMIZED_SEEDS` at
/// `FDB_RANDOMIZED_LENGTH` (full unless `short`); without a seed list, the default short
/// seeds at that length if it is given, else the default mix (the full seeds first, as
/// they take longest, then the short ones).
fn runs() -> Vec<(u64, Length)> {
    runs_of(seeds(), Length::from_env())
}

/// [`runs`] from the seed list and the length asked for.
fn runs_of(seeds: Option<Vec<u64>>, length: Option<Length>) -> Vec<(u64, Length)> {
    match (seeds, length) {
        (Some(seeds), length) => seeds
            .into_iter()
            .map(|seed| (seed, length.unwrap_or(Length::Full)))
            .collect(),
        (None, Some(length)) => DEFAULT_SHORT_SEEDS
            .into_iter()
            .map(|seed| (seed, length))
            .collect(),
        (None, None) => DEFAULT_FULL_SEEDS
            .into_iter()
            .map(|seed| (seed, Length::Full))
            .chain(DEFAULT_SHORT_SEEDS.map(|seed| (seed, Length::Short)))
            .collect(),
    }
}

fn pick<'a>(rng: &mut ChaCha8Rng, items: &[&'a str]) -> &'a str {
    items[rng.random_range(0..items.len())]
}

fn group_fault(rng: &mut ChaCha8Rng) -> String {
    let kind = pick(rng, &GROUP_FAULTS);
    let group = pick(rng, &GROUPS);
    format!("  - fault: {{kind: {kind}, processGroup: {group}}}\n")
}

/// The scenario of one seed, and the storage count it ends with. Each seed picks a
/// redundancy mode, a deletion mode and a pod update strategy, then mixes 3 to 5 of:
/// faults (one or two at once, a node or a whole zone down), spec changes (storage
/// count, `processGroupsToRemove`, a knob, an env var, at most one upgrade), user
/// evictions and drains, and operator crashes right after an action of any kind.
fn scenario(seed: u64) -> (String, u32) {
    scenario_of_length(seed, Length::Full)
}

/// How many day-2 actions a seed mixes: the full generator (3 to 5) for the default run
/// and the on-demand sweep, or a short run of the same generator (1 or 2) for many seeds
/// at a small cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Length {
    Full,
    Short,
}

impl Length {
    /// `FDB_RANDOMIZED_LENGTH`, when set: `short` or `full`.
    fn from_env() -> Option<Self> {
        match std::env::var("FDB_RANDOMIZED_LENGTH").as_deref() {
            Ok("short") => Some(Self::Short),
            Ok("full") => Some(Self::Full),
            Err(_) => None,
            Ok(other) => panic!("FDB_RANDOMIZED_LENGTH: short or full, not {other}"),
        }
    }

    /// What the scenario's name (and its dump file) ends with.
    fn suffix(self) -> &'static str {
        match self {
            Self::Full => "",
            Self::Short => "-short",
        }
    }

    fn actions(self) -> std::ops::RangeInclusive<u32> {
        match self {
            Self::Full => 3..=5,
            Self::Short => 1..=2,
        }
    }
}

/// The scenario of one seed with `length` actions (see [`scenario`]).
fn scenario_of_length(seed: u64, length: Length) -> (String, u32) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let redundancy = pick(&mut rng, &REDUNDANCY);
    let deletion_mode = pick(&mut rng, &DELETION_MODES);
    let update_strategy = pick(&mut rng, &UPDATE_STRATEGIES);
    let mut storage = 4;
    let mut steps = String::new();
    let mut knob = 0;
    let mut env = 0;
    let mut upgraded = false;
    for _ in 0..rng.random_range(length.actions()) {
        match rng.random_range(0..13) {
            0 | 1 => steps.push_str(&group_fault(&mut rng)),
            2 => {
                // Two faults at once.
                steps.push_str(&group_fault(&mut rng));
                steps.push_str(&group_fault(&mut rng));
            }
            3 => {
                let node = rng.random_range(1..=NODES);
                let _ = writeln!(steps, "  - fault: {{kind: nodeDown, node: node-{node}}}");
            }
            4 => {
                // A whole zone down: every node of it.
                let zone = rng.random_range(0..ZONES);
                for node in (1..=NODES).filter(|node| node % ZONES == zone) {
                    let _ = writeln!(steps, "  - fault: {{kind: nodeDown, node: node-{node}}}");
                }
            }
            5 => {
                storage = rng.random_range(3..=5);
                let _ = writeln!(
                    steps,
                    "  - apply: {{spec: {{processCounts: {{storage: {storage}}}}}}}"
                );
            }
            6 => {
                let group = pick(&mut rng, &GROUPS[..3]);
                let _ = writeln!(
                    steps,
                    "  - apply: {{spec: {{processGroupsToRemove: [{group}]}}}}"
                );
            }
            7 => {
                knob += 1;
                let _ = writeln!(
                    steps,
                    "  - apply: {{spec: {{processes: {{general: {{customParameters: [\"knob_max_trace_lines={knob}000\"]}}}}}}}}"
                );
            }
            8 => {
                env += 1;
                let _ = writeln!(
                    steps,
                    "  - apply: {{spec: {{processes: {{general: {{podTemplate: {{spec: {{containers: [{{name: foundationdb, env: [{{name: ROLLOUT, value: \"{env}\"}}]}}]}}}}}}}}}}}}"
                );
            }
            9 if !upgraded => {
                upgraded = true;
                steps.push_str("  - apply: {spec: {version: 7.3.43}}\n");
            }
            10 => {
                // The pod is chosen when the act runs (the Nth live pod of the class): a
                // name picked now may be gone by then, replaced by the operator.
                let group = pick(&mut rng, &GROUPS);
                let (class, nth) = group.rsplit_once('-').expect("GROUPS are class-number");
                let _ = writeln!(
                    steps,
                    "  - act: {{as: user, evict: {{processClass: {class}, nth: {nth}}}}}"
                );
            }
            11 => {
                let node = rng.random_range(1..=NODES);
                let _ = writeln!(steps, "  - act: {{as: user, drain: node-{node}}}");
            }
            _ => {
                let action = pick(&mut rng, &CRASH_AFTER);
                let _ = writeln!(steps, "  - restartOperator: {{after: {action}}}");
            }
        }
        let _ = writeln!(steps, "  - advance: {}", rng.random_range(30..=900));
    }
    let suffix = length.suffix();
    let yaml = format!(
        "name: randomized-{seed}{suffix}
seed: {seed}
world:
  nodes: {NODES}
  zones: {ZONES}
cluster:
  apiVersion: apps.foundationdb.org/v1beta2
  kind: FoundationDBCluster
  metadata: {{name: sample, namespace: default}}
  spec:
    version: 7.1.57
    databaseConfiguration: {{redundancy_mode: {redundancy}}}
    processCounts: {{storage: 4, cluster_controller: 1}}
    minimumUptimeSecondsForBounce: 60
    automationOptions:
      replacements: {{enabled: true, failureDetectionTimeSeconds: 600}}
      deletionMode: {deletion_mode}
      podUpdateStrategy: {update_strategy}
steps:
  - reconcile: {{}}
{steps}  - heal: {{all: true}}
  - expect: {{within: 14400, reconciled: true, available: true, processGroups: {{storage: {storage}}}}}
"
    );
    (yaml, storage)
}

#[test]
fn random_faults_changes_and_crashes_never_violate_an_invariant_and_converge() {
    assert_seeds_pass(&runs());
}

/// Runs the seeds, two at a time (each run is mostly one thread and holds its own
/// loopback block, so they do not disturb each other), and fails naming every seed that
/// violated an invariant or did not converge.
fn assert_seeds_pass(runs: &[(u64, Length)]) {
    assert_each_passes(runs, |&(seed, length)| run_seed(seed, length));
}

/// Runs `check` on each item, two at a time, and fails with every failure it describes.
pub(super) fn assert_each_passes<T: Sync>(
    items: &[T],
    check: impl Fn(&T) -> Option<String> + Sync,
) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..items.len().min(PARALLEL_RUNS) {
            scope.spawn(|| {
                while let Some(item) =
                    items.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                {
                    if let Some(failure) = check(item) {
                        failures
                            .lock()
                            .expect("no run panics holding it")
                            .push(failure);
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().expect("no run panicked holding it");
    failures.sort();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs one seed; `Some` describes its failure.
fn run_seed(seed: u64, length: Length) -> Option<String> {
    let (yaml, _) = scenario_of_length(seed, length);
    run_generated(&format!("seed {seed} ({length:?})"), &yaml)
}

/// Runs a generated scenario (`label` names it in a failure); `Some` describes its
/// failure: a violation, no Reconciled at the end, or a run that could not go on.
pub(super) fn run_generated(label: &str, yaml: &str) -> Option<String> {
    // A run that cannot go on (an act the API refuses, such as evicting a pod that is
    // gone by then) fails its seed, not the whole sweep: the other seeds still run.
    let result = match std::panic::catch_unwind(|| run(yaml, None)) {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            return Some(format!(
                "{label}: the run stopped: {message}\n--- scenario ---\n{yaml}"
            ));
        }
    };
    let last = result.steps.last().expect("the scenario has steps");
    (!result.violations.is_empty() || last.reconciled != Some(true)).then(|| {
        format!(
            "{label}: violations {:?}, last step stopped because {:?}\n--- scenario ---\n{yaml}",
            result.violations, last.stopped_because
        )
    })
}

#[test]
fn the_generator_is_deterministic_and_varied() {
    assert_eq!(scenario(3), scenario(3));
    let distinct: std::collections::BTreeSet<String> =
        (1..=8).map(|seed| scenario(seed).0).collect();
    assert_eq!(distinct.len(), 8);
    // A short run mixes fewer actions than the full one of the same seed.
    let steps = |yaml: &str| yaml.matches("  - advance:").count();
    for seed in 1..=8 {
        let short = steps(&scenario_of_length(seed, Length::Short).0);
        assert!((1..=2).contains(&short), "seed {seed}: {short} actions");
        assert!((3..=5).contains(&steps(&scenario(seed).0)));
    }
}

#[test]
fn the_default_run_holds_thirty_short_seeds_and_the_full_ones_first() {
    let runs = runs_of(None, None);
    let short = runs.iter().filter(|(_, length)| *length == Length::Short);
    assert!(short.count() >= 30, "issue 26: at least 30 seeds in CI");
    let full: Vec<u64> = runs
        .iter()
        .take_while(|(_, length)| *length == Length::Full)
        .map(|(seed, _)| *seed)
        .collect();
    assert_eq!(full, DEFAULT_FULL_SEEDS);
    // A seed list runs at full length unless short is asked for.
    assert_eq!(runs_of(Some(vec![7]), None), [(7, Length::Full)]);
    assert_eq!(
        runs_of(Some(vec![7]), Some(Length::Short)),
        [(7, Length::Short)]
    );
    assert_eq!(runs_of(None, Some(Length::Full)).len(), 30);
}

/// Writes each run's scenario to `$FDB_RANDOMIZED_DUMP/<its name>.yaml`
/// (`randomized-<seed>.yaml`, or `randomized-<seed>-short.yaml` for a short one), to run
/// (or rerun a failure) with `fdb-operator simulate`:
/// `FDB_RANDOMIZED_DUMP=/tmp/r cargo test -p fdb-e2e-tests --test scenarios dump_the_randomized_scenarios -- --ignored`
#[test]
#[ignore = "a tool, not a test: writes the scenarios for fdb-operator simulate"]
fn dump_the_randomized_scenarios() {
    let dir = std::env::var("FDB_RANDOMIZED_DUMP").expect("FDB_RANDOMIZED_DUMP: a directory");
    for (seed, length) in runs() {
        let suffix = length.suffix();
        let path = std::path::Path::new(&dir).join(format!("randomized-{seed}{suffix}.yaml"));
        std::fs::write(&path, scenario_of_length(seed, length).0)
            .expect("the dump directory is writable");
    }
}
