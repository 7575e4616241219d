//! `get configuration` (the configuration string, optionally failed over and written into the spec) and `get exclusion-status`.

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::cluster_math::desired_database_configuration;
use fdb_shared::status_json::DatabaseStatus;
use serde_json::json;

use fdb_operator::fdb::fdbcli::commands;
use fdb_shared::api::DatabaseConfiguration;

use crate::cli::{ConfigurationArgs, GetArgs};
use crate::error::PluginError;
use crate::exec;
use crate::session::Session;

/// The configuration with the priorities of the main (non-satellite) data centers of a
/// two-region configuration swapped, satellites unchanged (pure; the Go operator's
/// `DatabaseConfiguration.FailOver`). Fewer than two regions: unchanged.
pub fn failed_over(configuration: &DatabaseConfiguration) -> DatabaseConfiguration {
    let mut result = configuration.clone();
    if result.regions.len() <= 1 {
        return result;
    }
    let main: Vec<(String, Option<i32>)> = configuration
        .regions
        .iter()
        .flat_map(|region| &region.datacenters)
        .filter(|dc| dc.satellite != Some(1))
        .map(|dc| (dc.id.clone(), dc.priority))
        .collect();
    for dc in result
        .regions
        .iter_mut()
        .flat_map(|region| region.datacenters.iter_mut())
        .filter(|dc| dc.satellite != Some(1))
    {
        if let Some((_, priority)) = main.iter().find(|(id, _)| *id != dc.id) {
            dc.priority = *priority;
        }
    }
    result
}

/// The arguments of `fdbcli configure` for `configuration` (pure).
pub fn configuration_string(configuration: &DatabaseConfiguration) -> Result<String, PluginError> {
    let command = commands::configure(configuration, false)
        .map_err(|e| PluginError::Unsupported(format!("spec.databaseConfiguration: {e}")))?;
    Ok(command
        .strip_prefix("configure ")
        .unwrap_or(&command)
        .to_owned())
}

/// `get configuration`: the configuration the spec asks for (defaults filled in), as the
/// arguments of `fdbcli configure`, optionally failed over and written into the spec.
pub async fn configuration(session: &Session, args: &ConfigurationArgs) -> Result<u8, PluginError> {
    let cluster = session.cluster(&args.cluster).await?;
    if args.output.is_some() {
        let document = json!({
            "spec": desired_database_configuration(&cluster.spec),
            "status": cluster.status.as_ref().and_then(|s| s.database_configuration.clone()),
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&document).unwrap_or_else(|_| document.to_string())
        );
        return Ok(0);
    }
    let desired = desired_database_configuration(&cluster.spec);
    let shown = if args.fail_over {
        failed_over(&desired)
    } else {
        desired
    };
    if !args.update {
        println!("{}", configuration_string(&shown)?);
        return Ok(0);
    }
    let before = &cluster.spec.database_configuration;
    let after = if args.fail_over {
        failed_over(before)
    } else {
        before.clone()
    };
    if &after == before {
        println!("Nothing to change");
        return Ok(0);
    }
    let diff = serde_json::to_string_pretty(&after.regions).unwrap_or_default();
    session.confirm(&format!(
        "Set spec.databaseConfiguration.regions of cluster {}/{} to\n{diff}\n(the operator then configures the database: the main data center moves)",
        session.namespace, args.cluster
    ))?;
    let regions = after.regions.clone();
    let changed = session
        .update_spec(&args.cluster, |spec| {
            let current = spec.database_configuration.regions.clone();
            spec.database_configuration.regions = regions.clone();
            current != regions
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

/// An excluded process as `status json` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExcludedProcess {
    /// Its process group (instance ID).
    pub id: String,
    /// Its address.
    pub address: String,
    /// The bytes its storage and log roles still hold, by role.
    pub held: Vec<(String, i64)>,
}

impl ExcludedProcess {
    /// The bytes it still holds.
    pub fn total(&self) -> i64 {
        self.held.iter().map(|(_, bytes)| bytes).sum()
    }

    /// Whether it is fully excluded: no stateful role left.
    pub fn done(&self) -> bool {
        self.held.is_empty()
    }
}

/// The excluded processes in `status json`, by ID (pure).
pub fn excluded_processes(status: &DatabaseStatus) -> Vec<ExcludedProcess> {
    let mut processes: Vec<ExcludedProcess> = status
        .cluster
        .processes
        .values()
        .filter(|p| p.excluded)
        .map(|p| ExcludedProcess {
            id: p
                .locality
                .instance_id
                .clone()
                .unwrap_or_else(|| "unknown".to_owned()),
            address: p
                .address
                .as_ref()
                .map_or_else(String::new, ToString::to_string),
            held: p
                .roles
                .iter()
                .filter(|r| matches!(r.role.as_str(), "storage" | "log"))
                .map(|r| (r.role.clone(), r.stored_bytes.unwrap_or(0)))
                .collect(),
        })
        .collect();
    processes.sort_by(|a, b| (&a.id, &a.address).cmp(&(&b.id, &b.address)));
    processes
}

/// One line per excluded process (pure): the data its stateful roles still hold, with an
/// estimate of the time left from the bytes it held `elapsed` earlier (`previous`), or
/// that it is fully excluded (left out with `ignore_fully_excluded`).
pub fn database_exclusion_lines(
    processes: &[ExcludedProcess],
    previous: &[ExcludedProcess],
    elapsed: std::time::Duration,
    ignore_fully_excluded: bool,
) -> Vec<String> {
    processes
        .iter()
        .filter(|p| !(ignore_fully_excluded && p.done()))
        .map(|p| {
            let (id, address) = (&p.id, &p.address);
            if p.done() {
                return format!("{id} ({address}): fully excluded");
            }
            let held: Vec<String> = p
                .held
                .iter()
                .map(|(role, stored)| format!("{role} {}", bytes(*stored)))
                .collect();
            let before = previous
                .iter()
                .find(|q| q.id == p.id && q.address == p.address)
                .map(ExcludedProcess::total);
            let moved = before.map(|b| b - p.total()).filter(|moved| *moved > 0);
            let estimate = match moved {
                Some(moved) => {
                    let left = u64::try_from(p.total()).unwrap_or(0);
                    let moved = u64::try_from(moved).unwrap_or(1);
                    let seconds = elapsed.as_secs().saturating_mul(left) / moved;
                    format!(" (about {seconds}s left)")
                }
                None => String::new(),
            };
            format!(
                "{id} ({address}): still holds {}{estimate}",
                held.join(", ")
            )
        })
        .collect()
}

fn bytes(count: i64) -> String {
    const MIB: i64 = 1 << 20;
    if count >= MIB {
        format!("{} MiB", count / MIB)
    } else {
        format!("{count} bytes")
    }
}

/// Reads `status json` in a pod of the cluster.
async fn read_status(
    session: &Session,
    cluster: &FoundationDBCluster,
) -> Result<DatabaseStatus, PluginError> {
    let pods = session.pods_of(cluster).await?;
    let pod = exec::fdbcli_pod(cluster, &pods)?;
    let text = exec::fdbcli(session, &pod, "status json").await?;
    serde_json::from_str(&text).map_err(|e| {
        PluginError::Unsupported(format!(
            "the status json read in pod {pod} does not parse: {e}"
        ))
    })
}

/// `get exclusion-status`: the excluded processes as the database reports them (`status
/// json`, read with fdbcli in a pod), then the groups marked for removal as the operator
/// last recorded them; again every `--interval` while a process still holds data (as
/// the Go plugin follows an exclusion until it is done), with an estimate of the time
/// left.
pub async fn exclusion_status(session: &Session, args: &GetArgs) -> Result<u8, PluginError> {
    let mut previous: Vec<ExcludedProcess> = Vec::new();
    loop {
        let cluster = session.cluster(&args.cluster).await?;
        let processes = excluded_processes(&read_status(session, &cluster).await?);
        let database = database_exclusion_lines(
            &processes,
            &previous,
            args.interval,
            args.ignore_fully_excluded,
        );
        if !previous.is_empty() {
            println!();
        }
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
        if processes.iter().all(ExcludedProcess::done) {
            return Ok(0);
        }
        println!(
            "(data still moving: reading again in {}s; Ctrl-C stops)",
            args.interval.as_secs()
        );
        previous = processes;
        tokio::time::sleep(args.interval).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_over_swaps_the_main_data_centers_and_keeps_satellites() {
        let configuration: DatabaseConfiguration = serde_json::from_value(json!({
            "redundancy_mode": "double", "usable_regions": 2,
            "regions": [
                {"datacenters": [{"id": "primary", "priority": 1},
                                 {"id": "primary-sat", "priority": 1, "satellite": 1}],
                 "satellite_logs": 3, "satellite_redundancy_mode": "one_satellite_double"},
                {"datacenters": [{"id": "remote", "priority": 0},
                                 {"id": "remote-sat", "priority": 0, "satellite": 1}]}]
        }))
        .unwrap();
        let over = failed_over(&configuration);
        let priority =
            |c: &DatabaseConfiguration, r: usize, d: usize| c.regions[r].datacenters[d].priority;
        assert_eq!(priority(&over, 0, 0), Some(0));
        assert_eq!(priority(&over, 1, 0), Some(1));
        assert_eq!(priority(&over, 0, 1), Some(1), "satellites keep theirs");
        assert_eq!(priority(&over, 1, 1), Some(0));
        assert_eq!(over.regions[0].satellite_logs, Some(3));
        assert_eq!(failed_over(&over), configuration, "twice is no change");
        let single = DatabaseConfiguration::default();
        assert_eq!(failed_over(&single), single);
    }

    #[test]
    fn the_configuration_string_is_what_fdbcli_configure_takes() {
        let spec: fdb_shared::api::FoundationDBClusterSpec =
            serde_json::from_value(json!({"version": "7.1.57",
                "databaseConfiguration": {"redundancy_mode": "triple"}}))
            .unwrap();
        let text = configuration_string(&desired_database_configuration(&spec)).unwrap();
        assert!(
            text.starts_with("triple ssd-2 usable_regions=1 logs=3"),
            "{text}"
        );
        assert!(!text.starts_with("configure"), "{text}");
    }

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
        let processes = excluded_processes(&status);
        let one_minute = std::time::Duration::from_secs(60);
        assert_eq!(
            database_exclusion_lines(&processes, &[], one_minute, false),
            [
                "storage-1 (127.0.0.1:4501): still holds storage 3 MiB",
                "storage-2 (127.0.0.2:4501): fully excluded",
            ]
        );
        // Fully excluded processes are left out by default.
        assert_eq!(
            database_exclusion_lines(&processes, &[], one_minute, true),
            ["storage-1 (127.0.0.1:4501): still holds storage 3 MiB"]
        );
        // A minute earlier it held 4 MiB: 1 MiB a minute, 3 minutes left.
        let mut earlier = processes.clone();
        earlier[0].held = vec![("storage".into(), 4 << 20)];
        assert_eq!(
            database_exclusion_lines(&processes, &earlier, one_minute, true),
            ["storage-1 (127.0.0.1:4501): still holds storage 3 MiB (about 180s left)"]
        );
        assert_eq!(
            crate::names::duration("1h30m").unwrap(),
            std::time::Duration::from_secs(5400)
        );
        assert!(crate::names::duration("5").is_err());
        assert!(crate::names::duration("0s").is_err());
        assert!(crate::names::duration("99999999999999h").is_err());
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
