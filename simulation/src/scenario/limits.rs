//! The bounds of what one simulation may ask for, checked before anything runs, and the
//! checks of the scenario's cluster manifest.
//!
//! The simulated world keeps every node, pod, process and shard in memory and steps a
//! virtual clock; without bounds a typo (`nodes: 100000`, `advance: 253402207200`) runs
//! until memory or the clock's range runs out. Each limit is far above what a scenario
//! needs to tell a safe operator change from a broken one, and each error says how to
//! stay within it. `docs/simulation.md` ("Limits") lists them.

use fdb_shared::api::{FoundationDBCluster, ProcessClass};
use fdb_shared::cluster_math::desired_process_counts;
use fdb_shared::unknown_fields::decode_reporting_unknown_fields;
use fdb_shared::validation::ValidatedCluster;
use fdb_shared::yaml_input::{self, PathSegment};
use serde_json::Value;

/// The API version of the cluster manifest.
pub const CLUSTER_API_VERSION: &str = "apps.foundationdb.org/v1beta2";
/// Most steps in one scenario.
pub const MAX_STEPS: usize = 10_000;
/// Most simulated nodes at any time (`world.nodes` plus `addNodes`).
pub const MAX_NODES: u32 = 1_000;
/// Most zones.
pub const MAX_ZONES: u32 = 1_000;
/// Most shards of the simulated database.
pub const MAX_SHARDS: u32 = 100_000;
/// Most process groups the cluster may ask for (all classes).
pub const MAX_PROCESS_GROUPS: u32 = 1_000;
/// Most fdbserver processes the cluster may ask for (groups times servers per pod).
pub const MAX_PROCESSES: u32 = 2_000;
/// Most simulated seconds one step (`advance`, `expect.within`) or one world or fault
/// delay may span: 10 years.
pub const MAX_STEP_SECONDS: u64 = 10 * 365 * 24 * 3600;
/// Most simulated seconds all `advance` and `expect.within` of a scenario may add up to:
/// 100 years (the virtual clock starts in 2026 and must stay within what timestamps hold).
pub const MAX_SCENARIO_SECONDS: u64 = 100 * 365 * 24 * 3600;

/// A field and what is wrong with it.
pub(super) type Problem = (String, String);

/// Checks a duration against [`MAX_STEP_SECONDS`].
pub(super) fn check_duration(field: &str, seconds: u64) -> Result<(), Problem> {
    if seconds > MAX_STEP_SECONDS {
        return Err((
            field.to_owned(),
            format!(
                "{seconds} seconds is more than the limit of {MAX_STEP_SECONDS} seconds (10 years of simulated time); use a shorter time, or several steps (at most {MAX_SCENARIO_SECONDS} seconds, 100 years, in all)"
            ),
        ));
    }
    Ok(())
}

/// Checks a count against a limit: `what` names the unit (`simulated nodes`).
pub(super) fn check_count(field: &str, value: u64, limit: u64, what: &str) -> Result<(), Problem> {
    if value > limit {
        return Err((
            field.to_owned(),
            format!(
                "{value} is above the limit of {limit} {what}; a scenario needs far fewer to show how the operator behaves"
            ),
        ));
    }
    Ok(())
}

/// The group counts of a valid cluster: per class (positive only) and processes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct GroupCounts {
    pub(super) per_class: Vec<(ProcessClass, u32)>,
    pub(super) groups: u32,
    pub(super) processes: u32,
}

/// What the cluster asks for (its counts are within the validation's bounds, so the
/// arithmetic cannot overflow).
pub(super) fn group_counts(cluster: &FoundationDBCluster) -> GroupCounts {
    let spec = &cluster.spec;
    let per_class: Vec<(ProcessClass, u32)> = desired_process_counts(spec)
        .positive()
        .into_iter()
        .map(|(class, count)| (class, u32::try_from(count).unwrap_or(0)))
        .collect();
    let per_pod = |class: ProcessClass| {
        let servers = match class {
            ProcessClass::Storage => spec.storage_servers_per_pod(),
            ProcessClass::Log | ProcessClass::Transaction => spec.log_servers_per_pod(),
            _ => 1,
        };
        u32::try_from(servers).unwrap_or(1).max(1)
    };
    let groups = per_class
        .iter()
        .fold(0u32, |sum, (_, count)| sum.saturating_add(*count));
    let processes = per_class.iter().fold(0u32, |sum, (class, count)| {
        sum.saturating_add(count.saturating_mul(per_pod(*class)))
    });
    GroupCounts {
        per_class,
        groups,
        processes,
    }
}

/// Checks what a cluster asks for against [`MAX_PROCESS_GROUPS`] and [`MAX_PROCESSES`];
/// `field` names where the counts come from.
pub(super) fn check_group_counts(field: &str, counts: &GroupCounts) -> Result<(), Problem> {
    let listed = counts
        .per_class
        .iter()
        .map(|(class, count)| format!("{class} {count}"))
        .collect::<Vec<_>>()
        .join(", ");
    if counts.groups > MAX_PROCESS_GROUPS {
        return Err((
            field.to_owned(),
            format!(
                "the cluster asks for {} process groups ({listed}), above the limit of {MAX_PROCESS_GROUPS} simulated process groups; lower spec.processCounts",
                counts.groups
            ),
        ));
    }
    if counts.processes > MAX_PROCESSES {
        return Err((
            field.to_owned(),
            format!(
                "the cluster asks for {} fdbserver processes ({listed} groups, with storageServersPerPod/logServersPerPod), above the limit of {MAX_PROCESSES} simulated processes; lower the counts or the servers per pod",
                counts.processes
            ),
        ));
    }
    Ok(())
}

/// Checks the identity of the scenario's cluster manifest: a mapping of kind
/// FoundationDBCluster in [`CLUSTER_API_VERSION`] with a name.
pub(super) fn check_cluster_identity(cluster: &Value) -> Result<(), Problem> {
    if !cluster.is_object() {
        return Err((
            "cluster".into(),
            "must be a FoundationDBCluster manifest (a mapping)".into(),
        ));
    }
    let kind = cluster.get("kind").and_then(Value::as_str);
    if kind != Some("FoundationDBCluster") {
        return Err((
            "cluster.kind".into(),
            format!("must be FoundationDBCluster, found {kind:?}"),
        ));
    }
    if cluster
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(("cluster.metadata.name".into(), "is required".into()));
    }
    let api_version = cluster.get("apiVersion").and_then(Value::as_str);
    if api_version != Some(CLUSTER_API_VERSION) {
        return Err((
            "cluster.apiVersion".into(),
            format!(
                "must be {CLUSTER_API_VERSION} (the version this operator serves), found {}",
                api_version.map_or_else(|| "nothing".to_owned(), |v| format!("{v:?}"))
            ),
        ));
    }
    Ok(())
}

/// Decodes and validates the scenario's cluster as the operator will; errors name the
/// field under `cluster.` and, for a wrong type, its line in `text`.
pub(super) fn decode_cluster(cluster: &Value, text: &str) -> Result<FoundationDBCluster, Problem> {
    let decoded = decode_reporting_unknown_fields::<FoundationDBCluster>(cluster)
        .map(|(cluster, _unknown)| cluster)
        .map_err(|error| {
            let mut path = vec![PathSegment::Key("cluster".into())];
            path.extend(error.segments.iter().cloned());
            let message = match yaml_input::line_of(text, 0, &path) {
                Some(line) => format!("{} at line {line}", error.message),
                None => error.message.clone(),
            };
            (format!("cluster.{}", error.path), message)
        })?;
    ValidatedCluster::new(decoded)
        .map(ValidatedCluster::into_inner)
        .map_err(|invalid| {
            let mut errors = invalid.errors.iter();
            let first = errors.next().cloned().unwrap_or_default();
            let (field, message) = match first.split_once(": ") {
                Some((field, message)) if field.starts_with("spec") => {
                    (format!("cluster.{field}"), message.to_owned())
                }
                _ => ("cluster".to_owned(), first.clone()),
            };
            let rest: Vec<&String> = errors.collect();
            if rest.is_empty() {
                (field, message)
            } else {
                let also = rest
                    .iter()
                    .map(|error| format!("cluster.{error}"))
                    .collect::<Vec<_>>()
                    .join("; ");
                (field, format!("{message}; also: {also}"))
            }
        })
}
