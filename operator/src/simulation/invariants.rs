//! The invariants a simulated run is checked against (`spec/simulation.md`).
//!
//! The checks are pure: the runner gathers what it observed around each operator pass
//! (the operator's deletions, the groups and zones behind the deleted objects, the
//! database's view) and the monitor turns breaches into violations. Each breach is
//! reported once per episode, not once per pass it lasts.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::FdbVersion;
use fdb_shared::api::ProcessClass;

use super::result::Violation;

/// `data-loss-risk`: a stateful process's pod or PVC was deleted while it held data.
pub const DATA_LOSS_RISK: &str = "data-loss-risk";
/// `fault-tolerance-exceeded`: operator actions took out more zones than tolerated.
pub const FAULT_TOLERANCE_EXCEEDED: &str = "fault-tolerance-exceeded";
/// `coordinator-deleted`: a pod hosting a current coordinator was deleted.
pub const COORDINATOR_DELETED: &str = "coordinator-deleted";
/// `mixed-version-bounce`: processes on incompatible versions for more than one pass.
pub const MIXED_VERSION_BOUNCE: &str = "mixed-version-bounce";
/// `unavailable-at-rest`: a reconcile step ended reconciled with the database unavailable.
pub const UNAVAILABLE_AT_REST: &str = "unavailable-at-rest";

/// What the runner knows about the process group behind a pod or PVC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInfo {
    /// Process group ID (`storage-1`).
    pub group: String,
    /// Its process class.
    pub class: ProcessClass,
    /// Its zone (the pod's fault domain), when known.
    pub zone: Option<String>,
    /// The pod's IP, when it had one.
    pub pod_ip: Option<String>,
}

/// A deletion the operator issued during a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deletion {
    /// A pod.
    Pod(String),
    /// A persistent volume claim.
    Pvc(String),
}

/// What the runner observed around one operator pass.
pub struct PassObservation<'a> {
    /// Simulated seconds since the start.
    pub time: u64,
    /// The pass number.
    pub pass: u64,
    /// Deletions the operator issued in this pass, in order.
    pub deletions: &'a [Deletion],
    /// Pod name -> group, as the objects were before the pass.
    pub pods: &'a BTreeMap<String, GroupInfo>,
    /// PVC name -> group, as the objects were before the pass.
    pub pvcs: &'a BTreeMap<String, GroupInfo>,
    /// Why deleting a group's data would be risky now (`None`: fully excluded).
    pub removal_risk: &'a dyn Fn(&str) -> Option<String>,
    /// Groups the user asked to remove without exclusion.
    pub removed_without_exclusion: &'a BTreeSet<String>,
    /// The current coordinators' `IP:port`.
    pub coordinators: &'a [String],
    /// How many zones the redundancy mode tolerates losing.
    pub fault_tolerance: usize,
    /// Groups whose processes report to the database again (group -> running).
    pub reporting_groups: &'a BTreeSet<String>,
    /// Versions of the running processes that belong to the cluster.
    pub running_versions: &'a [FdbVersion],
}

/// Watches a run and collects violations.
#[derive(Debug, Default)]
pub struct InvariantMonitor {
    violations: Vec<Violation>,
    /// Stateful groups the operator took down by deleting their pod while they still
    /// served data, until their processes report again: group -> (class, zone).
    out_of_service: BTreeMap<String, (ProcessClass, String)>,
    fault_tolerance_breached: bool,
    mixed_version_passes: u32,
    mixed_version_reported: bool,
}

impl InvariantMonitor {
    /// A monitor with no violations.
    pub fn new() -> Self {
        Self::default()
    }

    /// The violations so far, in order.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// Consumes the monitor, returning the violations.
    pub fn into_violations(self) -> Vec<Violation> {
        self.violations
    }

    fn violate(&mut self, invariant: &str, time: u64, pass: u64, detail: String) {
        self.violations.push(Violation {
            invariant: invariant.to_owned(),
            time,
            pass,
            detail,
        });
    }

    /// Checks one pass: its deletions, the zones out of service, and mixed versions.
    pub fn check_pass(&mut self, observed: &PassObservation<'_>) {
        self.check_deletions(observed);
        self.check_fault_tolerance(observed);
        self.check_versions(observed);
    }

    fn check_deletions(&mut self, observed: &PassObservation<'_>) {
        for deletion in observed.deletions {
            let (kind, name, info) = match deletion {
                Deletion::Pod(name) => ("pod", name, observed.pods.get(name)),
                Deletion::Pvc(name) => ("PVC", name, observed.pvcs.get(name)),
            };
            let Some(info) = info else { continue };
            if let Deletion::Pod(_) = deletion
                && let Some(ip) = &info.pod_ip
                && let Some(coordinator) = observed
                    .coordinators
                    .iter()
                    .find(|address| address.rsplit_once(':').is_some_and(|(host, _)| host == ip))
            {
                self.violate(
                    COORDINATOR_DELETED,
                    observed.time,
                    observed.pass,
                    format!(
                        "pod {name} of {} hosts coordinator {coordinator}",
                        info.group
                    ),
                );
            }
            if !info.class.is_stateful() {
                continue;
            }
            let Some(risk) = (observed.removal_risk)(&info.group) else {
                continue;
            };
            if let Deletion::Pod(_) = deletion {
                let zone = info.zone.clone().unwrap_or_else(|| info.group.clone());
                self.out_of_service
                    .insert(info.group.clone(), (info.class, zone));
            }
            if observed.removed_without_exclusion.contains(&info.group) {
                continue;
            }
            self.violate(
                DATA_LOSS_RISK,
                observed.time,
                observed.pass,
                format!("{kind} {name} of {} was deleted while {risk}", info.group),
            );
        }
    }

    fn check_fault_tolerance(&mut self, observed: &PassObservation<'_>) {
        self.out_of_service
            .retain(|group, _| !observed.reporting_groups.contains(group));
        let zones_of = |log: bool| -> BTreeSet<&str> {
            self.out_of_service
                .values()
                .filter(|(class, _)| class.is_log_process() == log)
                .map(|(_, zone)| zone.as_str())
                .collect()
        };
        let storage_zones = zones_of(false);
        let log_zones = zones_of(true);
        let worst = storage_zones.len().max(log_zones.len());
        if worst > observed.fault_tolerance {
            if !self.fault_tolerance_breached {
                let (what, zones) = if storage_zones.len() >= log_zones.len() {
                    ("storage", storage_zones)
                } else {
                    ("log", log_zones)
                };
                let zones: Vec<&str> = zones.into_iter().collect();
                let detail = format!(
                    "operator deletions took {} zones of {what} out of service at once ({}); the redundancy mode tolerates {}",
                    zones.len(),
                    zones.join(", "),
                    observed.fault_tolerance
                );
                self.violate(
                    FAULT_TOLERANCE_EXCEEDED,
                    observed.time,
                    observed.pass,
                    detail,
                );
            }
            self.fault_tolerance_breached = true;
        } else {
            self.fault_tolerance_breached = false;
        }
    }

    fn check_versions(&mut self, observed: &PassObservation<'_>) {
        let mut lines: Vec<FdbVersion> = Vec::new();
        for version in observed.running_versions {
            if !lines
                .iter()
                .any(|seen| seen.is_protocol_compatible(version))
            {
                lines.push(*version);
            }
        }
        if lines.len() < 2 {
            self.mixed_version_passes = 0;
            self.mixed_version_reported = false;
            return;
        }
        self.mixed_version_passes += 1;
        if self.mixed_version_passes > 1 && !self.mixed_version_reported {
            self.mixed_version_reported = true;
            lines.sort();
            let versions: Vec<String> = lines.iter().map(ToString::to_string).collect();
            self.violate(
                MIXED_VERSION_BOUNCE,
                observed.time,
                observed.pass,
                format!(
                    "processes ran on incompatible versions {} for {} passes",
                    versions.join(" and "),
                    self.mixed_version_passes
                ),
            );
        }
    }

    /// Checks the end of a `reconcile` step.
    pub fn check_reconcile_end(&mut self, time: u64, pass: u64, reconciled: bool, available: bool) {
        if reconciled && !available {
            self.violate(
                UNAVAILABLE_AT_REST,
                time,
                pass,
                "the reconcile step ended reconciled while the database was unavailable".to_owned(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixture {
        pods: BTreeMap<String, GroupInfo>,
        pvcs: BTreeMap<String, GroupInfo>,
        coordinators: Vec<String>,
        reporting: BTreeSet<String>,
        without: BTreeSet<String>,
        versions: Vec<FdbVersion>,
    }

    fn info(group: &str, class: ProcessClass, zone: &str, ip: &str) -> GroupInfo {
        GroupInfo {
            group: group.to_owned(),
            class,
            zone: Some(zone.to_owned()),
            pod_ip: Some(ip.to_owned()),
        }
    }

    fn fixture() -> Fixture {
        let mut pods = BTreeMap::new();
        let mut pvcs = BTreeMap::new();
        for n in 1..=3 {
            let storage = info(
                &format!("storage-{n}"),
                ProcessClass::Storage,
                &format!("zone-{n}"),
                &format!("127.0.0.2{n}"),
            );
            pvcs.insert(format!("sample-storage-{n}-data"), storage.clone());
            pods.insert(format!("sample-storage-{n}"), storage);
            let log = info(
                &format!("log-{n}"),
                ProcessClass::Log,
                &format!("zone-{n}"),
                &format!("127.0.0.1{n}"),
            );
            pods.insert(format!("sample-log-{n}"), log);
        }
        pods.insert(
            "sample-stateless-1".into(),
            info(
                "stateless-1",
                ProcessClass::Stateless,
                "zone-1",
                "127.0.0.31",
            ),
        );
        Fixture {
            pods,
            pvcs,
            coordinators: vec!["127.0.0.11:4501".into()],
            reporting: BTreeSet::new(),
            without: BTreeSet::new(),
            versions: vec!["7.1.57".parse().unwrap()],
        }
    }

    fn observe(
        monitor: &mut InvariantMonitor,
        fixture: &Fixture,
        deletions: &[Deletion],
        risky: &[&str],
    ) {
        let risky: BTreeSet<String> = risky.iter().map(|s| (*s).to_owned()).collect();
        let risk = move |group: &str| {
            risky
                .contains(group)
                .then(|| "it is not excluded".to_owned())
        };
        monitor.check_pass(&PassObservation {
            time: 10,
            pass: 1,
            deletions,
            pods: &fixture.pods,
            pvcs: &fixture.pvcs,
            removal_risk: &risk,
            removed_without_exclusion: &fixture.without,
            coordinators: &fixture.coordinators,
            fault_tolerance: 1,
            reporting_groups: &fixture.reporting,
            running_versions: &fixture.versions,
        });
    }

    fn invariants(monitor: &InvariantMonitor) -> Vec<&str> {
        monitor
            .violations()
            .iter()
            .map(|v| v.invariant.as_str())
            .collect()
    }

    #[test]
    fn deleting_fully_excluded_or_stateless_groups_is_fine() {
        let fixture = fixture();
        let mut monitor = InvariantMonitor::new();
        observe(
            &mut monitor,
            &fixture,
            &[
                Deletion::Pod("sample-storage-1".into()),
                Deletion::Pvc("sample-storage-1-data".into()),
                Deletion::Pod("sample-stateless-1".into()),
            ],
            &["stateless-1"],
        );
        assert!(
            monitor.violations().is_empty(),
            "{:?}",
            monitor.violations()
        );
    }

    #[test]
    fn deleting_a_pvc_that_holds_data_is_a_data_loss_risk_unless_the_user_asked() {
        let mut fixture = fixture();
        let mut monitor = InvariantMonitor::new();
        observe(
            &mut monitor,
            &fixture,
            &[Deletion::Pvc("sample-storage-2-data".into())],
            &["storage-2"],
        );
        assert_eq!(invariants(&monitor), [DATA_LOSS_RISK]);
        assert!(
            monitor.violations()[0]
                .detail
                .contains("PVC sample-storage-2-data of storage-2")
        );

        fixture.without.insert("storage-2".into());
        let mut monitor = InvariantMonitor::new();
        observe(
            &mut monitor,
            &fixture,
            &[Deletion::Pvc("sample-storage-2-data".into())],
            &["storage-2"],
        );
        assert!(monitor.violations().is_empty());
    }

    #[test]
    fn deleting_a_coordinator_pod_is_reported() {
        let fixture = fixture();
        let mut monitor = InvariantMonitor::new();
        observe(
            &mut monitor,
            &fixture,
            &[Deletion::Pod("sample-log-1".into())],
            &[],
        );
        assert_eq!(invariants(&monitor), [COORDINATOR_DELETED]);
    }

    #[test]
    fn pods_down_in_more_zones_than_tolerated_are_reported_once_per_episode() {
        let mut fixture = fixture();
        let mut monitor = InvariantMonitor::new();
        fixture.without = ["storage-1", "storage-2"].map(str::to_owned).into();
        observe(
            &mut monitor,
            &fixture,
            &[Deletion::Pod("sample-storage-1".into())],
            &["storage-1", "storage-2"],
        );
        assert!(monitor.violations().is_empty(), "one zone is tolerated");
        observe(
            &mut monitor,
            &fixture,
            &[Deletion::Pod("sample-storage-2".into())],
            &["storage-1", "storage-2"],
        );
        assert_eq!(invariants(&monitor), [FAULT_TOLERANCE_EXCEEDED]);
        observe(&mut monitor, &fixture, &[], &[]);
        assert_eq!(monitor.violations().len(), 1, "same episode");
        fixture.reporting = ["storage-1", "storage-2"].map(str::to_owned).into();
        observe(&mut monitor, &fixture, &[], &[]);
        fixture.reporting.clear();
        fixture.without.insert("storage-3".into());
        observe(
            &mut monitor,
            &fixture,
            &[Deletion::Pod("sample-storage-3".into())],
            &["storage-3"],
        );
        assert_eq!(monitor.violations().len(), 1, "back within tolerance");
    }

    #[test]
    fn incompatible_versions_for_more_than_one_pass_are_a_mixed_version_bounce() {
        let mut fixture = fixture();
        fixture.versions = vec!["7.1.57".parse().unwrap(), "7.1.25".parse().unwrap()];
        let mut monitor = InvariantMonitor::new();
        observe(&mut monitor, &fixture, &[], &[]);
        observe(&mut monitor, &fixture, &[], &[]);
        assert!(
            monitor.violations().is_empty(),
            "patch versions are compatible"
        );

        fixture.versions.push("7.3.43".parse().unwrap());
        observe(&mut monitor, &fixture, &[], &[]);
        assert!(monitor.violations().is_empty(), "one pass is allowed");
        observe(&mut monitor, &fixture, &[], &[]);
        observe(&mut monitor, &fixture, &[], &[]);
        assert_eq!(invariants(&monitor), [MIXED_VERSION_BOUNCE]);
    }

    #[test]
    fn reconciled_while_unavailable_is_reported() {
        let mut monitor = InvariantMonitor::new();
        monitor.check_reconcile_end(5, 2, true, true);
        monitor.check_reconcile_end(5, 2, false, false);
        assert!(monitor.violations().is_empty());
        monitor.check_reconcile_end(5, 2, true, false);
        assert_eq!(invariants(&monitor), [UNAVAILABLE_AT_REST]);
    }
}
