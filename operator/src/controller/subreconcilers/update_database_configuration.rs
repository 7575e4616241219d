//! UpdateDatabaseConfiguration: `configure new <desired>` once, when every live process
//! group reports to the database (then `status.configured`); later `configure` the
//! differences between the live and the desired configuration, only while the database
//! is available and healthy.

use std::collections::BTreeSet;

use async_trait::async_trait;
use fdb_shared::api::{DatabaseConfiguration, FoundationDBCluster};
use fdb_shared::cluster_math::{
    configuration_string, configure_change_command, desired_database_configuration,
};
use fdb_shared::status_json::DatabaseStatus;

use super::Subreconciler;
use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::events::{EventReason, publish};
use crate::controller::outcome::StepOutcome;
use crate::controller::pass::PassState;
use crate::fdb::{AdminClient, AdminError};

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct UpdateDatabaseConfiguration;

/// What to do about the database configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigurationAction {
    /// Nothing.
    None,
    /// The database already has a configuration: record `configured`.
    MarkConfigured,
    /// Wait, for the reason given.
    Wait(String),
    /// `configure new` with this configuration.
    ConfigureNew(DatabaseConfiguration),
    /// `configure` this configuration (the live one differs).
    Change(DatabaseConfiguration),
}

/// Decides from the cluster and the database status.
pub fn decide(cluster: &FoundationDBCluster, db: &DatabaseStatus) -> ConfigurationAction {
    let status = cluster.status.clone().unwrap_or_default();
    let desired = desired_database_configuration(&cluster.spec);
    if !status.configured {
        if db.cluster.configuration.is_some() {
            return ConfigurationAction::MarkConfigured;
        }
        let reporting: BTreeSet<&str> = db
            .cluster
            .processes
            .values()
            .filter_map(|p| p.locality.instance_id.as_deref())
            .collect();
        let live: Vec<&str> = status
            .process_groups
            .iter()
            .filter(|g| !g.is_marked_for_removal())
            .map(|g| g.process_group_id.as_str())
            .collect();
        let missing = live.iter().filter(|id| !reporting.contains(*id)).count();
        if missing > 0 || live.is_empty() {
            return ConfigurationAction::Wait(format!(
                "waiting for {missing} of {} process groups to report to the database before configuring it",
                live.len()
            ));
        }
        return ConfigurationAction::ConfigureNew(desired);
    }
    let Some(live) = &db.cluster.configuration else {
        return ConfigurationAction::Wait("the database reports no configuration yet".to_owned());
    };
    if configure_change_command(live, &desired).is_none() {
        return ConfigurationAction::None;
    }
    if !db.is_available() || !db.is_healthy() {
        return ConfigurationAction::Wait(
            "waiting for the database to be available and healthy before changing its configuration"
                .to_owned(),
        );
    }
    if let Some(seconds) = db.cluster.recovery_state.seconds_since_last_recovered
        && seconds < MINIMUM_SECONDS_SINCE_RECOVERY
    {
        // A configuration change causes a recovery itself: not right after another one.
        return ConfigurationAction::Wait(format!(
            "the last recovery was {seconds:.0}s ago; changing the configuration waits until {MINIMUM_SECONDS_SINCE_RECOVERY:.0}s have passed"
        ));
    }
    ConfigurationAction::Change(desired)
}

/// How long after a recovery a configuration change may start (operator-behavior §8).
const MINIMUM_SECONDS_SINCE_RECOVERY: f64 = 120.0;

fn already_configured(error: &AdminError) -> bool {
    matches!(error, AdminError::Failed { stderr, .. } if stderr.contains("already exists"))
}

#[async_trait]
impl Subreconciler for UpdateDatabaseConfiguration {
    fn name(&self) -> &'static str {
        "UpdateDatabaseConfiguration"
    }

    async fn reconcile(
        &self,
        ctx: &Context,
        pass: &mut PassState,
    ) -> Result<StepOutcome, StepError> {
        if pass.status().connection_string.is_none() {
            return Ok(StepOutcome::Continue);
        }
        let db = match pass.database_status(ctx).await {
            Ok(db) => db,
            Err(message) => {
                return Ok(StepOutcome::Requeue {
                    delay: ctx.settings.database_wait,
                    reason: format!("cannot read the database status: {message}"),
                });
            }
        };
        match decide(pass.cluster(), &db) {
            ConfigurationAction::None => Ok(StepOutcome::Continue),
            ConfigurationAction::Wait(reason) => Ok(StepOutcome::Requeue {
                delay: ctx.settings.database_wait,
                reason,
            }),
            ConfigurationAction::MarkConfigured => {
                pass.update_status(ctx, |s| s.configured = true).await?;
                Ok(StepOutcome::Continue)
            }
            ConfigurationAction::ConfigureNew(desired) => {
                let admin = pass.admin(ctx)?;
                let result = admin.configure(&desired, true).await;
                pass.note_admin_write();
                match result {
                    Ok(()) => {}
                    Err(error) if already_configured(&error) => {}
                    Err(error) => {
                        return Err(StepError::admin("configure the new database")(error));
                    }
                }
                pass.update_status(ctx, |s| s.configured = true).await?;
                publish(
                    ctx,
                    pass.cluster(),
                    EventReason::DatabaseConfigured,
                    "ConfigureNew",
                    format!("configure new {}", configuration_string(&desired)),
                )
                .await;
                Ok(StepOutcome::Continue)
            }
            ConfigurationAction::Change(desired) => {
                let admin = pass.admin(ctx)?;
                let command = db
                    .cluster
                    .configuration
                    .as_ref()
                    .and_then(|live| configure_change_command(live, &desired))
                    .unwrap_or_default();
                let result = admin.configure(&desired, false).await;
                pass.note_admin_write();
                result.map_err(StepError::admin("change the database configuration"))?;
                publish(
                    ctx,
                    pass.cluster(),
                    EventReason::ConfigurationChanged,
                    "Configure",
                    command,
                )
                .await;
                Ok(StepOutcome::Continue)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::process_groups::new_process_group;
    use fdb_shared::api::{FoundationDBClusterStatus, ProcessClass, RedundancyMode};

    fn cluster(configured: bool) -> FoundationDBCluster {
        let mut cluster: FoundationDBCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample", "namespace": "ns"}, "spec": {"version": "7.1.57"}
        }))
        .unwrap();
        cluster.status = Some(FoundationDBClusterStatus {
            configured,
            process_groups: vec![
                new_process_group("log-1".into(), ProcessClass::Log, 0),
                new_process_group("storage-1".into(), ProcessClass::Storage, 0),
            ],
            ..Default::default()
        });
        cluster
    }

    fn db(
        instances: &[&str],
        configuration: Option<serde_json::Value>,
        available: bool,
    ) -> DatabaseStatus {
        let processes: serde_json::Map<String, serde_json::Value> = instances
            .iter()
            .map(|id| {
                (
                    (*id).to_owned(),
                    serde_json::json!({"locality": {"instance_id": id}}),
                )
            })
            .collect();
        let mut cluster = serde_json::json!({"processes": processes});
        if let Some(configuration) = configuration {
            cluster["configuration"] = configuration;
        }
        serde_json::from_value(serde_json::json!({
            "client": {"database_status": {"available": available, "healthy": available}},
            "cluster": cluster
        }))
        .unwrap()
    }

    #[test]
    fn configure_new_waits_for_every_group() {
        let action = decide(&cluster(false), &db(&["log-1"], None, false));
        assert_eq!(
            action,
            ConfigurationAction::Wait(
                "waiting for 1 of 2 process groups to report to the database before configuring it"
                    .to_owned()
            )
        );
        match decide(&cluster(false), &db(&["log-1", "storage-1"], None, false)) {
            ConfigurationAction::ConfigureNew(desired) => {
                assert_eq!(desired.redundancy_mode, Some(RedundancyMode::Double));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn an_existing_configuration_is_recorded_then_changed_only_when_safe() {
        let configured = serde_json::json!({"redundancy_mode": "single", "storage_engine": "ssd-2",
            "logs": 3, "proxies": 3, "resolvers": 1, "usable_regions": 1});
        assert_eq!(
            decide(&cluster(false), &db(&[], Some(configured.clone()), true)),
            ConfigurationAction::MarkConfigured
        );
        assert!(matches!(
            decide(&cluster(true), &db(&[], Some(configured.clone()), false)),
            ConfigurationAction::Wait(_)
        ));
        assert!(matches!(
            decide(&cluster(true), &db(&[], Some(configured.clone()), true)),
            ConfigurationAction::Change(_)
        ));
        let mut recovering = db(&[], Some(configured), true);
        recovering
            .cluster
            .recovery_state
            .seconds_since_last_recovered = Some(30.0);
        match decide(&cluster(true), &recovering) {
            ConfigurationAction::Wait(reason) => assert!(reason.contains("30s ago"), "{reason}"),
            other => panic!("a change right after a recovery: {other:?}"),
        }
        let desired =
            serde_json::to_value(desired_database_configuration(&cluster(true).spec)).unwrap();
        assert_eq!(
            decide(&cluster(true), &db(&[], Some(desired), true)),
            ConfigurationAction::None
        );
    }
}
