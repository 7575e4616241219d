//! The name and keys of the ConfigMap the operator keeps for a cluster, shared by the
//! operator (which writes it) and the plugin (which repairs it in an emergency).

use super::FoundationDBCluster;

/// ConfigMap key of the cluster file (the connection string).
pub const CLUSTER_FILE_KEY: &str = "cluster-file";

/// The name of a cluster's ConfigMap: `<cluster>-config`. Cluster names are DNS labels
/// (the API server refuses others), so the result is a valid object name.
pub fn config_map_name(cluster: &FoundationDBCluster) -> String {
    format!(
        "{}-config",
        cluster.metadata.name.as_deref().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_map_is_named_after_the_cluster() {
        let mut cluster = FoundationDBCluster::default();
        cluster.metadata.name = Some("sample".into());
        assert_eq!(config_map_name(&cluster), "sample-config");
    }
}
