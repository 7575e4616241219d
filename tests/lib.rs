//! Helpers shared by the end-to-end tests: running scenarios in the simulated world and
//! reading their results.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fdb_simulation::result::{SimulationResult, StepResult};
use fdb_simulation::runner::{RunOptions, run_scenario};
use fdb_simulation::scenario::Scenario;
use sha2::{Digest, Sha256};

/// Parses `yaml` as a scenario and runs it to the end.
///
/// `ip_block`: the loopback block the sidecars listen in (`Some(n)`, or a plain `n`), or
/// `None` to let the run pick one no other run holds (the result is the same: pod IPs
/// are `127.0.y.z` whichever block serves them). A fixed block held by another run fails.
///
/// # Panics
/// When the scenario is invalid or the simulator fails; tests want exactly that.
pub fn run(yaml: &str, ip_block: impl Into<Option<u8>>) -> SimulationResult {
    run_with(
        yaml,
        RunOptions {
            ip_block: ip_block.into(),
            ..RunOptions::default()
        },
    )
}

/// Like [`run`], with the operator disabled: its passes do nothing. The world and the
/// scenario's `expect` steps must then catch the inaction.
pub fn run_without_operator(yaml: &str, ip_block: impl Into<Option<u8>>) -> SimulationResult {
    run_with(
        yaml,
        RunOptions {
            ip_block: ip_block.into(),
            operator_disabled: true,
            ..RunOptions::default()
        },
    )
}

/// Runs the scenario file `tests/scenarios/<relative>`.
pub fn run_file(relative: &str, ip_block: impl Into<Option<u8>>) -> SimulationResult {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(relative);
    let yaml = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    run(&yaml, ip_block)
}

/// Parses `yaml` as a scenario and runs it with `options`.
///
/// # Panics
/// When the scenario is invalid or the simulator fails.
pub fn run_with(yaml: &str, options: RunOptions) -> SimulationResult {
    let scenario = Scenario::parse(yaml, "test scenario")
        .unwrap_or_else(|error| panic!("{}", fdb_shared::error_chain::ErrorChain(&error)));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|error| panic!("runtime: {error}"));
    runtime
        .block_on(run_scenario(&scenario, options))
        .unwrap_or_else(|error| {
            panic!(
                "simulation failed: {}",
                fdb_shared::error_chain::ErrorChain(&error)
            )
        })
}

/// A scenario with a cluster of the given spec (YAML flow mapping) and steps.
pub fn scenario(spec: &str, steps: &str) -> String {
    format!(
        "name: test\nseed: 3\ncluster:\n  apiVersion: apps.foundationdb.org/v1beta2\n  kind: FoundationDBCluster\n  metadata: {{name: sample, namespace: default}}\n  spec: {spec}\nsteps:\n{steps}"
    )
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Process groups per class in the cluster status of a step.
pub fn groups_per_class(step: &StepResult) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for group in step
        .cluster
        .pointer("/status/processGroups")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
    {
        let class = group["processClass"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        *counts.entry(class).or_insert(0) += 1;
    }
    counts
}

/// A string field of the `fdb` block of a step.
pub fn fdb_str<'a>(step: &'a StepResult, field: &str) -> &'a str {
    step.fdb[field].as_str().unwrap_or_default()
}

/// The processes of a group (by their `instance_id` locality) reporting in a step's
/// database.
///
/// # Panics
/// When the step's `fdb` block has no `processes` list.
pub fn reporting(step: &StepResult, group: &str) -> usize {
    step.fdb["processes"]
        .as_array()
        .unwrap_or_else(|| panic!("step {} has no fdb.processes", step.index))
        .iter()
        .filter(|p| p["locality"]["instance_id"] == group)
        .count()
}

/// The invariants a run violated, in order, each once.
pub fn violated(result: &SimulationResult) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for violation in &result.violations {
        if !seen.contains(&violation.invariant) {
            seen.push(violation.invariant.clone());
        }
    }
    seen
}

/// The condition types of a process group in the cluster status of a step (empty when
/// the group is not in the status).
///
/// # Panics
/// When the step's cluster has no `status.processGroups` list.
pub fn conditions_of(step: &StepResult, group: &str) -> Vec<String> {
    step.cluster
        .pointer("/status/processGroups")
        .and_then(serde_json::Value::as_array)
        .unwrap_or_else(|| panic!("step {} has no status.processGroups", step.index))
        .iter()
        .find(|g| g["processGroupID"] == group)
        .map(|g| {
            g["processGroupConditions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["type"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Every `.rs` file under `root`, at any depth, sorted: the source trees the structure
/// tests (`import_layers`, `step_boundaries`) read.
pub fn rust_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries =
            std::fs::read_dir(&dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
        for entry in entries {
            let path = entry
                .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
                .path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().and_then(|e| e.to_str()) == Some("rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}
