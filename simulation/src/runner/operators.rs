//! The operator instances of a run: the first cluster's (which also reconciles the
//! fleet's members), one per extra cluster of `clusters:`, how they are built (executor
//! rules, TLS material, the lock judge), or none of the world's own when an operator
//! outside reconciles through the served API.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use fdb_operator::controller::{Context, ExecutorRules};
use fdb_shared::sidecar::SidecarClientTls;
use jiff::Timestamp;

use crate::invariants::lock_judge::AdminWriteJudge;

use super::instances::Instance;

/// The run's operator instances and what they are built from.
pub(super) struct Operators {
    /// The first cluster's operator.
    pub(super) context: Context,
    /// The operator instances of the scenario's other clusters (`clusters:`), and the
    /// schedules of the fleet's members (`fleet:`, reconciled by `context`).
    pub(super) instances: Vec<Instance>,
    /// Run no operator at all (to prove that the world and `expect` catch inaction).
    disabled: bool,
    /// The operator's executor rules ([`super::RunOptions::executor_rules`]).
    executor_rules: ExecutorRules,
    /// The operator's TLS material for sidecars (`world.tls`), kept for restarts.
    sidecar_tls: Option<SidecarClientTls>,
    /// Judges every instance's admin writes against the database's lock key.
    lock_judge: Arc<dyn AdminWriteJudge>,
    /// No operator of the world's own: one outside reconciles through the served API
    /// ([`super::RunOptions::external_operator`]).
    external: bool,
    /// Commands of the external operator's tools that changed the database.
    external_tool_changes: Arc<AtomicU64>,
}

impl Operators {
    /// The first cluster's operator (`context`) and the other `instances`, run as
    /// `options` asks.
    pub(super) fn new(
        context: Context,
        instances: Vec<Instance>,
        sidecar_tls: Option<SidecarClientTls>,
        lock_judge: Arc<dyn AdminWriteJudge>,
        options: &super::RunOptions,
    ) -> Self {
        Self {
            context,
            instances,
            disabled: options.operator_disabled || options.external_operator,
            executor_rules: options.executor_rules,
            sidecar_tls,
            lock_judge,
            external: options.external_operator,
            external_tool_changes: Arc::default(),
        }
    }

    /// Whether no operator of the world's own acts (disabled, or one outside instead).
    pub(super) fn disabled(&self) -> bool {
        self.disabled
    }

    /// Whether an operator outside reconciles through the served API.
    pub(super) fn external(&self) -> bool {
        self.external
    }

    /// The executor rules every instance is built with.
    pub(super) fn executor_rules(&self) -> ExecutorRules {
        self.executor_rules
    }

    /// The TLS material every instance's sidecar clients use.
    pub(super) fn sidecar_tls(&self) -> Option<&SidecarClientTls> {
        self.sidecar_tls.as_ref()
    }

    /// The judge of every instance's admin writes.
    pub(super) fn lock_judge(&self) -> Arc<dyn AdminWriteJudge> {
        self.lock_judge.clone()
    }

    /// The count of the external operator's tool commands that changed the database.
    pub(super) fn external_tool_changes(&self) -> &Arc<AtomicU64> {
        &self.external_tool_changes
    }

    /// Whether the scenario has clusters besides the first.
    pub(super) fn has_instances(&self) -> bool {
        !self.instances.is_empty()
    }

    /// A watch event at `now` for every instance: each runs as soon as it may.
    pub(super) fn wake_instances(&mut self, now: Timestamp) {
        for instance in &mut self.instances {
            if instance.context.is_none() {
                continue;
            }
            instance.schedule.wake(now);
        }
    }

    /// The earliest moment an instance wants to run.
    pub(super) fn instance_pass_due(&self) -> Option<Timestamp> {
        self.instances
            .iter()
            .filter_map(|instance| instance.schedule.next_due())
            .min()
    }

    /// The running instance due at `now` the longest, if any.
    pub(super) fn due_instance(&self, now: Timestamp) -> Option<usize> {
        self.instances
            .iter()
            .enumerate()
            .filter(|(_, i)| i.context.is_some() && i.schedule.is_due(now))
            .min_by_key(|(_, i)| i.schedule.next_due())
            .map(|(index, _)| index)
    }

    /// Whether the instance of cluster `name` last reported Reconciled with nothing due
    /// since (`None`: no such instance).
    pub(super) fn instance_reconciled(&self, name: &str) -> Option<bool> {
        self.instances
            .iter()
            .find(|i| i.name == name)
            .map(|i| i.schedule.at_rest())
    }
}
