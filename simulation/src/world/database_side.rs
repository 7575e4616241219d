//! The world's side of FoundationDB: the process host the pods' fdbmonitors launch
//! processes on, the backup agents it was told of, and the processes whose disk (a
//! PVC) outlives their pod.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use fdb_shared::address::ProcessAddress;

use super::host::ProcessHost;

/// The process host and what the world told it.
pub(super) struct DatabaseSide {
    host: Arc<dyn ProcessHost>,
    /// Backup agent pods running, as last told to the host.
    backup_agents: usize,
    /// Process addresses that ran on each PVC (by uid), to forget them with the PVC.
    pvc_processes: BTreeMap<String, BTreeSet<ProcessAddress>>,
}

impl DatabaseSide {
    /// The world's side of `host`.
    pub(super) fn new(host: Arc<dyn ProcessHost>) -> Self {
        Self {
            host,
            backup_agents: 0,
            pvc_processes: BTreeMap::new(),
        }
    }

    /// The process host.
    pub(super) fn host(&self) -> &dyn ProcessHost {
        self.host.as_ref()
    }

    /// Tells the host how many backup agents run, when that changed; returns whether it
    /// did.
    pub(super) fn report_backup_agents(&mut self, count: usize) -> bool {
        if self.backup_agents == count {
            return false;
        }
        self.backup_agents = count;
        self.host
            .set_backup_agents(u32::try_from(count).unwrap_or(u32::MAX));
        true
    }

    /// The process at `address` ran on the PVC `uid`: it is kept until the PVC goes.
    pub(super) fn ran_on_claim(&mut self, uid: &str, address: &ProcessAddress) {
        self.pvc_processes
            .entry(uid.to_owned())
            .or_default()
            .insert(address.clone());
    }

    /// The PVCs (by uid) processes ran on.
    pub(super) fn claims(&self) -> impl Iterator<Item = &String> {
        self.pvc_processes.keys()
    }

    /// Forgets the PVC `uid`: the addresses of the processes that ran on it.
    pub(super) fn forget_claim(&mut self, uid: &str) -> BTreeSet<ProcessAddress> {
        self.pvc_processes.remove(uid).unwrap_or_default()
    }
}
