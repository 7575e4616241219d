//! `restart`: restarts the fdbserver processes of process groups with **one** `fdbcli
//! kill` (the processes come back at once through fdbmonitor: one recovery, not one per
//! pod), and `exec`: runs a command in a pod of the cluster.

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::conditions::ProcessGroupConditionType;
use fdb_shared::status_json::DatabaseStatus;
use k8s_openapi::api::core::v1::Pod;

use crate::cli::{ExecArgs, RestartArgs};
use crate::error::PluginError;
use crate::exec::{self, MAIN_CONTAINER};
use crate::selection;
use crate::session::{Session, process_group_of, resolve_groups};

/// The process groups a `restart` selects (pure).
pub fn select_groups(
    cluster: &FoundationDBCluster,
    pods: &[Pod],
    names: &[String],
    args: &RestartArgs,
) -> Result<Vec<String>, PluginError> {
    let conditions: Vec<ProcessGroupConditionType> = args
        .process_condition
        .iter()
        .map(|c| ProcessGroupConditionType::from(c.as_str()))
        .collect();
    if let Some(unknown) = conditions.iter().find(|c| !c.is_known()) {
        return Err(PluginError::Usage(format!(
            "--process-condition: unknown process group condition {unknown}"
        )));
    }
    let mut groups = resolve_groups(cluster, pods, names)?;
    let status = cluster.status.clone().unwrap_or_default();
    for group in &status.process_groups {
        let by_class = args
            .process_class
            .as_deref()
            .is_some_and(|class| group.process_class.to_string() == class);
        let selected = args.all_processes
            || by_class
            || group
                .process_group_conditions
                .iter()
                .any(|c| conditions.contains(&c.condition_type));
        if selected && !groups.contains(&group.process_group_id) {
            groups.push(group.process_group_id.clone());
        }
    }
    Ok(groups)
}

/// The addresses of the processes of `groups` in `status json` (pure).
pub fn addresses_of(status: &DatabaseStatus, groups: &[String]) -> Vec<ProcessAddress> {
    let mut addresses: Vec<ProcessAddress> = status
        .cluster
        .processes
        .values()
        .filter(|p| {
            p.locality
                .instance_id
                .as_ref()
                .is_some_and(|id| groups.contains(id))
        })
        .filter_map(|p| p.address.clone())
        .collect();
    addresses.sort();
    addresses.dedup();
    addresses
}

/// `restart`.
pub async fn run(session: &Session, args: RestartArgs) -> Result<u8, PluginError> {
    let within = args
        .process_class
        .as_ref()
        .map(|_| "--process-class")
        .or((!args.process_condition.is_empty()).then_some("--process-condition"))
        .or(args.all_processes.then_some("--all-processes"));
    let selected = selection::select(session, &args.choice, &args.names, within).await?;
    let mut status = 0;
    for one in selected {
        let groups = select_groups(&one.cluster, &one.pods, &one.names, &args)?;
        if groups.is_empty() {
            if within.is_some() || args.choice.match_labels.is_some() {
                println!(
                    "{}: no process group matches, nothing to restart",
                    one.name()
                );
                continue;
            }
            return Err(PluginError::Usage(
                "restart: name pods or process groups, or use --all-processes, --process-class, --process-condition or --match-labels"
                    .into(),
            ));
        }
        status = status.max(restart_groups(session, &one, &groups).await?);
    }
    Ok(status)
}

/// Restarts the processes of `groups` of one cluster with one kill.
async fn restart_groups(
    session: &Session,
    one: &selection::Selected,
    groups: &[String],
) -> Result<u8, PluginError> {
    let pod = exec::fdbcli_pod(&one.cluster, &one.pods)?;
    let text = exec::fdbcli(session, &pod, "status json").await?;
    let status: DatabaseStatus = serde_json::from_str(&text).map_err(|e| {
        PluginError::Unsupported(format!(
            "the status json read in pod {pod} does not parse: {e}"
        ))
    })?;
    let addresses = addresses_of(&status, groups);
    if addresses.is_empty() {
        return Err(PluginError::NotFound(format!(
            "no running process of {} in the database",
            groups.join(", ")
        )));
    }
    let list: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    session.confirm(&format!(
        "Restart {} processes of cluster {}/{} (process groups {}) with one kill: kill {}",
        addresses.len(),
        session.namespace,
        one.name(),
        groups.join(", "),
        list.join(" ")
    ))?;
    let output = exec::fdbcli(session, &pod, &format!("kill; kill {}", list.join(" "))).await?;
    print!("{output}");
    Ok(0)
}

/// `exec`: the command's output and exit status.
pub async fn exec_command(session: &Session, args: ExecArgs) -> Result<u8, PluginError> {
    let cluster = session.cluster(&args.cluster).await?;
    let pods = session.pods_of(&cluster).await?;
    let pod = match &args.pod {
        Some(name) => {
            let found = pods
                .iter()
                .find(|p| {
                    p.metadata.name.as_deref() == Some(name.as_str())
                        || process_group_of(&cluster, p).as_deref() == Some(name.as_str())
                })
                .and_then(|p| p.metadata.name.clone());
            found.ok_or_else(|| {
                PluginError::NotFound(format!(
                    "no pod or process group named {name} in FoundationDBCluster {}/{}",
                    session.namespace, args.cluster
                ))
            })?
        }
        None => exec::fdbcli_pod(&cluster, &pods)?,
    };
    let command = if args.command.is_empty() {
        return Err(PluginError::Usage(
            "exec: give the command after --, e.g. exec -c sample -- fdbcli --exec 'status'".into(),
        ));
    } else {
        args.command.clone()
    };
    let terminal = crate::terminal::stdin_is_terminal();
    if args.tty && !terminal {
        // kubectl's words for the same case (its `SetupTTY`); the command runs without.
        eprintln!("Unable to use a TTY - input is not a terminal or the right kind of file");
    }
    let code = exec::exec_attached(session, &pod, MAIN_CONTAINER, command, terminal).await?;
    Ok(u8::try_from(code).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn addresses_come_from_the_processes_of_the_groups() {
        let status: DatabaseStatus = serde_json::from_value(json!({"cluster": {"processes": {
            "a": {"address": "127.0.0.1:4501", "locality": {"instance_id": "storage-1"}},
            "b": {"address": "127.0.0.1:4503", "locality": {"instance_id": "storage-1"}},
            "c": {"address": "127.0.0.2:4501:tls", "locality": {"instance_id": "log-1"}},
            "d": {"address": "127.0.0.3:4501", "locality": {"instance_id": "log-2"}},
        }}}))
        .unwrap();
        let picked = addresses_of(&status, &["storage-1".into(), "log-1".into()]);
        let text: Vec<String> = picked.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            ["127.0.0.1:4501", "127.0.0.1:4503", "127.0.0.2:4501:tls"]
        );
    }

    #[test]
    fn all_processes_selects_every_group() {
        let cluster: FoundationDBCluster = serde_json::from_value(json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample"}, "spec": {"version": "7.1.57"},
            "status": {"processGroups": [
                {"processGroupID": "storage-1", "processClass": "storage"},
                {"processGroupID": "log-1", "processClass": "log",
                 "processGroupConditions": [{"type": "MissingProcesses", "timestamp": 1}]}]},
        }))
        .unwrap();
        let mut args = RestartArgs {
            choice: crate::cli::ClusterChoice {
                cluster: Some("sample".into()),
                cluster_label: "foundationdb.org/fdb-cluster-name".into(),
                match_labels: None,
            },
            names: vec![],
            all_processes: true,
            process_class: None,
            process_condition: vec![],
        };
        assert_eq!(
            select_groups(&cluster, &[], &[], &args).unwrap(),
            ["storage-1", "log-1"]
        );
        args.all_processes = false;
        args.process_condition = vec!["MissingProcesses".into()];
        assert_eq!(select_groups(&cluster, &[], &[], &args).unwrap(), ["log-1"]);
        args.process_condition = vec![];
        args.process_class = Some("storage".into());
        assert_eq!(
            select_groups(&cluster, &[], &[], &args).unwrap(),
            ["storage-1"]
        );
    }
}
