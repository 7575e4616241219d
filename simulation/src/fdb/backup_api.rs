//! What the world and the runner ask of the simulated database's backups and user data:
//! the agents running, the user emptying the database, the digest of the data, and the
//! blob store for the result.

use std::collections::BTreeMap;

use super::SimulatedFdb;
use fdb_shared::FdbVersion;

use super::backup::BlobContainer;
use super::backup_expiry::{ExpireRefusal, ExpireRequest};
use super::timeline::refresh;
use super::user_data::version_at;

impl SimulatedFdb {
    /// How many backup agents run now (the world counts the agent pods each settle).
    pub fn set_backup_agents(&self, count: u32) {
        let mut state = self.caught_up();
        state.backups.agents = count;
    }

    /// The user empties the database (every user key) and stops writing. Needs an
    /// available database, as any transaction does.
    pub fn clear_user_data(&self) -> Result<(), String> {
        let now = self.now();
        let mut state = self.caught_up();
        if !super::availability::assess(&state).available {
            return Err("the database is unavailable: the clear cannot commit".to_owned());
        }
        let version = version_at(now - state.origin);
        let _ = state.user_data.clear(version);
        refresh(&mut state, now);
        Ok(())
    }

    /// The digest of the user data now.
    pub fn data_digest(&self) -> String {
        self.caught_up().user_data.digest().to_owned()
    }

    /// The digest the user data had at `version` (the database's own history).
    pub fn data_digest_at(&self, version: i64) -> String {
        self.caught_up().user_data.digest_at(version)
    }

    /// The blob store: every backup container by URL.
    pub fn blob_store(&self) -> BTreeMap<String, BlobContainer> {
        self.caught_up().backups.blob.clone()
    }

    /// `fdbbackup describe -d URL --json` as `version`'s tool prints it; `None`: no
    /// backup at `url`.
    pub fn describe_backup(&self, url: &str, version: &FdbVersion) -> Option<String> {
        let state = self.caught_up();
        let container = state.backups.blob.get(url)?;
        Some(container.describe_json(url, version).to_string())
    }

    /// `fdbbackup expire -d URL ...`: the cutoff before which the data is gone;
    /// `Ok(None)`: no backup at `url`.
    pub fn expire_backup(
        &self,
        url: &str,
        request: ExpireRequest,
    ) -> Result<Option<i64>, ExpireRefusal> {
        let mut state = self.caught_up();
        match state.backups.blob.get_mut(url) {
            Some(container) => container.expire(request).map(Some),
            None => Ok(None),
        }
    }
}
