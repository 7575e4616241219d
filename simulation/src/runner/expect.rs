//! `expect` steps: conditions on the world, each reported with its actual value when it
//! does not hold.

use std::collections::BTreeMap;
use std::sync::Arc;

use fdb_shared::FdbVersion;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use fdb_operator::controller::CLUSTER_NAME_LABEL;

use crate::fdb::SimFdbSnapshot;
use crate::scenario::ExpectStep;
use fdb_shared::api::FoundationDBClusterStatus;

use super::observe::{MAIN_CONTAINER, SIDECAR_CONTAINER};
use super::{RunError, Runner};

/// The container an `images` key names: `main`, `sidecar`, or a container's name.
fn container_name(key: &str) -> &str {
    match key {
        "main" => MAIN_CONTAINER,
        "sidecar" => SIDECAR_CONTAINER,
        other => other,
    }
}

impl Runner {
    /// The conditions of `expect` that do not hold now, each with what was found.
    pub(super) fn unmet(&self, expect: &ExpectStep) -> Result<Vec<String>, RunError> {
        let mut failed = Vec::new();
        let name = expect.cluster.as_deref().unwrap_or(&self.name);
        // A fleet member's database is its own.
        let snapshot = self.fdb_of(name).snapshot();
        if let Some(want) = expect.reconciled {
            let have = self
                .operators
                .instance_reconciled(name)
                .unwrap_or(self.passes.cluster.at_rest());
            if have != want {
                failed.push(format!("reconciled: expected {want}, found {have}"));
            }
        }
        database_unmet(expect, &snapshot, &mut failed);
        let cluster = self.cluster_named(name);
        let status = cluster.as_ref().and_then(|cluster| cluster.status.as_ref());
        status_unmet(expect, status, &mut failed);
        let pods: Vec<Arc<Pod>> = self
            .pods()?
            .into_iter()
            .filter(|pod| pod.metadata.deletion_timestamp.is_none())
            // With `cluster`, only that cluster's pods.
            .filter(|pod| {
                expect.cluster.as_deref().is_none_or(|cluster| {
                    pod.labels().get(CLUSTER_NAME_LABEL).map(String::as_str) == Some(cluster)
                })
            })
            .collect();
        if let Some(want) = expect.pods {
            let have = pods.len();
            if u32::try_from(have).ok() != Some(want) {
                failed.push(format!("pods: expected {want}, found {have}"));
            }
        }
        pods_and_exclusions_unmet(expect, &snapshot, &pods, &mut failed);
        family_unmet(expect, &snapshot, &mut failed);
        conditions_unmet(expect, status, &mut failed);
        self.unmet_resources(expect, &mut failed);
        Ok(failed)
    }
}

/// The database's availability and the version of every process.
fn database_unmet(expect: &ExpectStep, snapshot: &SimFdbSnapshot, failed: &mut Vec<String>) {
    if let Some(want) = expect.available
        && snapshot.available != want
    {
        failed.push(format!(
            "available: expected {want}, found {}",
            snapshot.available
        ));
    }
    if let Some(want) = &expect.version {
        let want: Option<FdbVersion> = want.parse().ok();
        let mut found: BTreeMap<String, usize> = BTreeMap::new();
        for process in &snapshot.processes {
            *found.entry(process.version.to_string()).or_insert(0) += 1;
        }
        let all_match = !snapshot.processes.is_empty()
            && snapshot
                .processes
                .iter()
                .all(|process| Some(process.version) == want);
        if !all_match {
            failed.push(format!(
                "version: expected every process on {}, found {}",
                want.map(|v| v.to_string()).unwrap_or_default(),
                describe_counts(&found)
            ));
        }
    }
}

/// The cluster status's running version and process group counts.
fn status_unmet(
    expect: &ExpectStep,
    status: Option<&FoundationDBClusterStatus>,
    failed: &mut Vec<String>,
) {
    if let Some(want) = &expect.running_version {
        let have = status.and_then(|status| status.running_version.clone());
        if have.as_deref() != Some(want.as_str()) {
            failed.push(format!(
                "runningVersion: expected {want}, found {}",
                have.unwrap_or_else(|| "none".to_owned())
            ));
        }
    }
    if let Some(want) = &expect.process_groups {
        let mut have: BTreeMap<String, u32> = BTreeMap::new();
        for group in status
            .iter()
            .flat_map(|status| status.process_groups.iter())
            .filter(|group| !group.is_marked_for_removal())
        {
            *have.entry(group.process_class.to_string()).or_insert(0) += 1;
        }
        let differs = want
            .iter()
            .any(|(class, count)| have.get(class).copied().unwrap_or(0) != *count);
        if differs {
            failed.push(format!(
                "processGroups: expected {}, found {}",
                describe_counts(want),
                describe_counts(&have)
            ));
        }
    }
}

/// The database's exclusions, the pods' images, the team trackers and the maintenance
/// zone.
fn pods_and_exclusions_unmet(
    expect: &ExpectStep,
    snapshot: &SimFdbSnapshot,
    pods: &[Arc<Pod>],
    failed: &mut Vec<String>,
) {
    if let Some(want) = &expect.excluded {
        let mut want = want.clone();
        want.sort();
        let mut have = snapshot.excluded.clone();
        have.sort();
        if want != have {
            failed.push(format!("excluded: expected {want:?}, found {have:?}"));
        }
    }
    if let Some(want) = &expect.images {
        for (key, image) in want {
            let container = container_name(key);
            let wrong: Vec<String> = pods
                .iter()
                .filter_map(|pod| {
                    let actual = pod
                        .spec
                        .as_ref()?
                        .containers
                        .iter()
                        .find(|c| c.name == container)
                        .and_then(|c| c.image.clone())
                        .unwrap_or_else(|| "no such container".to_owned());
                    (actual != *image).then(|| {
                        format!(
                            "{} runs {actual}",
                            pod.metadata.name.clone().unwrap_or_default()
                        )
                    })
                })
                .collect();
            if pods.is_empty() || !wrong.is_empty() {
                failed.push(format!(
                    "images.{key}: expected every pod on {image}, but {}",
                    if pods.is_empty() {
                        "there are no pods".to_owned()
                    } else {
                        wrong.join(", ")
                    }
                ));
            }
        }
    }
    if let Some(want) = expect.teams_healthy
        && snapshot.teams_healthy != want
    {
        failed.push(format!(
            "teamsHealthy: expected {want}, found {}",
            snapshot.teams_healthy
        ));
    }
    if let Some(want) = &expect.maintenance_zone
        && snapshot.maintenance_zone != *want
    {
        let show = |zone: &Option<String>| zone.clone().unwrap_or_else(|| "none".to_owned());
        failed.push(format!(
            "maintenanceZone: expected {}, found {}",
            show(want),
            show(&snapshot.maintenance_zone)
        ));
    }
}

/// The address family of the processes and the coordinators (`ipFamily`).
fn family_unmet(expect: &ExpectStep, snapshot: &SimFdbSnapshot, failed: &mut Vec<String>) {
    let Some(want) = expect.ip_family else {
        return;
    };
    let Some(family) = crate::world::IpFamily::from_number(want.into()) else {
        failed.push(format!("ipFamily: {want} is not an IP family (4 or 6)"));
        return;
    };
    let in_string: Vec<String> = snapshot
        .connection_string
        .as_deref()
        .and_then(|text| text.split_once('@'))
        .map(|(_, coordinators)| coordinators.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let addresses = snapshot
        .processes
        .iter()
        .map(|process| process.address.clone())
        .chain(snapshot.coordinators.iter().cloned())
        .chain(in_string);
    let wrong: Vec<String> = addresses
        .filter(|address| {
            // DNS names in the connection string are judged by their resolved addresses.
            match fdb_shared::address::ProcessAddress::parse(address) {
                Ok(parsed) => parsed.ip().is_some_and(|ip| !family.holds(ip)),
                Err(_) => true,
            }
        })
        .collect();
    if !wrong.is_empty() {
        failed.push(format!(
            "ipFamily: expected every process and coordinator on {family}, but {} are not",
            wrong.join(", ")
        ));
    }
}

/// The process groups' conditions in the cluster status.
fn conditions_unmet(
    expect: &ExpectStep,
    status: Option<&FoundationDBClusterStatus>,
    failed: &mut Vec<String>,
) {
    for (id, want) in expect.conditions.iter().flatten() {
        let group = status.and_then(|status| {
            status
                .process_groups
                .iter()
                .find(|group| group.process_group_id == *id)
        });
        let Some(group) = group else {
            failed.push(format!(
                "conditions.{id}: no such process group in the status"
            ));
            continue;
        };
        let have: Vec<&str> = group
            .process_group_conditions
            .iter()
            .map(|c| c.condition_type.as_str())
            .collect();
        let holds = if want.is_empty() {
            have.is_empty()
        } else {
            want.iter().all(|w| have.contains(&w.as_str()))
        };
        if !holds {
            failed.push(format!(
                "conditions.{id}: expected {}, found {}",
                if want.is_empty() {
                    "none".to_owned()
                } else {
                    want.join(", ")
                },
                if have.is_empty() {
                    "none".to_owned()
                } else {
                    have.join(", ")
                }
            ));
        }
    }
}

fn describe_counts<V: std::fmt::Display>(counts: &BTreeMap<String, V>) -> String {
    if counts.is_empty() {
        return "none".to_owned();
    }
    counts
        .iter()
        .map(|(key, value)| format!("{key}: {value}"))
        .collect::<Vec<_>>()
        .join(", ")
}
