//! Prometheus metrics of the controller: passes, step durations and requeues; process
//! groups desired and reconciled per cluster; admin-command latencies; sidecar errors;
//! leadership.

use std::sync::{Mutex, PoisonError};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Labels of a pass result.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PassLabels {
    /// `completed`, `requeue` or `error`.
    pub result: &'static str,
}

/// Labels of a step.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StepLabels {
    /// The step name.
    pub step: &'static str,
}

/// Labels of a requeue or failure.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    /// The step name.
    pub step: &'static str,
    /// A bounded category (`waiting` for requeues, the error category for failures).
    pub category: &'static str,
}

/// Labels of a per-cluster gauge.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterLabels {
    /// The cluster's namespace.
    pub namespace: String,
    /// The cluster's name.
    pub cluster: String,
}

/// Labels of an admin command.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AdminCommandLabels {
    /// The command (`status`, `exclude`, `kill`, ...).
    pub command: &'static str,
    /// `ok` or `error`.
    pub result: &'static str,
}

/// Labels of a failed sidecar request.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SidecarErrorLabels {
    /// The request (`ready`, `check_hash`, `copy_files`, ...).
    pub request: &'static str,
    /// `unreachable`, `timeout`, `status` (an error answer) or `other`.
    pub kind: &'static str,
}

/// The controller's metrics, registered in their own registry.
#[derive(Debug)]
pub struct OperatorMetrics {
    /// Passes by result.
    pub passes: Family<PassLabels, Counter>,
    /// Step durations in seconds.
    pub step_seconds: Family<StepLabels, Histogram, fn() -> Histogram>,
    /// Requeues by step.
    pub requeues: Family<OutcomeLabels, Counter>,
    /// Step failures by step and error category.
    pub failures: Family<OutcomeLabels, Counter>,
    /// Process groups the spec asks for, per cluster (after its last pass).
    pub groups_desired: Family<ClusterLabels, Gauge>,
    /// Process groups in the status that are live and have no condition, per cluster.
    pub groups_reconciled: Family<ClusterLabels, Gauge>,
    /// Admin command durations in seconds.
    pub admin_seconds: Family<AdminCommandLabels, Histogram, fn() -> Histogram>,
    /// Failed sidecar requests.
    pub sidecar_errors: Family<SidecarErrorLabels, Counter>,
    /// 1 while this replica reconciles (holds the leader lease, or runs without leader
    /// election), else 0.
    pub leader: Gauge,
    registry: Mutex<Registry>,
}

impl Default for OperatorMetrics {
    fn default() -> Self {
        let passes = Family::<PassLabels, Counter>::default();
        let step_seconds: Family<StepLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(step_histogram);
        let requeues = Family::<OutcomeLabels, Counter>::default();
        let failures = Family::<OutcomeLabels, Counter>::default();
        let mut registry = Registry::with_prefix("fdb_operator");
        registry.register(
            "reconcile_passes",
            "Reconcile passes by result",
            passes.clone(),
        );
        registry.register(
            "step_duration_seconds",
            "Duration of each subreconciler step",
            step_seconds.clone(),
        );
        registry.register(
            "requeues",
            "Passes ended by a step asking to wait",
            requeues.clone(),
        );
        registry.register(
            "step_failures",
            "Step failures by error category",
            failures.clone(),
        );
        let groups_desired = Family::<ClusterLabels, Gauge>::default();
        let groups_reconciled = Family::<ClusterLabels, Gauge>::default();
        let admin_seconds: Family<AdminCommandLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(step_histogram);
        let sidecar_errors = Family::<SidecarErrorLabels, Counter>::default();
        let leader = Gauge::default();
        registry.register(
            "process_groups_desired",
            "Process groups the spec asks for, per cluster",
            groups_desired.clone(),
        );
        registry.register(
            "process_groups_reconciled",
            "Live process groups without conditions, per cluster",
            groups_reconciled.clone(),
        );
        registry.register(
            "admin_command_duration_seconds",
            "Duration of admin commands (fdbcli) by command and result",
            admin_seconds.clone(),
        );
        registry.register(
            "sidecar_errors",
            "Failed sidecar requests by request and kind",
            sidecar_errors.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica reconciles (holds the leader lease)",
            leader.clone(),
        );
        Self {
            passes,
            step_seconds,
            requeues,
            failures,
            groups_desired,
            groups_reconciled,
            admin_seconds,
            sidecar_errors,
            leader,
            registry: Mutex::new(registry),
        }
    }
}

fn step_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 4.0, 10))
}

impl OperatorMetrics {
    /// Records the process groups desired and reconciled of a cluster after a pass.
    pub fn record_groups(&self, namespace: &str, cluster: &str, desired: i64, reconciled: i64) {
        let labels = ClusterLabels {
            namespace: namespace.to_owned(),
            cluster: cluster.to_owned(),
        };
        self.groups_desired.get_or_create(&labels).set(desired);
        self.groups_reconciled
            .get_or_create(&labels)
            .set(reconciled);
    }

    /// Forgets the gauges of a cluster that is gone.
    pub fn forget_cluster(&self, namespace: &str, cluster: &str) {
        let labels = ClusterLabels {
            namespace: namespace.to_owned(),
            cluster: cluster.to_owned(),
        };
        self.groups_desired.remove(&labels);
        self.groups_reconciled.remove(&labels);
    }

    /// The metrics in the Prometheus text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        let registry = self.registry.lock().unwrap_or_else(PoisonError::into_inner);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_show_up_in_the_text_format() {
        let metrics = OperatorMetrics::default();
        metrics
            .passes
            .get_or_create(&PassLabels {
                result: "completed",
            })
            .inc();
        metrics
            .step_seconds
            .get_or_create(&StepLabels { step: "AddPods" })
            .observe(0.01);
        let text = metrics.encode();
        assert!(
            text.contains("fdb_operator_reconcile_passes_total{result=\"completed\"} 1"),
            "{text}"
        );
        assert!(text.contains("step=\"AddPods\""), "{text}");
    }

    #[test]
    fn cluster_gauges_admin_latencies_and_sidecar_errors() {
        let metrics = OperatorMetrics::default();
        metrics.record_groups("ns", "sample", 17, 12);
        metrics
            .admin_seconds
            .get_or_create(&AdminCommandLabels {
                command: "status",
                result: "ok",
            })
            .observe(0.2);
        metrics
            .sidecar_errors
            .get_or_create(&SidecarErrorLabels {
                request: "ready",
                kind: "unreachable",
            })
            .inc();
        metrics.leader.set(1);
        let text = metrics.encode();
        for wanted in [
            "fdb_operator_process_groups_desired{namespace=\"ns\",cluster=\"sample\"} 17",
            "fdb_operator_process_groups_reconciled{namespace=\"ns\",cluster=\"sample\"} 12",
            "fdb_operator_admin_command_duration_seconds_count{command=\"status\",result=\"ok\"} 1",
            "fdb_operator_sidecar_errors_total{request=\"ready\",kind=\"unreachable\"} 1",
            "fdb_operator_leader 1",
        ] {
            assert!(text.contains(wanted), "{wanted} missing in\n{text}");
        }
        metrics.forget_cluster("ns", "sample");
        assert!(!metrics.encode().contains("cluster=\"sample\""));
    }
}
