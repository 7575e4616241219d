//! CheckClientCompatibility (docs/operator.md, "The steps"; docs/upgrades.md, "Incompatible
//! upgrades" step 1): validates the version change `spec.version` asks for, and before an
//! incompatible upgrade checks that every connected client supports the target.
//!
//! - An incompatible downgrade (or an unparsable version) is refused: a Warning Event
//!   `UnsupportedVersionChange` and a requeue whose reason says why; the pass ends here,
//!   so nothing after this step changes the cluster (pods keep their version because
//!   [`crate::controller::model::pod::pod_version`] keeps the running version across a
//!   protocol boundary).
//! - During an incompatible upgrade, clients listed in `status json`
//!   `cluster.clients.supported_versions` that support no version protocol-compatible
//!   with the target block it (Warning Event `IncompatibleClients` and a requeue naming
//!   each client's address and log group), except clients of `ignoreLogGroupsForUpgrade`
//!   and the cluster's own fdbserver processes. Skipped with `ignoreUpgradabilityChecks`.
//! - The operator must have the tools of the running version and of an incompatible
//!   upgrade's target (`--fdb-binaries-dir`, see
//!   [`crate::controller::versions::tool_choice`]): without them it cannot read the
//!   database, nor read it once the kill restarted the processes on the target. A missing
//!   tool is a Warning Event `MissingFdbTools` naming the version and the path, and a wait
//!   that ends the pass, so that an upgrade to a version without tools never stages nor
//!   kills anything. `ignoreUpgradabilityChecks` does not skip it (the Go operator likewise
//!   runs the target's fdbcli before any upgrade step,
//!   `controllers/check_client_compatibility.go`).

use async_trait::async_trait;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict, Wait, WaitOn};
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::upgrade::{BlockingClient, VersionChange, blocking_clients, version_change};
use crate::fdb::MissingTool;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CheckClientCompatibility;

/// What the step decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClientCheck {
    /// Nothing to check, or every client supports the target.
    Proceed,
    /// The version change is refused.
    Refused(String),
    /// The status could not be read during an upgrade: clients cannot be checked.
    Unknown(String),
    /// The operator lacks tools the cluster needs (the running version's, the
    /// upgrade target's).
    MissingTools(Vec<MissingTool>),
    /// These clients do not support the target.
    Blocked {
        /// The target.
        target: String,
        /// The clients.
        clients: Vec<BlockingClient>,
    },
}

impl ClientCheck {
    /// The requeue reason (`None` when the pass goes on).
    pub(crate) fn reason(&self) -> Option<String> {
        match self {
            Self::Proceed => None,
            Self::Refused(message) | Self::Unknown(message) => Some(message.clone()),
            Self::MissingTools(missing) => Some(format!(
                "the operator cannot run this cluster's FoundationDB tools: {}; add them to the operator image or point --fdb-binaries-dir at them",
                missing
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
            Self::Blocked { target, clients } => Some(format!(
                "the upgrade to {target} waits for {} connected clients that do not support it: {} (disconnect or upgrade them, add their log group to automationOptions.ignoreLogGroupsForUpgrade, or set ignoreUpgradabilityChecks)",
                clients.len(),
                clients
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        }
    }
}

/// Decides from the snapshot and the tools the operator lacks for the cluster.
pub(crate) fn decide(snapshot: &ClusterSnapshot, missing_tools: &[MissingTool]) -> ClientCheck {
    let change = version_change(snapshot.cluster());
    if let Some(message) = change.refusal_message() {
        return ClientCheck::Refused(message);
    }
    if !missing_tools.is_empty() {
        return ClientCheck::MissingTools(missing_tools.to_vec());
    }
    let VersionChange::Incompatible { to, .. } = change else {
        return ClientCheck::Proceed;
    };
    if snapshot.spec().ignore_upgradability_checks() {
        return ClientCheck::Proceed;
    }
    if snapshot.database_status().is_none() {
        return ClientCheck::Unknown(format!(
            "the upgrade to {to} waits: the database status cannot be read, so its clients cannot be checked"
        ));
    }
    let clients = blocking_clients(snapshot, &to);
    if clients.is_empty() {
        ClientCheck::Proceed
    } else {
        ClientCheck::Blocked {
            target: to.to_string(),
            clients,
        }
    }
}

#[async_trait]
impl Subreconciler for CheckClientCompatibility {
    fn name(&self) -> &'static str {
        "CheckClientCompatibility"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    fn decide(&self, snapshot: &ClusterSnapshot, facts: &PassFacts) -> Result<Verdict, StepError> {
        Ok(verdict(&decide(snapshot, &facts.settings.missing_tools)))
    }
}

/// The plan of `check`: nothing, or a wait that ends the pass, after a Warning Event
/// when the change is refused or clients block it.
pub(crate) fn verdict(check: &ClientCheck) -> Verdict {
    let Some(reason) = check.reason() else {
        return Verdict::Continue;
    };
    tracing::warn!(%reason, "version change waits");
    let event = match check {
        ClientCheck::Refused(_) => Some(EventReason::UnsupportedVersionChange),
        ClientCheck::Blocked { .. } => Some(EventReason::IncompatibleClients),
        ClientCheck::MissingTools(_) => Some(EventReason::MissingFdbTools),
        ClientCheck::Proceed | ClientCheck::Unknown(_) => None,
    };
    let events = event.map(|reason_of_event| Action::Event {
        reason: reason_of_event,
        action: "CheckClientCompatibility".to_owned(),
        note: reason.clone(),
    });
    Verdict::plain(events).then(Some(Wait::new(WaitOn::Database, reason)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, database};

    fn with_clients(spec: &str, running: &str, clients: serde_json::Value) -> ClusterSnapshot {
        let running = running.to_owned();
        Fixture::new(spec)
            .status(|s| s.running_version = Some(running))
            .connection_string("sample:abc@10.0.0.1:4501")
            .database(database(serde_json::json!({
                "client": {"database_status": {"available": true, "healthy": true}},
                "cluster": {
                    "processes": {"p1": {"address": "10.0.0.1:4501", "version": "7.1.57",
                                         "locality": {"instance_id": "storage-1"}}},
                    "clients": {"supported_versions": clients}
                }
            })))
            .build()
    }

    fn clients() -> serde_json::Value {
        serde_json::json!([
            {"client_version": "7.1.57", "connected_clients": [
                {"address": "10.9.0.1:4000", "log_group": "app"},
                {"address": "10.0.0.1:4501", "log_group": "sample"},
                {"address": "10.9.0.3:4000", "log_group": "fdb-kubernetes-operator"}
            ]},
            {"client_version": "7.3.43", "connected_clients": [
                {"address": "10.9.0.2:4000", "log_group": "app"}
            ]},
            {"client_version": "7.1.57", "connected_clients": [
                {"address": "10.9.0.2:4000", "log_group": "app"}
            ]}
        ])
    }

    #[test]
    fn an_old_client_blocks_an_incompatible_upgrade_and_is_named() {
        let snapshot = with_clients("version: 7.3.43", "7.1.57", clients());
        let decision = decide(&snapshot, &[]);
        let ClientCheck::Blocked { target, clients } = &decision else {
            panic!("{decision:?}");
        };
        assert_eq!(target, "7.3.43");
        // The fdbserver process (own address) and the operator's log group are ignored;
        // the multi-version client supports 7.3.
        assert_eq!(clients.len(), 1);
        assert_eq!(clients[0].address, "10.9.0.1:4000");
        let reason = decision.reason().unwrap();
        assert!(reason.contains("10.9.0.1:4000 (log group app"), "{reason}");
    }

    #[test]
    fn ignored_log_groups_and_the_override_let_the_upgrade_go_on() {
        let ignored = with_clients(
            "{version: 7.3.43, automationOptions: {ignoreLogGroupsForUpgrade: [app, fdb-kubernetes-operator]}}",
            "7.1.57",
            clients(),
        );
        assert_eq!(decide(&ignored, &[]), ClientCheck::Proceed);
        let overridden = with_clients(
            "{version: 7.3.43, ignoreUpgradabilityChecks: true}",
            "7.1.57",
            clients(),
        );
        assert_eq!(decide(&overridden, &[]), ClientCheck::Proceed);
    }

    #[test]
    fn patch_upgrades_do_not_check_clients() {
        let snapshot = with_clients("version: 7.1.63", "7.1.57", clients());
        assert_eq!(decide(&snapshot, &[]), ClientCheck::Proceed);
    }

    #[test]
    fn an_incompatible_downgrade_is_refused_with_a_message() {
        let snapshot = with_clients("version: 7.1.57", "7.3.43", serde_json::json!([]));
        let decision = decide(&snapshot, &[]);
        let ClientCheck::Refused(message) = &decision else {
            panic!("{decision:?}");
        };
        assert!(
            message.contains("downgrade from the running version 7.3.43"),
            "{message}"
        );
        let Verdict::Act(plan) = verdict(&decision) else {
            panic!("a Warning Event, then the wait");
        };
        assert!(matches!(
            &plan.actions[..],
            [only] if matches!(&only.action, Action::Event { reason: EventReason::UnsupportedVersionChange, note, .. } if note == message)
        ));
        assert_eq!(
            plan.then,
            Some(Wait::new(WaitOn::Database, message.clone()))
        );
        // A compatible downgrade is allowed.
        let patch_down = with_clients("version: 7.3.40", "7.3.43", serde_json::json!([]));
        assert_eq!(decide(&patch_down, &[]), ClientCheck::Proceed);
    }

    #[test]
    fn an_unreadable_database_blocks_the_upgrade_check() {
        let snapshot = Fixture::new("version: 7.3.43")
            .status(|s| s.running_version = Some("7.1.57".into()))
            .connection_string("sample:abc@10.0.0.1:4501")
            .unreadable()
            .build();
        assert!(matches!(decide(&snapshot, &[]), ClientCheck::Unknown(_)));
        assert!(
            matches!(
                verdict(&decide(&snapshot, &[])),
                Verdict::Wait(Wait {
                    waits_on: WaitOn::Database,
                    goes_on: false,
                    ..
                })
            ),
            "no Event when the clients cannot be read"
        );
        assert_eq!(verdict(&ClientCheck::Proceed), Verdict::Continue);
    }

    #[test]
    fn the_operators_own_connections_do_not_block_a_minor_upgrade() {
        // Every fdbcli the operator runs is a client of the database for a while,
        // listed with its version and the image's log group.
        let own = serde_json::json!({"client_version": "7.1.57", "connected_clients": [
            {"address": "10.1.0.9:45678", "log_group": "fdb-kubernetes-operator"}
        ]});
        let only_own = with_clients("version: 7.3.43", "7.1.57", serde_json::json!([own]));
        assert_eq!(decide(&only_own, &[]), ClientCheck::Proceed);
        let foreign = serde_json::json!({"client_version": "7.1.57", "connected_clients": [
            {"address": "10.9.0.7:4000", "log_group": "default"}
        ]});
        let with_foreign = with_clients(
            "version: 7.3.43",
            "7.1.57",
            serde_json::json!([own, foreign]),
        );
        let ClientCheck::Blocked { clients, .. } = decide(&with_foreign, &[]) else {
            panic!("a foreign 7.1 client blocks the upgrade");
        };
        assert_eq!(
            clients
                .iter()
                .map(|c| c.address.as_str())
                .collect::<Vec<_>>(),
            ["10.9.0.7:4000"]
        );
    }

    #[test]
    fn a_missing_tool_holds_the_upgrade_with_an_event_naming_it() {
        let missing = MissingTool {
            tool: crate::fdb::FdbTool::Fdbcli,
            version: "7.3.43".parse().unwrap(),
            path: "/usr/bin/fdb/7.3/fdbcli".into(),
        };
        for spec in [
            "version: 7.3.43",
            "{version: 7.3.43, ignoreUpgradabilityChecks: true}",
        ] {
            let snapshot = with_clients(spec, "7.1.57", serde_json::json!([]));
            let decision = decide(&snapshot, std::slice::from_ref(&missing));
            assert_eq!(decision, ClientCheck::MissingTools(vec![missing.clone()]));
            let reason = decision.reason().unwrap();
            assert!(
                reason.contains(
                    "no fdbcli for FoundationDB 7.3.43: /usr/bin/fdb/7.3/fdbcli does not exist"
                ),
                "{reason}"
            );
            let Verdict::Act(plan) = verdict(&decision) else {
                panic!("a Warning Event, then the wait");
            };
            assert!(matches!(
                &plan.actions[..],
                [only] if matches!(&only.action, Action::Event { reason: EventReason::MissingFdbTools, note, .. } if *note == reason)
            ));
            // The wait ends the pass: nothing after this step (staging, the kill) runs.
            assert_eq!(plan.then, Some(Wait::new(WaitOn::Database, reason)));
        }
        // A refused downgrade is reported as such, whatever tools there are.
        let down = with_clients("version: 7.1.57", "7.3.43", serde_json::json!([]));
        assert!(matches!(
            decide(&down, std::slice::from_ref(&missing)),
            ClientCheck::Refused(_)
        ));
    }
}
