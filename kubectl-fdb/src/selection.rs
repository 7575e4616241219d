//! Which clusters and process groups a command acts on, with the Go plugin's selection
//! flags (`addProcessSelectionFlags` in its kubectl-fdb/cmd/root.go, used by `remove
//! process-groups`, `restart` and `buggify crash-loop|no-schedule`): `-c CLUSTER`, or,
//! without it, the cluster of each named pod read from its `--cluster-label` (pods of
//! several clusters in one command); `--match-labels` adds the cluster's pods that carry
//! every given label.

use std::collections::BTreeMap;

use fdb_shared::api::FoundationDBCluster;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;

use crate::cli::ClusterChoice;
use crate::error::PluginError;
use crate::names::{self, MatchLabels};
use crate::session::Session;

/// One cluster a command acts on, its pods, and the names given for it.
#[derive(Debug, Clone)]
pub struct Selected {
    /// The cluster.
    pub cluster: FoundationDBCluster,
    /// Its pods.
    pub pods: Vec<Pod>,
    /// The pod names and process group IDs selected in it (the command line's, plus the
    /// pods `--match-labels` selects).
    pub names: Vec<String>,
}

impl Selected {
    /// The cluster's name.
    pub fn name(&self) -> &str {
        self.cluster.metadata.name.as_deref().unwrap_or_default()
    }
}

/// The names of `pods` carrying every label of `labels` (pure).
pub fn matching_pods(pods: &[Pod], labels: &MatchLabels) -> Vec<String> {
    pods.iter()
        .filter(|pod| labels.matches(pod.metadata.labels.as_ref()))
        .filter_map(|pod| pod.metadata.name.clone())
        .collect()
}

/// Groups named pods by the value of their `label` (pure); a pod without it is an error
/// naming the pod and the label, as the Go plugin's is.
pub fn clusters_by_label(
    pods: &[(String, Option<Pod>)],
    label: &str,
) -> Result<BTreeMap<String, Vec<String>>, PluginError> {
    let mut by_cluster: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, pod) in pods {
        let Some(pod) = pod else {
            return Err(PluginError::NotFound(format!("no pod named {name}")));
        };
        let cluster = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(label))
            .ok_or_else(|| {
                PluginError::Usage(format!(
                    "pod {name} has no label {label} (--cluster-label) to find its cluster; name the cluster with -c"
                ))
            })?;
        names::object_name(cluster).map_err(|error| {
            PluginError::Usage(format!(
                "pod {name}: label {label} is {cluster:?}, not a cluster name: {error}"
            ))
        })?;
        by_cluster
            .entry(cluster.clone())
            .or_default()
            .push(name.clone());
    }
    Ok(by_cluster)
}

/// The clusters a command acts on. `needs_cluster` names the flag that selects within
/// one cluster (`--process-class`, ...), which requires `-c`.
pub async fn select(
    session: &Session,
    choice: &ClusterChoice,
    names: &[String],
    needs_cluster: Option<&str>,
) -> Result<Vec<Selected>, PluginError> {
    if let Some(cluster) = &choice.cluster {
        let cluster = session.cluster(cluster).await?;
        let pods = session.pods_of(&cluster).await?;
        let mut names = names.to_vec();
        if let Some(labels) = &choice.match_labels {
            for pod in matching_pods(&pods, labels) {
                if !names.contains(&pod) {
                    names.push(pod);
                }
            }
        }
        return Ok(vec![Selected {
            cluster,
            pods,
            names,
        }]);
    }
    let within = needs_cluster.or(choice.match_labels.as_ref().map(|_| "--match-labels"));
    if let Some(flag) = within {
        return Err(PluginError::Usage(format!(
            "{flag} selects within one cluster: name it with -c (without -c, pods are \
             named and found by --cluster-label)"
        )));
    }
    if names.is_empty() {
        return Err(PluginError::Usage(
            "name the cluster with -c, or name pods whose --cluster-label label names theirs"
                .into(),
        ));
    }
    let api = Api::<Pod>::namespaced(session.client.clone(), &session.namespace);
    let mut pods = Vec::new();
    for name in names {
        let pod = api
            .get_opt(&names::segment(name))
            .await
            .map_err(|error| session.error(error, &format!("read pod {name}")))?;
        pods.push((name.clone(), pod));
    }
    let mut selected = Vec::new();
    for (cluster, names) in clusters_by_label(&pods, &choice.cluster_label)? {
        let cluster = session.cluster(&cluster).await?;
        let pods = session.pods_of(&cluster).await?;
        selected.push(Selected {
            cluster,
            pods,
            names,
        });
    }
    Ok(selected)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, labels: &[(&str, &str)]) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": labels.iter().copied().collect::<BTreeMap<_, _>>()}
        }))
        .unwrap()
    }

    #[test]
    fn match_labels_select_pods_carrying_every_label() {
        let pods = [
            pod("a", &[("zone", "z1"), ("tier", "hot")]),
            pod("b", &[("zone", "z1")]),
            pod("c", &[("zone", "z2"), ("tier", "hot")]),
        ];
        let labels = names::match_labels("zone=z1,tier=hot").unwrap();
        assert_eq!(matching_pods(&pods, &labels), ["a"]);
        assert!(names::match_labels("zone").is_err());
        assert!(names::match_labels("bad key=x").is_err());
        assert!(names::match_labels("").is_err());
    }

    #[test]
    fn named_pods_are_grouped_by_their_cluster_label() {
        let label = "foundationdb.org/fdb-cluster-name";
        let pods = vec![
            (
                "a-storage-1".to_owned(),
                Some(pod("a-storage-1", &[(label, "a")])),
            ),
            ("b-log-1".to_owned(), Some(pod("b-log-1", &[(label, "b")]))),
            ("a-log-2".to_owned(), Some(pod("a-log-2", &[(label, "a")]))),
        ];
        let by = clusters_by_label(&pods, label).unwrap();
        assert_eq!(by["a"], ["a-storage-1", "a-log-2"]);
        assert_eq!(by["b"], ["b-log-1"]);
        let unlabelled = vec![("x".to_owned(), Some(pod("x", &[])))];
        let error = clusters_by_label(&unlabelled, label)
            .unwrap_err()
            .to_string();
        assert!(error.contains("pod x has no label"), "{error}");
        let missing = vec![("y".to_owned(), None)];
        assert!(clusters_by_label(&missing, label).is_err());
        let hostile = vec![("z".to_owned(), Some(pod("z", &[(label, "a/../b")])))];
        assert!(clusters_by_label(&hostile, label).is_err());
    }
}
