//! How each action is performed through the pass's [`PassIo`], once the rules admitted
//! it: database commands, object writes, the status and Events.

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::DatabaseConfiguration;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};

use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::object_kind::{NewObject, ObjectKind};
use crate::controller::pass::io::{PassIo, publish};
use crate::controller::pass::plan::{Action, PassFacts};

use super::route::{Command, ObjectWrite, Record, Routed, SharedList, UpgradeBookkeeping, route};
use crate::controller::pod_agent::config_query::PodConfigResult;
use crate::controller::safety::locks;
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::status::mutations::StatusMutation;
use crate::controller::versions::pending_upgrades::plan_pending_list;
use crate::fdb::{AdminClient as _, AdminError, RestartList};
use fdb_shared::monitor_conf::process_config::OUTDATED_CONFIG_MAP_ANNOTATION;

fn already_configured(error: &AdminError) -> bool {
    matches!(error, AdminError::Failed { stderr, .. } if stderr.contains("already exists"))
}

fn joined(items: &[impl ToString]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Performs one action; returns what it did, in words.
pub(super) async fn perform(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    facts: &mut PassFacts,
    action: Action,
) -> Result<String, StepError> {
    match route(action) {
        Routed::Command(command) => run_command(ctx, snapshot, io, command).await,
        Routed::Write(write_action) => write(ctx, io, facts, write_action).await,
        Routed::Record(edit) => record(ctx, snapshot, io, edit).await,
        Routed::Upgrade(upgrade) => upgrade_bookkeeping(ctx, snapshot, io, facts, upgrade).await,
        Routed::SharedList(list) => shared_list(ctx, snapshot, io, facts, list).await,
        Routed::UpdateDenyList { stage } => update_deny_list(ctx, snapshot, io, stage).await,
        Routed::AskPodAgents(query) => {
            let answers = super::pod_agents::ask(ctx, snapshot, &query).await;
            let confirmed = answers
                .iter()
                .filter(|a| **a == PodConfigResult::Confirmed)
                .count();
            facts.answers.pod_config_answers = Some(answers);
            Ok(format!(
                "asked {} pod agents ({confirmed} confirmed)",
                query.candidates.len()
            ))
        }
        Routed::NudgeMonitor(pod) => {
            let seen = ctx.clock.now_unix().to_string();
            let patch = serde_json::json!({"metadata": {"annotations": {
                OUTDATED_CONFIG_MAP_ANNOTATION: seen
            }}});
            let what = format!("ask the monitor of pod {pod} to reload");
            io.patch::<Pod>(ctx, &pod, &patch, what.clone()).await?;
            Ok(what)
        }
    }
}

/// The restart and exclusion lists of a database shared by several instances: this
/// instance's entries written and every instance's read back, or entries cleared.
async fn shared_list(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    facts: &mut PassFacts,
    list: SharedList,
) -> Result<String, StepError> {
    match list {
        SharedList::SyncRestartLists { pending, ready } => {
            let pair = [RestartList::Pending, RestartList::Ready];
            let (what, lists) =
                super::restart_lists::sync(ctx, snapshot, io, pair, &pending, &ready).await?;
            facts.answers.restart_lists = lists;
            Ok(what)
        }
        SharedList::ClearReadyForRestart(entries) => {
            let lists = [RestartList::Ready];
            super::restart_lists::clear(ctx, snapshot, io, &lists, &entries).await
        }
        SharedList::SyncExclusionLists { pending, ready } => {
            let pair = [RestartList::PendingExclusion, RestartList::ReadyExclusion];
            let (what, lists) =
                super::restart_lists::sync(ctx, snapshot, io, pair, &pending, &ready).await?;
            facts.answers.exclusion_lists = lists;
            Ok(what)
        }
        SharedList::ClearExclusionEntries(entries) => {
            let lists = [RestartList::PendingExclusion, RestartList::ReadyExclusion];
            super::restart_lists::clear(ctx, snapshot, io, &lists, &entries).await
        }
    }
}

/// The upgrade's shared bookkeeping: the pending-upgrade list (joined, cleared, its
/// clearing remembered across passes) and giving the lock up.
async fn upgrade_bookkeeping(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    facts: &mut PassFacts,
    action: UpgradeBookkeeping,
) -> Result<String, StepError> {
    match action {
        UpgradeBookkeeping::JoinPendingUpgrades { target, groups } => {
            join_pending_upgrades(ctx, snapshot, io, facts, &target, &groups).await
        }
        UpgradeBookkeeping::ClearPendingUpgrades => {
            // A failure is only logged: it is tried again next pass, and entries left
            // behind never block a later upgrade (they name the old target).
            match io.admin(ctx, snapshot)?.clear_pending_upgrades().await {
                Ok(()) => {
                    tracing::info!("cleared the pending-upgrade list after the upgrade's kill");
                    ctx.upgrade_cleanup
                        .done(snapshot.namespace(), snapshot.name());
                    facts.remembered.upgrade_cleanup_pending = false;
                    Ok("cleared the pending-upgrade list".to_owned())
                }
                Err(error) => {
                    let error = fdb_shared::error_chain::ErrorChain(&error);
                    tracing::warn!(%error, "could not clear the pending-upgrade list yet");
                    Ok(format!(
                        "could not clear the pending-upgrade list yet: {error}"
                    ))
                }
            }
        }
        UpgradeBookkeeping::RememberUpgradeCleanup => {
            ctx.upgrade_cleanup
                .mark(snapshot.namespace(), snapshot.name());
            facts.remembered.upgrade_cleanup_pending = true;
            Ok("the pending-upgrade list is cleared once the database is back".to_owned())
        }
        UpgradeBookkeeping::RememberUpgradeKill(target) => {
            let record = ctx.upgrade_kills.count(
                snapshot.namespace(),
                snapshot.name(),
                &target,
                snapshot.now_unix(),
            );
            let wait = crate::controller::retry_backoff::backoff(record.kills);
            facts.remembered.upgrade_kills = Some(record);
            Ok(format!(
                "another kill for the upgrade to {target} waits at least {}s",
                wait.as_secs()
            ))
        }
        UpgradeBookkeeping::ReleaseLock => {
            locks::release(ctx, snapshot, io).await?;
            facts.record.lock_held = false;
            Ok("gave the lock up".to_owned())
        }
    }
}

/// Adds the ready process groups to the pending-upgrade list (and drops stale entries),
/// recording which of them the list now agrees on.
async fn join_pending_upgrades(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    facts: &mut PassFacts,
    target: &fdb_shared::FdbVersion,
    groups: &[String],
) -> Result<String, StepError> {
    let admin = io.admin(ctx, snapshot)?;
    let listed = admin
        .pending_upgrades()
        .await
        .map_err(StepError::admin("read the pending-upgrade list"))?;
    let update = plan_pending_list(&listed, target, groups);
    if !update.add.is_empty() || !update.stale.is_empty() {
        tracing::info!(
            added = update.add.len(),
            stale = update.stale.len(),
            "adding the ready process groups to the pending-upgrade list"
        );
        admin
            .update_pending_upgrades(&update.add, &update.stale)
            .await
            .map_err(StepError::admin(format!(
                "add {} process groups to the pending-upgrade list for {target}",
                update.add.len()
            )))?;
    }
    let what = format!(
        "{} of {} process groups on the pending-upgrade list for {target}",
        update.agreed.len(),
        groups.len()
    );
    facts.answers.pending_upgrade_agreed = Some(update.agreed);
    Ok(what)
}

/// A database command.
async fn run_command(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    command: Command,
) -> Result<String, StepError> {
    match command {
        Command::Configure { configuration, new } => {
            configure(ctx, snapshot, io, &configuration, new).await
        }
        Command::Exclude(targets) => {
            let text = joined(&targets);
            tracing::info!(targets = %text, "excluding");
            io.admin(ctx, snapshot)?
                .exclude(&targets, false)
                .await
                .map_err(StepError::admin(format!("exclude {text}")))?;
            Ok(format!("exclude {text}"))
        }
        Command::Include(targets) => {
            let text = joined(&targets);
            io.admin(ctx, snapshot)?
                .include(&targets)
                .await
                .map_err(StepError::admin(format!("include {text}")))?;
            Ok(format!("include {text}"))
        }
        Command::ChangeCoordinators {
            coordinators,
            reason,
        } => change_coordinators(ctx, snapshot, io, &coordinators, &reason).await,
        Command::Kill(addresses) => {
            tracing::info!(processes = addresses.len(), "killing processes");
            io.admin(ctx, snapshot)?
                .kill(&addresses)
                .await
                .map_err(StepError::admin(format!("kill {}", joined(&addresses))))?;
            Ok(format!("kill of {} processes", addresses.len()))
        }
        Command::SetMaintenanceZone { zone, seconds } => {
            tracing::info!(%zone, seconds, "setting the maintenance zone");
            io.admin(ctx, snapshot)?
                .set_maintenance_zone(&zone, seconds)
                .await
                .map_err(StepError::admin(format!("set maintenance zone {zone}")))?;
            Ok(format!("maintenance zone {zone}"))
        }
        Command::ResetMaintenanceZone => {
            io.admin(ctx, snapshot)?
                .reset_maintenance_zone()
                .await
                .map_err(StepError::admin("reset the maintenance zone"))?;
            Ok("maintenance off".to_owned())
        }
    }
}

/// `configure` (`new` for a new database: "already exists" is then fine).
async fn configure(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    configuration: &DatabaseConfiguration,
    new: bool,
) -> Result<String, StepError> {
    let admin = io.admin(ctx, snapshot)?;
    if new {
        match admin.configure(configuration, true).await {
            Ok(()) => {}
            Err(error) if already_configured(&error) => {}
            Err(error) => return Err(StepError::admin("configure the new database")(error)),
        }
        return Ok("configure new".to_owned());
    }
    admin
        .configure(configuration, false)
        .await
        .map_err(StepError::admin("change the database configuration"))?;
    Ok("configure".to_owned())
}

/// `coordinators`, then the new connection string into the status (written now: the
/// pods and the ConfigMap follow it) and an Event.
async fn change_coordinators(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    coordinators: &[ProcessAddress],
    reason: &str,
) -> Result<String, StepError> {
    tracing::info!(%reason, ?coordinators, "changing coordinators");
    let connection = io
        .admin(ctx, snapshot)?
        .change_coordinators(coordinators)
        .await
        .map_err(StepError::admin("change the coordinators"))?;
    let text = connection.to_string();
    io.apply_status(
        ctx,
        snapshot,
        &[StatusMutation::SetConnectionString(text.clone())],
    )
    .await?;
    publish(
        ctx,
        snapshot.cluster(),
        EventReason::CoordinatorsChanged,
        "ChangeCoordinators",
        format!("{reason}; new connection string {text}"),
    )
    .await;
    Ok("coordinators change".to_owned())
}

/// A write of a Kubernetes object.
async fn write(
    ctx: &Context,
    io: &mut PassIo,
    facts: &mut PassFacts,
    action: ObjectWrite,
) -> Result<String, StepError> {
    match action {
        ObjectWrite::DeletePod(name) => {
            io.delete::<Pod>(ctx, &name, format!("delete pod {name}"))
                .await?;
            facts.record.deleted_pods.push(name.clone());
            Ok(format!("deleted pod {name}"))
        }
        ObjectWrite::Create(object) => {
            let what = format!("created {} {}", object.kind().noun(), object.name());
            match object {
                NewObject::Pod(pod) => io.create_all(ctx, vec![*pod], "pod").await?,
                NewObject::Pvc(pvc) => io.create_all(ctx, vec![*pvc], "PVC").await?,
                NewObject::Service(service) => {
                    io.create_all(ctx, vec![*service], "service").await?
                }
                NewObject::ConfigMap(map) => io.create_all(ctx, vec![*map], "configmap").await?,
            };
            Ok(what)
        }
        ObjectWrite::Patch { kind, name, patch } => {
            let what = format!("patch {} {name}", kind.noun());
            tracing::info!(%name, kind = kind.noun(), "patching");
            match kind {
                ObjectKind::Pods => io.patch::<Pod>(ctx, &name, &patch, what.clone()).await?,
                ObjectKind::Pvcs => {
                    io.patch::<PersistentVolumeClaim>(ctx, &name, &patch, what.clone())
                        .await?;
                }
                ObjectKind::Services => {
                    io.patch::<Service>(ctx, &name, &patch, what.clone())
                        .await?;
                }
                ObjectKind::ConfigMap => {
                    io.patch::<ConfigMap>(ctx, &name, &patch, what.clone())
                        .await?;
                }
            }
            Ok(what)
        }
        ObjectWrite::SetContainerImage {
            pod,
            container,
            image,
        } => {
            let what = format!("set the {container} image of pod {pod} to {image}");
            tracing::info!(%pod, %container, %image, "changing a container image");
            // Strategic: the containers list merges by name, so only this one changes.
            let patch = serde_json::json!({"spec": {"containers": [
                {"name": container, "image": image}
            ]}});
            io.patch_strategic::<Pod>(ctx, &pod, &patch, what.clone())
                .await?;
            Ok(what)
        }
        ObjectWrite::Delete { kind, name } => {
            let what = format!("delete {} {name}", kind.noun());
            tracing::info!(%name, kind = kind.noun(), "deleting");
            match kind {
                ObjectKind::Pods => {
                    io.delete::<Pod>(ctx, &name, what.clone()).await?;
                    facts.record.deleted_pods.push(name);
                }
                ObjectKind::Pvcs => {
                    io.delete::<PersistentVolumeClaim>(ctx, &name, what.clone())
                        .await?;
                }
                ObjectKind::Services => io.delete::<Service>(ctx, &name, what.clone()).await?,
                ObjectKind::ConfigMap => io.delete::<ConfigMap>(ctx, &name, what.clone()).await?,
            }
            Ok(what)
        }
    }
}

/// A status edit or an Event.
async fn record(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    edit: Record,
) -> Result<String, StepError> {
    match edit {
        Record::WriteStatus(mutations) => {
            io.apply_status(ctx, snapshot, &mutations).await?;
            Ok("status written".to_owned())
        }
        Record::StageStatusDecision(decision) => {
            io.stage_status_if_changed(snapshot, &decision.status);
            io.set_judged_reconciled(decision.reconciled);
            Ok("status decided".to_owned())
        }
        Record::StageStatus(mutations) => {
            io.stage_mutations(snapshot, &mutations)?;
            Ok("status staged".to_owned())
        }
        Record::Event {
            reason,
            action,
            note,
        } => {
            publish(ctx, snapshot.cluster(), reason, &action, note).await;
            Ok("event".to_owned())
        }
    }
}

/// Reads the deny list, changes what the spec asks, stages the list as it then is.
async fn update_deny_list(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    stage: bool,
) -> Result<String, StepError> {
    let admin = io.admin(ctx, snapshot)?;
    let live = admin
        .deny_list()
        .await
        .map_err(StepError::admin("read the operator lock deny list"))?;
    let (add, remove) = locks::deny_list_changes(snapshot, &live);
    let mut listed: Vec<String> = live
        .iter()
        .filter(|id| !remove.contains(id))
        .chain(&add)
        .cloned()
        .collect();
    listed.sort();
    listed.dedup();
    if stage {
        io.stage_mutations(snapshot, &[StatusMutation::SetLockDenyList(listed)])?;
    }
    if add.is_empty() && remove.is_empty() {
        return Ok("deny list unchanged".to_owned());
    }
    tracing::info!(?add, ?remove, "updating the operator lock deny list");
    admin
        .update_deny_list(&add, &remove)
        .await
        .map_err(StepError::admin("update the operator lock deny list"))?;
    publish(
        ctx,
        snapshot.cluster(),
        EventReason::LockDenyListChanged,
        "UpdateLockConfiguration",
        format!("deny list: added {add:?}, removed {remove:?}"),
    )
    .await;
    Ok("deny list updated".to_owned())
}
