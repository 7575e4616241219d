//! Scenario steps as written (`StepSpec`), as run (`Step`), and their validation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::act_exec::{ExecAct, ExecCommand, ExecTarget};
pub use super::act_step::{
    ActPatch, ActStep, Action, Actor, DeleteCollection, EvictTarget, MaintenanceAct,
    MaintenanceZone, ObjectKind, ObjectRef, PodChoice,
};
pub use super::expect_step::{ExpectStep, ResourceExpectation};
use super::faults::{Fault, validate_fault};
pub use super::targets::{ResourceKind, ResourceTarget, apply_cluster_target, apply_target};

/// One scenario step as written: exactly one of the fields is set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepSpec {
    /// Run reconcile passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconcile: Option<ReconcileStep>,
    /// JSON merge patch applied to the cluster object, as a user would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply: Option<Value>,
    /// Advance the clock this many seconds, the world and the operator running meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advance: Option<u64>,
    /// Inject a fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// Undo faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heal: Option<Heal>,
    /// Drop all in-memory operator state, now or right after its next action of a kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_operator: Option<RestartOperatorStep>,
    /// Do something through the Kubernetes API or the admin interface, as the operator
    /// (judged by the invariants like an operator action) or as a user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act: Option<ActStep>,
    /// Let the world and the operator run until every condition holds (at most `within`
    /// seconds); a condition that never holds is an `expectation-failed` violation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<ExpectStep>,
    /// Delete a backup or restore resource, as a user would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<DeleteStep>,
}

/// A `delete` step: the resource to delete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteStep {
    /// `foundationdbbackup/<name>` or `foundationdbrestore/<name>`.
    pub target: String,
}

/// Settings of a `reconcile` step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReconcileStep {
    /// Stop after this many passes instead of running until reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_passes: Option<u32>,
}

/// Settings of a `restartOperator` step.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RestartOperatorStep {
    /// Crash the operator right after its next action of this kind (an event `action`
    /// name: `kill`, `exclude`, `delete`, `patch`, ...), mid-pass, instead of now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// What a `heal` step undoes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Heal {
    /// Undo the faults on this process group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_group: Option<String>,
    /// Undo the faults on this node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Bring back every node labelled `topology.kubernetes.io/zone=<zone>` (after
    /// `zoneDown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Undo every fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all: Option<bool>,
}

/// A step, once validated: exactly one action.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Run reconcile passes until reconciled, or at most `max_passes`.
    Reconcile(ReconcileStep),
    /// Apply a JSON merge patch to the cluster object.
    Apply(Value),
    /// Advance the clock.
    Advance(u64),
    /// Inject a fault.
    Fault(Fault),
    /// Undo faults.
    Heal(Heal),
    /// Drop the operator's in-memory state, now (`None`) or right after its next action
    /// of that kind.
    RestartOperator {
        /// The event action name that triggers the crash.
        after: Option<String>,
    },
    /// Act as the operator or a user.
    Act {
        /// Who acts.
        actor: Actor,
        /// What they do.
        action: Action,
        /// The operator instance acting (`as: operator`), by cluster name.
        cluster: Option<String>,
    },
    /// Apply a JSON merge patch to one of the scenario's clusters, by name.
    ApplyCluster {
        /// The cluster.
        name: String,
        /// The patch.
        patch: Value,
    },
    /// Await conditions.
    Expect(Box<ExpectStep>),
    /// Apply a JSON merge patch to a backup or restore (creating it from the scenario's
    /// manifest when it does not exist).
    ApplyTo {
        /// The resource.
        target: ResourceTarget,
        /// The patch.
        patch: Value,
    },
    /// Delete a backup or restore.
    Delete(ResourceTarget),
}

impl StepSpec {
    fn action_count(&self) -> usize {
        [
            self.reconcile.is_some(),
            self.apply.is_some(),
            self.advance.is_some(),
            self.fault.is_some(),
            self.heal.is_some(),
            self.restart_operator.is_some(),
            self.act.is_some(),
            self.expect.is_some(),
            self.delete.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }

    /// The step's single action (None only for an unvalidated or invalid step).
    pub fn to_step(&self) -> Option<Step> {
        if let Some(reconcile) = self.reconcile {
            return Some(Step::Reconcile(reconcile));
        }
        if let Some(patch) = &self.apply {
            if let Some((name, patch)) = apply_cluster_target(patch) {
                return Some(Step::ApplyCluster { name, patch });
            }
            return match apply_target(patch) {
                Some(Ok((target, patch))) => Some(Step::ApplyTo { target, patch }),
                Some(Err(_)) => None,
                None => Some(Step::Apply(patch.clone())),
            };
        }
        if let Some(delete) = &self.delete {
            return ResourceTarget::parse(&delete.target).ok().map(Step::Delete);
        }
        if let Some(seconds) = self.advance {
            return Some(Step::Advance(seconds));
        }
        if let Some(fault) = &self.fault {
            return Some(Step::Fault(fault.clone()));
        }
        if let Some(heal) = &self.heal {
            return Some(Step::Heal(heal.clone()));
        }
        if let Some(act) = &self.act {
            return act.action().ok().map(|action| Step::Act {
                actor: act.actor,
                action,
                cluster: act.cluster.clone(),
            });
        }
        if let Some(expect) = &self.expect {
            return Some(Step::Expect(Box::new(expect.clone())));
        }
        self.restart_operator
            .as_ref()
            .map(|restart| Step::RestartOperator {
                after: restart.after.clone(),
            })
    }

    /// Checks the step; the error is `(field inside the step, message)`, the field
    /// empty when the step as a whole is wrong.
    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        if self.action_count() != 1 {
            return Err((
                String::new(),
                "must have exactly one of reconcile, apply, advance, fault, heal, restartOperator, act, expect, delete".to_owned(),
            ));
        }
        let inside = |prefix: &str, (field, message): (&str, String)| {
            if field.is_empty() {
                (prefix.to_owned(), message)
            } else {
                (format!("{prefix}.{field}"), message)
            }
        };
        if let Some(Some(Err(problem))) = self.apply.as_ref().map(apply_target) {
            return Err(inside("apply", problem));
        }
        if let Some(delete) = &self.delete {
            ResourceTarget::parse(&delete.target).map_err(|e| ("delete.target".to_owned(), e))?;
        }
        if let Some(patch) = &self.apply
            && !patch.is_object()
        {
            return Err((
                "apply".into(),
                "must be a mapping (a JSON merge patch of the cluster)".into(),
            ));
        }
        if let Some(ReconcileStep {
            max_passes: Some(0),
        }) = self.reconcile
        {
            return Err(("reconcile.maxPasses".into(), "must be at least 1".into()));
        }
        if let Some(fault) = &self.fault {
            validate_fault(fault).map_err(|e| inside("fault", e))?;
        }
        if let Some(heal) = &self.heal {
            let targets = usize::from(heal.process_group.is_some())
                + usize::from(heal.node.is_some())
                + usize::from(heal.zone.is_some())
                + usize::from(heal.all == Some(true));
            if targets != 1 {
                return Err((
                    "heal".into(),
                    "must name exactly one of processGroup, node, zone, or all: true".into(),
                ));
            }
        }
        if let Some(RestartOperatorStep { after: Some(after) }) = &self.restart_operator
            && after.trim().is_empty()
        {
            return Err((
                "restartOperator.after".into(),
                "must name an action (kill, exclude, delete, ...)".into(),
            ));
        }
        if let Some(act) = &self.act {
            act.action().map_err(|e| inside("act", e))?;
        }
        if let Some(expect) = &self.expect {
            expect.validate().map_err(|e| inside("expect", e))?;
        }
        Ok(())
    }
}
