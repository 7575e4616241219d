//! Disks: where shard replicas live. A replica belongs to the disk a storage process
//! mounts (its PVC or emptyDir, [`ProcessLaunch::data_identity`]), not to the process or
//! its address: a pod recreated on the same PVC at a new IP serves the same replicas, and
//! only the loss of the disk itself destroys them.

use fdb_shared::api::ProcessClass;

pub(crate) use super::processes::DiskKey;
use super::processes::{ProcessLaunch, matching_stub, zone_of};
use fdb_operator::fdb::ExclusionTarget;

/// The disk a launch mounts.
pub(crate) fn disk_key(launch: &ProcessLaunch) -> DiskKey {
    if launch.data_identity.is_empty() {
        format!("address:{}", launch.address)
    } else {
        launch.data_identity.clone()
    }
}

/// What the database remembers of a disk, also while no process mounts it.
#[derive(Debug, Clone)]
pub(crate) struct Disk {
    /// The launch of the process that last mounted it (address, class, localities).
    pub launch: ProcessLaunch,
    /// That process's ID.
    pub process_id: String,
    /// Since when (unix seconds) no serving process has mounted it while it holds
    /// replicas; failure detection counts from here.
    pub silent_since: Option<i64>,
}

impl Disk {
    pub fn zone(&self) -> String {
        zone_of(&self.launch)
    }

    /// Its datacenter (`locality_dcid`).
    pub fn dc(&self) -> Option<&str> {
        self.launch.locality.get("dcid").map(String::as_str)
    }

    pub fn is_storage(&self) -> bool {
        self.launch.class == ProcessClass::Storage
    }

    pub fn instance_id(&self) -> Option<&str> {
        self.launch.locality.get("instance_id").map(String::as_str)
    }

    pub fn is_matched_by(&self, target: &ExclusionTarget) -> bool {
        target.matches(&matching_stub(&self.launch, &self.process_id))
    }
}
