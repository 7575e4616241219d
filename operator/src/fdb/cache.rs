//! One `status json` per reconcile pass: a wrapper that memoizes the status (or the
//! failure to read it) until the pass ends or the database is changed.
//!
//! This is the operator's only `status json` memo. Its own write methods drop it (the next
//! read sees the change) and count themselves, so the pass can tell that the database
//! changed without steps having to say so.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::DatabaseConfiguration;
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::status_json::{BackupStatus, DatabaseStatus};

use super::admin::{AdminClient, ClientInfo, ExclusionReport, ExclusionTarget};
use super::backup::{BackupModify, BackupStart, RestoreProgress, RestoreStart};
use super::error::AdminError;
use super::locks::LockValue;
use super::pending_upgrades::PendingUpgrade;
use super::restart_lists::{RestartEntry, RestartList};

/// What the memo holds: the status, or why it could not be read.
type Memo = Result<Arc<DatabaseStatus>, Arc<AdminError>>;

/// Wraps any [`AdminClient`]; `status json` is read at most once until [`Self::new_pass`]
/// or [`Self::invalidate`], a failed read is remembered the same way (a pass does not wait
/// for the same timeout twice), and every write that can change the status invalidates it.
/// Clones share the memo and the write count.
#[derive(Debug, Clone)]
pub struct PassScopedAdmin {
    inner: Arc<dyn AdminClient>,
    cached: Arc<Mutex<Option<Memo>>>,
    writes: Arc<AtomicU64>,
}

impl PassScopedAdmin {
    /// A wrapper with an empty memo.
    pub fn new(inner: Arc<dyn AdminClient>) -> Self {
        Self {
            inner,
            cached: Arc::new(Mutex::new(None)),
            writes: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Starts a new reconcile pass: the next `status()` reads the database.
    pub fn new_pass(&self) {
        self.invalidate();
    }

    /// Forgets the memo.
    pub fn invalidate(&self) {
        *self.cached.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// The wrapped client.
    pub fn inner(&self) -> &Arc<dyn AdminClient> {
        &self.inner
    }

    /// How many writes that may change `status json` went through this wrapper (or a
    /// clone), whatever their outcome.
    pub fn write_count(&self) -> u64 {
        self.writes.load(Ordering::SeqCst)
    }

    /// The status, shared: read once, then served from the memo (a failure too).
    pub async fn shared_status(&self) -> Memo {
        if let Some(memo) = self
            .cached
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        {
            return memo;
        }
        let memo = self.inner.status().await.map(Arc::new).map_err(Arc::new);
        *self.cached.lock().unwrap_or_else(PoisonError::into_inner) = Some(memo.clone());
        memo
    }

    /// Runs a write, then invalidates the memo and counts the write whatever its outcome
    /// (a failed or timed out write may still have happened).
    async fn write<T>(
        &self,
        operation: impl Future<Output = Result<T, AdminError>>,
    ) -> Result<T, AdminError> {
        let result = operation.await;
        self.invalidate();
        self.writes.fetch_add(1, Ordering::SeqCst);
        result
    }
}

#[async_trait::async_trait]
impl AdminClient for PassScopedAdmin {
    async fn status(&self) -> Result<DatabaseStatus, AdminError> {
        self.shared_status()
            .await
            .map(|status| DatabaseStatus::clone(&status))
            .map_err(|error| AdminError::clone(&error))
    }

    async fn configure(
        &self,
        configuration: &DatabaseConfiguration,
        new_database: bool,
    ) -> Result<(), AdminError> {
        self.write(self.inner.configure(configuration, new_database))
            .await
    }

    async fn exclude(&self, targets: &[ExclusionTarget], blocking: bool) -> Result<(), AdminError> {
        self.write(self.inner.exclude(targets, blocking)).await
    }

    async fn exclusion_status(
        &self,
        targets: &[ExclusionTarget],
    ) -> Result<ExclusionReport, AdminError> {
        let status = self
            .shared_status()
            .await
            .map_err(|error| AdminError::clone(&error))?;
        Ok(ExclusionReport::from_status(&status, targets))
    }

    async fn include(&self, targets: &[ExclusionTarget]) -> Result<(), AdminError> {
        self.write(self.inner.include(targets)).await
    }

    async fn change_coordinators(
        &self,
        coordinators: &[ProcessAddress],
    ) -> Result<ConnectionString, AdminError> {
        self.write(self.inner.change_coordinators(coordinators))
            .await
    }

    async fn kill(&self, addresses: &[ProcessAddress]) -> Result<(), AdminError> {
        self.write(self.inner.kill(addresses)).await
    }

    async fn set_maintenance_zone(
        &self,
        zone: &str,
        duration_seconds: u64,
    ) -> Result<(), AdminError> {
        self.write(self.inner.set_maintenance_zone(zone, duration_seconds))
            .await
    }

    async fn reset_maintenance_zone(&self) -> Result<(), AdminError> {
        self.write(self.inner.reset_maintenance_zone()).await
    }

    // The lock and its deny list live in the system keyspace: `status json` does not show
    // them, so writing them keeps the memo.
    async fn read_lock(&self) -> Result<Option<LockValue>, AdminError> {
        self.inner.read_lock().await
    }

    async fn write_lock(&self, lock: &LockValue) -> Result<(), AdminError> {
        self.inner.write_lock(lock).await
    }

    async fn deny_list(&self) -> Result<Vec<String>, AdminError> {
        self.inner.deny_list().await
    }

    async fn update_deny_list(&self, add: &[String], remove: &[String]) -> Result<(), AdminError> {
        self.inner.update_deny_list(add, remove).await
    }

    async fn pending_upgrades(&self) -> Result<Vec<PendingUpgrade>, AdminError> {
        self.inner.pending_upgrades().await
    }

    async fn update_pending_upgrades(
        &self,
        add: &[PendingUpgrade],
        remove: &[PendingUpgrade],
    ) -> Result<(), AdminError> {
        self.inner.update_pending_upgrades(add, remove).await
    }

    async fn restart_list(&self, list: RestartList) -> Result<Vec<RestartEntry>, AdminError> {
        self.inner.restart_list(list).await
    }

    async fn update_restart_list(
        &self,
        list: RestartList,
        add: &[RestartEntry],
        remove: &[RestartEntry],
    ) -> Result<(), AdminError> {
        self.inner.update_restart_list(list, add, remove).await
    }

    async fn clear_pending_upgrades(&self) -> Result<(), AdminError> {
        self.inner.clear_pending_upgrades().await
    }

    async fn connected_clients(&self) -> Result<Vec<ClientInfo>, AdminError> {
        let status = self
            .shared_status()
            .await
            .map_err(|error| AdminError::clone(&error))?;
        Ok(ClientInfo::from_status(&status))
    }
    // `status json` shows backups under `layers.backup`: a backup write drops the memo.
    async fn start_backup(&self, request: &BackupStart) -> Result<(), AdminError> {
        self.write(self.inner.start_backup(request)).await
    }

    async fn modify_backup(&self, request: &BackupModify) -> Result<(), AdminError> {
        self.write(self.inner.modify_backup(request)).await
    }

    async fn discontinue_backup(&self, tag: &str) -> Result<(), AdminError> {
        self.write(self.inner.discontinue_backup(tag)).await
    }

    async fn set_backups_paused(&self, paused: bool) -> Result<(), AdminError> {
        self.write(self.inner.set_backups_paused(paused)).await
    }

    async fn delete_backup_data(&self, url: &str) -> Result<(), AdminError> {
        self.write(self.inner.delete_backup_data(url)).await
    }

    async fn backup_status(&self, tag: &str) -> Result<BackupStatus, AdminError> {
        self.inner.backup_status(tag).await
    }

    async fn start_restore(&self, request: &RestoreStart) -> Result<(), AdminError> {
        self.write(self.inner.start_restore(request)).await
    }

    async fn restore_status(&self) -> Result<RestoreProgress, AdminError> {
        self.inner.restore_status().await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Counts status reads; fails them while `failing`.
    #[derive(Debug, Default)]
    struct Counting {
        reads: AtomicUsize,
        failing: std::sync::atomic::AtomicBool,
    }

    #[async_trait::async_trait]
    impl AdminClient for Counting {
        async fn status(&self) -> Result<DatabaseStatus, AdminError> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            if self.failing.load(Ordering::SeqCst) {
                return Err(AdminError::Timeout {
                    command: "status json".into(),
                    seconds: 10,
                });
            }
            Ok(DatabaseStatus::default())
        }
        async fn configure(&self, _: &DatabaseConfiguration, _: bool) -> Result<(), AdminError> {
            Ok(())
        }
        async fn exclude(&self, _: &[ExclusionTarget], _: bool) -> Result<(), AdminError> {
            Ok(())
        }
        async fn include(&self, _: &[ExclusionTarget]) -> Result<(), AdminError> {
            Ok(())
        }
        async fn change_coordinators(
            &self,
            _: &[ProcessAddress],
        ) -> Result<ConnectionString, AdminError> {
            Err(AdminError::Unsupported {
                command: "coordinators".into(),
                reason: "test".into(),
            })
        }
        async fn kill(&self, _: &[ProcessAddress]) -> Result<(), AdminError> {
            Ok(())
        }
        async fn set_maintenance_zone(&self, _: &str, _: u64) -> Result<(), AdminError> {
            Ok(())
        }
        async fn reset_maintenance_zone(&self) -> Result<(), AdminError> {
            Ok(())
        }
        async fn read_lock(&self) -> Result<Option<LockValue>, AdminError> {
            Ok(None)
        }
        async fn write_lock(&self, _: &LockValue) -> Result<(), AdminError> {
            Ok(())
        }
        async fn deny_list(&self) -> Result<Vec<String>, AdminError> {
            Ok(Vec::new())
        }
        async fn update_deny_list(&self, _: &[String], _: &[String]) -> Result<(), AdminError> {
            Ok(())
        }
        async fn pending_upgrades(&self) -> Result<Vec<PendingUpgrade>, AdminError> {
            Ok(Vec::new())
        }
        async fn update_pending_upgrades(
            &self,
            _: &[PendingUpgrade],
            _: &[PendingUpgrade],
        ) -> Result<(), AdminError> {
            Ok(())
        }
        async fn clear_pending_upgrades(&self) -> Result<(), AdminError> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn failures_are_remembered_until_a_write() {
        let inner = Arc::new(Counting::default());
        inner.failing.store(true, Ordering::SeqCst);
        let admin = PassScopedAdmin::new(inner.clone());
        let first = admin.shared_status().await.unwrap_err();
        let second = admin.status().await.unwrap_err();
        assert_eq!(first.to_string(), second.to_string());
        assert_eq!(second.category(), "Timeout");
        assert_eq!(inner.reads.load(Ordering::SeqCst), 1, "one read per pass");
        inner.failing.store(false, Ordering::SeqCst);
        assert_eq!(admin.write_count(), 0);
        admin.kill(&[]).await.unwrap();
        assert_eq!(admin.clone().write_count(), 1, "clones share the count");
        admin.status().await.unwrap();
        admin.connected_clients().await.unwrap();
        assert_eq!(inner.reads.load(Ordering::SeqCst), 2, "a write invalidates");
        // A failed write counts too: it may have happened.
        assert!(admin.change_coordinators(&[]).await.is_err());
        assert_eq!(admin.write_count(), 2);
        admin.write_lock(&LockValue::new("a", 0)).await.unwrap();
        assert_eq!(admin.write_count(), 2, "the lock is not in status json");
    }
}
