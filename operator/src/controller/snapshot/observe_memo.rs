//! The last observation of each process group, kept across passes with what it was made
//! from: a steady pass over a large cluster observes again only the groups whose inputs
//! changed (issue 37: observing every group was most of a steady 1000-group pass).
//!
//! An observation (`observe.rs`) follows from the cluster (the fingerprint the desired
//! objects' memo keys on: metadata, spec, the status apart from the process groups),
//! the group's status entry, its pod, PVC and Service (by
//! UID and resourceVersion: any change of an object renews its resourceVersion), what
//! `status json` reports of the group's processes (the fields an observation reads), and
//! whether `status json` was read at all. Node taints depend on the pass's time, so a
//! cluster whose nodes are read (`taintReplacementOptions`) is observed afresh.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use fdb_shared::FdbVersion;
use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::status_json::ProcessStatus;
use kube::api::ObjectMeta;

use super::super::status::GroupObservation;
use super::group::GroupView;

/// The process messages that make a group's I/O error fact.
pub(crate) const IO_PROBLEMS: [&str; 2] = ["io_error", "io_timeout"];

/// An object by identity and version.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ObjectVersion {
    uid: String,
    resource_version: String,
}

impl ObjectVersion {
    /// `None` for an object without both (one built by a test): it is not remembered.
    fn of(meta: &ObjectMeta) -> Option<Self> {
        Some(Self {
            uid: meta.uid.clone()?,
            resource_version: meta.resource_version.clone()?,
        })
    }

    fn is(&self, meta: &ObjectMeta) -> bool {
        meta.uid.as_deref() == Some(self.uid.as_str())
            && meta.resource_version.as_deref() == Some(self.resource_version.as_str())
    }
}

/// Whether `remembered` is the version of `meta` (both absent counts).
fn same_object(remembered: Option<&ObjectVersion>, meta: Option<&ObjectMeta>) -> bool {
    match (remembered, meta) {
        (None, None) => true,
        (Some(remembered), Some(meta)) => remembered.is(meta),
        _ => false,
    }
}

/// The metadata of the group's pod, PVC and Service, in that order: what both
/// remembering and checking the inputs read.
fn object_metas<'a>(group: &GroupView<'a>) -> [Option<&'a ObjectMeta>; 3] {
    [
        group.pod_head().map(|head| &head.metadata),
        group.pvc.map(|pvc| &pvc.metadata),
        group.service.map(|service| &service.metadata),
    ]
}

/// What one group's observation was made from.
#[derive(Debug, Clone)]
struct ObservationInputs {
    fingerprint: u64,
    status: ProcessGroupStatus,
    /// The versions of [`object_metas`].
    objects: [Option<ObjectVersion>; 3],
    /// [`processes_facts`], `None` when `status json` was not read.
    processes: Option<RememberedFacts>,
}

/// What an observation reads of one process: its command line, version, process ID,
/// zone, exclusion and I/O error messages (not its metrics, which change at every read).
/// Borrowed from `status json` to compare, owned to remember: compared byte by byte,
/// which is cheaper than hashing them was (issue 37).
#[derive(Debug, Clone, PartialEq)]
struct ProcessFacts<'a> {
    command_line: Option<Cow<'a, str>>,
    version: Option<FdbVersion>,
    process_id: Option<Cow<'a, str>>,
    zoneid: Option<Cow<'a, str>>,
    excluded: bool,
    io_problems: [bool; IO_PROBLEMS.len()],
}

impl<'a> ProcessFacts<'a> {
    fn of(process: &'a ProcessStatus) -> Self {
        let borrowed = |text: &'a Option<String>| text.as_deref().map(Cow::Borrowed);
        Self {
            command_line: borrowed(&process.command_line),
            version: process.version,
            process_id: borrowed(&process.locality.process_id),
            zoneid: borrowed(&process.locality.zoneid),
            excluded: process.excluded,
            io_problems: IO_PROBLEMS.map(|name| process.has_message(name)),
        }
    }

    fn into_owned(self) -> ProcessFacts<'static> {
        let owned = |text: Option<Cow<'a, str>>| text.map(|text| Cow::Owned(text.into_owned()));
        ProcessFacts {
            command_line: owned(self.command_line),
            version: self.version,
            process_id: owned(self.process_id),
            zoneid: owned(self.zoneid),
            excluded: self.excluded,
            io_problems: self.io_problems,
        }
    }
}

/// The facts of each of the group's process keys (`None` for a key `status json` does
/// not report), in key order.
fn processes_facts<'a>(
    group: &GroupView<'a>,
) -> impl Iterator<Item = (&'a str, Option<ProcessFacts<'a>>)> + 'a {
    let database = group.database;
    group.process_keys.iter().map(move |key| {
        let process = database.and_then(|status| status.cluster.processes.get(key));
        (key.as_str(), process.map(ProcessFacts::of))
    })
}

/// The remembered facts of a group's processes.
type RememberedFacts = Vec<(String, Option<ProcessFacts<'static>>)>;

/// Whether `group`'s processes have the `remembered` facts.
fn same_facts(remembered: &RememberedFacts, group: &GroupView<'_>) -> bool {
    remembered.len() == group.process_keys.len()
        && remembered
            .iter()
            .zip(processes_facts(group))
            .all(|((key, facts), (now_key, now))| key == now_key && *facts == now)
}

impl ObservationInputs {
    /// The inputs of `group`'s observation now; `None` when an object lacks a UID or
    /// resourceVersion.
    fn of(fingerprint: u64, group: &GroupView<'_>, database_read: bool) -> Option<Self> {
        let mut objects = [None, None, None];
        for (slot, meta) in objects.iter_mut().zip(object_metas(group)) {
            if let Some(meta) = meta {
                *slot = Some(ObjectVersion::of(meta)?);
            }
        }
        Some(Self {
            fingerprint,
            status: group.status.clone(),
            objects,
            processes: database_read.then(|| {
                processes_facts(group)
                    .map(|(key, facts)| (key.to_owned(), facts.map(ProcessFacts::into_owned)))
                    .collect()
            }),
        })
    }

    /// Whether `group`'s observation now has these inputs (compared in place: a hit
    /// copies nothing).
    fn still_hold(&self, fingerprint: u64, group: &GroupView<'_>, database_read: bool) -> bool {
        self.fingerprint == fingerprint
            && self
                .objects
                .iter()
                .zip(object_metas(group))
                .all(|(remembered, meta)| same_object(remembered.as_ref(), meta))
            && self.status == *group.status
            && match &self.processes {
                Some(remembered) => database_read && same_facts(remembered, group),
                None => !database_read,
            }
    }
}

/// A group's observation and its inputs.
#[derive(Debug, Clone)]
struct Remembered {
    inputs: ObservationInputs,
    observation: GroupObservation,
    /// The epoch of these inputs (`clean_memo.rs`): new whenever they change.
    epoch: u64,
}

/// The source of epochs: unique across clusters and passes of this operator.
static EPOCHS: AtomicU64 = AtomicU64::new(1);

/// The remembered observations of one cluster's groups, by group ID, taken out of the
/// memo for one observation of all groups and put back after it.
#[derive(Debug, Default)]
pub(crate) struct ClusterObservations {
    groups: HashMap<String, Remembered>,
    kept: HashMap<String, Remembered>,
}

impl ClusterObservations {
    /// The remembered observation of `group` and the epoch of its inputs, when they
    /// still hold; it is kept for the next pass.
    pub(crate) fn reuse(
        &mut self,
        fingerprint: u64,
        group: &GroupView<'_>,
        database_read: bool,
    ) -> Option<(GroupObservation, u64)> {
        // The key moves from one map to the other: no copy of the ID per group and pass.
        let (id, remembered) = self.groups.remove_entry(group.id())?;
        if !remembered
            .inputs
            .still_hold(fingerprint, group, database_read)
        {
            return None;
        }
        let observation = remembered.observation.clone();
        let epoch = remembered.epoch;
        self.kept.insert(id, remembered);
        Some((observation, epoch))
    }

    /// Remembers `observation`, just made of `group`, for the next pass; the new epoch
    /// of its inputs (`None` when an object lacks a UID or resourceVersion: not
    /// remembered).
    pub(crate) fn remember(
        &mut self,
        fingerprint: u64,
        group: &GroupView<'_>,
        database_read: bool,
        observation: &GroupObservation,
    ) -> Option<u64> {
        let inputs = ObservationInputs::of(fingerprint, group, database_read)?;
        let epoch = EPOCHS.fetch_add(1, Ordering::Relaxed);
        self.kept.insert(
            group.id().to_owned(),
            Remembered {
                inputs,
                observation: observation.clone(),
                epoch,
            },
        );
        Some(epoch)
    }
}

/// See the module documentation. Shared by the passes of one operator, by cluster
/// (`namespace/name`).
#[derive(Debug, Default)]
pub(crate) struct ObservationMemo {
    clusters: Mutex<HashMap<String, HashMap<String, Remembered>>>,
}

impl ObservationMemo {
    /// The remembered observations of the cluster `key`, taken out of the memo.
    pub(crate) fn take(&self, key: &str) -> ClusterObservations {
        let groups = self
            .clusters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key)
            .unwrap_or_default();
        // Sized for every group kept again: growing it was a tenth of a steady pass's
        // observation of 1000 groups.
        let kept = HashMap::with_capacity(groups.len());
        ClusterObservations { groups, kept }
    }

    /// Puts back what an observation of all groups of cluster `key` kept (groups no
    /// longer observed are dropped).
    pub(crate) fn put_back(&self, key: String, observations: ClusterObservations) {
        self.clusters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, observations.kept);
    }

    /// Forgets cluster `key` (it was deleted).
    pub(crate) fn forget(&self, key: &str) {
        self.clusters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }
}

#[cfg(test)]
#[path = "observe_memo_tests.rs"]
mod tests;
