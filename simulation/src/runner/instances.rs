//! The scenario's other clusters (`clusters:`): more FoundationDBCluster objects sharing
//! the first cluster's database, as several Kubernetes clusters share one database, each
//! managed by an operator instance of its own (its own [`Context`]: caches, memos, lock
//! ID), on the same clock. Passes interleave: whichever instance is due runs next.
//!
//! Each extra cluster is created once the first one is configured, with
//! `spec.seedConnectionString` set to it (unless its manifest sets one), so its processes
//! join the same database. The world judges every instance's actions like the first
//! one's (the database-wide invariants), and each cluster's reconciled passes against its
//! own spec (`reconciled-but-diverged`).

use crate::scenario::operator_flags::apply_operator_flags;
use std::collections::BTreeSet;

use fdb_shared::api::FoundationDBCluster;
use jiff::Timestamp;
use serde_json::Value;

use crate::event_log::RunPosition;
use crate::kube::{PatchType, ResourceKey};
use fdb_operator::controller::Context;
use fdb_operator::controller::{PassOutcome, run_pass};

use super::harness::{OperatorIdentity, USER_ACTOR, new_operator_context, operator_kube_client};
use super::pass_schedule::PassSchedule;
use super::steps::{PassEnd, judge_pass};
use super::{RunError, Runner};

/// One extra cluster and its operator instance.
pub(super) struct Instance {
    /// The cluster's name.
    pub name: String,
    /// Its manifest, as the scenario gives it.
    manifest: Value,
    /// Its operator, once the cluster exists.
    pub(super) context: Option<Context>,
    /// When it next wants to reconcile.
    pub(super) schedule: PassSchedule,
    /// Its process groups marked for removal at some point.
    ever_marked: BTreeSet<String>,
    /// For a `fleet:` member: its index among the fleet's views (it has a database of
    /// its own and shares the first cluster's operator).
    fleet_member: Option<usize>,
}

impl Instance {
    /// One instance per manifest of the scenario's `clusters`.
    pub fn all(manifests: &[Value], namespace: &str) -> Vec<Self> {
        manifests.iter().map(|m| Self::new(m, namespace)).collect()
    }

    /// An instance for `manifest`, in `namespace` unless the manifest names one.
    pub fn new(manifest: &Value, namespace: &str) -> Self {
        let mut manifest = manifest.clone();
        if let Some(metadata) = manifest.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata
                .entry("namespace")
                .or_insert_with(|| Value::from(namespace));
        }
        let name = manifest
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        Self {
            name,
            manifest,
            context: None,
            schedule: PassSchedule::default(),
            ever_marked: BTreeSet::new(),
            fleet_member: None,
        }
    }

    /// One instance per `fleet:` member, each reconciled by the first cluster's
    /// operator (`context`) from `now` on.
    pub fn fleet_members(
        manifests: &[Value],
        namespace: &str,
        context: &Context,
        now: Timestamp,
    ) -> Vec<Self> {
        (0..)
            .zip(manifests)
            .map(|(member, manifest)| {
                Self::fleet_member(manifest, namespace, member, context.clone(), now)
            })
            .collect()
    }

    /// An instance for fleet member `member`, reconciled by the first cluster's
    /// operator (`context`) from the start.
    fn fleet_member(
        manifest: &Value,
        namespace: &str,
        member: usize,
        context: Context,
        now: Timestamp,
    ) -> Self {
        Self {
            context: Some(context),
            schedule: PassSchedule::due_at(Some(now)),
            fleet_member: Some(member),
            ..Self::new(manifest, namespace)
        }
    }

    /// A pass starts now: nothing is due until it says.
    pub fn last_pass_at_now(&mut self, now: Timestamp) {
        self.schedule.started(now);
    }

    /// A pass that started at `now` ended with `end`.
    pub(super) fn pass_ended(&mut self, now: Timestamp, end: PassEnd) {
        self.schedule.ended(now, end);
    }
}

impl Runner {
    /// A fresh operator context for the instance `identity` names.
    pub(super) fn operator_context(
        &self,
        identity: &OperatorIdentity,
    ) -> Result<Context, fdb_shared::sidecar::SidecarClientError> {
        let mut context = new_operator_context(
            operator_kube_client(&self.api, &self.log),
            &self.fdb,
            self.clock.clock(),
            &self.log,
            self.world.network(),
            self.operators.sidecar_tls(),
            identity,
        )?;
        context.settings.executor_rules = self.operators.executor_rules();
        apply_operator_flags(&self.scenario.world, &mut context.settings);
        Ok(context)
    }

    /// The identity of the operator instance of `cluster`: the first cluster's operator
    /// reaches the fleet's databases too; a `clusters:` member's, only the first's.
    pub(super) fn identity(&self, cluster: &str) -> OperatorIdentity {
        OperatorIdentity {
            cluster: cluster.to_owned(),
            judge: self.operators.lock_judge(),
            tools: super::harness::OperatorTools::of_world(&self.scenario.world),
            database: self.first_name().to_owned(),
            fleet: if cluster == self.first_name() {
                self.fleet_routes()
            } else {
                Vec::new()
            },
        }
    }

    /// The key of the cluster `name`.
    pub(super) fn cluster_key_of(&self, name: &str) -> ResourceKey {
        ResourceKey::new(
            "apps.foundationdb.org",
            "v1beta2",
            "foundationdbclusters",
            &self.namespace,
            name,
        )
    }

    /// The cluster object `name`.
    pub(super) fn cluster_named(&self, name: &str) -> Option<FoundationDBCluster> {
        self.api
            .get_typed::<FoundationDBCluster>(Some(&self.namespace), name)
            .ok()
            .flatten()
    }

    /// Restarts every instance's operator (nothing kept but what Kubernetes and the
    /// database store).
    pub(super) fn restart_instances(&mut self) {
        for index in 0..self.operators.instances.len() {
            if self.operators.instances[index].context.is_none() {
                continue;
            }
            if self.operators.instances[index].fleet_member.is_some() {
                // The first cluster's operator, restarted before.
                self.operators.instances[index].context = Some(self.operators.context.clone());
                continue;
            }
            let identity = self.identity(&self.operators.instances[index].name);
            match self.operator_context(&identity) {
                Ok(context) => self.operators.instances[index].context = Some(context),
                Err(error) => self.say(&format!(
                    "operator restart of {} failed: {error}",
                    identity.cluster
                )),
            }
        }
    }

    /// Creates the extra clusters once the first is configured, to join its database.
    fn create_instances(&mut self) -> Result<(), RunError> {
        if self.operators.instances.iter().all(|i| i.context.is_some()) {
            return Ok(());
        }
        // As with several Kubernetes clusters: the first creates and configures the
        // database, the others join it with its connection string.
        let Some(seed) = self
            .cluster_object()
            .and_then(|cluster| cluster.status.filter(|s| s.configured)?.connection_string)
        else {
            return Ok(());
        };
        for index in 0..self.operators.instances.len() {
            if self.operators.instances[index].context.is_some() {
                continue;
            }
            let mut manifest = self.operators.instances[index].manifest.clone();
            if let Some(spec) = manifest.get_mut("spec").and_then(Value::as_object_mut) {
                spec.entry("seedConnectionString")
                    .or_insert_with(|| Value::from(seed.clone()));
            }
            let name = self.operators.instances[index].name.clone();
            self.api.create_as(USER_ACTOR, manifest)?;
            self.say(&format!(
                "created cluster {name}, joining the database {seed}"
            ));
            let context = self.operator_context(&self.identity(&name))?;
            let now = self.now();
            let instance = &mut self.operators.instances[index];
            instance.context = Some(context);
            instance.schedule.no_later_than(now);
        }
        Ok(())
    }

    /// An `apply` step naming a cluster: a JSON merge patch of it, as the user.
    pub(super) fn apply_cluster(&mut self, name: &str, patch: &Value) -> Result<(), RunError> {
        let key = self.cluster_key_of(name);
        if self.api.get(&key).is_none() {
            return Err(RunError::Act(format!(
                "cluster {name} does not exist yet (extra clusters are created once the first is configured)"
            )));
        }
        self.api
            .patch_as(USER_ACTOR, &key, PatchType::Merge, patch, false)?;
        self.wake_operator();
        Ok(())
    }

    /// Runs the pass of one due instance, if any (true: one ran).
    pub(super) async fn instance_passes(&mut self, step: usize) -> Result<bool, RunError> {
        self.create_instances()?;
        let now = self.now();
        let Some(index) = self.operators.due_instance(now) else {
            return Ok(false);
        };
        match self.operators.instances[index].fleet_member {
            Some(member) => self.fleet_pass(step, index, member).await?,
            None => self.instance_pass(step, index).await?,
        }
        Ok(true)
    }

    async fn instance_pass(&mut self, step: usize, index: usize) -> Result<(), RunError> {
        let pass = self.passes.begin();
        self.log.set_position(RunPosition { step, pass });
        let before = self.track()?;
        let events_before = self.log.len();
        let now = self.now();
        let name = self.operators.instances[index].name.clone();
        let Some(context) = self.operators.instances[index].context.clone() else {
            return Ok(());
        };
        self.operators.instances[index].last_pass_at_now(now);
        let result = if self.operators.disabled() {
            Ok(fdb_operator::controller::PassReport::new(
                PassOutcome::Completed,
                false,
            ))
        } else {
            self.sync_cache_of(&context).await?;
            run_pass(&context, &self.namespace, &name).await
        };
        if let Some(detail) = self.log.take_stall() {
            return Err(RunError::Stalled(detail));
        }
        if self.log.take_crash() {
            self.record_cluster_event(
                &name,
                "the operator crashed right after its action and restarted",
            );
            self.restart_operator();
        }
        let verdict = judge_pass(result, &format!("pass {pass} ({name})"));
        self.say(&verdict.message);
        if let Some(detail) = &verdict.failure {
            self.record_cluster_event(&name, &format!("pass failed: {detail}"));
        }
        let end = verdict.end;
        let reconciled = end == PassEnd::Reconciled;
        self.operators.instances[index].pass_ended(now, end);
        self.judge_action(&before, events_before, "operator", true)
            .await?;
        self.report_noted_violations();
        self.check_after_instance_pass(index, reconciled)?;
        Ok(())
    }

    /// The checks after an instance's pass: versions side by side (database-wide), and
    /// for a pass that reported Reconciled, its cluster's world against its spec.
    fn check_after_instance_pass(
        &mut self,
        index: usize,
        reconciled: bool,
    ) -> Result<(), RunError> {
        let (time, pass) = (self.elapsed(), self.passes.total());
        let name = self.operators.instances[index].name.clone();
        let cluster = self.cluster_named(&name);
        super::world_views::note_marked_groups(
            &mut self.operators.instances[index].ever_marked,
            cluster.as_ref(),
        );
        let snapshot = self.fdb.snapshot();
        let versions: Vec<_> = snapshot.processes.iter().map(|p| p.version).collect();
        self.judged.monitor.check_versions(time, pass, &versions);
        if reconciled {
            let found = match &cluster {
                Some(cluster) => {
                    let mut desired = super::world_views::desired_world(cluster);
                    desired.ever_marked = self.operators.instances[index].ever_marked.clone();
                    let actual = self.actual_world_of(cluster)?;
                    crate::invariants::divergences(&desired, &actual)
                        .into_iter()
                        .map(|d| format!("{name}: {d}"))
                        .collect()
                }
                None => vec![format!("the cluster object {name} is gone")],
            };
            self.judged
                .monitor
                .check_reconciled(time, pass, snapshot.available, &found);
            if let Some(cluster) = &cluster {
                self.check_exclusions_left_behind(cluster, Some(&name))?;
            }
        }
        self.check_outages();
        Ok(())
    }

    /// Reports the violations the world noted while actions happened (`lock-not-held`).
    pub(super) fn report_noted_violations(&mut self) {
        let pass = self.log.position().pass;
        for (invariant, time, detail) in self.log.take_violations() {
            self.judged.monitor.violate(invariant, time, pass, detail);
        }
    }
}
