//! `get configuration` and `get exclusion-status`: read-only views of a cluster.

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::cluster_math::desired_database_configuration;
use serde_json::json;

use crate::cli::GetArgs;
use crate::error::PluginError;
use crate::session::Session;

/// `get configuration`: the database configuration the spec asks for (defaults filled
/// in) and the one the operator last saw in the database, as JSON.
pub async fn configuration(session: &Session, args: &GetArgs) -> Result<u8, PluginError> {
    let cluster = session.cluster(&args.cluster).await?;
    let document = json!({
        "spec": desired_database_configuration(&cluster.spec),
        "status": cluster.status.as_ref().and_then(|s| s.database_configuration.clone()),
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&document).unwrap_or_else(|_| document.to_string())
    );
    Ok(0)
}

/// One line per process group marked for removal (pure).
pub fn exclusion_lines(cluster: &FoundationDBCluster) -> Vec<String> {
    let status = cluster.status.clone().unwrap_or_default();
    status
        .process_groups
        .iter()
        .filter(|g| g.is_marked_for_removal())
        .map(|g| {
            let state = match (&g.exclusion_timestamp, g.exclusion_skipped) {
                (_, true) => "removed without exclusion".to_owned(),
                (Some(at), false) => format!("fully excluded since {}", at.0),
                (None, false) => "exclusion in progress (data still moving)".to_owned(),
            };
            let addresses = if g.addresses.is_empty() {
                "no address".to_owned()
            } else {
                g.addresses.join(",")
            };
            format!(
                "{} ({}, {addresses}): {state}",
                g.process_group_id, g.process_class
            )
        })
        .collect()
}

/// `get exclusion-status`: the exclusions of the groups marked for removal, as the
/// operator last recorded them in the cluster's status.
pub async fn exclusion_status(session: &Session, args: &GetArgs) -> Result<u8, PluginError> {
    let cluster = session.cluster(&args.cluster).await?;
    let lines = exclusion_lines(&cluster);
    if lines.is_empty() {
        println!(
            "No process group of {}/{} is marked for removal",
            session.namespace, args.cluster
        );
    }
    for line in lines {
        println!("{line}");
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusions_are_listed_per_marked_group() {
        let cluster: FoundationDBCluster = serde_json::from_value(json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample"}, "spec": {"version": "7.1.57"},
            "status": {"processGroups": [
                {"processGroupID": "storage-1", "processClass": "storage", "addresses": ["127.0.0.1"],
                 "removalTimestamp": "2026-01-01T00:00:00Z"},
                {"processGroupID": "storage-2", "processClass": "storage",
                 "removalTimestamp": "2026-01-01T00:00:00Z", "exclusionTimestamp": "2026-01-01T00:05:00Z"},
                {"processGroupID": "storage-3", "processClass": "storage"},
            ]},
        }))
        .unwrap();
        assert_eq!(
            exclusion_lines(&cluster),
            [
                "storage-1 (storage, 127.0.0.1): exclusion in progress (data still moving)",
                "storage-2 (storage, no address): fully excluded since 2026-01-01T00:05:00Z",
            ]
        );
    }
}
