//! The connection to the Kubernetes API and the reads and writes every command shares:
//! loading a cluster, its pods, and changing its spec with optimistic concurrency.

use std::collections::BTreeMap;
use std::io::{BufRead as _, Write as _};
use std::path::PathBuf;

use fdb_shared::api::{FoundationDBCluster, FoundationDBClusterSpec};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use serde_json::{Value, json};

use crate::error::PluginError;
use crate::names::segment;

/// How many times a spec change is retried after a 409 (someone else wrote meanwhile).
const CONFLICT_RETRIES: usize = 5;

/// Where to connect and how to confirm.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    /// The kubeconfig file (default: `KUBECONFIG` or `~/.kube/config`).
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: the current one).
    pub context: Option<String>,
    /// The namespace (default: the context's, else `default`).
    pub namespace: Option<String>,
}

/// A connected client.
#[derive(Clone)]
pub struct Session {
    /// The client.
    pub client: Client,
    /// The namespace commands act in.
    pub namespace: String,
    /// The API server URL (for messages).
    pub server: String,
    /// Act without asking.
    pub yes: bool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("namespace", &self.namespace)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Reads the kubeconfig and builds a client (no request is made yet).
    pub async fn connect(connection: &Connection, yes: bool) -> Result<Self, PluginError> {
        let options = KubeConfigOptions {
            context: connection.context.clone(),
            ..KubeConfigOptions::default()
        };
        let config = match &connection.kubeconfig {
            Some(path) => {
                let kubeconfig = Kubeconfig::read_from(path).map_err(|e| {
                    PluginError::Config(format!(
                        "{}: {}",
                        path.display(),
                        crate::error::one_line(&e.to_string())
                    ))
                })?;
                Config::from_custom_kubeconfig(kubeconfig, &options).await
            }
            None => Config::from_kubeconfig(&options).await,
        }
        .map_err(|e| PluginError::Config(crate::error::one_line(&e.to_string())))?;
        let namespace = connection
            .namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        // The namespace of a kubeconfig context joins request paths like a `-n` one.
        if let Err(problem) = crate::names::label_name(&namespace) {
            return Err(PluginError::Usage(format!(
                "namespace {namespace:?} (of the kubeconfig context): {problem}"
            )));
        }
        let server = config.cluster_url.to_string();
        let client = Client::try_from(config)
            .map_err(|e| PluginError::Config(crate::error::one_line(&e.to_string())))?;
        Ok(Self {
            client,
            namespace,
            server,
            yes,
        })
    }

    /// Wraps a kube error of `action`.
    pub fn error(&self, error: kube::Error, action: &str) -> PluginError {
        PluginError::from_kube(error, action, &self.server)
    }

    fn clusters(&self) -> Api<FoundationDBCluster> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// The cluster `name`; a clear error when it does not exist.
    pub async fn cluster(&self, name: &str) -> Result<FoundationDBCluster, PluginError> {
        match self.clusters().get_opt(&segment(name)).await {
            Ok(Some(cluster)) => Ok(cluster),
            Ok(None) => Err(PluginError::ClusterNotFound {
                namespace: self.namespace.clone(),
                name: name.to_owned(),
            }),
            Err(error) => Err(self.error(error, &format!("get FoundationDBCluster {name}"))),
        }
    }

    /// Every cluster of the namespace.
    pub async fn all_clusters(&self) -> Result<Vec<FoundationDBCluster>, PluginError> {
        self.clusters()
            .list(&ListParams::default())
            .await
            .map(|list| list.items)
            .map_err(|error| self.error(error, "list FoundationDBClusters"))
    }

    /// The cluster's pods (by its match labels).
    pub async fn pods_of(&self, cluster: &FoundationDBCluster) -> Result<Vec<Pod>, PluginError> {
        let name = cluster.metadata.name.clone().unwrap_or_default();
        let selector = cluster
            .spec
            .labels
            .match_labels(&name)
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        Api::<Pod>::namespaced(self.client.clone(), &self.namespace)
            .list(&ListParams::default().labels(&selector))
            .await
            .map(|list| list.items)
            .map_err(|error| self.error(error, &format!("list the pods of {name}")))
    }

    /// Changes the cluster's spec with `change` (a JSON merge patch of the lists it touched,
    /// guarded by the resourceVersion read), reloading and retrying on conflicts. `change`
    /// returns false when there is nothing to change.
    pub async fn update_spec(
        &self,
        name: &str,
        change: impl Fn(&mut FoundationDBClusterSpec) -> bool,
    ) -> Result<bool, PluginError> {
        for _ in 0..CONFLICT_RETRIES {
            let cluster = self.cluster(name).await?;
            let before = serde_json::to_value(&cluster.spec).unwrap_or(Value::Null);
            let mut spec = cluster.spec.clone();
            if !change(&mut spec) {
                return Ok(false);
            }
            let after = serde_json::to_value(&spec).unwrap_or(Value::Null);
            let patch = json!({
                "metadata": {"resourceVersion": cluster.metadata.resource_version},
                "spec": merge_diff(&before, &after),
            });
            match self
                .clusters()
                .patch(
                    &segment(name),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
            {
                Ok(_) => return Ok(true),
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(error) => {
                    return Err(self.error(error, &format!("update FoundationDBCluster {name}")));
                }
            }
        }
        Err(PluginError::Refused {
            action: format!("update FoundationDBCluster {name}"),
            message: format!("it kept changing ({CONFLICT_RETRIES} conflicts in a row)"),
            code: 409,
        })
    }

    /// Shows `plan` and asks for confirmation unless `--yes`.
    pub fn confirm(&self, plan: &str) -> Result<(), PluginError> {
        println!("{plan}");
        if self.yes {
            return Ok(());
        }
        eprint!("Proceed? [y/N] ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if matches!(answer.trim().to_lowercase().as_str(), "y" | "yes") {
            Ok(())
        } else {
            Err(PluginError::Aborted)
        }
    }
}

/// The JSON merge patch turning `before` into `after`: changed keys, `null` for removed
/// ones (lists are replaced whole, as merge patches do).
pub fn merge_diff(before: &Value, after: &Value) -> Value {
    match (before, after) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = serde_json::Map::new();
            for (key, value) in new {
                match old.get(key) {
                    Some(previous) if previous == value => {}
                    Some(previous) => {
                        patch.insert(key.clone(), merge_diff(previous, value));
                    }
                    None => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in old.keys().filter(|k| !new.contains_key(*k)) {
                patch.insert(key.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        _ => after.clone(),
    }
}

/// The process group ID of `pod` (from the cluster's process group ID labels).
pub fn process_group_of(cluster: &FoundationDBCluster, pod: &Pod) -> Option<String> {
    let labels: &BTreeMap<String, String> = pod.metadata.labels.as_ref()?;
    cluster
        .spec
        .labels
        .process_group_id_labels()
        .iter()
        .find_map(|key| labels.get(key).cloned())
}

/// Resolves names given on the command line (pod names or process group IDs) to process
/// group IDs of `cluster`; an unknown name is an error naming it.
pub fn resolve_groups(
    cluster: &FoundationDBCluster,
    pods: &[Pod],
    names: &[String],
) -> Result<Vec<String>, PluginError> {
    let status_groups: Vec<&str> = cluster
        .status
        .as_ref()
        .map(|s| {
            s.process_groups
                .iter()
                .map(|g| g.process_group_id.as_str())
                .collect()
        })
        .unwrap_or_default();
    let mut groups = Vec::new();
    for name in names {
        let from_pod = pods
            .iter()
            .find(|pod| pod.metadata.name.as_deref() == Some(name.as_str()))
            .and_then(|pod| process_group_of(cluster, pod));
        let group = match from_pod {
            Some(group) => group,
            None if status_groups.contains(&name.as_str()) => name.clone(),
            None => {
                return Err(PluginError::NotFound(format!(
                    "no pod or process group named {name} in FoundationDBCluster {}/{}",
                    cluster.metadata.namespace.as_deref().unwrap_or_default(),
                    cluster.metadata.name.as_deref().unwrap_or_default()
                )));
            }
        };
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_diffs_carry_only_the_changes() {
        let before = json!({"a": [1], "b": {"c": 1, "d": 2}, "e": 1});
        let after = json!({"a": [1, 2], "b": {"c": 1, "d": 3}});
        assert_eq!(
            merge_diff(&before, &after),
            json!({"a": [1, 2], "b": {"d": 3}, "e": null})
        );
    }

    #[test]
    fn names_resolve_from_pods_or_status_and_unknown_ones_are_named() {
        let cluster: FoundationDBCluster = serde_json::from_value(json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample", "namespace": "db"},
            "spec": {"version": "7.1.57"},
            "status": {"processGroups": [{"processGroupID": "log-1", "processClass": "log"}]},
        }))
        .unwrap();
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "sample-storage-1",
            "labels": {"foundationdb.org/fdb-process-group-id": "storage-1"}}}))
        .unwrap();
        let names = ["sample-storage-1".to_owned(), "log-1".to_owned()];
        assert_eq!(
            resolve_groups(&cluster, std::slice::from_ref(&pod), &names).unwrap(),
            ["storage-1", "log-1"]
        );
        let error = resolve_groups(&cluster, &[pod], &["nope".to_owned()]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no pod or process group named nope in FoundationDBCluster db/sample"
        );
    }
}
