//! `analyze`: what is wrong with a cluster, from its status and its pods; `--auto-fix`
//! marks the process groups whose pods failed for removal (the operator then replaces
//! them, excluding first).

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::api::cluster::conditions::ProcessGroupConditionType;
use fdb_shared::api::{FoundationDBCluster, FoundationDBClusterStatus};
use fdb_shared::cluster_math::counts::minimum_fault_domains;
use fdb_shared::connection_string::ConnectionString;
use k8s_openapi::api::core::v1::Pod;

use fdb_operator::controller::DesiredObjects;
use fdb_operator::controller::process_difference;

use crate::cli::AnalyzeArgs;
use crate::error::PluginError;
use crate::session::{Session, process_group_of};

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// As it should be.
    Good(String),
    /// Worth knowing, not a problem.
    Warning(String),
    /// A problem.
    Problem(String),
}

/// What `analyze` found in one cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// The report, in order.
    pub findings: Vec<Finding>,
    /// Process groups whose pods failed (what `--auto-fix` replaces).
    pub to_replace: Vec<String>,
}

impl Analysis {
    /// Whether any problem was found.
    pub fn has_problems(&self) -> bool {
        self.findings
            .iter()
            .any(|f| matches!(f, Finding::Problem(_)))
    }
}

/// The cluster's availability, replication and reconciliation.
fn cluster_health(
    cluster: &FoundationDBCluster,
    status: &FoundationDBClusterStatus,
    say: &mut impl FnMut(Finding),
) {
    if status.health.available {
        say(Finding::Good("Cluster is available".into()));
    } else {
        say(Finding::Problem("Cluster is not available".into()));
    }
    if status.health.full_replication {
        say(Finding::Good("Cluster is fully replicated".into()));
    } else {
        say(Finding::Problem("Cluster is not fully replicated".into()));
    }
    let generation = cluster.metadata.generation.unwrap_or_default();
    if status.generations.reconciled == Some(generation) {
        say(Finding::Good("Cluster is reconciled".into()));
    } else {
        say(Finding::Problem(format!(
            "Cluster is not reconciled (generation {generation}, reconciled {})",
            status
                .generations
                .reconciled
                .map_or("none".to_owned(), |g| g.to_string())
        )));
    }
}

/// The findings of one group's conditions (those not ignored); returns how many were
/// ignored and whether any was reported.
fn condition_findings(
    cluster: &FoundationDBCluster,
    pods: &[Pod],
    group: &ProcessGroupStatus,
    ignore_conditions: &[ProcessGroupConditionType],
    say: &mut impl FnMut(Finding),
) -> (usize, bool) {
    let (mut ignored, mut issue) = (0, false);
    for condition in &group.process_group_conditions {
        if condition.condition_type == ProcessGroupConditionType::Ready {
            continue;
        }
        if ignore_conditions.contains(&condition.condition_type) {
            ignored += 1;
            continue;
        }
        issue = true;
        let why = if condition.condition_type == ProcessGroupConditionType::IncorrectPodSpec {
            spec_difference(cluster, group, pods)
                .map(|field| format!(" ({field} differs from the pod the operator builds)"))
                .unwrap_or_default()
        } else {
            String::new()
        };
        say(Finding::Problem(format!(
            "ProcessGroup: {} has the condition {} since {}{why}",
            group.process_group_id,
            condition.condition_type,
            since(condition.timestamp)
        )));
    }
    (ignored, issue)
}

/// Analyzes one cluster from its object and pods (pure: the decision behind the report).
pub fn analyze(
    cluster: &FoundationDBCluster,
    pods: &[Pod],
    ignore_conditions: &[ProcessGroupConditionType],
    ignore_removals: bool,
) -> Analysis {
    let mut out = Analysis::default();
    let mut say = |finding: Finding| out.findings.push(finding);
    let status = cluster.status.clone().unwrap_or_default();
    cluster_health(cluster, &status, &mut say);
    let mut removed = BTreeSet::new();
    let mut known = BTreeSet::new();
    let mut ignored = 0;
    let mut group_issue = false;
    let mut to_replace = Vec::new();
    for group in &status.process_groups {
        known.insert(group.process_group_id.clone());
        if group.is_marked_for_removal() {
            removed.insert(group.process_group_id.clone());
            if !ignore_removals {
                say(Finding::Warning(format!(
                    "ProcessGroup: {} is marked for removal, excluded: {}",
                    group.process_group_id,
                    group.exclusion_timestamp.is_some()
                )));
            }
            continue;
        }
        let (skipped, issue) =
            condition_findings(cluster, pods, group, ignore_conditions, &mut say);
        ignored += skipped;
        group_issue |= issue;
        if group
            .condition_since(&ProcessGroupConditionType::PodFailing)
            .is_some()
        {
            to_replace.push(group.process_group_id.clone());
        }
    }
    if ignore_removals && !removed.is_empty() {
        say(Finding::Warning(format!(
            "Ignored {} process groups marked for removal",
            removed.len()
        )));
    }
    if ignored > 0 {
        say(Finding::Warning(format!("Ignored {ignored} conditions")));
    }
    if !group_issue {
        say(Finding::Good(
            "ProcessGroups are all in ready condition".into(),
        ));
    }

    let pod_issue = analyze_pods(cluster, pods, &removed, &known, &mut say);
    if !pod_issue {
        say(Finding::Good("Pods are all running and available".into()));
    }
    fault_domains(cluster, &mut say);
    coordinators(cluster, pods, &mut say);
    out.to_replace = to_replace;
    out
}

fn analyze_pods(
    cluster: &FoundationDBCluster,
    pods: &[Pod],
    removed: &BTreeSet<String>,
    known: &BTreeSet<String>,
    say: &mut impl FnMut(Finding),
) -> bool {
    if pods.is_empty() {
        say(Finding::Problem("Found no Pods for this cluster".into()));
        return true;
    }
    let mut issue = false;
    for pod in pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let group = process_group_of(cluster, pod).unwrap_or_default();
        if removed.contains(&group) {
            continue;
        }
        if pod.metadata.deletion_timestamp.is_some() {
            issue = true;
            say(Finding::Problem(format!("Pod {name} is terminating")));
            continue;
        }
        let phase = pod
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Unknown".into());
        if phase != "Running" {
            issue = true;
            say(Finding::Problem(format!(
                "Pod {name} has unexpected Phase {phase}"
            )));
            continue;
        }
        for container in pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.clone())
            .unwrap_or_default()
        {
            if !container.ready {
                issue = true;
                say(Finding::Problem(format!(
                    "Pod {name} has an unready container: {}",
                    container.name
                )));
            }
        }
        if !known.contains(&group) {
            issue = true;
            say(Finding::Problem(format!(
                "Pod {name} with the ID {group} is not part of the cluster's status"
            )));
        }
    }
    issue
}

/// Fault domains per process class: storage and logs need enough for the redundancy.
fn fault_domains(cluster: &FoundationDBCluster, say: &mut impl FnMut(Finding)) {
    let status = cluster.status.clone().unwrap_or_default();
    let mut domains: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for group in status
        .process_groups
        .iter()
        .filter(|g| !g.is_marked_for_removal())
    {
        if let Some(domain) = &group.fault_domain {
            domains
                .entry(group.process_class.to_string())
                .or_default()
                .insert(domain.clone());
        }
    }
    let needed = usize::try_from(minimum_fault_domains(&cluster.spec.redundancy_mode()))
        .unwrap_or(usize::MAX);
    for (class, used) in &domains {
        let line = format!("{class}: {} fault domains", used.len());
        if (class == "storage" || class == "log") && used.len() < needed {
            say(Finding::Problem(format!(
                "{line}, fewer than the {needed} the redundancy mode needs"
            )));
        } else {
            say(Finding::Good(line));
        }
    }
}

/// Every coordinator must be a process group not marked for removal: by its IP, or for a
/// DNS name (`<pod>.<service>.<namespace>.svc...`) by its pod.
fn coordinators(cluster: &FoundationDBCluster, pods: &[Pod], say: &mut impl FnMut(Finding)) {
    let status = cluster.status.clone().unwrap_or_default();
    let Some(text) = status.connection_string.as_deref() else {
        say(Finding::Problem(
            "The cluster has no connection string".into(),
        ));
        return;
    };
    let Ok(connection) = ConnectionString::parse(text) else {
        say(Finding::Problem(format!(
            "The connection string {text:?} does not parse"
        )));
        return;
    };
    let mut healthy = true;
    for coordinator in &connection.coordinators {
        let group_id = if coordinator.is_dns_name() {
            let pod_name = coordinator.host.split('.').next().unwrap_or_default();
            pods.iter()
                .find(|pod| pod.metadata.name.as_deref() == Some(pod_name))
                .and_then(|pod| process_group_of(cluster, pod))
        } else {
            None
        };
        let owner = status.process_groups.iter().find(|g| match &group_id {
            Some(id) => g.process_group_id == *id,
            None => g.addresses.contains(&coordinator.host),
        });
        match owner {
            Some(group) if group.is_marked_for_removal() => {
                healthy = false;
                say(Finding::Problem(format!(
                    "Coordinator {coordinator} is on {}, which is marked for removal",
                    group.process_group_id
                )));
            }
            Some(_) => {}
            None => {
                healthy = false;
                say(Finding::Problem(format!(
                    "Coordinator {coordinator} is not a process group of the cluster"
                )));
            }
        }
    }
    if healthy {
        say(Finding::Good(format!(
            "{} coordinators, all on live process groups",
            connection.coordinators.len()
        )));
    }
}

/// The first field in which the group's pod runs its processes differently from the pod
/// this operator's model builds for it (as the operator judges a pod it takes over): the
/// field a process group condition cannot hold, since the Go CRD's conditions carry a type
/// and a time only.
fn spec_difference(
    cluster: &FoundationDBCluster,
    group: &fdb_shared::api::cluster::ProcessGroupStatus,
    pods: &[Pod],
) -> Option<String> {
    let pod = pods.iter().find(|pod| {
        process_group_of(cluster, pod).as_deref() == Some(group.process_group_id.as_str())
    })?;
    let desired = DesiredObjects::pod(cluster, group).ok()?;
    process_difference(desired.spec.as_ref()?, pod.spec.as_ref()?)
}

fn since(timestamp: i64) -> String {
    jiff::Timestamp::from_second(timestamp)
        .map_or_else(|_| timestamp.to_string(), |t| t.to_string())
}

/// One finding's line: green, yellow or red with `color` (as the Go plugin prints them),
/// plain otherwise (pure).
pub fn render(finding: &Finding, color: bool) -> String {
    let (mark, ansi, text) = match finding {
        Finding::Good(text) => ("✔", "32", text),
        Finding::Warning(text) => ("⚠", "33", text),
        Finding::Problem(text) => ("✖", "31", text),
    };
    if color {
        format!("\u{1b}[{ansi}m{mark} {text}\u{1b}[0m")
    } else {
        format!("{mark} {text}")
    }
}

/// Whether to color: not with `--no-color`, and, as the Go plugin's color library
/// decides (fatih/color, which its kubectl-fdb/cmd/analyze.go uses), only on a terminal,
/// without `NO_COLOR` set and with a `TERM` other than `dumb`.
fn use_color(no_color: bool) -> bool {
    use std::io::IsTerminal as _;
    !no_color
        && std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var_os("TERM").is_none_or(|term| term != "dumb")
}

/// Runs `analyze`; exit status 1 when a problem was found.
pub async fn run(session: &Session, args: AnalyzeArgs) -> Result<u8, PluginError> {
    let ignore: Vec<ProcessGroupConditionType> = args
        .ignore_condition
        .iter()
        .map(|c| ProcessGroupConditionType::from(c.as_str()))
        .collect();
    if let Some(unknown) = ignore.iter().find(|c| !c.is_known()) {
        return Err(PluginError::Usage(format!(
            "--ignore-condition: unknown process group condition {unknown}"
        )));
    }
    let clusters = if args.all_clusters {
        session.all_clusters().await?
    } else {
        if args.clusters.is_empty() {
            return Err(PluginError::Usage(
                "analyze: name a cluster or pass --all-clusters".into(),
            ));
        }
        let mut clusters = Vec::new();
        for name in &args.clusters {
            clusters.push(session.cluster(name).await?);
        }
        clusters
    };
    let color = use_color(args.no_color);
    let mut problems = false;
    for cluster in clusters {
        let name = cluster.metadata.name.clone().unwrap_or_default();
        println!("Checking cluster: {}/{name}", session.namespace);
        let pods = session.pods_of(&cluster).await?;
        let analysis = analyze(&cluster, &pods, &ignore, args.ignore_removals);
        for finding in &analysis.findings {
            println!("{}", render(finding, color));
        }
        problems |= analysis.has_problems();
        if args.auto_fix && !analysis.to_replace.is_empty() {
            let plan = format!(
                "Replace process groups {} in cluster {}/{name} (mark them for removal; the operator excludes and replaces them)",
                analysis.to_replace.join(", "),
                session.namespace
            );
            session.confirm(&plan)?;
            let groups = analysis.to_replace.clone();
            session
                .update_spec(&name, |spec| {
                    super::add_all(&mut spec.process_groups_to_remove, &groups)
                })
                .await?;
            println!("Marked for removal: {}", groups.join(", "));
        }
        println!();
    }
    Ok(u8::from(problems))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(status: serde_json::Value) -> FoundationDBCluster {
        serde_json::from_value(json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample", "namespace": "db", "generation": 2},
            "spec": {"version": "7.1.57", "databaseConfiguration": {"redundancy_mode": "double"}},
            "status": status,
        }))
        .unwrap()
    }

    fn pod(name: &str, group: &str, phase: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"foundationdb.org/fdb-process-group-id": group}},
            "status": {"phase": phase, "containerStatuses": [
                {"name": "foundationdb", "ready": phase == "Running", "restartCount": 0, "image": "i", "imageID": "i"}]},
        }))
        .unwrap()
    }

    fn healthy_status() -> serde_json::Value {
        json!({
            "health": {"available": true, "fullReplication": true},
            "generations": {"reconciled": 2},
            "connectionString": "sample:abc@127.0.0.1:4501,127.0.0.2:4501",
            "processGroups": [
                {"processGroupID": "storage-1", "processClass": "storage", "addresses": ["127.0.0.1"], "faultDomain": "n1"},
                {"processGroupID": "storage-2", "processClass": "storage", "addresses": ["127.0.0.2"], "faultDomain": "n2"},
            ],
        })
    }

    #[test]
    fn a_healthy_cluster_has_no_problem() {
        let pods = [
            pod("sample-storage-1", "storage-1", "Running"),
            pod("sample-storage-2", "storage-2", "Running"),
        ];
        let analysis = analyze(&cluster(healthy_status()), &pods, &[], true);
        assert!(!analysis.has_problems(), "{:?}", analysis.findings);
        assert!(analysis.to_replace.is_empty());
    }

    #[test]
    fn a_failed_pod_is_reported_and_its_group_is_the_one_to_replace() {
        let mut status = healthy_status();
        status["processGroups"][1]["processGroupConditions"] =
            json!([{"type": "PodFailing", "timestamp": 1767225600}]);
        let pods = [
            pod("sample-storage-1", "storage-1", "Running"),
            pod("sample-storage-2", "storage-2", "Failed"),
        ];
        let analysis = analyze(&cluster(status.clone()), &pods, &[], true);
        assert!(analysis.has_problems());
        assert_eq!(analysis.to_replace, ["storage-2"]);
        assert!(analysis.findings.contains(&Finding::Problem(
            "Pod sample-storage-2 has unexpected Phase Failed".into()
        )));
        // Ignoring the condition hides it from the report, not the pod's phase.
        let ignored = analyze(
            &cluster(status),
            &pods,
            &[ProcessGroupConditionType::PodFailing],
            true,
        );
        assert!(
            ignored
                .findings
                .contains(&Finding::Warning("Ignored 1 conditions".into()))
        );
    }

    #[test]
    fn an_incorrect_pod_spec_names_the_field_that_differs() {
        let mut status = healthy_status();
        status["processGroups"][1]["processGroupConditions"] =
            json!([{"type": "IncorrectPodSpec", "timestamp": 1767225600}]);
        let mut cluster = cluster(status);
        cluster.metadata.uid = Some("uid-1".into());
        let group = &cluster.status.as_ref().unwrap().process_groups[1];
        let mut live = DesiredObjects::pod(&cluster, group).unwrap();
        let spec = live.spec.as_mut().unwrap();
        let sidecar = spec
            .containers
            .iter_mut()
            .find(|c| c.name == "foundationdb-kubernetes-sidecar")
            .unwrap();
        sidecar.image = Some("foundationdb/foundationdb-kubernetes-sidecar:7.1.0-1".into());
        let pods = [
            pod("sample-storage-1", "storage-1", "Running"),
            live.clone(),
        ];
        let analysis = analyze(&cluster, &pods, &[], true);
        let line = analysis
            .findings
            .iter()
            .find_map(|f| match f {
                Finding::Problem(t) if t.contains("IncorrectPodSpec") => Some(t.clone()),
                _ => None,
            })
            .unwrap();
        assert!(
            line.ends_with(
                "(containers[foundationdb-kubernetes-sidecar].image differs from the pod the operator builds)"
            ),
            "{line}"
        );
        // A pod that runs as the model would gets the condition's line alone.
        let desired = DesiredObjects::pod(&cluster, group).unwrap();
        let analysis = analyze(&cluster, &[desired], &[], true);
        assert!(analysis.findings.iter().any(
            |f| matches!(f, Finding::Problem(t) if t.starts_with("ProcessGroup: storage-2 has the condition IncorrectPodSpec since") && !t.contains("differs"))
        ));
    }

    #[test]
    fn coordinators_on_removed_or_unknown_groups_and_thin_fault_domains_are_problems() {
        let mut status = healthy_status();
        status["processGroups"][0]["removalTimestamp"] = json!("2026-01-01T00:00:00Z");
        status["connectionString"] = json!("sample:abc@127.0.0.1:4501,127.0.0.9:4501");
        let pods = [pod("sample-storage-2", "storage-2", "Running")];
        let analysis = analyze(&cluster(status), &pods, &[], false);
        let problems: Vec<&Finding> = analysis
            .findings
            .iter()
            .filter(|f| matches!(f, Finding::Problem(_)))
            .collect();
        assert!(problems.iter().any(
            |f| matches!(f, Finding::Problem(t) if t.contains("127.0.0.1:4501 is on storage-1"))
        ));
        assert!(problems.iter().any(|f| matches!(f, Finding::Problem(t) if t.contains("127.0.0.9:4501 is not a process group"))));
        assert!(problems.iter().any(
            |f| matches!(f, Finding::Problem(t) if t.starts_with("storage: 1 fault domains"))
        ));
    }
}

#[cfg(test)]
mod color_tests {
    use super::*;

    #[test]
    fn findings_are_colored_as_go_s_only_when_asked() {
        let problem = Finding::Problem("Cluster is not available".into());
        assert_eq!(render(&problem, false), "✖ Cluster is not available");
        assert_eq!(
            render(&problem, true),
            "\u{1b}[31m✖ Cluster is not available\u{1b}[0m"
        );
        assert!(render(&Finding::Good("ok".into()), true).starts_with("\u{1b}[32m✔"));
        assert!(render(&Finding::Warning("w".into()), true).starts_with("\u{1b}[33m⚠"));
        // Asked not to, never; and a test's stdout is no terminal.
        assert!(!use_color(true));
        assert!(!use_color(false));
    }
}
