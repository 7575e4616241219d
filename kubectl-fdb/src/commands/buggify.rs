//! `buggify crash-loop|no-schedule|empty-monitor-conf`: fault injection through the
//! cluster's `spec.buggify`, which the operator applies to the pods.

use std::collections::BTreeSet;

use fdb_shared::api::cluster::settings::CrashLoopContainerObject;
use fdb_shared::api::{FoundationDBCluster, FoundationDBClusterSpec};
use fdb_shared::cluster_math::fault_tolerance;

use crate::cli::{BuggifyCommand, BuggifyListArgs};
use crate::error::PluginError;
use crate::selection;
use crate::session::{Session, resolve_groups};

/// Which list a command edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    CrashLoop,
    NoSchedule,
}

/// How the list changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Add these groups.
    Add(Vec<String>),
    /// Remove these groups.
    Clear(Vec<String>),
    /// Empty the list.
    Clean,
}

/// Applies `edit` to the crash-loop list of `container` (pure); true when it changed.
pub fn edit_crash_loop(spec: &mut FoundationDBClusterSpec, container: &str, edit: &Edit) -> bool {
    let entries = &mut spec.buggify.crash_loop_containers;
    let index = match entries
        .iter()
        .position(|e| e.container_name.as_deref() == Some(container))
    {
        Some(index) => index,
        None if matches!(edit, Edit::Add(_)) => {
            entries.push(CrashLoopContainerObject {
                container_name: Some(container.to_owned()),
                targets: Vec::new(),
            });
            entries.len() - 1
        }
        None => return false,
    };
    let changed = match edit {
        Edit::Add(groups) => super::add_all(&mut entries[index].targets, groups),
        Edit::Clear(groups) => super::remove_all(&mut entries[index].targets, groups),
        Edit::Clean => !entries[index].targets.is_empty(),
    };
    if matches!(edit, Edit::Clean) || entries[index].targets.is_empty() {
        entries.remove(index);
    }
    changed
}

/// The fault domains whose process groups crash-loop under `spec` (every container's
/// list and the older `crashLoop` list; `*` is every group), by the groups' fault
/// domains in `cluster`'s status (a group without one is a domain of its own).
pub fn crash_looping_domains(
    cluster: &FoundationDBCluster,
    spec: &FoundationDBClusterSpec,
) -> BTreeSet<String> {
    let targets: BTreeSet<&str> = spec
        .buggify
        .crash_loop
        .iter()
        .chain(
            spec.buggify
                .crash_loop_containers
                .iter()
                .flat_map(|entry| entry.targets.iter()),
        )
        .map(String::as_str)
        .collect();
    let groups = cluster
        .status
        .as_ref()
        .map(|status| status.process_groups.as_slice())
        .unwrap_or_default();
    let domain_of = |id: &str| {
        groups
            .iter()
            .find(|group| group.process_group_id == id)
            .and_then(|group| group.fault_domain.clone())
            .unwrap_or_else(|| id.to_owned())
    };
    if targets.contains("*") {
        return groups
            .iter()
            .map(|group| domain_of(&group.process_group_id))
            .collect();
    }
    targets.into_iter().map(domain_of).collect()
}

/// Refuses (unless `force`) a crash-loop change that takes more fault domains down at
/// once than the cluster's redundancy mode tolerates and more than are down already
/// (pure). The Go plugin has no such check (`kubectl-fdb/cmd/buggify_crash_loop.go` of
/// FoundationDB/fdb-kubernetes-operator); one mistyped group list there takes a
/// database down.
pub fn check_crash_loop_tolerance(
    cluster: &FoundationDBCluster,
    after: &FoundationDBClusterSpec,
    force: bool,
) -> Result<(), PluginError> {
    let mode = cluster.spec.redundancy_mode();
    let tolerance = usize::try_from(fault_tolerance(&mode)).unwrap_or(0);
    let before = crash_looping_domains(cluster, &cluster.spec);
    let domains = crash_looping_domains(cluster, after);
    if force || domains.len() <= tolerance || domains.len() <= before.len() {
        return Ok(());
    }
    Err(PluginError::Declined(format!(
        "buggify crash-loop: {} fault domain(s) would crash-loop at once ({}), more than \
         the {mode} redundancy of cluster {} tolerates ({tolerance}): the database could \
         become unavailable; nothing was changed (--force does it anyway)",
        domains.len(),
        domains.into_iter().collect::<Vec<_>>().join(", "),
        cluster.metadata.name.as_deref().unwrap_or_default(),
    )))
}

/// Applies `edit` to the no-schedule list (pure); true when it changed.
pub fn edit_no_schedule(spec: &mut FoundationDBClusterSpec, edit: &Edit) -> bool {
    let list = &mut spec.buggify.no_schedule;
    match edit {
        Edit::Add(groups) => super::add_all(list, groups),
        Edit::Clear(groups) => super::remove_all(list, groups),
        Edit::Clean => {
            let changed = !list.is_empty();
            list.clear();
            changed
        }
    }
}

async fn edit_list(
    session: &Session,
    list: List,
    args: BuggifyListArgs,
) -> Result<u8, PluginError> {
    if args.clean {
        let Some(name) = &args.choice.cluster else {
            return Err(PluginError::Usage(
                "buggify --clean empties one cluster's list: name it with -c".into(),
            ));
        };
        let cluster = session.cluster(name).await?;
        return apply_edit(session, list, &args, &cluster, Edit::Clean).await;
    }
    let selected = selection::select(session, &args.choice, &args.names, None).await?;
    for one in selected {
        if one.names.is_empty() {
            if args.choice.match_labels.is_some() {
                println!("{}: no pod matches, nothing to change", one.name());
                continue;
            }
            return Err(PluginError::Usage(
                "buggify: name pods or process groups, use --match-labels, or --clean".into(),
            ));
        }
        let groups = resolve_groups(&one.cluster, &one.pods, &one.names)?;
        let edit = if args.clear {
            Edit::Clear(groups)
        } else {
            Edit::Add(groups)
        };
        apply_edit(session, list, &args, &one.cluster, edit).await?;
    }
    Ok(0)
}

/// Edits one cluster's list, after the crash-loop tolerance check and confirmation.
async fn apply_edit(
    session: &Session,
    list: List,
    args: &BuggifyListArgs,
    cluster: &FoundationDBCluster,
    edit: Edit,
) -> Result<u8, PluginError> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    if list == List::CrashLoop && matches!(edit, Edit::Add(_)) {
        let mut after = cluster.spec.clone();
        edit_crash_loop(&mut after, &args.container_name, &edit);
        check_crash_loop_tolerance(cluster, &after, args.force)?;
    }
    let what = match list {
        List::CrashLoop => format!("crash-loop list (container {})", args.container_name),
        List::NoSchedule => "no-schedule list".to_owned(),
    };
    let plan = match &edit {
        Edit::Add(groups) => format!("Add {} to the {what}", groups.join(", ")),
        Edit::Clear(groups) => format!("Remove {} from the {what}", groups.join(", ")),
        Edit::Clean => format!("Empty the {what}"),
    };
    session.confirm(&format!("{plan} of cluster {}/{name}", session.namespace))?;
    let container = args.container_name.clone();
    let changed = session
        .update_spec(&name, |spec| match list {
            List::CrashLoop => edit_crash_loop(spec, &container, &edit),
            List::NoSchedule => edit_no_schedule(spec, &edit),
        })
        .await?;
    println!(
        "{}",
        if changed {
            "Updated"
        } else {
            "Nothing to change"
        }
    );
    Ok(0)
}

/// Runs a `buggify` command.
pub async fn run(session: &Session, command: BuggifyCommand) -> Result<u8, PluginError> {
    match command {
        BuggifyCommand::CrashLoop(args) => edit_list(session, List::CrashLoop, args).await,
        BuggifyCommand::NoSchedule(args) => edit_list(session, List::NoSchedule, args).await,
        BuggifyCommand::EmptyMonitorConf(args) => {
            session.cluster(&args.cluster).await?;
            let value = args.set_value && !args.clear;
            session.confirm(&format!(
                "Set emptyMonitorConf to {value} on cluster {}/{}{}",
                session.namespace,
                args.cluster,
                if value {
                    " (every fdbserver process stops)"
                } else {
                    ""
                }
            ))?;
            let changed = session
                .update_spec(&args.cluster, |spec| {
                    let current = spec.buggify.empty_monitor_conf.unwrap_or(false);
                    spec.buggify.empty_monitor_conf = value.then_some(true);
                    current != value
                })
                .await?;
            println!(
                "{}",
                if changed {
                    "Updated"
                } else {
                    "Nothing to change"
                }
            );
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> FoundationDBClusterSpec {
        serde_json::from_value(serde_json::json!({"version": "7.1.57"})).unwrap()
    }

    #[test]
    fn crash_loop_lists_are_added_to_cleared_and_cleaned_per_container() {
        let mut spec = spec();
        assert!(edit_crash_loop(
            &mut spec,
            "foundationdb",
            &Edit::Add(vec!["storage-1".into()])
        ));
        assert!(!edit_crash_loop(
            &mut spec,
            "foundationdb",
            &Edit::Add(vec!["storage-1".into()])
        ));
        assert_eq!(spec.buggify.crash_loop_containers[0].targets, ["storage-1"]);
        assert!(edit_crash_loop(
            &mut spec,
            "foundationdb",
            &Edit::Clear(vec!["storage-1".into()])
        ));
        assert!(spec.buggify.crash_loop_containers.is_empty());
        assert!(!edit_crash_loop(&mut spec, "foundationdb", &Edit::Clean));
        edit_crash_loop(&mut spec, "sidecar", &Edit::Add(vec!["log-1".into()]));
        assert!(edit_crash_loop(&mut spec, "sidecar", &Edit::Clean));
        assert!(spec.buggify.crash_loop_containers.is_empty());
    }

    #[test]
    fn no_schedule_lists_are_edited() {
        let mut spec = spec();
        assert!(edit_no_schedule(
            &mut spec,
            &Edit::Add(vec!["a".into(), "b".into()])
        ));
        assert!(edit_no_schedule(&mut spec, &Edit::Clear(vec!["a".into()])));
        assert_eq!(spec.buggify.no_schedule, ["b"]);
        assert!(edit_no_schedule(&mut spec, &Edit::Clean));
        assert!(!edit_no_schedule(&mut spec, &Edit::Clean));
    }

    #[test]
    fn crash_loops_beyond_the_fault_tolerance_are_declined_unless_forced() {
        let cluster = |mode: &str, crash_loop: &[&str]| -> FoundationDBCluster {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "sample"},
                "spec": {"version": "7.1.57",
                         "databaseConfiguration": {"redundancy_mode": mode},
                         "buggify": {"crashLoop": crash_loop}},
                "status": {"processGroups": [
                    {"processGroupID": "storage-1", "processClass": "storage", "faultDomain": "z1"},
                    {"processGroupID": "storage-2", "processClass": "storage", "faultDomain": "z1"},
                    {"processGroupID": "storage-3", "processClass": "storage", "faultDomain": "z2"},
                    {"processGroupID": "log-1", "processClass": "log", "faultDomain": "z3"}
                ]}
            }))
            .unwrap()
        };
        let add = |cluster: &FoundationDBCluster, groups: &[&str]| {
            let mut after = cluster.spec.clone();
            edit_crash_loop(
                &mut after,
                "foundationdb",
                &Edit::Add(groups.iter().map(|g| (*g).to_owned()).collect()),
            );
            after
        };
        let double = cluster("double", &[]);
        // Two groups of one fault domain: one failure, within double's tolerance.
        let one_zone = add(&double, &["storage-1", "storage-2"]);
        assert!(check_crash_loop_tolerance(&double, &one_zone, false).is_ok());
        let two_zones = add(&double, &["storage-1", "storage-3"]);
        let declined = check_crash_loop_tolerance(&double, &two_zones, false).unwrap_err();
        assert_eq!(declined.exit_code(), 1);
        let message = declined.to_string();
        assert!(
            message.contains("z1, z2") && message.contains("tolerates (1)"),
            "{message}"
        );
        assert!(check_crash_loop_tolerance(&double, &two_zones, true).is_ok());
        // The older list counts too, and `*` is every group.
        let crashing = cluster("double", &["log-1"]);
        let more = add(&crashing, &["storage-3"]);
        assert!(check_crash_loop_tolerance(&crashing, &more, false).is_err());
        let everything = add(&cluster("triple", &[]), &["*"]);
        assert!(check_crash_loop_tolerance(&cluster("triple", &[]), &everything, false).is_err());
        // Single redundancy tolerates no failure; a list already beyond it can shrink.
        let single = cluster("single", &[]);
        assert!(check_crash_loop_tolerance(&single, &add(&single, &["log-1"]), false).is_err());
        let beyond = cluster("double", &["storage-1", "storage-3", "log-1"]);
        assert!(check_crash_loop_tolerance(&beyond, &add(&beyond, &["storage-2"]), false).is_ok());
    }
}
