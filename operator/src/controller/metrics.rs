//! Prometheus metrics of the controller: passes, step durations and requeues.

use std::sync::{Mutex, PoisonError};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
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
        Self {
            passes,
            step_seconds,
            requeues,
            failures,
            registry: Mutex::new(registry),
        }
    }
}

fn step_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 4.0, 10))
}

impl OperatorMetrics {
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
}
