//! Providers that measure what goes through them: the latency of every admin command,
//! and every failed sidecar request, into the controller's metrics. `fdb-operator run`
//! wraps its providers with them; the clients they hand out behave exactly like the
//! wrapped ones.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::{DatabaseConfiguration, FoundationDBCluster};
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::sidecar::{SidecarApi, SidecarClientError};
use fdb_shared::status_json::{BackupStatus, DatabaseStatus};
use k8s_openapi::api::core::v1::Pod;

use super::super::context::{AdminClientProvider, SidecarProvider};
use super::metrics::{AdminCommandLabels, OperatorMetrics, SidecarErrorLabels};
use crate::fdb::{
    AdminClient, AdminError, BackupModify, BackupStart, ClientInfo, ExclusionReport,
    ExclusionTarget, LockValue, PendingUpgrade, RestartEntry, RestartList, RestoreProgress,
    RestoreStart,
};

/// Wraps an [`AdminClientProvider`]; its clients time each command.
pub(crate) struct MeteredAdminProvider {
    inner: Arc<dyn AdminClientProvider>,
    metrics: Arc<OperatorMetrics>,
}

impl MeteredAdminProvider {
    /// Measures the clients of `inner` into `metrics`.
    pub(crate) fn new(inner: Arc<dyn AdminClientProvider>, metrics: Arc<OperatorMetrics>) -> Self {
        Self { inner, metrics }
    }
}

impl AdminClientProvider for MeteredAdminProvider {
    fn admin_for(&self, cluster: &FoundationDBCluster) -> Result<Arc<dyn AdminClient>, AdminError> {
        Ok(Arc::new(MeteredAdmin {
            inner: self.inner.admin_for(cluster)?,
            metrics: self.metrics.clone(),
        }))
    }

    fn missing_tool(&self, version: &fdb_shared::FdbVersion) -> Option<crate::fdb::MissingTool> {
        self.inner.missing_tool(version)
    }
}

/// An admin client whose commands are timed.
#[derive(Debug)]
struct MeteredAdmin {
    inner: Arc<dyn AdminClient>,
    metrics: Arc<OperatorMetrics>,
}

impl MeteredAdmin {
    async fn timed<T>(
        &self,
        command: &'static str,
        call: impl Future<Output = Result<T, AdminError>>,
    ) -> Result<T, AdminError> {
        let started = Instant::now();
        let result = call.await;
        let labels = AdminCommandLabels {
            command,
            result: if result.is_ok() { "ok" } else { "error" },
        };
        self.metrics
            .admin_seconds
            .get_or_create(&labels)
            .observe(started.elapsed().as_secs_f64());
        result
    }
}

#[async_trait]
impl AdminClient for MeteredAdmin {
    async fn status(&self) -> Result<DatabaseStatus, AdminError> {
        self.timed("status", self.inner.status()).await
    }

    async fn configure(
        &self,
        configuration: &DatabaseConfiguration,
        new_database: bool,
    ) -> Result<(), AdminError> {
        self.timed(
            "configure",
            self.inner.configure(configuration, new_database),
        )
        .await
    }

    async fn exclude(&self, targets: &[ExclusionTarget], blocking: bool) -> Result<(), AdminError> {
        self.timed("exclude", self.inner.exclude(targets, blocking))
            .await
    }

    async fn exclusion_status(
        &self,
        targets: &[ExclusionTarget],
    ) -> Result<ExclusionReport, AdminError> {
        self.timed("exclusion_status", self.inner.exclusion_status(targets))
            .await
    }

    async fn include(&self, targets: &[ExclusionTarget]) -> Result<(), AdminError> {
        self.timed("include", self.inner.include(targets)).await
    }

    async fn change_coordinators(
        &self,
        coordinators: &[ProcessAddress],
    ) -> Result<ConnectionString, AdminError> {
        self.timed("coordinators", self.inner.change_coordinators(coordinators))
            .await
    }

    async fn kill(&self, addresses: &[ProcessAddress]) -> Result<(), AdminError> {
        self.timed("kill", self.inner.kill(addresses)).await
    }

    async fn set_maintenance_zone(
        &self,
        zone: &str,
        duration_seconds: u64,
    ) -> Result<(), AdminError> {
        self.timed(
            "maintenance_on",
            self.inner.set_maintenance_zone(zone, duration_seconds),
        )
        .await
    }

    async fn reset_maintenance_zone(&self) -> Result<(), AdminError> {
        self.timed("maintenance_off", self.inner.reset_maintenance_zone())
            .await
    }

    async fn read_lock(&self) -> Result<Option<LockValue>, AdminError> {
        self.timed("read_lock", self.inner.read_lock()).await
    }

    async fn write_lock(&self, lock: &LockValue) -> Result<(), AdminError> {
        self.timed("write_lock", self.inner.write_lock(lock)).await
    }

    async fn deny_list(&self) -> Result<Vec<String>, AdminError> {
        self.timed("deny_list", self.inner.deny_list()).await
    }

    async fn update_deny_list(&self, add: &[String], remove: &[String]) -> Result<(), AdminError> {
        self.timed("update_deny_list", self.inner.update_deny_list(add, remove))
            .await
    }

    async fn pending_upgrades(&self) -> Result<Vec<PendingUpgrade>, AdminError> {
        self.timed("pending_upgrades", self.inner.pending_upgrades())
            .await
    }

    async fn update_pending_upgrades(
        &self,
        add: &[PendingUpgrade],
        remove: &[PendingUpgrade],
    ) -> Result<(), AdminError> {
        self.timed(
            "update_pending_upgrades",
            self.inner.update_pending_upgrades(add, remove),
        )
        .await
    }

    async fn restart_list(&self, list: RestartList) -> Result<Vec<RestartEntry>, AdminError> {
        self.timed("restart_list", self.inner.restart_list(list))
            .await
    }

    async fn update_restart_list(
        &self,
        list: RestartList,
        add: &[RestartEntry],
        remove: &[RestartEntry],
    ) -> Result<(), AdminError> {
        self.timed(
            "update_restart_list",
            self.inner.update_restart_list(list, add, remove),
        )
        .await
    }

    async fn clear_pending_upgrades(&self) -> Result<(), AdminError> {
        self.timed(
            "clear_pending_upgrades",
            self.inner.clear_pending_upgrades(),
        )
        .await
    }

    async fn connected_clients(&self) -> Result<Vec<ClientInfo>, AdminError> {
        self.timed("connected_clients", self.inner.connected_clients())
            .await
    }

    // The backup tools: without these the trait's defaults answered "this admin client
    // cannot run the backup tools", so no backup or restore ever ran in production.
    async fn start_backup(&self, request: &BackupStart) -> Result<(), AdminError> {
        self.timed("backup_start", self.inner.start_backup(request))
            .await
    }

    async fn modify_backup(&self, request: &BackupModify) -> Result<(), AdminError> {
        self.timed("backup_modify", self.inner.modify_backup(request))
            .await
    }

    async fn discontinue_backup(&self, tag: &str) -> Result<(), AdminError> {
        self.timed("backup_discontinue", self.inner.discontinue_backup(tag))
            .await
    }

    async fn set_backups_paused(&self, paused: bool) -> Result<(), AdminError> {
        let command = if paused {
            "backup_pause"
        } else {
            "backup_resume"
        };
        self.timed(command, self.inner.set_backups_paused(paused))
            .await
    }

    async fn delete_backup_data(&self, url: &str) -> Result<(), AdminError> {
        self.timed("backup_delete", self.inner.delete_backup_data(url))
            .await
    }

    async fn backup_status(&self, tag: &str) -> Result<BackupStatus, AdminError> {
        self.timed("backup_status", self.inner.backup_status(tag))
            .await
    }

    async fn start_restore(&self, request: &RestoreStart) -> Result<(), AdminError> {
        self.timed("restore_start", self.inner.start_restore(request))
            .await
    }

    async fn restore_status(&self) -> Result<RestoreProgress, AdminError> {
        self.timed("restore_status", self.inner.restore_status())
            .await
    }
}

/// Wraps a [`SidecarProvider`]; its clients count failed requests.
pub(crate) struct MeteredSidecarProvider {
    inner: Arc<dyn SidecarProvider>,
    metrics: Arc<OperatorMetrics>,
}

impl MeteredSidecarProvider {
    /// Counts the failures of the clients of `inner` into `metrics`.
    pub(crate) fn new(inner: Arc<dyn SidecarProvider>, metrics: Arc<OperatorMetrics>) -> Self {
        Self { inner, metrics }
    }
}

impl SidecarProvider for MeteredSidecarProvider {
    fn sidecar_for(
        &self,
        cluster: &FoundationDBCluster,
        pod: &Pod,
    ) -> Result<Arc<dyn SidecarApi>, SidecarClientError> {
        match self.inner.sidecar_for(cluster, pod) {
            Ok(inner) => Ok(Arc::new(MeteredSidecar {
                inner,
                metrics: self.metrics.clone(),
            })),
            Err(error) => {
                count_error(&self.metrics, "client", &error);
                Err(error)
            }
        }
    }
}

/// The bounded kind of a sidecar failure.
fn error_kind(error: &SidecarClientError) -> &'static str {
    if error.is_timeout() {
        "timeout"
    } else if error.is_unreachable() {
        "unreachable"
    } else if error.status().is_some() {
        "status"
    } else if matches!(error, SidecarClientError::Tls { .. }) {
        "tls"
    } else {
        "other"
    }
}

fn count_error(metrics: &OperatorMetrics, request: &'static str, error: &SidecarClientError) {
    metrics
        .sidecar_errors
        .get_or_create(&SidecarErrorLabels {
            request,
            kind: error_kind(error),
        })
        .inc();
}

/// A sidecar client whose failures are counted.
struct MeteredSidecar {
    inner: Arc<dyn SidecarApi>,
    metrics: Arc<OperatorMetrics>,
}

impl MeteredSidecar {
    async fn counted<T>(
        &self,
        request: &'static str,
        call: impl Future<Output = Result<T, SidecarClientError>>,
    ) -> Result<T, SidecarClientError> {
        let result = call.await;
        if let Err(error) = &result {
            count_error(&self.metrics, request, error);
        }
        result
    }
}

#[async_trait]
impl SidecarApi for MeteredSidecar {
    async fn ready(&self) -> Result<(), SidecarClientError> {
        self.counted("ready", self.inner.ready()).await
    }

    async fn substitutions(&self) -> Result<BTreeMap<String, String>, SidecarClientError> {
        self.counted("substitutions", self.inner.substitutions())
            .await
    }

    async fn check_hash(&self, rel: &str) -> Result<Option<String>, SidecarClientError> {
        self.counted("check_hash", self.inner.check_hash(rel)).await
    }

    async fn is_present(&self, rel: &str) -> Result<bool, SidecarClientError> {
        self.counted("is_present", self.inner.is_present(rel)).await
    }

    async fn copy_files(&self) -> Result<(), SidecarClientError> {
        self.counted("copy_files", self.inner.copy_files()).await
    }

    async fn copy_binaries(&self) -> Result<(), SidecarClientError> {
        self.counted("copy_binaries", self.inner.copy_binaries())
            .await
    }

    async fn copy_libraries(&self) -> Result<(), SidecarClientError> {
        self.counted("copy_libraries", self.inner.copy_libraries())
            .await
    }

    async fn copy_monitor_conf(&self) -> Result<(), SidecarClientError> {
        self.counted("copy_monitor_conf", self.inner.copy_monitor_conf())
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdb_shared::sidecar::SidecarClientFactory;

    /// An fdbcli that cannot run (a file without the execute bit): every command
    /// fails, and is still timed.
    fn unavailable(
        work_dir: &std::path::Path,
    ) -> crate::controller::production::providers::FdbcliAdminProvider {
        let fdbcli = work_dir.join("fdbcli");
        std::fs::write(&fdbcli, "").unwrap();
        crate::controller::production::providers::FdbcliAdminProvider {
            tools: crate::fdb::FdbTools::new(work_dir.to_owned(), Some(fdbcli)),
            work_dir: work_dir.to_owned(),
            tls: None,
            runner: crate::fdb::ProcessRunner::shared(),
        }
    }

    #[tokio::test]
    async fn admin_commands_are_timed_by_command_and_result() {
        let metrics = Arc::new(OperatorMetrics::default());
        let work_dir = tempfile::tempdir().unwrap();
        let provider =
            MeteredAdminProvider::new(Arc::new(unavailable(work_dir.path())), metrics.clone());
        let mut cluster = crate::controller::fixtures::cluster("version: 7.1.57");
        cluster.status = Some(fdb_shared::api::FoundationDBClusterStatus {
            connection_string: Some("sample:abc@127.0.0.1:4501".to_owned()),
            ..Default::default()
        });
        let admin = provider.admin_for(&cluster).unwrap();
        let _ = admin.status().await;
        let _ = admin.read_lock().await;
        let text = metrics.encode();
        assert!(
            text.contains("admin_command_duration_seconds_count{command=\"status\""),
            "{text}"
        );
        assert!(text.contains("command=\"read_lock\""), "{text}");
        // The backup tools run through the wrapper too (no fdbbackup here: a tool
        // error, never "cannot run the backup tools").
        let backup = admin.backup_status("default").await;
        assert!(
            !matches!(backup, Err(AdminError::Unsupported { .. })),
            "{backup:?}"
        );
        assert!(admin.restore_status().await.is_err());
        let text = metrics.encode();
        assert!(text.contains("command=\"backup_status\""), "{text}");
        assert!(text.contains("command=\"restore_status\""), "{text}");
    }

    #[test]
    fn the_wrapper_reports_the_missing_tools_of_the_provider_it_wraps() {
        // Production always wraps its provider (production/mod.rs): without this the
        // upgrade would start on a version the operator has no tools for.
        let dir = tempfile::tempdir().unwrap();
        let inner = crate::controller::production::providers::FdbcliAdminProvider {
            tools: crate::fdb::FdbTools::new(dir.path().to_owned(), None),
            work_dir: dir.path().join("work"),
            tls: None,
            runner: crate::fdb::ProcessRunner::shared(),
        };
        let metered =
            MeteredAdminProvider::new(Arc::new(inner), Arc::new(OperatorMetrics::default()));
        let missing = metered
            .missing_tool(&"7.3.43".parse().unwrap())
            .expect("no 7.3 tools in an empty directory");
        assert_eq!(missing.path, dir.path().join("7.3/fdbcli"));
    }

    /// Sidecars at a loopback port nothing listens on.
    struct ClosedPort(u16);

    impl SidecarProvider for ClosedPort {
        fn sidecar_for(
            &self,
            _: &FoundationDBCluster,
            pod: &Pod,
        ) -> Result<Arc<dyn SidecarApi>, SidecarClientError> {
            if pod.status.is_none() {
                return Err(SidecarClientError::InvalidUrl {
                    url: String::new(),
                    reason: "no IP".into(),
                });
            }
            let factory = SidecarClientFactory::new(None)?;
            Ok(Arc::new(
                factory.client(&format!("http://127.0.0.1:{}", self.0))?,
            ))
        }
    }

    #[tokio::test]
    async fn failed_sidecar_requests_are_counted_by_kind() {
        let metrics = Arc::new(OperatorMetrics::default());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let provider = MeteredSidecarProvider::new(Arc::new(ClosedPort(port)), metrics.clone());
        let cluster = FoundationDBCluster::new("sample", Default::default());
        let mut pod = Pod::default();
        assert!(provider.sidecar_for(&cluster, &pod).is_err());
        pod.status = Some(Default::default());
        let sidecar = provider.sidecar_for(&cluster, &pod).unwrap();
        assert!(sidecar.ready().await.is_err());
        assert!(sidecar.check_hash("fdb.cluster").await.is_err());
        let text = metrics.encode();
        for wanted in [
            "fdb_operator_sidecar_errors_total{request=\"client\",kind=\"other\"} 1",
            "fdb_operator_sidecar_errors_total{request=\"ready\",kind=\"unreachable\"} 1",
            "fdb_operator_sidecar_errors_total{request=\"check_hash\",kind=\"unreachable\"} 1",
        ] {
            assert!(text.contains(wanted), "{wanted} missing in\n{text}");
        }
    }
}
