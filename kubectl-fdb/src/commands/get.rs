//! `get configuration` and `get exclusion-status`: read-only views of a cluster.

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::cluster_math::desired_database_configuration;
use fdb_shared::status_json::DatabaseStatus;
use serde_json::json;

use crate::cli::GetArgs;
use crate::error::PluginError;
use crate::exec;
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

/// One line per excluded process in `status json` (pure): the data its stateful roles
/// still hold, or that it holds none.
pub fn database_exclusion_lines(status: &DatabaseStatus) -> Vec<String> {
    let mut lines: Vec<String> = status
        .cluster
        .processes
        .values()
        .filter(|p| p.excluded)
        .map(|p| {
            let id = p
                .locality
                .instance_id
                .clone()
                .unwrap_or_else(|| "unknown".to_owned());
            let address = p
                .address
                .as_ref()
                .map_or_else(String::new, ToString::to_string);
            let held: Vec<String> = p
                .roles
                .iter()
                .filter(|r| matches!(r.role.as_str(), "storage" | "log"))
                .map(|r| format!("{} {}", r.role, bytes(r.stored_bytes.unwrap_or(0))))
                .collect();
            if held.is_empty() {
                format!("{id} ({address}): fully excluded")
            } else {
                format!("{id} ({address}): still holds {}", held.join(", "))
            }
        })
        .collect();
    lines.sort();
    lines
}

fn bytes(count: i64) -> String {
    const MIB: i64 = 1 << 20;
    if count >= MIB {
        format!("{} MiB", count / MIB)
    } else {
        format!("{count} bytes")
    }
}

/// `get exclusion-status`: the excluded processes as the database reports them (`status
/// json`, read with fdbcli in a pod), then the groups marked for removal as the operator
/// last recorded them.
pub async fn exclusion_status(session: &Session, args: &GetArgs) -> Result<u8, PluginError> {
    let cluster = session.cluster(&args.cluster).await?;
    let pods = session.pods_of(&cluster).await?;
    let pod = exec::fdbcli_pod(&cluster, &pods)?;
    let text = exec::fdbcli(session, &pod, "status json").await?;
    let status: DatabaseStatus = serde_json::from_str(&text).map_err(|e| {
        PluginError::Unsupported(format!(
            "the status json read in pod {pod} does not parse: {e}"
        ))
    })?;
    let database = database_exclusion_lines(&status);
    println!("Excluded processes (status json):");
    if database.is_empty() {
        println!("  none");
    }
    for line in database {
        println!("  {line}");
    }
    println!("Process groups marked for removal (operator status):");
    let lines = exclusion_lines(&cluster);
    if lines.is_empty() {
        println!("  none");
    }
    for line in lines {
        println!("  {line}");
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excluded_processes_show_the_data_they_still_hold() {
        let status: DatabaseStatus = serde_json::from_value(json!({"cluster": {"processes": {
            "a": {"address": "127.0.0.1:4501", "excluded": true, "locality": {"instance_id": "storage-1"},
                  "roles": [{"role": "storage", "stored_bytes": 3145728}]},
            "b": {"address": "127.0.0.2:4501", "excluded": true, "locality": {"instance_id": "storage-2"}, "roles": []},
            "c": {"address": "127.0.0.3:4501", "locality": {"instance_id": "storage-3"},
                  "roles": [{"role": "storage", "stored_bytes": 1}]},
        }}}))
        .unwrap();
        assert_eq!(
            database_exclusion_lines(&status),
            [
                "storage-1 (127.0.0.1:4501): still holds storage 3 MiB",
                "storage-2 (127.0.0.2:4501): fully excluded",
            ]
        );
    }

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
