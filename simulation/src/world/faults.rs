//! World-side faults and healing.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::FdbVersion;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;

use super::error::WorldError;
use super::pod_runtime::{runs_sidecar_image, spec_container};
use super::{SettleReport, World};
use crate::scenario::{Fault, Heal};

/// fdbmonitor's first delay before restarting a process that exited.
pub const MONITOR_RESTART_INITIAL_SECONDS: i64 = 1;
/// fdbmonitor's longest restart delay (its `restart_delay` default).
pub const MONITOR_RESTART_MAX_SECONDS: i64 = 60;

/// Faults on process groups (by `foundationdb.org/fdb-process-group-id`).
#[derive(Debug, Clone, Default)]
pub struct FaultState {
    /// The groups' processes stay stopped.
    pub process_missing: BTreeSet<String>,
    /// The groups' unscheduled pods stay Pending.
    pub pod_pending: BTreeSet<String>,
    /// The groups' pods fail.
    pub pod_failed: BTreeSet<String>,
    /// The groups' pods never finish terminating.
    pub stuck_terminating: BTreeSet<String>,
    /// The groups' sidecars do not serve.
    pub sidecar_unreachable: BTreeSet<String>,
    /// The groups' fdbserver processes exit right after each start, since when.
    pub process_crash_loop: BTreeMap<String, Timestamp>,
    /// After a crash loop was healed: when fdbmonitor's next restart brings the group's
    /// processes back.
    pub crash_restarts: BTreeMap<String, Timestamp>,
    /// The versions whose binaries the groups' sidecar images lack.
    pub binary_missing: BTreeMap<String, BTreeSet<FdbVersion>>,
    /// The groups' sidecars cannot use their output volume.
    pub output_not_writable: BTreeSet<String>,
    /// The groups' pods cannot reach the Kubernetes API (their monitor cannot annotate
    /// them).
    pub kube_api_unreachable: BTreeSet<String>,
    /// Pods evicted (`backupAgentsEvicted`), by uid: Failed with reason Evicted.
    pub evicted_pods: BTreeSet<String>,
}

impl FaultState {
    fn heal_group(&mut self, group: &str, now: Timestamp) {
        for set in [
            &mut self.process_missing,
            &mut self.pod_pending,
            &mut self.pod_failed,
            &mut self.stuck_terminating,
            &mut self.sidecar_unreachable,
            &mut self.output_not_writable,
            &mut self.kube_api_unreachable,
        ] {
            set.remove(group);
        }
        self.binary_missing.remove(group);
        if let Some(since) = self.process_crash_loop.remove(group) {
            self.crash_restarts
                .insert(group.to_owned(), next_monitor_restart(since, now));
        }
    }

    /// The groups whose image or mount faults change what their containers see.
    fn container_fault_groups(&self) -> BTreeSet<String> {
        self.binary_missing
            .keys()
            .chain(self.output_not_writable.iter())
            .cloned()
            .collect()
    }
}

/// When fdbmonitor next tries to start a process that has exited at every start since
/// `since`: it retries after 1 s, 2 s, 4 s, ..., then every 60 s. The first attempt at or
/// after `now`.
pub fn next_monitor_restart(since: Timestamp, now: Timestamp) -> Timestamp {
    let mut at = since;
    let mut delay = MONITOR_RESTART_INITIAL_SECONDS;
    loop {
        at += SignedDuration::from_secs(delay);
        if at >= now {
            return at;
        }
        delay = (delay * 2).min(MONITOR_RESTART_MAX_SECONDS);
        if delay == MONITOR_RESTART_MAX_SECONDS {
            let behind = now.as_second() - at.as_second();
            let steps = (behind + delay - 1) / delay;
            return at + SignedDuration::from_secs(steps * delay);
        }
    }
}

impl World {
    /// Applies a world-side fault, then settles so it takes effect at once.
    /// `apiConflicts`, `fdbcliTimeouts`, `clientConnected`, `clientDisconnected`,
    /// `ioError`, `slowRecovery`, `ignoreKill` and `ioLatency` are the runner's
    /// ([`WorldError::NotAWorldFault`]).
    pub async fn apply_fault(&mut self, fault: &Fault) -> Result<SettleReport, WorldError> {
        let now = self.now();
        let (set, group) = match fault {
            Fault::ProcessMissing { process_group } => {
                (&mut self.faults.process_missing, process_group)
            }
            Fault::PodPending { process_group } => (&mut self.faults.pod_pending, process_group),
            Fault::PodFailed { process_group } => (&mut self.faults.pod_failed, process_group),
            Fault::PodStuckTerminating { process_group } => {
                (&mut self.faults.stuck_terminating, process_group)
            }
            Fault::SidecarUnreachable { process_group } => {
                (&mut self.faults.sidecar_unreachable, process_group)
            }
            Fault::OutputNotWritable { process_group } => {
                (&mut self.faults.output_not_writable, process_group)
            }
            Fault::KubeApiUnreachable { process_group } => {
                (&mut self.faults.kube_api_unreachable, process_group)
            }
            Fault::ProcessCrashLoop { process_group } => {
                self.faults.crash_restarts.remove(process_group);
                self.faults
                    .process_crash_loop
                    .entry(process_group.clone())
                    .or_insert(now);
                return self.fault_applied(fault, process_group).await;
            }
            Fault::BinaryMissing {
                process_group,
                version,
            } => {
                self.remove_binary(process_group, version)?;
                return self.fault_applied(fault, process_group).await;
            }
            Fault::NodeDown { node } => {
                self.node_down(node)?;
                self.record("fault", format!("node/{node}"), "node down".into());
                return self.settle().await;
            }
            Fault::ZoneDown { zone } => {
                let nodes = self.zone_nodes(zone)?;
                for node in &nodes {
                    self.node_down(node)?;
                }
                self.record(
                    "fault",
                    format!("zone/{zone}"),
                    format!("nodes down: {}", nodes.join(", ")),
                );
                return self.settle().await;
            }
            Fault::NodeTaint { node, key } => {
                self.nodes.add_taint(&self.api, node, key)?;
                self.record(
                    "fault",
                    format!("node/{node}"),
                    format!("taint {key}:NoSchedule"),
                );
                return self.settle().await;
            }
            Fault::BackupAgentsEvicted => {
                let agents = self.running_backup_agents();
                self.record(
                    "fault",
                    "backup-agents".to_owned(),
                    format!("evicted: {}", agents.join(", ")),
                );
                self.faults.evicted_pods.extend(agents);
                return self.settle().await;
            }
            Fault::DataCenterDown { .. } => return not_a_world_fault("dataCenterDown"),
            Fault::ApiConflicts { .. } => return not_a_world_fault("apiConflicts"),
            Fault::FdbcliTimeouts { .. } => return not_a_world_fault("fdbcliTimeouts"),
            Fault::ClientConnected { .. } => return not_a_world_fault("clientConnected"),
            Fault::ClientDisconnected { .. } => return not_a_world_fault("clientDisconnected"),
            Fault::IoError { .. } => return not_a_world_fault("ioError"),
            Fault::StorageMetricsMissing { .. } => {
                return not_a_world_fault("storageMetricsMissing");
            }
            Fault::StatusProcessesMissing { .. } => {
                return not_a_world_fault("statusProcessesMissing");
            }
            Fault::SlowRecovery { .. } => return not_a_world_fault("slowRecovery"),
            Fault::IgnoreKill { .. } => return not_a_world_fault("ignoreKill"),
            Fault::IoLatency { .. } => return not_a_world_fault("ioLatency"),
        };
        set.insert(group.clone());
        let group = group.clone();
        self.fault_applied(fault, &group).await
    }

    /// Takes one version's binary away from a group's pod (`binaryMissing`).
    fn remove_binary(&mut self, process_group: &str, version: &str) -> Result<(), WorldError> {
        let version: FdbVersion = version.parse().map_err(|error| WorldError::InvalidFault {
            kind: "binaryMissing",
            message: format!("version {version:?}: {error}"),
        })?;
        self.faults
            .binary_missing
            .entry(process_group.to_owned())
            .or_default()
            .insert(version);
        Ok(())
    }

    async fn fault_applied(
        &mut self,
        fault: &Fault,
        group: &str,
    ) -> Result<SettleReport, WorldError> {
        if matches!(
            fault,
            Fault::BinaryMissing { .. } | Fault::OutputNotWritable { .. }
        ) {
            self.refresh_group_containers(group)?;
        }
        self.record(
            "fault",
            format!("processGroup/{group}"),
            format!("{fault:?}"),
        );
        self.settle().await
    }

    /// Undoes faults on a process group, a node, or everything, then settles. A healed
    /// crash loop ends at fdbmonitor's next restart attempt, not at once.
    pub async fn heal(&mut self, heal: &Heal) -> Result<SettleReport, WorldError> {
        let now = self.now();
        if heal.all == Some(true) {
            let touched = self.faults.container_fault_groups();
            let looping: Vec<String> = self.faults.process_crash_loop.keys().cloned().collect();
            for group in looping {
                self.faults.heal_group(&group, now);
            }
            let crash_restarts = std::mem::take(&mut self.faults.crash_restarts);
            self.faults = FaultState {
                crash_restarts,
                ..FaultState::default()
            };
            for group in touched {
                self.refresh_group_containers(&group)?;
            }
            for node in self.nodes.down_nodes() {
                self.node_up(&node)?;
            }
            for node in self.nodes.tainted_nodes() {
                self.nodes.remove_fault_taints(&self.api, &node)?;
            }
            self.record("heal", "world/all".into(), String::new());
        }
        if let Some(group) = &heal.process_group {
            let touched = self.faults.container_fault_groups().contains(group);
            self.faults.heal_group(group, now);
            if touched {
                self.refresh_group_containers(group)?;
            }
            self.record("heal", format!("processGroup/{group}"), String::new());
        }
        if let Some(node) = &heal.node {
            self.nodes.require(node)?;
            self.node_up(node)?;
            self.nodes.remove_fault_taints(&self.api, node)?;
            self.record("heal", format!("node/{node}"), String::new());
        }
        if let Some(zone) = &heal.zone {
            for node in self.zone_nodes(zone)? {
                self.node_up(&node)?;
            }
            self.record("heal", format!("zone/{zone}"), String::new());
        }
        self.settle().await
    }

    /// Whether fdbmonitor's processes of `group` may run: not while they crash at every
    /// start, nor before its next restart attempt once that ended.
    pub(super) fn crash_loop_allows(&self, group: &str) -> bool {
        !self.faults.process_crash_loop.contains_key(group)
            && self
                .faults
                .crash_restarts
                .get(group)
                .is_none_or(|at| *at <= self.now())
    }

    /// Forgets crash-loop restarts that have happened.
    pub(super) fn expire_crash_restarts(&mut self) {
        let now = self.now();
        self.faults.crash_restarts.retain(|_, at| *at > now);
    }

    /// Rewrites the sidecar images and output mounts of the group's started pods after
    /// `binaryMissing` or `outputNotWritable` changed (the files change under running
    /// containers; what they already staged stays).
    fn refresh_group_containers(&mut self, group: &str) -> Result<(), WorldError> {
        let uids: Vec<String> = self
            .pods
            .iter()
            .filter(|(_, r)| r.group.as_deref() == Some(group) && !r.containers.is_empty())
            .map(|(uid, _)| uid.clone())
            .collect();
        for uid in uids {
            let Some(runtime) = self.pods.get(&uid) else {
                continue;
            };
            let pod: Option<Pod> = self
                .api
                .get_typed(Some(&runtime.namespace), &runtime.name)?;
            let Some(pod) = pod else { continue };
            for (name, state) in &runtime.containers {
                if !runs_sidecar_image(name) {
                    continue;
                }
                self.write_container_image(runtime, name, &state.image)?;
                if let Some(container) = spec_container(&pod, name) {
                    self.link_mounts(runtime, container)?;
                }
            }
        }
        Ok(())
    }
}

fn not_a_world_fault(kind: &'static str) -> Result<SettleReport, WorldError> {
    Err(WorldError::NotAWorldFault { kind })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fdbmonitor_retries_with_doubling_delays_up_to_a_minute() {
        let since = Timestamp::from_second(1_000).unwrap();
        let at = |now: i64| {
            next_monitor_restart(since, Timestamp::from_second(1_000 + now).unwrap()).as_second()
                - 1_000
        };
        // Attempts at +1, +3, +7, +15, +31, +63, then every 60 s: +123, +183, ...
        assert_eq!(at(0), 1);
        assert_eq!(at(2), 3);
        assert_eq!(at(3), 3);
        assert_eq!(at(50), 63);
        assert_eq!(at(64), 123);
        assert_eq!(at(124), 183);
        assert_eq!(at(3600), 3603);
    }
}
