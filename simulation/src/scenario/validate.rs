//! `Scenario::validate`: everything that can be known before the run, each problem
//! naming its field (`steps[3].advance`, `world.nodes`, `cluster.spec.version`).

use fdb_operator::controller::connection_string_description;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::unknown_fields::decode_reporting_unknown_fields;
use fdb_shared::validation::ValidatedCluster;
use serde_json::Value;

use super::limits::{
    MAX_NODES, MAX_SCENARIO_SECONDS, MAX_SHARDS, MAX_STEPS, MAX_ZONES, Problem,
    check_cluster_identity, check_count, check_duration, check_group_counts, decode_cluster,
    group_counts,
};
use super::references::References;
use super::resources::ResourceNames;
use super::steps::{Action, ObjectKind, ObjectRef, StepSpec, apply_target};
use super::{Fault, Scenario, WorldSettings};

/// Checks a whole scenario; `text` is the file it came from (for lines).
pub(super) fn check_scenario(scenario: &Scenario, text: &str) -> Result<(), Problem> {
    check_cluster_identity(&scenario.cluster)?;
    let names = check_extra_clusters(scenario, text)?;
    check_world(&scenario.world)?;
    super::objects::check_objects(scenario)?;
    check_count(
        "steps",
        u64::try_from(scenario.steps.len()).unwrap_or(u64::MAX),
        u64::try_from(MAX_STEPS).unwrap_or(u64::MAX),
        "steps per scenario (split it into several scenarios)",
    )?;
    let mut total_seconds: u64 = 0;
    for (index, step) in scenario.steps.iter().enumerate() {
        let seconds = check_step(step).map_err(|problem| in_step(index, problem))?;
        total_seconds = total_seconds.saturating_add(seconds);
        if total_seconds > MAX_SCENARIO_SECONDS {
            return Err(in_step(
                index,
                (
                    String::new(),
                    format!(
                        "brings the scenario's advance and expect.within steps to {total_seconds} seconds in all, more than the limit of {MAX_SCENARIO_SECONDS} seconds (100 years of simulated time); shorten them or split the scenario"
                    ),
                ),
            ));
        }
    }
    let cluster = decode_cluster(&scenario.cluster, text)?;
    let counts = group_counts(&cluster);
    check_group_counts("cluster.spec.processCounts", &counts)?;
    let resources = ResourceNames::of(scenario)?;
    let mut references =
        References::new(&scenario.cluster, &cluster, &counts, scenario.world.nodes);
    let fleet: Vec<String> = scenario.fleet.iter().map(name_of).collect();
    for (index, step) in scenario.steps.iter().enumerate() {
        check_cluster_names(&names, step).map_err(|problem| in_step(index, problem))?;
        check_fleet_acts(&fleet, step).map_err(|problem| in_step(index, problem))?;
        resources
            .check_step(step)
            .map_err(|problem| in_step(index, problem))?;
        check_names(&mut references, step).map_err(|problem| in_step(index, problem))?;
        references.after(step);
    }
    Ok(())
}

/// Checks the `clusters:` and `fleet:` manifests like the first one; returns every
/// cluster's name.
fn check_extra_clusters(scenario: &Scenario, text: &str) -> Result<Vec<String>, Problem> {
    let mut names = vec![name_of(&scenario.cluster)];
    for (index, manifest) in scenario.clusters.iter().enumerate() {
        let mut seeded = manifest.clone();
        if seeded.pointer("/spec/seedConnectionString").is_none()
            && let Some(spec) = seeded.get_mut("spec").and_then(Value::as_object_mut)
        {
            // The run fills it in from the first cluster; a placeholder to validate.
            spec.insert(
                "seedConnectionString".into(),
                Value::from("seed:placeholder@127.0.0.1:4501"),
            );
        }
        check_extra_cluster("clusters", index, manifest, &seeded, text, &names)?;
        names.push(name_of(manifest));
    }
    let mut descriptions = vec![description_of(&scenario.cluster)];
    for (index, manifest) in scenario.fleet.iter().enumerate() {
        check_extra_cluster("fleet", index, manifest, manifest, text, &names)?;
        check_fleet_member(scenario, index, manifest, &descriptions)?;
        names.push(name_of(manifest));
        descriptions.push(description_of(manifest));
    }
    Ok(names)
}

/// The manifest's `metadata.name`.
fn name_of(manifest: &Value) -> String {
    manifest
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The description of the connection string the cluster's database gets: its seed's,
/// else the one the operator derives from its name.
fn description_of(manifest: &Value) -> String {
    manifest
        .pointer("/spec/seedConnectionString")
        .and_then(Value::as_str)
        .and_then(|seed| seed.parse::<ConnectionString>().ok())
        .map_or_else(
            || connection_string_description(&name_of(manifest)),
            |seed| seed.description,
        )
}

/// Checks `list[index]` (validated as `decoded`) like the first cluster, its name unique.
fn check_extra_cluster(
    list: &str,
    index: usize,
    manifest: &Value,
    decoded: &Value,
    text: &str,
    names: &[String],
) -> Result<(), Problem> {
    let field = |(f, m): Problem| {
        let inner = f.strip_prefix("cluster").unwrap_or(&f).to_owned();
        (format!("{list}[{index}]{inner}"), m)
    };
    check_cluster_identity(manifest).map_err(field)?;
    let name = name_of(manifest);
    if names.contains(&name) {
        return Err((
            format!("{list}[{index}].metadata.name"),
            format!("{name:?} is already the name of another cluster of the scenario"),
        ));
    }
    decode_cluster(decoded, text).map_err(field)?;
    Ok(())
}

/// A fleet member lives in the first cluster's namespace, and its database is told
/// apart from the others by its connection string's description, as a client's cluster
/// file tells databases apart.
fn check_fleet_member(
    scenario: &Scenario,
    index: usize,
    manifest: &Value,
    descriptions: &[String],
) -> Result<(), Problem> {
    let namespace = |m: &Value| {
        m.pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_owned()
    };
    if namespace(manifest) != namespace(&scenario.cluster) {
        return Err((
            format!("fleet[{index}].metadata.namespace"),
            format!(
                "must be the first cluster's namespace ({:?}): the scenario's steps look clusters up there",
                namespace(&scenario.cluster)
            ),
        ));
    }
    let description = description_of(manifest);
    if descriptions.contains(&description) {
        let field = if manifest.pointer("/spec/seedConnectionString").is_some() {
            "spec.seedConnectionString"
        } else {
            "metadata.name"
        };
        return Err((
            format!("fleet[{index}].{field}"),
            format!(
                "its database's connection string description {description:?} is another database's: each member of a fleet is a database of its own"
            ),
        ));
    }
    Ok(())
}

/// Checks that the clusters a step names exist (`apply` targets, `act.cluster`,
/// `expect.cluster`).
fn check_cluster_names(names: &[String], step: &StepSpec) -> Result<(), Problem> {
    let named = [
        (
            "apply.target",
            step.apply
                .as_ref()
                .and_then(super::steps::apply_cluster_target)
                .map(|(name, _)| name),
        ),
        (
            "act.cluster",
            step.act.as_ref().and_then(|a| a.cluster.clone()),
        ),
        (
            "expect.cluster",
            step.expect.as_ref().and_then(|e| e.cluster.clone()),
        ),
    ];
    if let Some(act) = &step.act
        && act.cluster.is_some()
        && act.actor != super::steps::Actor::Operator
    {
        return Err((
            "act.cluster".into(),
            "names an operator instance: only with `as: operator`".into(),
        ));
    }
    for (field, name) in named {
        if let Some(name) = name
            && !names.contains(&name)
        {
            return Err((
                field.to_owned(),
                format!(
                    "{name:?} is not a cluster of the scenario (known: {})",
                    names.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// An `act` step names an operator instance by its cluster; a fleet member has none of
/// its own (the first cluster's operator reconciles it), and the acts reach the first
/// cluster's database.
fn check_fleet_acts(fleet: &[String], step: &StepSpec) -> Result<(), Problem> {
    match step.act.as_ref().and_then(|a| a.cluster.as_ref()) {
        Some(name) if fleet.contains(name) => Err((
            "act.cluster".into(),
            format!(
                "{name:?} is a fleet member: it has no operator instance of its own, and acts reach the first cluster's database only"
            ),
        )),
        _ => Ok(()),
    }
}

/// Puts a step's problem under `steps[index]`.
fn in_step(index: usize, (field, message): Problem) -> Problem {
    if field.is_empty() {
        (format!("steps[{index}]"), message)
    } else {
        (format!("steps[{index}].{field}"), message)
    }
}

/// The world's sizes, rates, image versions and durations.
fn check_world_quantities(world: &WorldSettings) -> Result<(), Problem> {
    let problem = |field: &str, message: String| Err((field.to_owned(), message));
    for (field, value) in [
        ("world.storageGiB", world.storage_gib),
        ("world.moveMiBPerSecond", world.move_mib_per_second),
    ] {
        if let Some(value) = value
            && !(value.is_finite() && value > 0.0)
        {
            return problem(field, format!("{value} must be a positive number"));
        }
    }
    if world.shards == Some(0) {
        return problem("world.shards", "must be at least 1".into());
    }
    if let Some(shards) = world.shards {
        check_count(
            "world.shards",
            u64::from(shards),
            u64::from(MAX_SHARDS),
            "shards",
        )?;
    }
    for (index, minor) in world.operator_tools.iter().flatten().enumerate() {
        if !is_minor_version(minor) {
            return problem(
                &format!("world.operatorTools[{index}]"),
                format!("{minor:?} is not a minor version like 7.3"),
            );
        }
    }
    if let Err(message) = super::operator_flags::OperatorFlags::parse_flags(&world.operator_flags) {
        return problem("world.operatorFlags", message);
    }
    if let Some(families) = &world.ip_families
        && let Err(message) = crate::world::IpFamilies::from_numbers(families)
    {
        return problem("world.ipFamilies", message);
    }
    if let Some(classes) = &world.storage_classes {
        super::storage_classes::check_storage_classes(classes)?;
    }
    for (image, version) in &world.images {
        if let Err(error) = version.parse::<fdb_shared::FdbVersion>() {
            return problem(&format!("world.images[{image:?}]"), error.to_string());
        }
    }
    if world.exclusion_seconds == Some(0) {
        return problem("world.exclusionSeconds", "must be at least 1".into());
    }
    for (field, seconds) in [
        (
            "world.configMapDelaySeconds",
            world.config_map_delay_seconds,
        ),
        ("world.exclusionSeconds", world.exclusion_seconds),
        (
            "world.failureDetectionSeconds",
            world.failure_detection_seconds,
        ),
        ("world.recoverySeconds", world.recovery_seconds),
        ("world.restartSeconds", world.restart_seconds),
    ] {
        if let Some(seconds) = seconds {
            check_duration(field, seconds)?;
        }
    }
    Ok(())
}

fn check_world(world: &WorldSettings) -> Result<(), Problem> {
    let problem = |field: &str, message: String| Err((field.to_owned(), message));
    if world.nodes == Some(0) {
        return problem("world.nodes", "must be at least 1".into());
    }
    if world.zones == Some(0) {
        return problem("world.zones", "must be at least 1".into());
    }
    if let Some(nodes) = world.nodes {
        check_count(
            "world.nodes",
            u64::from(nodes),
            u64::from(MAX_NODES),
            "simulated nodes",
        )?;
    }
    if let Some(zones) = world.zones {
        check_count(
            "world.zones",
            u64::from(zones),
            u64::from(MAX_ZONES),
            "zones",
        )?;
    }
    check_world_quantities(world)?;
    for (index, client) in world.clients.iter().enumerate() {
        if client.address.trim().is_empty() {
            return problem(
                &format!("world.clients[{index}].address"),
                "must not be empty".into(),
            );
        }
        if let Err(error) = client.version.parse::<fdb_shared::FdbVersion>() {
            return problem(
                &format!("world.clients[{index}].version"),
                error.to_string(),
            );
        }
    }
    Ok(())
}

/// Checks one step on its own; returns the simulated seconds it asks for.
fn check_step(step: &StepSpec) -> Result<u64, Problem> {
    step.validate()?;
    if let Some(seconds) = step.advance {
        check_duration("advance", seconds)?;
        return Ok(seconds);
    }
    if let Some(expect) = &step.expect {
        check_duration("expect.within", expect.within)?;
        check_duration("expect.throughout", expect.throughout)?;
        return Ok(expect.within.saturating_add(expect.throughout));
    }
    if let Some(Fault::SlowRecovery { seconds }) = &step.fault {
        check_duration("fault.seconds", *seconds)?;
    }
    Ok(0)
}

/// Checks what a step names against the cluster's state at that point, and follows
/// `apply` steps.
fn check_names(references: &mut References, step: &StepSpec) -> Result<(), Problem> {
    if let Some(patch) = step
        .apply
        .as_ref()
        .filter(|p| apply_target(p).is_none() && super::steps::apply_cluster_target(p).is_none())
    {
        let manifest = references.patched(patch)?;
        // An invalid patched cluster is a scenario of its own (the operator refuses it);
        // only a valid one can make the operator create groups.
        if let Ok((cluster, _)) = decode_reporting_unknown_fields::<FoundationDBCluster>(&manifest)
            && let Ok(valid) = ValidatedCluster::new(cluster)
        {
            let counts = group_counts(valid.cluster());
            check_group_counts("apply", &counts)?;
            references.observe(valid.cluster(), &counts);
        }
        references.set_manifest(manifest);
    }
    if let Some(fault) = &step.fault {
        if let Some(group) = fault.process_group() {
            references.check_group("fault.processGroup", group)?;
        }
        if let Some(node) = fault.node() {
            references.check_node("fault.node", node)?;
        }
    }
    if let Some(heal) = &step.heal {
        if let Some(group) = &heal.process_group {
            references.check_group("heal.processGroup", group)?;
        }
        if let Some(node) = &heal.node {
            references.check_node("heal.node", node)?;
        }
    }
    if let Some(act) = &step.act
        && act.cluster.is_none()
        && let Ok(action) = act.action()
    {
        match &action {
            Action::Kill(groups) | Action::Exclude(groups) | Action::Coordinators(groups) => {
                let name = match action {
                    Action::Kill(_) => "kill",
                    Action::Exclude(_) => "exclude",
                    _ => "coordinators",
                };
                for (index, group) in groups.iter().enumerate() {
                    references.check_group(&format!("act.{name}[{index}]"), group)?;
                }
            }
            Action::Drain(node) => references.check_node("act.drain", node)?,
            Action::AddNodes(count) => references.check_add_nodes(*count)?,
            Action::Delete(target) => references.check_object("act.delete", target)?,
            Action::Patch(target, _) => references.check_object("act.patch.target", target)?,
            Action::Evict(name) => references.check_object(
                "act.evict",
                &ObjectRef {
                    kind: ObjectKind::Pod,
                    name: name.clone(),
                },
            )?,
            // Chosen among the pods alive when the step runs: nothing to check ahead.
            Action::EvictChosen(_)
            | Action::DeleteCollection(_)
            | Action::ClearData
            | Action::Configure(_)
            | Action::Maintenance(_)
            | Action::IncludeAll
            // The plugin names what it does not find itself, as it would to a user.
            | Action::KubectlFdb(_) => {}
            Action::Exec(exec) => {
                if let crate::scenario::ExecTarget::Pod(name) = &exec.target {
                    references.check_object(
                        "act.exec.target",
                        &ObjectRef {
                            kind: ObjectKind::Pod,
                            name: name.clone(),
                        },
                    )?;
                }
            }
        }
    }
    Ok(())
}

impl Scenario {
    /// Checks the scenario before it runs; `text` is the file it came from.
    pub(super) fn check(&self, text: &str) -> Result<(), Problem> {
        check_scenario(self, text)
    }
}

/// Whether `text` is `MAJOR.MINOR` (`7.3`), the name of a tools directory.
fn is_minor_version(text: &str) -> bool {
    text.split_once('.').is_some_and(|(major, minor)| {
        [major, minor].iter().all(|part| {
            !part.is_empty() && part.len() <= 4 && part.bytes().all(|b| b.is_ascii_digit())
        })
    })
}
