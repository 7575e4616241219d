//! `reconciled-but-diverged`: how the world differs from what the cluster's spec asks
//! for, judged from the objects and the database, not from the operator's status.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::FdbVersion;
use fdb_shared::api::{DatabaseConfiguration, ProcessClass};
use fdb_shared::cluster_math::configure_change_command;

/// What the spec asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredWorld {
    /// Live process groups per class (classes with a positive count).
    pub counts: BTreeMap<ProcessClass, i32>,
    /// `spec.version`.
    pub version: FdbVersion,
    /// Container name -> the image every pod should run there.
    pub images: BTreeMap<String, String>,
    /// The database configuration, defaults filled in.
    pub configuration: DatabaseConfiguration,
    /// Groups marked for removal (they may linger while their removal is pending).
    pub marked_for_removal: BTreeSet<String>,
    /// Groups that were marked for removal at some point of the run: once they are no
    /// longer marked, an exclusion of theirs is a leftover.
    pub ever_marked: BTreeSet<String>,
}

/// One pod that is not terminating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivePod {
    /// The pod's name.
    pub name: String,
    /// Its process group.
    pub group: String,
    /// Its process class.
    pub class: ProcessClass,
    /// Container name -> image.
    pub images: BTreeMap<String, String>,
    /// The claim it mounts, if any.
    pub claim: Option<String>,
}

/// What the world holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActualWorld {
    /// Pods that are not terminating.
    pub pods: Vec<LivePod>,
    /// PVCs that are not terminating, by name.
    pub pvcs: BTreeSet<String>,
    /// Versions of the running fdbserver processes, by address.
    pub process_versions: BTreeMap<String, FdbVersion>,
    /// The database configuration, once configured.
    pub configuration: Option<DatabaseConfiguration>,
    /// Process groups an exclusion of the database matches.
    pub excluded_groups: BTreeSet<String>,
}

/// Every way `actual` differs from `desired`, as sentences (empty: they agree).
pub fn divergences(desired: &DesiredWorld, actual: &ActualWorld) -> Vec<String> {
    let mut found = Vec::new();
    let live: Vec<&LivePod> = actual
        .pods
        .iter()
        .filter(|pod| !desired.marked_for_removal.contains(&pod.group))
        .collect();
    class_count_divergences(desired, &live, &mut found);
    let without_claim: Vec<&str> = live
        .iter()
        .filter(|pod| {
            pod.claim
                .as_ref()
                .is_some_and(|claim| !actual.pvcs.contains(claim))
        })
        .map(|pod| pod.name.as_str())
        .collect();
    if !without_claim.is_empty() {
        found.push(format!(
            "pods without their PVC: {}",
            without_claim.join(", ")
        ));
    }
    version_and_image_divergences(desired, actual, &mut found);
    match &actual.configuration {
        Some(configuration) => {
            // Engine names as the version most processes run reports them.
            let mut counts: BTreeMap<&FdbVersion, usize> = BTreeMap::new();
            for version in actual.process_versions.values() {
                *counts.entry(version).or_default() += 1;
            }
            let running = counts
                .into_iter()
                .max_by_key(|(version, count)| (*count, **version))
                .map(|(version, _)| *version);
            if let Some(command) =
                configure_change_command(configuration, &desired.configuration, running.as_ref())
            {
                found.push(format!(
                    "the database configuration differs from the spec (would need `{command}`)"
                ));
            }
        }
        None => found.push("the database is not configured".to_owned()),
    }
    let stray: Vec<&str> = actual
        .excluded_groups
        .iter()
        .filter(|group| {
            desired.ever_marked.contains(*group) && !desired.marked_for_removal.contains(*group)
        })
        .map(String::as_str)
        .collect();
    if !stray.is_empty() {
        found.push(format!(
            "exclusions of groups no longer marked for removal: {}",
            stray.join(", ")
        ));
    }
    found
}

/// Live groups with a pod per class against the spec's counts.
fn class_count_divergences(desired: &DesiredWorld, live: &[&LivePod], found: &mut Vec<String>) {
    let mut counts: BTreeMap<ProcessClass, i32> = BTreeMap::new();
    for pod in live {
        *counts.entry(pod.class).or_insert(0) += 1;
    }
    let classes: BTreeSet<ProcessClass> = desired
        .counts
        .keys()
        .chain(counts.keys())
        .copied()
        .collect();
    for class in classes {
        let want = desired.counts.get(&class).copied().unwrap_or(0);
        let have = counts.get(&class).copied().unwrap_or(0);
        if want != have {
            found.push(format!(
                "{have} live {class} process groups with a pod, the spec asks for {want}"
            ));
        }
    }
}

/// Processes on another version than the spec's, pods on other images.
fn version_and_image_divergences(
    desired: &DesiredWorld,
    actual: &ActualWorld,
    found: &mut Vec<String>,
) {
    let other_versions: BTreeSet<String> = actual
        .process_versions
        .values()
        .filter(|version| **version != desired.version)
        .map(ToString::to_string)
        .collect();
    if !other_versions.is_empty() {
        let count = actual
            .process_versions
            .values()
            .filter(|version| **version != desired.version)
            .count();
        found.push(format!(
            "{count} processes run {} instead of {}",
            other_versions.into_iter().collect::<Vec<_>>().join(", "),
            desired.version
        ));
    }
    for (container, image) in &desired.images {
        let wrong: Vec<&str> = actual
            .pods
            .iter()
            .filter(|pod| {
                pod.images
                    .get(container)
                    .is_some_and(|actual| actual != image)
            })
            .map(|pod| pod.name.as_str())
            .collect();
        if !wrong.is_empty() {
            found.push(format!(
                "pods whose {container} container does not run {image}: {}",
                wrong.join(", ")
            ));
        }
    }
}
