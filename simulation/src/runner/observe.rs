//! What the runner looks at: the objects and the database around each action (for the
//! invariants), and the state of the world after each step (for the result).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::cluster_math::fault_tolerance;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use serde_json::Value;

use crate::event_log::USER_BY;
use crate::invariants::{ActionWindow, ClientView, ServiceState, TrackedObject, divergences};
use crate::result::{EventSource, StepResult};
use crate::scenario::{ResourceKind, StepSpec};

use super::fdb_bridge;
use super::steps::StepOutcomeSummary;
use super::world_views::{GroupLabels, desired_world, note_marked_groups};
pub(super) use super::world_views::{MAIN_CONTAINER, SIDECAR_CONTAINER};
use super::{RunError, Runner};

/// Admin commands that change what the database serves.
const ADMIN_ACTIONS: [&str; 3] = ["kill", "exclude", "configure"];

/// The cluster's objects and the database's service before an action.
pub(super) struct Tracked {
    pods: BTreeMap<String, TrackedObject>,
    pvcs: BTreeMap<String, TrackedObject>,
    service: ServiceState,
    lost_shards: u64,
    running_processes: usize,
    /// The process groups with a process running (the snapshot lists running ones).
    running_groups: BTreeSet<String>,
    /// Whether the database was already unavailable (an outage open) before the action.
    outage_open: bool,
}

/// The details of the admin commands among `events` (`kill 10.0.0.1:4501 ...`).
fn admin_actions_of(events: &[crate::result::Event]) -> Vec<&str> {
    events
        .iter()
        .filter(|event| {
            event.source == EventSource::Fdb
                && ADMIN_ACTIONS.contains(&event.action.as_str())
                // A served world's user acts while a pass runs: not the pass's action.
                && event.by.as_deref() != Some(USER_BY)
        })
        .map(|event| event.detail.as_str())
        .collect()
}

/// A kill naming as many addresses as processes ran is the cluster-wide kill of a
/// bounce, whose outage may last a restart plus a recovery.
/// The process groups the user's `buggify.ignoreDuringRestart` keeps out of every
/// restart: the operator must leave their processes running, so a bounce of every other
/// process is the cluster-wide bounce, and a version they keep is the user's choice.
fn ignored_during_restart(cluster: Option<&FoundationDBCluster>) -> BTreeSet<String> {
    cluster
        .map(|cluster| {
            cluster
                .spec
                .buggify
                .ignore_during_restart
                .iter()
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the process belongs to one of `ignored`.
fn in_groups(process: &crate::fdb::SimProcessSnapshot, ignored: &BTreeSet<String>) -> bool {
    process
        .locality
        .get("instance_id")
        .is_some_and(|id| ignored.contains(id))
}

fn is_cluster_wide_kill(admin_actions: &[&str], running_processes: usize) -> bool {
    admin_actions.iter().any(|detail| {
        detail.strip_prefix("kill ").is_some_and(|addresses| {
            addresses.split_whitespace().count() >= running_processes.max(1)
        })
    })
}

/// Objects whose deletion was requested between `before` and `after`: not terminating
/// before, and gone or terminating after (by uid, so a recreated object is another one).
fn requested(
    before: &BTreeMap<String, TrackedObject>,
    after: &BTreeMap<String, TrackedObject>,
) -> Vec<TrackedObject> {
    before
        .values()
        .filter(|object| !object.terminating)
        .filter(|object| after.get(&object.uid).is_none_or(|now| now.terminating))
        .cloned()
        .collect()
}

impl Runner {
    pub(super) fn cluster_object(&self) -> Option<FoundationDBCluster> {
        self.api
            .get_typed::<FoundationDBCluster>(Some(&self.namespace), &self.name)
            .ok()
            .flatten()
    }

    /// The namespace's pods, ordered by name: the world's own list, whose objects are
    /// decoded once per change (decoding every pod for every judgement was a quarter
    /// of a served world's CPU at 2600 pods).
    pub(super) fn pods(&self) -> Result<Vec<Arc<Pod>>, RunError> {
        let mut pods = self.world.list_pods()?;
        pods.retain(|pod| pod.metadata.namespace.as_deref() == Some(self.namespace.as_str()));
        Ok(pods)
    }

    /// The namespace's PVCs, ordered by name (the world's list, as [`Self::pods`]).
    pub(super) fn pvcs(&self) -> Result<Vec<Arc<PersistentVolumeClaim>>, RunError> {
        let mut pvcs = self.world.list_pvcs()?;
        pvcs.retain(|pvc| pvc.metadata.namespace.as_deref() == Some(self.namespace.as_str()));
        Ok(pvcs)
    }

    /// The cluster's pods and PVCs by uid, with the addresses each group's processes
    /// were seen at.
    #[allow(clippy::type_complexity)]
    fn tracked_objects(
        &self,
    ) -> Result<
        (
            BTreeMap<String, TrackedObject>,
            BTreeMap<String, TrackedObject>,
        ),
        RunError,
    > {
        let snapshot = self.fdb.snapshot();
        let mut addresses: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for process in &snapshot.processes {
            if let Some(group) = process.locality.get("instance_id") {
                // `IP:port:tls` and `[v6]:port` too: the host, as a coordinator's is kept.
                let host = ProcessAddress::parse(&process.address)
                    .map_or_else(|_| process.address.clone(), |address| address.host);
                addresses.entry(group.as_str()).or_default().push(host);
            }
        }
        let keys = GroupLabels::of(self.cluster_object().as_ref());
        let track = |meta: &kube::api::ObjectMeta, pod_ips: Vec<String>| {
            let (group, class) = keys.group_of(meta.labels.as_ref()?)?;
            let mut seen: Vec<String> = pod_ips;
            seen.extend(addresses.get(group.as_str()).cloned().unwrap_or_default());
            Some((
                meta.uid.clone().unwrap_or_default(),
                TrackedObject {
                    name: meta.name.clone().unwrap_or_default(),
                    uid: meta.uid.clone().unwrap_or_default(),
                    group,
                    class,
                    terminating: meta.deletion_timestamp.is_some(),
                    addresses: seen,
                },
            ))
        };
        let pods = self
            .pods()?
            .iter()
            .filter_map(|pod| {
                track(
                    &pod.metadata,
                    pod.status.as_ref().map_or_else(Vec::new, |status| {
                        // Every address of a dual-stack pod, the primary first.
                        let listed = status.pod_ips.iter().flatten().map(|ip| ip.ip.clone());
                        let mut ips: Vec<String> = status.pod_ip.clone().into_iter().collect();
                        ips.extend(listed.filter(|ip| Some(ip) != status.pod_ip.as_ref()));
                        ips
                    }),
                )
            })
            .collect();
        let pvcs = self
            .pvcs()?
            .iter()
            .filter_map(|pvc| track(&pvc.metadata, Vec::new()))
            .collect();
        Ok((pods, pvcs))
    }

    /// What an action is judged against: the objects and the database's service.
    pub(super) fn track(&self) -> Result<Tracked, RunError> {
        let (pods, pvcs) = self.tracked_objects()?;
        let snapshot = self.fdb.snapshot();
        Ok(Tracked {
            pods,
            pvcs,
            service: fdb_bridge::service_state(&self.fdb),
            lost_shards: fdb_bridge::lost_shards(&self.fdb),
            // The processes the operator may restart (the cluster-wide bounce's scope):
            // those the database lists. A process already on another protocol (one
            // that restarted early on an upgrade's staged binary) is not listed, so
            // fdbcli cannot name it in a kill, and it needs no restart (issue 36).
            running_processes: {
                let ignored = ignored_during_restart(self.cluster_object().as_ref());
                snapshot
                    .processes
                    .iter()
                    .filter(|p| !in_groups(p, &ignored))
                    .filter(|p| {
                        snapshot
                            .version
                            .is_none_or(|v| v.is_protocol_compatible(&p.version))
                    })
                    .count()
            },
            running_groups: snapshot
                .processes
                .iter()
                .filter_map(|p| p.locality.get("instance_id").cloned())
                .collect(),
            outage_open: fdb_bridge::outages(&self.fdb)
                .last()
                .is_some_and(|outage| outage.end.is_none()),
        })
    }

    /// Judges an action (an operator pass, or an `act` step) from the world: the
    /// deletions it requested, then, once the world has reacted, what it took out of
    /// service, lost data, and outages. `as_operator`: judged as the operator's.
    pub(super) async fn judge_action(
        &mut self,
        before: &Tracked,
        events_before: usize,
        by: &str,
        as_operator: bool,
    ) -> Result<(), RunError> {
        let (pods, pvcs) = self.tracked_objects()?;
        let deleted_pods = requested(&before.pods, &pods);
        let deleted_pvcs = requested(&before.pvcs, &pvcs);
        let mut events = self.log.events_since(events_before);
        if !self.fleet.is_empty() {
            // A fleet's databases are apart: an operator outside may act on several in
            // one round, and only the commands issued for this view's cluster act on
            // its database (one cluster's bounce is not another's zones going down).
            events.retain(|event| event.issuer.as_deref().is_none_or(|i| i == self.name));
        }
        let admin_actions = admin_actions_of(&events);
        let evictions = events
            .iter()
            .any(|event| event.source == EventSource::K8s && event.action == "evict");
        let cluster_wide_kill = is_cluster_wide_kill(&admin_actions, before.running_processes);
        let acted = !deleted_pods.is_empty()
            || !deleted_pvcs.is_empty()
            || !admin_actions.is_empty()
            || evictions;
        if as_operator {
            self.check_operator_deletions(by, &deleted_pods, &deleted_pvcs);
        }
        // What the action took out of service shows once the world has reacted.
        self.settle().await?;
        let after = fdb_bridge::service_state(&self.fdb);
        let lost = fdb_bridge::lost_shards(&self.fdb);
        let (time, pass) = (self.elapsed(), self.log.position().pass);
        // The one cluster-wide kill of a bounce (knob rollout, upgrade) takes every zone
        // down by design and brings it back in place, data on its disks: it is judged by
        // how long the database is unavailable (`unavailable-by-operator`), not by zones.
        // Anything else in the same action (deletions, evictions, exclusions) still is.
        let only_the_bounce = cluster_wide_kill
            && admin_actions.len() == 1
            && deleted_pods.is_empty()
            && deleted_pvcs.is_empty()
            && !evictions;
        let mode_tolerance = self.cluster_object().map_or(1, |cluster| {
            usize::try_from(fault_tolerance(&cluster.spec.redundancy_mode())).unwrap_or(0)
        });
        // In single redundancy a storage restart leaves that zone's data without a live
        // replica until the process is back: like the bounce's kill, it may last a
        // restart plus a recovery.
        let single_zone_restart = mode_tolerance == 0
            && after
                .storage_zones_down
                .difference(&before.service.storage_zones_down)
                .next()
                .is_some();
        if as_operator && acted && !only_the_bounce {
            // Single redundancy tolerates no zone failure, but one zone restarted on
            // purpose leaves its data unavailable until it returns, not lost (the Go
            // operator rolls such clusters one zone at a time): one zone out of service
            // is within bounds there, two at once are not.
            let tolerance = mode_tolerance.max(1);
            self.judged.monitor.check_fault_tolerance(
                time,
                pass,
                &before.service,
                &after,
                tolerance,
            );
        }
        // Deleting a pod whose processes had already stopped (a failed pod, one a fault
        // took down) stops nothing: an outage that begins then is the fault's, not the
        // deletion's. Nor does an action taken while the database is already unavailable
        // begin that outage: a fault that struck earlier in the same second did (the
        // attribution window is a second wide, so the action would otherwise be blamed).
        let stopped_something = !before.outage_open
            && (deleted_pods
                .iter()
                .any(|pod| before.running_groups.contains(&pod.group))
                || !deleted_pvcs.is_empty()
                || !admin_actions.is_empty()
                || evictions);
        if as_operator && stopped_something {
            self.judged.operator_acted(
                self.now().as_second(),
                cluster_wide_kill || single_zone_restart,
            );
        }
        self.judged
            .monitor
            .check_lost_shards(time, pass, before.lost_shards, lost, by);
        self.check_outages();
        Ok(())
    }

    /// The deletions an operator action requested, judged against what the database
    /// still needs (data not yet moved off, coordinators).
    fn check_operator_deletions(
        &mut self,
        by: &str,
        deleted_pods: &[TrackedObject],
        deleted_pvcs: &[TrackedObject],
    ) {
        let cluster = self.cluster_object();
        let removed_without_exclusion: BTreeSet<String> = cluster
            .as_ref()
            .map(|cluster| {
                cluster
                    .spec
                    .process_groups_to_remove_without_exclusion
                    .iter()
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let coordinators = self.fdb.snapshot().coordinators;
        let fdb = self.fdb.clone();
        let risk = move |group: &str| fdb.removal_risk(group);
        self.judged.monitor.check_deletions(&ActionWindow {
            time: self.elapsed(),
            pass: self.log.position().pass,
            by,
            deleted_pods,
            deleted_pvcs,
            removal_risk: &risk,
            removed_without_exclusion: &removed_without_exclusion,
            coordinators: &coordinators,
        });
    }

    /// A fault or the user is about to stop something. While the database is
    /// available, the operator's actions of the last second have caused no outage: one
    /// that begins now is the fault's or the user's, so those actions leave the
    /// attribution window (an outage already open stays with whoever began it).
    pub(super) fn disrupted_by_others(&mut self) {
        let now = self.now().as_second();
        self.judged.others_acting(now, &self.fdb);
    }

    /// Judges outages so far against the operator's actions.
    pub(super) fn check_outages(&mut self) {
        let (now, start) = (self.now().as_second(), self.clock.start().as_second());
        self.judged
            .check_outages(now, start, &self.fdb, &self.recovery);
    }

    /// The checks after every pass: versions side by side, the protocol against the
    /// connected clients, and, for a pass that reported Reconciled, the world against
    /// the spec.
    pub(super) fn check_after_pass(&mut self, reconciled: bool) -> Result<(), RunError> {
        let (time, pass) = (self.elapsed(), self.passes.total());
        let cluster = self.cluster_object();
        note_marked_groups(&mut self.judged.ever_marked, cluster.as_ref());
        let snapshot = self.fdb.snapshot();
        // Groups the user keeps out of restarts stay on their version by the user's
        // choice: the operator answers for the others.
        let kept = ignored_during_restart(cluster.as_ref());
        let versions: Vec<FdbVersion> = snapshot
            .processes
            .iter()
            .filter(|p| !in_groups(p, &kept))
            .map(|p| p.version)
            .collect();
        self.judged.monitor.check_versions(time, pass, &versions);
        let ignored: BTreeSet<String> = cluster
            .as_ref()
            .map(|cluster| {
                cluster
                    .spec
                    .automation_options
                    .ignore_log_groups_for_upgrade()
                    .into_iter()
                    .collect()
            })
            .unwrap_or_default();
        let clients = self.judged.clients.clone();
        self.judged.monitor.check_client_compatibility(
            time,
            pass,
            snapshot.version,
            &ClientView {
                clients: &clients,
                ignored_log_groups: &ignored,
                checks_disabled: cluster
                    .as_ref()
                    .is_some_and(|cluster| cluster.spec.ignore_upgradability_checks == Some(true)),
            },
        );
        if reconciled {
            let found = match &cluster {
                Some(cluster) => {
                    let mut desired = desired_world(cluster);
                    desired.ever_marked = self.judged.ever_marked.clone();
                    divergences(&desired, &self.actual_world()?)
                }
                None => vec!["the cluster object is gone".to_owned()],
            };
            self.judged
                .monitor
                .check_reconciled(time, pass, snapshot.available, &found);
            if let Some(cluster) = &cluster {
                // With several clusters, only this cluster's instance's exclusions.
                let issuer = self
                    .several_clusters()
                    .then(|| cluster.metadata.name.clone())
                    .flatten();
                self.check_exclusions_left_behind(cluster, issuer.as_deref())?;
            }
        }
        self.check_outages();
        Ok(())
    }

    /// Prints the rollout line when it changed since the last one (only with a progress
    /// sink: tests pay nothing).
    pub(super) fn report_rollout(&mut self) -> Result<(), RunError> {
        if !self.clock.reports_progress() {
            return Ok(());
        }
        let Some(cluster) = self.cluster_object() else {
            return Ok(());
        };
        let mut desired = desired_world(&cluster);
        desired.ever_marked = self.judged.ever_marked.clone();
        let line = super::rollout_progress::rollout_line(&desired, &self.actual_world()?);
        self.clock.rollout(line);
        Ok(())
    }

    pub(super) fn step_result(
        &self,
        index: usize,
        spec: &StepSpec,
        outcome: StepOutcomeSummary,
    ) -> Result<StepResult, RunError> {
        let cluster = self.api.get(&self.cluster_key()).unwrap_or(Value::Null);
        Ok(StepResult {
            index,
            step: serde_json::to_value(spec).unwrap_or(Value::Null),
            time: self.elapsed(),
            passes: outcome.passes,
            reconciled: outcome.reconciled,
            stopped_because: outcome.stopped_because,
            waits: self.passes.last_waits.clone(),
            cluster,
            pods: self.world.pod_summaries()?,
            pvcs: self.world.pvc_summaries()?,
            services: self.world.service_summaries()?,
            config_maps: self.world.config_map_summaries()?,
            sidecars: self.world.sidecar_summaries(),
            fdb: serde_json::to_value(self.fdb.snapshot()).unwrap_or(Value::Null),
            backups: self.resource_objects(ResourceKind::Backup),
            restores: self.resource_objects(ResourceKind::Restore),
            blob_store: self.blob_store_summary(),
        })
    }
}
