//! `recover-multi-region-cluster NAME`: the Go plugin's forced recovery of a multi-region
//! cluster whose majority of coordinators is lost for good
//! (fdb-kubernetes-operator `kubectl-fdb/cmd/recover_multi_region_cluster.go`, the manual's
//! "Recover Lost Quorum Of Coordinators" in `docs/manual/operations.md`). It can lose
//! data: the commits this cluster's datacenter had not received are gone.
//!
//! The steps, as Go's, each through the Kubernetes API:
//! 1. `status json` in a running pod must say the database is unavailable, not healthy,
//!    and the coordinators' quorum unreachable; otherwise nothing is done;
//! 2. `spec.skip` is set (the operator keeps off);
//! 3. the running pods at the connection string's coordinators are the surviving
//!    coordinators (none: "could not find any running coordinator"); the other running
//!    pods of stateful classes are candidates;
//! 4. `spec.databaseConfiguration` becomes one region (`spec.dataCenter`),
//!    `usable_regions: 1`, and `spec.seedConnectionString` is dropped;
//! 5. candidates (in pod name order) fill the coordinators up to the count one region
//!    needs; the surviving coordinator's `coordination-0.fdq` and `-1.fdq` (found with
//!    `find`) are copied into each new one's data directory (`base64` out, `base64 -d`
//!    from standard input in: no file content on a command line);
//! 6. the new connection string (same `description:ID`, the survivors then the new
//!    coordinators) goes into the status and the ConfigMap, then into every running
//!    pod's cluster file, and fdbserver is restarted there (`pkill fdbserver`), as
//!    `fix-coordinator-ips` does: fdbserver takes it at once (Go waits two minutes for
//!    the ConfigMap to reach the pods, deletes the file and restarts);
//! 7. `fdbcli --exec "force_recovery_with_data_loss DC"` in the surviving coordinator's
//!    pod, retried while the restarted processes come back;
//! 8. `spec.skip` is cleared.
//!
//! A step that fails stops the command with `spec.skip` still set, so the operator does
//! not act on a half-recovered cluster; running the command again redoes the steps.

use std::path::{Component, Path};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::cluster::config_map_name;
use fdb_shared::api::database_configuration::{DataCenter, Region};
use fdb_shared::api::{FoundationDBCluster, ProcessClass};
use fdb_shared::cluster_math::coordinators::desired_coordinator_count;
use fdb_shared::connection_string::ConnectionString;
use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;

use crate::cli::RecoverMultiRegionClusterArgs;
use crate::commands::coordinators::{public_ip, rewrite_cluster_file};
use crate::commands::update::{ConnectionStringChange, write_connection_string};
use crate::error::PluginError;
use crate::exec::{MAIN_CONTAINER, exec, exec_with_input};
use crate::session::Session;

/// Where fdbserver keeps its data (and its coordination files).
const DATA_ROOT: &str = "/var/fdb/data";
/// The coordinated state's files, in a coordinator's data directory.
const COORDINATION_FILES: [&str; 2] = ["coordination-0.fdq", "coordination-1.fdq"];
/// How often the forced recovery is tried while the restarted processes come back.
const FORCE_ATTEMPTS: u32 = 6;
/// Between two tries.
const FORCE_RETRY: Duration = Duration::from_secs(10);

/// Go's first warning (`--wait`).
const FIRST_WARNING: &str = "WARNING:\nThe cluster: {cluster} will be force recovered.\nOnly perform those steps if you are unable to recover the coordinator state.\nPerforming this action can lead to data loss.";
/// Go's second warning.
const SECOND_WARNING: &str = "WARNING:\nIf this is a multi-region cluster, or is spread across different namespaces/Kubernetes clusters.\nEnsure that all Pods of this FDB cluster: {cluster} in the other namespaces/Kubernetes clusters are deleted and shutdown.";

/// The coordinators the recovery ends with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryPlan {
    /// The pod to copy the coordination files from and run fdbcli in.
    pub source: String,
    /// The surviving coordinators, kept.
    pub kept: Vec<ProcessAddress>,
    /// New coordinators: pod and address.
    pub added: Vec<(String, ProcessAddress)>,
    /// The new connection string.
    pub connection_string: String,
}

/// The running pods of the cluster (not being deleted), in name order.
fn running(pods: &[Pod]) -> Vec<&Pod> {
    let mut running: Vec<&Pod> = pods
        .iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter(|pod| pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .collect();
    running.sort_by_key(|pod| pod.metadata.name.clone());
    running
}

/// The host a pod's coordinator would have: its DNS name with DNS in the cluster file,
/// else its public IP.
fn coordinator_host(cluster: &FoundationDBCluster, pod: &Pod) -> Option<String> {
    let name = pod.metadata.name.as_deref()?;
    if cluster.spec.routing.use_dns_in_cluster_file() {
        return Some(format!(
            "{name}.{}.{}.svc.{}",
            cluster.metadata.name.as_deref().unwrap_or_default(),
            cluster.metadata.namespace.as_deref().unwrap_or_default(),
            cluster.spec.dns_domain()
        ));
    }
    public_ip(cluster, pod).filter(|ip| !ip.is_empty())
}

/// The pod's process class, from the cluster's process class labels.
fn class_of(cluster: &FoundationDBCluster, pod: &Pod) -> Option<ProcessClass> {
    let labels = pod.metadata.labels.as_ref()?;
    cluster
        .spec
        .labels
        .process_class_labels()
        .iter()
        .find_map(|key| labels.get(key))
        .and_then(|class| class.parse().ok())
}

/// Which coordinators survive, which pods become coordinators and the connection string
/// they make (pure; Go's selection, candidates taken in pod name order).
pub fn plan(cluster: &FoundationDBCluster, pods: &[Pod]) -> Result<RecoveryPlan, PluginError> {
    let (_, parsed) = super::coordinators::status_connection_string(cluster)?;
    let tls = parsed.coordinators.last().is_some_and(|c| c.tls);
    let mut source = None;
    let mut kept = Vec::new();
    let mut candidates = Vec::new();
    for pod in running(pods) {
        let (Some(pod_name), Some(host)) =
            (pod.metadata.name.clone(), coordinator_host(cluster, pod))
        else {
            continue;
        };
        if let Some(coordinator) = parsed.coordinators.iter().find(|c| c.host == host) {
            kept.push(coordinator.clone());
            source = Some(pod_name);
        } else if class_of(cluster, pod).is_some_and(ProcessClass::is_stateful) {
            candidates.push((pod_name, host));
        }
    }
    let source = source.ok_or_else(|| {
        PluginError::NotFound("could not find any running coordinator for this cluster".into())
    })?;
    let wanted = usize::try_from(desired_coordinator_count(
        &cluster.spec.redundancy_mode(),
        1,
    ))
    .unwrap_or(1);
    let missing = wanted.saturating_sub(kept.len());
    if candidates.len() < missing {
        return Err(PluginError::NotFound(format!(
            "not enough coordinator candidates: need {missing} more running pods of a stateful class (log, storage, transaction), have {}",
            candidates.len()
        )));
    }
    let added: Vec<(String, ProcessAddress)> = candidates
        .into_iter()
        .take(missing)
        .map(|(pod, host)| {
            let port = if tls { 4500 } else { 4501 };
            (pod, ProcessAddress { host, port, tls })
        })
        .collect();
    let coordinators = kept
        .iter()
        .cloned()
        .chain(added.iter().map(|(_, address)| address.clone()))
        .collect();
    let connection_string = ConnectionString {
        coordinators,
        ..parsed
    }
    .to_string();
    Ok(RecoveryPlan {
        source,
        kept,
        added,
        connection_string,
    })
}

/// Refuses to act on a database that answers: Go's checks of `status json`, in its order.
pub fn check_status(status: &Value) -> Result<(), PluginError> {
    let client = &status["client"];
    let abort =
        |what: &str| PluginError::Declined(format!("{what}, will abort any further actions"));
    if client["database_status"]["available"].as_bool() == Some(true) {
        return Err(abort("cluster is available"));
    }
    if client["database_status"]["healthy"].as_bool() == Some(true) {
        return Err(abort("cluster is healthy"));
    }
    if client["coordinators"]["quorum_reachable"].as_bool() == Some(true) {
        return Err(abort("quorum of coordinators are reachable"));
    }
    Ok(())
}

/// The data directory holding the coordination file `find` printed: an absolute path
/// below `/var/fdb/data`, plain elements only, ending in `coordination-0.fdq`.
pub fn data_dir_of(found: &str, pod: &str) -> Result<String, PluginError> {
    let line = found.lines().next().unwrap_or_default().trim();
    let path = Path::new(line);
    let plain = path.strip_prefix(DATA_ROOT).is_ok_and(|rest| {
        rest.components().all(|c| matches!(c, Component::Normal(_)))
            && rest.file_name().and_then(|f| f.to_str()) == Some(COORDINATION_FILES[0])
    });
    if line.is_empty() || !plain || line.chars().any(char::is_control) {
        return Err(PluginError::NotFound(format!(
            "no coordination file found under {DATA_ROOT} in pod {pod}{}",
            if line.is_empty() {
                String::new()
            } else {
                format!(" (find printed {line:?})")
            }
        )));
    }
    Ok(path
        .parent()
        .map(|dir| dir.display().to_string())
        .unwrap_or_else(|| DATA_ROOT.to_owned()))
}

/// Where a new coordinator's files go: Go's `getDataDir` (the unified image and pods of
/// several processes use the first process's directory `<base>/1`).
pub fn target_data_dir(source_dir: &str, cluster: &FoundationDBCluster, pod: &Pod) -> String {
    let base = if source_dir == DATA_ROOT {
        DATA_ROOT.to_owned()
    } else {
        Path::new(source_dir)
            .parent()
            .map_or_else(|| DATA_ROOT.to_owned(), |p| p.display().to_string())
    };
    let several = match class_of(cluster, pod) {
        Some(ProcessClass::Log | ProcessClass::Transaction) => {
            cluster.spec.log_servers_per_pod() > 1
        }
        Some(ProcessClass::Storage) => cluster.spec.storage_servers_per_pod() > 1,
        _ => false,
    };
    if cluster.image_type() == fdb_shared::api::cluster::ImageType::Unified || several {
        format!("{base}/1")
    } else {
        base
    }
}

/// The datacenter to recover into: `spec.dataCenter`, a plain identifier (it becomes a
/// word of an fdbcli command).
fn data_center(cluster: &FoundationDBCluster) -> Result<String, PluginError> {
    let dc = cluster.spec.data_center.clone().unwrap_or_default();
    let plain = !dc.is_empty()
        && dc
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if plain {
        Ok(dc)
    } else {
        Err(PluginError::Usage(format!(
            "spec.dataCenter {dc:?}: the datacenter to recover into must be set, letters, digits, '-', '_' and '.' only"
        )))
    }
}

/// Runs `recover-multi-region-cluster`.
pub async fn run(
    session: &Session,
    args: &RecoverMultiRegionClusterArgs,
) -> Result<u8, PluginError> {
    let cluster = session.cluster(&args.cluster).await?;
    let dc = data_center(&cluster)?;
    let qualified = format!("{}/{}", session.namespace, args.cluster);
    session.confirm(&FIRST_WARNING.replace("{cluster}", &qualified))?;
    session.confirm(&SECOND_WARNING.replace("{cluster}", &args.cluster))?;
    let pods = session.pods_of(&cluster).await?;
    let status_pod = running(&pods)
        .first()
        .and_then(|p| p.metadata.name.clone())
        .ok_or_else(|| {
            PluginError::NotFound(format!(
                "FoundationDBCluster {qualified} has no running pod to run fdbcli in"
            ))
        })?;
    check_status(&status_json(session, &status_pod).await?)?;
    set_skip(session, &args.cluster, true).await?;
    println!("Set spec.skip on {qualified}: the operator keeps off until the recovery is done");
    let plan = plan(&cluster, &pods)?;
    println!("Surviving coordinators: {}", join(&plan.kept));
    single_region(session, &args.cluster, &dc).await?;
    println!("Database configuration: one region ({dc}), usable_regions 1");
    if !plan.added.is_empty() {
        copy_coordination_files(session, &cluster, &pods, &plan).await?;
    }
    let change = ConnectionStringChange {
        current: cluster
            .status
            .as_ref()
            .and_then(|s| s.connection_string.clone()),
        new: plan.connection_string.clone(),
        config_map: config_map_name(&cluster),
    };
    write_connection_string(session, &args.cluster, &change).await?;
    println!("New connection string: {}", plan.connection_string);
    for pod in running(&pods)
        .iter()
        .filter_map(|p| p.metadata.name.clone())
    {
        rewrite_cluster_file(session, &pod, &plan.connection_string).await?;
        println!("  {pod}: cluster file written, fdbserver restarted");
    }
    force_recovery(session, &plan.source, &dc).await?;
    println!("Forced the recovery into {dc}");
    set_skip(session, &args.cluster, false).await?;
    println!("Cleared spec.skip on {qualified}: the operator reconciles again");
    Ok(0)
}

fn join(addresses: &[ProcessAddress]) -> String {
    let names: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    names.join(", ")
}

/// `status json` of the database, read in `pod`.
async fn status_json(session: &Session, pod: &str) -> Result<Value, PluginError> {
    let command = ["fdbcli", "--timeout", "10", "--exec", "status json"];
    let result = exec(session, pod, MAIN_CONTAINER, strings(&command)).await?;
    serde_json::from_str(&result.stdout).map_err(|error| PluginError::Exec {
        action: format!("read status json in pod {pod}"),
        message: format!(
            "not JSON ({error}): {}",
            first_line(&format!("{}{}", result.stderr, result.stdout))
        ),
    })
}

/// The first line of `text` that says something.
fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or_default()
        .to_owned()
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

async fn set_skip(session: &Session, cluster: &str, skip: bool) -> Result<(), PluginError> {
    session
        .update_spec(cluster, |spec| {
            let changed = spec.skip() != skip;
            spec.skip = Some(skip);
            changed
        })
        .await
        .map(|_| ())
}

/// Go's `updateDatabaseConfiguration`: one region of `dc`, one usable region, no seed
/// connection string.
async fn single_region(session: &Session, cluster: &str, dc: &str) -> Result<(), PluginError> {
    session
        .update_spec(cluster, |spec| {
            let region = Region {
                datacenters: vec![DataCenter {
                    id: dc.to_owned(),
                    ..DataCenter::default()
                }],
                ..Region::default()
            };
            let before = (
                spec.database_configuration.usable_regions,
                spec.database_configuration.regions.clone(),
                spec.seed_connection_string.clone(),
            );
            spec.database_configuration.usable_regions = Some(1);
            spec.database_configuration.regions = vec![region];
            spec.seed_connection_string = None;
            before
                != (
                    spec.database_configuration.usable_regions,
                    spec.database_configuration.regions.clone(),
                    spec.seed_connection_string.clone(),
                )
        })
        .await
        .map(|_| ())
}

/// Copies the source coordinator's coordination files into each new coordinator's data
/// directory.
async fn copy_coordination_files(
    session: &Session,
    cluster: &FoundationDBCluster,
    pods: &[Pod],
    plan: &RecoveryPlan,
) -> Result<(), PluginError> {
    let find = [
        "find",
        DATA_ROOT,
        "-type",
        "f",
        "-name",
        COORDINATION_FILES[0],
        "-print",
        "-quit",
    ];
    let found = exec(session, &plan.source, MAIN_CONTAINER, strings(&find)).await?;
    let source_dir = data_dir_of(&found.stdout, &plan.source)?;
    let mut files = Vec::new();
    for name in COORDINATION_FILES {
        let path = format!("{source_dir}/{name}");
        let read = exec(
            session,
            &plan.source,
            MAIN_CONTAINER,
            strings(&["base64", &path]),
        )
        .await?;
        let compact: String = read.stdout.chars().filter(|c| !c.is_whitespace()).collect();
        let bytes = STANDARD.decode(compact).unwrap_or_default();
        if read.code != 0 || bytes.is_empty() {
            return Err(PluginError::Exec {
                action: format!("download {path} from pod {}", plan.source),
                message: if read.code != 0 {
                    crate::error::one_line(&read.stderr)
                } else {
                    format!("file {path} is empty")
                },
            });
        }
        files.push((name, STANDARD.encode(&bytes)));
    }
    for (pod_name, address) in &plan.added {
        let Some(pod) = pods
            .iter()
            .find(|p| p.metadata.name.as_ref() == Some(pod_name))
        else {
            continue;
        };
        let dir = target_data_dir(&source_dir, cluster, pod);
        for (name, encoded) in &files {
            let target = format!("{dir}/{name}");
            let command = vec![
                "sh".to_owned(),
                "-c".to_owned(),
                "base64 -d > \"$1\"".to_owned(),
                "recover-multi-region-cluster".to_owned(),
                target.clone(),
            ];
            let written = exec_with_input(
                session,
                pod_name,
                MAIN_CONTAINER,
                command,
                encoded.as_bytes(),
            )
            .await?;
            if written.code != 0 {
                return Err(PluginError::Exec {
                    action: format!("upload {target} to pod {pod_name}"),
                    message: crate::error::one_line(&written.stderr),
                });
            }
        }
        println!("  {pod_name}: coordination files copied to {dir}, new coordinator {address}");
    }
    Ok(())
}

/// `force_recovery_with_data_loss DC` in `pod`, tried again while the restarted
/// processes come back.
async fn force_recovery(session: &Session, pod: &str, dc: &str) -> Result<(), PluginError> {
    let text = format!("force_recovery_with_data_loss {dc}");
    let command = ["fdbcli", "--timeout", "60", "--exec", &text];
    let mut last = String::new();
    for attempt in 1..=FORCE_ATTEMPTS {
        let result = exec(session, pod, MAIN_CONTAINER, strings(&command)).await?;
        if result.code == 0 {
            return Ok(());
        }
        last = first_line(&format!("{}{}", result.stderr, result.stdout));
        if attempt < FORCE_ATTEMPTS {
            tokio::time::sleep(FORCE_RETRY).await;
        }
    }
    Err(PluginError::Exec {
        action: format!("run fdbcli --exec '{text}' in pod {pod}"),
        message: format!(
            "{last} (after {FORCE_ATTEMPTS} tries; spec.skip stays set: run the command again once the processes are back)"
        ),
    })
}

#[cfg(test)]
#[path = "recover_tests.rs"]
mod tests;
