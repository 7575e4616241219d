//! One `status json` per reconcile pass: a wrapper that memoizes `status()` until the
//! pass ends or the database is changed.

use std::sync::{Arc, Mutex, PoisonError};

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::DatabaseConfiguration;
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::status_json::DatabaseStatus;

use super::admin::{AdminClient, ClientInfo, ExclusionReport, ExclusionTarget};
use super::error::AdminError;
use super::locks::LockValue;

/// Wraps any [`AdminClient`]; `status()` is read at most once until [`Self::new_pass`] or
/// [`Self::invalidate`], and every write invalidates it (the next read sees the change).
#[derive(Debug, Clone)]
pub struct PassScopedAdmin {
    inner: Arc<dyn AdminClient>,
    cached: Arc<Mutex<Option<DatabaseStatus>>>,
}

impl PassScopedAdmin {
    /// A wrapper with an empty cache.
    pub fn new(inner: Arc<dyn AdminClient>) -> Self {
        Self {
            inner,
            cached: Arc::new(Mutex::new(None)),
        }
    }

    /// Starts a new reconcile pass: the next `status()` reads the database.
    pub fn new_pass(&self) {
        self.invalidate();
    }

    /// Forgets the cached status.
    pub fn invalidate(&self) {
        *self.cached.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// The wrapped client.
    pub fn inner(&self) -> &Arc<dyn AdminClient> {
        &self.inner
    }

    fn cached(&self) -> Option<DatabaseStatus> {
        self.cached
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Runs a write and invalidates the cache whatever its outcome (a failed or timed out
    /// write may still have happened).
    async fn write<T>(
        &self,
        operation: impl Future<Output = Result<T, AdminError>>,
    ) -> Result<T, AdminError> {
        let result = operation.await;
        self.invalidate();
        result
    }
}

#[async_trait::async_trait]
impl AdminClient for PassScopedAdmin {
    async fn status(&self) -> Result<DatabaseStatus, AdminError> {
        if let Some(status) = self.cached() {
            return Ok(status);
        }
        let status = self.inner.status().await?;
        *self.cached.lock().unwrap_or_else(PoisonError::into_inner) = Some(status.clone());
        Ok(status)
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
        let status = self.status().await?;
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

    async fn connected_clients(&self) -> Result<Vec<ClientInfo>, AdminError> {
        let status = self.status().await?;
        Ok(ClientInfo::from_status(&status))
    }
}
