//! Everything a pass needs from outside: the Kubernetes client, the database admin
//! client, the sidecar client, the clock, the settings, the metrics, and what
//! UpdatePodConfig learned about sidecars (only to save requests). Nothing else is kept
//! between passes.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use fdb_shared::FdbVersion;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::sidecar::{SidecarApi, SidecarClientError};
use k8s_openapi::api::core::v1::Pod;

use super::cache::ObjectCache;
use super::model::desired_memo::DesiredMemo;
use super::pod_agent::config_memo::PodConfigMemo;
use super::production::metrics::OperatorMetrics;
use crate::clock::Clock;
use crate::fdb::{AdminClient, AdminError, MissingTool};

/// Gives the admin client of a cluster's database.
pub trait AdminClientProvider: Send + Sync {
    /// The admin client for `cluster` (its `status.connectionString` says where the
    /// database is).
    fn admin_for(&self, cluster: &FoundationDBCluster) -> Result<Arc<dyn AdminClient>, AdminError>;

    /// The tool of `version` this provider lacks, if any: a version whose tools the
    /// operator does not have cannot be read nor upgraded to (see
    /// `controller/versions/tool_choice.rs`). Providers that reach every version (the simulated
    /// databases) have none missing.
    fn missing_tool(&self, _version: &FdbVersion) -> Option<MissingTool> {
        None
    }
}

/// Gives the client of a pod's sidecar.
pub trait SidecarProvider: Send + Sync {
    /// The sidecar client of `pod` (a pod of `cluster`).
    fn sidecar_for(
        &self,
        cluster: &FoundationDBCluster,
        pod: &Pod,
    ) -> Result<Arc<dyn SidecarApi>, SidecarClientError>;
}

/// Operator-wide settings (not per cluster).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorSettings {
    /// Requeue delay while waiting for Kubernetes (pods scheduled, started).
    pub kube_wait: Duration,
    /// Requeue delay while waiting for the kubelet to project a ConfigMap change.
    pub config_map_wait: Duration,
    /// Requeue delay while waiting for the database (processes reporting, availability).
    pub database_wait: Duration,
    /// Name of this controller in Events (`reportingController`).
    pub controller_name: String,
    /// Whether Kubernetes Events are published.
    pub publish_events: bool,
    /// How many sidecars UpdatePodConfig talks to at once.
    pub sidecar_concurrency: usize,
    /// `--replace-on-security-context-change`: file ownership changes replace process
    /// groups instead of recreating their pods (see [`super::model::replace_only`]).
    pub replace_on_security_context_change: bool,
    /// `--restrict-pod-templates` and its `--allow*` flags: what the pod templates of
    /// clusters and backups may ask for (unrestricted by default, as the Go operator).
    pub pod_template_policy: super::model::pod_template_policy::PodTemplatePolicy,
    /// The executor's rules; all on, except in the mutation tests that prove the
    /// scenarios catch an executor without one.
    pub executor_rules: ExecutorRules,
}

impl Default for OperatorSettings {
    fn default() -> Self {
        Self {
            kube_wait: Duration::from_secs(5),
            config_map_wait: Duration::from_secs(15),
            database_wait: Duration::from_secs(10),
            controller_name: "fdb-operator".to_owned(),
            publish_events: true,
            sidecar_concurrency: 16,
            replace_on_security_context_change: false,
            pod_template_policy: super::model::pod_template_policy::PodTemplatePolicy::default(),
            executor_rules: ExecutorRules::default(),
        }
    }
}

/// The executor's rules that can be switched off, only to prove that the scenarios
/// catch an executor without them (mutation tests; no flag or setting reaches it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecutorRules {
    /// One disruption per pass.
    pub one_disruption: bool,
    /// Recovery pacing.
    pub pacing: bool,
    /// Region changes one step at a time (`cluster_math::next_configuration_change`);
    /// off, UpdateDatabaseConfiguration configures the desired regions at once.
    pub region_order: bool,
    /// TLS turned on or off through processes listening on both kinds of address
    /// (`status.requiredAddresses`); off, UpdateStatus requires only the spec's kind, so
    /// every process switches at once while the coordinators keep the old kind.
    pub tls_migration: bool,
    /// One restart for a database shared by several instances (the restart lists,
    /// `restart_sync`); off, each instance kills its own processes alone.
    pub shared_restarts: bool,
    /// One exclusion for a database shared by several instances (the exclusion lists,
    /// `exclusion_sync`); off, each instance excludes its own groups alone.
    pub shared_exclusions: bool,
    /// With two usable regions, at most a third of the coordinators in one datacenter
    /// of the regions, a hard limit; off, the choice falls back to distinct zones alone
    /// when the datacenters up cannot hold their share.
    pub coordinator_spread: bool,
}

impl Default for ExecutorRules {
    fn default() -> Self {
        Self {
            one_disruption: true,
            pacing: true,
            region_order: true,
            tls_migration: true,
            shared_restarts: true,
            shared_exclusions: true,
            coordinator_spread: true,
        }
    }
}

/// What every step gets.
#[derive(Clone)]
pub struct Context {
    /// The Kubernetes client.
    pub kube: kube::Client,
    /// Admin clients of the databases.
    pub admin: Arc<dyn AdminClientProvider>,
    /// Sidecar clients of the pods.
    pub sidecars: Arc<dyn SidecarProvider>,
    /// The time.
    pub clock: Arc<dyn Clock>,
    /// Operator-wide settings.
    pub settings: OperatorSettings,
    /// Prometheus metrics.
    pub metrics: Arc<OperatorMetrics>,
    /// What UpdatePodConfig learned about each pod's sidecar in earlier passes.
    pub pod_config: Arc<PodConfigMemo>,
    /// The desired objects of process groups, kept while their inputs stay the same.
    pub desired: Arc<DesiredMemo>,
    /// The watch caches passes read the cluster's objects from (`None`: passes LIST).
    pub cache: Option<Arc<ObjectCache>>,
    /// Pending-upgrade lists still to clear after an upgrade's kill.
    pub upgrade_cleanup: Arc<super::versions::cleanup::UpgradeCleanup>,
    /// This instance's kills for each cluster's upgrade, for the back-off between them.
    pub upgrade_kills: Arc<super::versions::retries::UpgradeKills>,
    /// The refusals of each cluster's exclusions, for the wait before the next attempt.
    pub(crate) exclusion_refusals: Arc<super::removals::exclusion_retries::ExclusionRefusals>,
    /// The clusters whose instance gave the operator lock up and has not taken it since.
    pub(crate) lock_releases: Arc<super::safety::lock_release::LockReleases>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("settings", &self.settings)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl OperatorSettings {
    /// What counts as a replace-only change under these settings.
    pub fn replace_policy(&self) -> super::model::replace_only::ReplacePolicy {
        super::model::replace_only::ReplacePolicy {
            replace_on_security_context_change: self.replace_on_security_context_change,
        }
    }
}

impl Context {
    /// A context with default settings and fresh metrics.
    pub fn new(
        kube: kube::Client,
        admin: Arc<dyn AdminClientProvider>,
        sidecars: Arc<dyn SidecarProvider>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            kube,
            admin,
            sidecars,
            clock,
            settings: OperatorSettings::default(),
            metrics: Arc::new(OperatorMetrics::default()),
            pod_config: Arc::new(PodConfigMemo::default()),
            desired: Arc::new(DesiredMemo::default()),
            cache: None,
            upgrade_cleanup: Arc::default(),
            upgrade_kills: Arc::default(),
            exclusion_refusals: Arc::default(),
            lock_releases: Arc::default(),
        }
    }
}
