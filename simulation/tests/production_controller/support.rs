//! Test doubles of the production controller test: a gate in front of `status json`,
//! and a tracing layer keeping the operator's recent requeues and warnings.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use fdb_operator::controller::AdminClientProvider;
use fdb_operator::fdb::{
    AdminClient, AdminError, ClientInfo, ExclusionReport, ExclusionTarget, LockValue,
    PendingUpgrade,
};
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::{DatabaseConfiguration, FoundationDBCluster};
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::status_json::DatabaseStatus;
use fdb_simulation::fdb::SimulatedFdb;
use tokio::sync::{Notify, OwnedRwLockWriteGuard, RwLock};
use tracing::field::{Field, Visit};
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

/// The operator's recent requeues (with their reasons) and warnings, for failure messages.
#[derive(Debug, Clone, Default)]
pub struct RecentLog(Arc<Mutex<VecDeque<String>>>);

impl RecentLog {
    const KEPT: usize = 12;

    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().iter().cloned().collect()
    }
}

/// An event's fields as `name=value` text.
#[derive(Default)]
struct FieldText {
    message: String,
    fields: String,
}

impl Visit for FieldText {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for RecentLog {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut text = FieldText::default();
        event.record(&mut text);
        let level = *event.metadata().level();
        if level <= tracing::Level::WARN || text.message == "requeue" {
            let mut lines = self.0.lock().unwrap();
            if lines.len() == Self::KEPT {
                lines.pop_front();
            }
            lines.push_back(format!("{level} {}:{}", text.message, text.fields));
        }
    }
}

/// Logs warnings to the test output (or what `RUST_LOG` asks for) and keeps the
/// operator's recent requeues and warnings.
pub fn init_tracing() -> RecentLog {
    let recent = RecentLog::default();
    let printed = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::registry()
        .with(fmt::layer().with_test_writer().with_filter(printed))
        .with(
            recent
                .clone()
                .with_filter(Targets::new().with_target("fdb_operator", tracing::Level::INFO)),
        )
        .try_init();
    recent
}

/// A gate in front of `status json`: when closed, passes block in it, so the test can
/// hold a reconcile in flight while asking the controller to stop.
#[derive(Debug, Default)]
pub struct StatusGate {
    lock: Arc<RwLock<()>>,
    armed: AtomicBool,
    /// Notified when a pass enters the closed gate.
    pub entered: Notify,
}

impl StatusGate {
    pub async fn close(&self) -> OwnedRwLockWriteGuard<()> {
        let guard = self.lock.clone().write_owned().await;
        self.armed.store(true, Ordering::SeqCst);
        guard
    }

    async fn pass(&self) {
        if self.armed.load(Ordering::SeqCst) {
            self.entered.notify_one();
            let _open = self.lock.read().await;
        }
    }
}

/// The simulated database behind the gate.
#[derive(Debug)]
pub struct GatedAdmin {
    pub fdb: SimulatedFdb,
    pub gate: Arc<StatusGate>,
}

#[async_trait::async_trait]
impl AdminClient for GatedAdmin {
    async fn status(&self) -> Result<DatabaseStatus, AdminError> {
        self.gate.pass().await;
        self.fdb.status().await
    }
    async fn configure(&self, c: &DatabaseConfiguration, new: bool) -> Result<(), AdminError> {
        self.fdb.configure(c, new).await
    }
    async fn exclude(&self, t: &[ExclusionTarget], blocking: bool) -> Result<(), AdminError> {
        self.fdb.exclude(t, blocking).await
    }
    async fn exclusion_status(&self, t: &[ExclusionTarget]) -> Result<ExclusionReport, AdminError> {
        self.fdb.exclusion_status(t).await
    }
    async fn include(&self, t: &[ExclusionTarget]) -> Result<(), AdminError> {
        self.fdb.include(t).await
    }
    async fn change_coordinators(
        &self,
        c: &[ProcessAddress],
    ) -> Result<ConnectionString, AdminError> {
        self.fdb.change_coordinators(c).await
    }
    async fn kill(&self, a: &[ProcessAddress]) -> Result<(), AdminError> {
        self.fdb.kill(a).await
    }
    async fn set_maintenance_zone(&self, zone: &str, seconds: u64) -> Result<(), AdminError> {
        self.fdb.set_maintenance_zone(zone, seconds).await
    }
    async fn reset_maintenance_zone(&self) -> Result<(), AdminError> {
        self.fdb.reset_maintenance_zone().await
    }
    async fn read_lock(&self) -> Result<Option<LockValue>, AdminError> {
        self.fdb.read_lock().await
    }
    async fn write_lock(&self, lock: &LockValue) -> Result<(), AdminError> {
        self.fdb.write_lock(lock).await
    }
    async fn deny_list(&self) -> Result<Vec<String>, AdminError> {
        self.fdb.deny_list().await
    }
    async fn update_deny_list(&self, add: &[String], remove: &[String]) -> Result<(), AdminError> {
        self.fdb.update_deny_list(add, remove).await
    }
    async fn pending_upgrades(&self) -> Result<Vec<PendingUpgrade>, AdminError> {
        self.fdb.pending_upgrades().await
    }
    async fn update_pending_upgrades(
        &self,
        add: &[PendingUpgrade],
        remove: &[PendingUpgrade],
    ) -> Result<(), AdminError> {
        self.fdb.update_pending_upgrades(add, remove).await
    }
    async fn clear_pending_upgrades(&self) -> Result<(), AdminError> {
        self.fdb.clear_pending_upgrades().await
    }
    async fn connected_clients(&self) -> Result<Vec<ClientInfo>, AdminError> {
        self.fdb.connected_clients().await
    }
}

pub struct GatedAdminProvider(pub Arc<GatedAdmin>);

impl AdminClientProvider for GatedAdminProvider {
    fn admin_for(&self, _: &FoundationDBCluster) -> Result<Arc<dyn AdminClient>, AdminError> {
        Ok(self.0.clone())
    }
}
