//! `remove process-groups` and `cordon`: mark process groups for removal in the
//! cluster's spec. The operator does the rest safely: it brings up replacements, excludes
//! the old processes until their data has moved, and only then deletes their resources.

use std::collections::BTreeSet;

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::conditions::ProcessGroupConditionType;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::ListParams;

use crate::cli::{CordonArgs, RemoveArgs};
use crate::error::PluginError;
use crate::selection;
use crate::session::{Session, process_group_of, resolve_groups};

/// The process groups a `remove process-groups` selects (pure).
pub fn select_groups(
    cluster: &FoundationDBCluster,
    pods: &[Pod],
    names: &[String],
    args: &RemoveArgs,
) -> Result<Vec<String>, PluginError> {
    let mut groups = resolve_groups(cluster, pods, names)?;
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
    let status = cluster.status.clone().unwrap_or_default();
    for group in status
        .process_groups
        .iter()
        .filter(|g| !g.is_marked_for_removal())
    {
        let by_class = args
            .process_class
            .as_deref()
            .is_some_and(|class| group.process_class.to_string() == class);
        let conditions_of: Vec<&ProcessGroupConditionType> = group
            .process_group_conditions
            .iter()
            .map(|c| &c.condition_type)
            .collect();
        let by_condition = conditions.iter().any(|c| conditions_of.contains(&c));
        let failed = args.remove_all_failed
            && conditions_of
                .iter()
                .any(|c| c.is_eligible_for_automatic_replacement());
        if (by_class || by_condition || failed) && !groups.contains(&group.process_group_id) {
            groups.push(group.process_group_id.clone());
        }
    }
    Ok(groups)
}

/// Marks the groups for removal after confirmation.
async fn mark(
    session: &Session,
    cluster: &str,
    groups: Vec<String>,
    exclusion: bool,
) -> Result<u8, PluginError> {
    let how = if exclusion {
        "with exclusion: their data moves away before anything is deleted"
    } else {
        "WITHOUT exclusion: their data is not moved away first"
    };
    session.confirm(&format!(
        "Remove process groups {} from cluster {}/{cluster} ({how})",
        groups.join(", "),
        session.namespace
    ))?;
    let changed = session
        .update_spec(cluster, |spec| {
            if exclusion {
                super::add_all(&mut spec.process_groups_to_remove, &groups)
            } else {
                super::add_all(
                    &mut spec.process_groups_to_remove_without_exclusion,
                    &groups,
                )
            }
        })
        .await?;
    if changed {
        println!("Marked for removal: {}", groups.join(", "));
    } else {
        println!("Already marked for removal: {}", groups.join(", "));
    }
    Ok(0)
}

/// `remove process-groups`.
pub async fn run(session: &Session, args: RemoveArgs) -> Result<u8, PluginError> {
    let within = args
        .process_class
        .as_ref()
        .map(|_| "--process-class")
        .or((!args.process_condition.is_empty()).then_some("--process-condition"))
        .or(args.remove_all_failed.then_some("--remove-all-failed"));
    let selected = selection::select(session, &args.choice, &args.names, within).await?;
    let mut status = 0;
    for one in selected {
        let groups = select_groups(&one.cluster, &one.pods, &one.names, &args)?;
        if groups.is_empty() {
            if within.is_some() || args.choice.match_labels.is_some() {
                println!(
                    "{}: no process group matches, nothing to remove",
                    one.name()
                );
                continue;
            }
            return Err(PluginError::Usage(
                "remove process-groups: name pods or process groups, or use --remove-all-failed, --process-class, --process-condition or --match-labels".into(),
            ));
        }
        status = status.max(mark(session, one.name(), groups, args.exclusion).await?);
    }
    Ok(status)
}

/// The process groups whose pods run on `nodes` (pure).
pub fn groups_on_nodes(
    cluster: &FoundationDBCluster,
    pods: &[Pod],
    nodes: &BTreeSet<String>,
) -> Vec<String> {
    let mut groups: Vec<String> = pods
        .iter()
        .filter(|pod| {
            pod.spec
                .as_ref()
                .and_then(|s| s.node_name.as_ref())
                .is_some_and(|node| nodes.contains(node))
        })
        .filter_map(|pod| process_group_of(cluster, pod))
        .collect();
    groups.sort();
    groups.dedup();
    groups
}

/// `cordon`: every process group on the nodes is marked for removal.
pub async fn cordon(session: &Session, args: CordonArgs) -> Result<u8, PluginError> {
    let node_api: Api<Node> = Api::all(session.client.clone());
    let nodes: BTreeSet<String> = match (&args.node_selector, args.nodes.is_empty()) {
        (Some(_), false) => {
            return Err(PluginError::Usage(
                "cordon: give nodes or --node-selector, not both".into(),
            ));
        }
        (Some(selector), true) => node_api
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|error| session.error(error, "list nodes"))?
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect(),
        (None, true) => {
            return Err(PluginError::Usage(
                "cordon: name at least one node, or use --node-selector".into(),
            ));
        }
        (None, false) => {
            for node in &args.nodes {
                let found = node_api
                    .get_opt(&crate::names::segment(node))
                    .await
                    .map_err(|error| session.error(error, &format!("get node {node}")))?;
                if found.is_none() {
                    return Err(PluginError::NotFound(format!("node {node} not found")));
                }
            }
            args.nodes.iter().cloned().collect()
        }
    };
    let clusters = match &args.cluster {
        Some(cluster) => vec![cluster.clone()],
        None => clusters_on_nodes(session, &args.cluster_label, &nodes).await?,
    };
    let mut status = 0;
    for name in clusters {
        let cluster = session.cluster(&name).await?;
        let pods = session.pods_of(&cluster).await?;
        let groups = groups_on_nodes(&cluster, &pods, &nodes);
        if groups.is_empty() {
            println!(
                "No process group of {}/{name} runs on {}",
                session.namespace,
                nodes.iter().cloned().collect::<Vec<_>>().join(", ")
            );
            continue;
        }
        status = status.max(mark(session, &name, groups, args.exclusion).await?);
    }
    Ok(status)
}

/// Without `-c`: the clusters (by their pods' `label`) with pods on `nodes`, as the Go
/// plugin's `cordon -l` finds them (its kubectl-fdb/cmd/cordon.go).
async fn clusters_on_nodes(
    session: &Session,
    label: &str,
    nodes: &BTreeSet<String>,
) -> Result<Vec<String>, PluginError> {
    let pods: Api<Pod> = Api::namespaced(session.client.clone(), &session.namespace);
    // The label key alone: every pod that has it (validated as a label key).
    let listed = pods
        .list(&ListParams::default().labels(label))
        .await
        .map_err(|error| session.error(error, &format!("list pods with label {label}")))?;
    let mut clusters = BTreeSet::new();
    for pod in listed.items {
        let on_node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_ref())
            .is_some_and(|node| nodes.contains(node));
        let name = pod.metadata.labels.as_ref().and_then(|l| l.get(label));
        if let (true, Some(name)) = (on_node, name) {
            crate::names::object_name(name).map_err(|error| {
                PluginError::Usage(format!(
                    "pod {}: label {label} is {name:?}, not a cluster name: {error}",
                    pod.metadata.name.as_deref().unwrap_or_default()
                ))
            })?;
            clusters.insert(name.clone());
        }
    }
    if clusters.is_empty() {
        println!(
            "No pod with label {label} in {} runs on {}",
            session.namespace,
            nodes.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(clusters.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::ClusterChoice;
    use serde_json::json;

    fn cluster() -> FoundationDBCluster {
        serde_json::from_value(json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample", "namespace": "db"},
            "spec": {"version": "7.1.57"},
            "status": {"processGroups": [
                {"processGroupID": "storage-1", "processClass": "storage"},
                {"processGroupID": "storage-2", "processClass": "storage",
                 "processGroupConditions": [{"type": "MissingProcesses", "timestamp": 1}]},
                {"processGroupID": "log-1", "processClass": "log",
                 "processGroupConditions": [{"type": "IncorrectCommandLine", "timestamp": 1}]},
                {"processGroupID": "log-2", "processClass": "log", "removalTimestamp": "2026-01-01T00:00:00Z",
                 "processGroupConditions": [{"type": "PodFailing", "timestamp": 1}]},
            ]},
        }))
        .unwrap()
    }

    fn pod(name: &str, group: &str, node: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"foundationdb.org/fdb-process-group-id": group}},
            "spec": {"nodeName": node, "containers": []},
        }))
        .unwrap()
    }

    fn args(names: &[&str]) -> RemoveArgs {
        RemoveArgs {
            choice: ClusterChoice {
                cluster: Some("sample".into()),
                cluster_label: "foundationdb.org/fdb-cluster-name".into(),
                match_labels: None,
            },
            names: names.iter().map(|n| (*n).to_owned()).collect(),
            exclusion: true,
            remove_all_failed: false,
            process_class: None,
            process_condition: Vec::new(),
        }
    }

    #[test]
    fn selection_by_name_class_condition_and_failure() {
        let cluster = cluster();
        let pods = [pod("sample-storage-1", "storage-1", "node-1")];
        assert_eq!(
            select_groups(&cluster, &pods, &["sample-storage-1".into()], &args(&[])).unwrap(),
            ["storage-1"]
        );
        let mut failed = args(&[]);
        failed.remove_all_failed = true;
        // IncorrectCommandLine is not a failure; log-2 is already marked.
        assert_eq!(
            select_groups(&cluster, &pods, &[], &failed).unwrap(),
            ["storage-2"]
        );
        let mut by_class = args(&[]);
        by_class.process_class = Some("log".into());
        assert_eq!(
            select_groups(&cluster, &pods, &[], &by_class).unwrap(),
            ["log-1"]
        );
        let mut by_condition = args(&[]);
        by_condition.process_condition = vec!["IncorrectCommandLine".into()];
        assert_eq!(
            select_groups(&cluster, &pods, &[], &by_condition).unwrap(),
            ["log-1"]
        );
        by_condition.process_condition = vec!["Nonsense".into()];
        assert!(matches!(
            select_groups(&cluster, &pods, &[], &by_condition),
            Err(PluginError::Usage(_))
        ));
    }

    #[test]
    fn cordon_selects_the_groups_on_the_nodes() {
        let pods = [
            pod("sample-storage-1", "storage-1", "node-1"),
            pod("sample-log-1", "log-1", "node-1"),
            pod("sample-storage-2", "storage-2", "node-2"),
        ];
        let nodes = BTreeSet::from(["node-1".to_owned()]);
        assert_eq!(
            groups_on_nodes(&cluster(), &pods, &nodes),
            ["log-1", "storage-1"]
        );
    }
}
