//! `buggify crash-loop|no-schedule|empty-monitor-conf`: fault injection through the
//! cluster's `spec.buggify`, which the operator applies to the pods.

use fdb_shared::api::FoundationDBClusterSpec;
use fdb_shared::api::cluster::settings::CrashLoopContainerObject;

use crate::cli::{BuggifyCommand, BuggifyListArgs};
use crate::error::PluginError;
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
    let cluster = session.cluster(&args.cluster).await?;
    let edit = if args.clean {
        Edit::Clean
    } else {
        if args.names.is_empty() {
            return Err(PluginError::Usage(
                "buggify: name pods or process groups, or use --clean".into(),
            ));
        }
        let pods = session.pods_of(&cluster).await?;
        let groups = resolve_groups(&cluster, &pods, &args.names)?;
        if args.clear {
            Edit::Clear(groups)
        } else {
            Edit::Add(groups)
        }
    };
    let what = match list {
        List::CrashLoop => format!("crash-loop list (container {})", args.container_name),
        List::NoSchedule => "no-schedule list".to_owned(),
    };
    let plan = match &edit {
        Edit::Add(groups) => format!("Add {} to the {what}", groups.join(", ")),
        Edit::Clear(groups) => format!("Remove {} from the {what}", groups.join(", ")),
        Edit::Clean => format!("Empty the {what}"),
    };
    session.confirm(&format!(
        "{plan} of cluster {}/{}",
        session.namespace, args.cluster
    ))?;
    let container = args.container_name.clone();
    let changed = session
        .update_spec(&args.cluster, |spec| match list {
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
}
