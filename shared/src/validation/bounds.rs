//! Bounds of the numbers in a spec that drive the operator's work: durations, counts,
//! servers per pod, the IP family. A value outside them is a typo or a unit mistake that
//! would make the operator act in a storm (replace every pod at once), never act, or
//! overflow its arithmetic; the error names the field and the accepted range.
//!
//! Counts of processes and of the database configuration are bounded in `mod.rs`
//! ([`super::MAX_COUNT`]).

use super::{MAX_COUNT, ValidationReport};
use crate::api::backup::FoundationDBBackupSpec;
use crate::api::cluster::{AutomationOptions, FoundationDBClusterSpec};

/// The longest duration accepted, in seconds: ten years. Longer means "never", which the
/// operator has other switches for, and keeps `now + duration` far from overflowing.
pub const MAX_DURATION_SECONDS: i64 = 10 * 365 * 24 * 3600;

/// The shortest `automationOptions.replacements.taintReplacementTimeSeconds`: a taint
/// that is set and removed again within a minute (a node being cordoned for a quick
/// operation) must not replace every process group on the node.
pub const MIN_TAINT_REPLACEMENT_SECONDS: i64 = 60;

/// The shortest maintenance zone duration: the maintenance zone must outlast the restart
/// of the pods it covers (tens of seconds), or FoundationDB starts moving their data
/// while they come back.
pub const MIN_MAINTENANCE_SECONDS: i64 = 60;

/// The shortest `minimumUptimeSecondsForBounce`: processes need a few seconds to recover
/// and report after a restart; bouncing them again sooner restarts them in a loop.
pub const MIN_UPTIME_FOR_BOUNCE_SECONDS: i64 = 10;

/// The most fdbserver processes per pod (`storageServersPerPod`, `logServersPerPod`):
/// they share the pod's disk, CPU and memory; beyond a handful they only compete. Also
/// bounds the monitor conf (one section per process) and the ports (two per process).
pub const MAX_SERVERS_PER_POD: i32 = 16;

/// The most backup agents (`FoundationDBBackup.spec.agentCount`): each is a pod; the
/// largest clusters run tens of agents, a thousand is a typo.
pub const MAX_BACKUP_AGENTS: i32 = 1000;

/// Checks `value` (when set) against `min..=max`, naming `field` and `unit`.
fn check_range(
    report: &mut ValidationReport,
    field: &str,
    value: Option<i64>,
    (min, max): (i64, i64),
    why: &str,
) {
    let Some(value) = value else { return };
    if value < min || value > max {
        let why = if why.is_empty() {
            String::new()
        } else {
            format!(" ({why})")
        };
        report.error(format!("{field}: {value} is outside {min}..={max}{why}"));
    }
}

/// A bounded field under `spec.automationOptions`: its name, value, accepted range and
/// why the range (empty when obvious).
type AutomationBound<'a> = (&'a str, Option<i64>, (i64, i64), &'a str);

/// The bounded fields of `spec.automationOptions` (seconds unless the field says
/// otherwise) and their accepted ranges.
fn automation_bounds(automation: &AutomationOptions) -> [AutomationBound<'_>; 7] {
    let seconds = |min| (min, MAX_DURATION_SECONDS);
    [
        (
            "maintenanceModeOptions.maintenanceModeTimeSeconds",
            automation
                .maintenance_mode_options
                .maintenance_mode_time_seconds,
            seconds(MIN_MAINTENANCE_SECONDS),
            "the maintenance zone must outlast a pod restart",
        ),
        (
            "failedPodDurationSeconds",
            automation.failed_pod_duration_seconds,
            seconds(0),
            "",
        ),
        (
            "ignoreMissingProcessesSeconds",
            automation.ignore_missing_processes_seconds,
            seconds(0),
            "",
        ),
        (
            "ignorePendingPodsDuration",
            automation.ignore_pending_pods_duration,
            (0, MAX_DURATION_SECONDS * 1_000_000_000),
            "in nanoseconds",
        ),
        (
            "ignoreTerminatingPodsSeconds",
            automation.ignore_terminating_pods_seconds,
            seconds(0),
            "",
        ),
        (
            "waitBetweenRemovalsSeconds",
            automation.wait_between_removals_seconds,
            seconds(0),
            "",
        ),
        (
            "maxConcurrentReplacements",
            automation.max_concurrent_replacements.map(i64::from),
            (0, i64::from(MAX_COUNT)),
            "",
        ),
    ]
}

/// Durations (seconds unless the field says otherwise) and their accepted ranges.
fn check_durations(spec: &FoundationDBClusterSpec, report: &mut ValidationReport) {
    let automation = &spec.automation_options;
    let replacements = &automation.replacements;
    let seconds = |min| (min, MAX_DURATION_SECONDS);
    let field = "spec.automationOptions";
    let checks = automation_bounds(automation);
    for (name, value, range, why) in checks {
        check_range(report, &format!("{field}.{name}"), value, range, why);
    }
    for (index, option) in replacements.taint_replacement_options.iter().enumerate() {
        // i64::MAX is the Go operator's documented "never replace for this taint".
        check_range(
            report,
            &format!("{field}.replacements.taintReplacementOptions[{index}].durationInSeconds"),
            option.duration_in_seconds,
            (0, i64::MAX),
            "",
        );
    }
    check_range(
        report,
        "spec.minimumUptimeSecondsForBounce",
        spec.minimum_uptime_seconds_for_bounce.map(i64::from),
        seconds(MIN_UPTIME_FOR_BOUNCE_SECONDS),
        "processes restarted sooner are bounced in a loop",
    );
    check_range(
        report,
        "spec.lockOptions.lockDurationMinutes",
        spec.lock_options.lock_duration_minutes.map(i64::from),
        (1, MAX_DURATION_SECONDS / 60),
        "",
    );
}

/// The errors of the fields only automatic replacements read (ReplaceFailedPods):
/// `spec.automationOptions.replacements.failureDetectionTimeSeconds`,
/// `taintReplacementTimeSeconds`, `maxConcurrentReplacements` and
/// `maxFaultDomainsWithTaintedProcessGroups`. An error here stops automatic replacements
/// and nothing else ([`super::ScopedWork::AutomaticReplacements`]).
///
/// `failureDetectionTimeSeconds` takes every value the Go operator takes (its CRD has no
/// minimum; its e2e tests use 30): a short time no longer replaces groups that are only
/// being created, since a group never seen running is not judged by the timer alone
/// (operator/src/controller/steps/replace_failed_pods/mod.rs). A negative time
/// counts as 0, as in Go; only a time beyond ten years is refused, to keep
/// `since + time` far from overflowing.
pub fn replacement_errors(spec: &FoundationDBClusterSpec) -> Vec<String> {
    let mut report = ValidationReport::default();
    let replacements = &spec.automation_options.replacements;
    let field = "spec.automationOptions.replacements";
    if let Some(value) = replacements
        .failure_detection_time_seconds
        .filter(|v| *v > MAX_DURATION_SECONDS)
    {
        report.error(format!(
            "{field}.failureDetectionTimeSeconds: {value} is above {MAX_DURATION_SECONDS} (ten years)"
        ));
    }
    check_range(
        &mut report,
        &format!("{field}.taintReplacementTimeSeconds"),
        replacements.taint_replacement_time_seconds,
        (MIN_TAINT_REPLACEMENT_SECONDS, MAX_DURATION_SECONDS),
        "a shorter time replaces pods for a passing taint",
    );
    check_range(
        &mut report,
        &format!("{field}.maxConcurrentReplacements"),
        replacements.max_concurrent_replacements.map(i64::from),
        (0, i64::from(MAX_COUNT)),
        "",
    );
    if let Err(problem) = replacements.max_fault_domains_with_tainted_process_groups(1) {
        report.error(format!(
            "{field}.maxFaultDomainsWithTaintedProcessGroups: {problem}"
        ));
    }
    report.errors
}

/// Checks the numeric fields of a cluster spec outside those of `mod.rs`.
pub(super) fn check_cluster_bounds(spec: &FoundationDBClusterSpec, report: &mut ValidationReport) {
    check_durations(spec, report);
    for (field, value) in [
        ("spec.storageServersPerPod", spec.storage_servers_per_pod),
        ("spec.logServersPerPod", spec.log_servers_per_pod),
    ] {
        // Below 1 is reported in mod.rs.
        if let Some(value) = value.filter(|v| *v > MAX_SERVERS_PER_POD) {
            report.error(format!(
                "{field}: {value} is above {MAX_SERVERS_PER_POD}, the most fdbserver processes this operator runs in one pod"
            ));
        }
    }
    if let Some(family) = spec
        .routing
        .pod_ip_family
        .filter(|f| !matches!(f, 0 | 4 | 6))
    {
        report.error(format!(
            "spec.routing.podIPFamily: {family} is not an IP family (4 or 6; 0 leaves it unset)"
        ));
    }
    check_range(
        report,
        "spec.maxZonesWithUnavailablePods",
        spec.max_zones_with_unavailable_pods.map(i64::from),
        (0, i64::from(MAX_COUNT)),
        "",
    );
    let domain = &spec.fault_domain;
    check_range(
        report,
        "spec.faultDomain.zoneCount",
        domain.zone_count.map(i64::from),
        (1, i64::from(MAX_COUNT)),
        "",
    );
    let zones = domain.zone_count.map_or(i64::from(MAX_COUNT), i64::from);
    check_range(
        report,
        "spec.faultDomain.zoneIndex",
        domain.zone_index.map(i64::from),
        (0, zones.max(1) - 1),
        "an index among spec.faultDomain.zoneCount",
    );
}

/// Checks the upper bounds of the numeric fields of a backup spec (the lower bounds,
/// no negative agent count and a positive snapshot period, are checked with the rest of
/// the backup spec).
pub fn check_backup_bounds(spec: &FoundationDBBackupSpec) -> Vec<String> {
    let mut errors = Vec::new();
    if let Some(count) = spec.agent_count.filter(|c| *c > MAX_BACKUP_AGENTS) {
        errors.push(format!(
            "spec.agentCount: {count} is above {MAX_BACKUP_AGENTS}, the most backup agents this operator runs"
        ));
    }
    if let Some(period) = spec
        .snapshot_period_seconds
        .filter(|p| i64::from(*p) > MAX_DURATION_SECONDS)
    {
        errors.push(format!(
            "spec.snapshotPeriodSeconds: {period} is above {MAX_DURATION_SECONDS} (ten years)"
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(yaml: &str) -> Vec<String> {
        let spec: FoundationDBClusterSpec =
            serde_yaml_ng::from_str(&format!("version: 7.1.57\n{yaml}")).unwrap();
        let mut report = ValidationReport::default();
        check_cluster_bounds(&spec, &mut report);
        report.errors.extend(replacement_errors(&spec));
        report.errors
    }

    /// The Go operator's e2e uses 30 s and its CRD has no minimum: every such value is
    /// legal; only a time beyond ten years is refused, and only for replacements.
    #[test]
    fn any_failure_detection_time_go_accepts_is_legal() {
        for value in ["0", "-5", "30", "59", "60"] {
            let found = errors(&format!(
                "automationOptions: {{replacements: {{failureDetectionTimeSeconds: {value}}}}}"
            ));
            assert!(found.is_empty(), "{value}: {found:?}");
        }
        let spec: FoundationDBClusterSpec = serde_yaml_ng::from_str(
            "{version: 7.1.57, automationOptions: {replacements: {failureDetectionTimeSeconds: 315360001}}}",
        )
        .unwrap();
        assert_eq!(
            replacement_errors(&spec),
            [
                "spec.automationOptions.replacements.failureDetectionTimeSeconds: 315360001 is above 315360000 (ten years)"
            ]
        );
    }

    #[test]
    fn every_bounded_field_is_named() {
        for (yaml, field) in [
            (
                "automationOptions: {replacements: {taintReplacementTimeSeconds: 1}}",
                "spec.automationOptions.replacements.taintReplacementTimeSeconds",
            ),
            (
                "automationOptions: {replacements: {maxConcurrentReplacements: -1}}",
                "spec.automationOptions.replacements.maxConcurrentReplacements",
            ),
            (
                "automationOptions: {replacements: {taintReplacementOptions: [{key: a, durationInSeconds: -1}]}}",
                "spec.automationOptions.replacements.taintReplacementOptions[0].durationInSeconds",
            ),
            (
                "automationOptions: {maintenanceModeOptions: {maintenanceModeTimeSeconds: 0}}",
                "spec.automationOptions.maintenanceModeOptions.maintenanceModeTimeSeconds",
            ),
            (
                "automationOptions: {failedPodDurationSeconds: -1}",
                "spec.automationOptions.failedPodDurationSeconds",
            ),
            (
                "automationOptions: {ignoreMissingProcessesSeconds: -1}",
                "spec.automationOptions.ignoreMissingProcessesSeconds",
            ),
            (
                "automationOptions: {ignorePendingPodsDuration: -1}",
                "spec.automationOptions.ignorePendingPodsDuration",
            ),
            (
                "automationOptions: {ignoreTerminatingPodsSeconds: 9223372036854775807}",
                "spec.automationOptions.ignoreTerminatingPodsSeconds",
            ),
            (
                "automationOptions: {waitBetweenRemovalsSeconds: -1}",
                "spec.automationOptions.waitBetweenRemovalsSeconds",
            ),
            (
                "automationOptions: {maxConcurrentReplacements: 20000}",
                "spec.automationOptions.maxConcurrentReplacements",
            ),
            (
                "minimumUptimeSecondsForBounce: 0",
                "spec.minimumUptimeSecondsForBounce",
            ),
            (
                "lockOptions: {lockDurationMinutes: 0}",
                "spec.lockOptions.lockDurationMinutes",
            ),
            ("storageServersPerPod: 17", "spec.storageServersPerPod"),
            ("logServersPerPod: 1000", "spec.logServersPerPod"),
            ("routing: {podIPFamily: 7}", "spec.routing.podIPFamily"),
            (
                "maxZonesWithUnavailablePods: -1",
                "spec.maxZonesWithUnavailablePods",
            ),
            ("faultDomain: {zoneCount: 0}", "spec.faultDomain.zoneCount"),
            (
                "faultDomain: {zoneCount: 3, zoneIndex: 3}",
                "spec.faultDomain.zoneIndex",
            ),
        ] {
            let found = errors(yaml);
            assert_eq!(found.len(), 1, "{yaml}: {found:?}");
            assert!(
                found[0].starts_with(&format!("{field}: ")),
                "{yaml}: {found:?}"
            );
        }
    }

    #[test]
    fn sane_values_pass() {
        assert!(
            errors(
                "automationOptions: {replacements: {failureDetectionTimeSeconds: 7200, taintReplacementTimeSeconds: 60, maxConcurrentReplacements: 9, taintReplacementOptions: [{key: a, durationInSeconds: 9223372036854775807}]}, ignorePendingPodsDuration: 300000000000, maintenanceModeOptions: {maintenanceModeTimeSeconds: 600}}\nminimumUptimeSecondsForBounce: 60\nstorageServersPerPod: 16\nrouting: {podIPFamily: 6}\nfaultDomain: {zoneCount: 3, zoneIndex: 2}\nmaxZonesWithUnavailablePods: 0\nlockOptions: {lockDurationMinutes: 10}"
            )
            .is_empty()
        );
    }

    /// The Go operator's CRD and validation accept `podIPFamily: 0`
    /// (`PodIPFamilyUnset`, `api/v1beta2/foundationdbcluster_types.go`).
    #[test]
    fn an_unset_ip_family_written_as_zero_passes() {
        assert!(errors("routing: {podIPFamily: 0}").is_empty());
        assert!(errors("routing: {podIPFamily: 4}").is_empty());
    }

    #[test]
    fn backup_agent_counts_are_bounded() {
        let spec: FoundationDBBackupSpec =
            serde_yaml_ng::from_str("clusterName: c\nagentCount: 100000").unwrap();
        assert_eq!(
            check_backup_bounds(&spec),
            ["spec.agentCount: 100000 is above 1000, the most backup agents this operator runs"]
        );
        let spec: FoundationDBBackupSpec =
            serde_yaml_ng::from_str("clusterName: c\nagentCount: 3").unwrap();
        assert!(check_backup_bounds(&spec).is_empty());
    }
}
