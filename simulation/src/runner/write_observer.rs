//! Every API write lands in the run's event log: the operator's own as its actions, and
//! a write the API server refused as invalid (422) as a `write-refused` violation.

use std::sync::Arc;

use super::OPERATOR_ACTOR;
use crate::event_log::EventLog;
use crate::kube::{FakeApiServer, WriteRecord};
use crate::result::EventSource;

/// Every API write lands in the run's event log (the operator's own as its actions).
pub(super) fn observe_writes(api: &FakeApiServer, log: &EventLog) {
    let log = log.clone();
    api.set_write_observer(Some(Arc::new(move |record: &WriteRecord| {
        record_operator_write(&log, record)
    })));
}

/// Turns an operator write seen by the API server into an event: Kubernetes Events the
/// operator emits are `operator`/`event`, every other write `k8s`/`<verb>`.
fn record_operator_write(log: &EventLog, record: &WriteRecord) {
    if record.actor != OPERATOR_ACTOR {
        return;
    }
    // The contract's short names (`pvc/<name>`), as `act` steps name objects.
    let kind = match record.kind.as_str() {
        "PersistentVolumeClaim" => "pvc".to_owned(),
        other => other.to_lowercase(),
    };
    let target = match &record.subresource {
        Some(sub) => format!("{kind}/{}/{sub}", record.name),
        None => format!("{kind}/{}", record.name),
    };
    let detail = if (200..300).contains(&record.code) {
        record.detail.clone()
    } else {
        format!("{} -> {}", record.detail, record.code)
    };
    if record.code == 422 {
        log.note_violation(
            crate::invariants::WRITE_REFUSED,
            format!(
                "the API server refused the operator's {} of {}: {}",
                record.verb.as_str(),
                target,
                record.detail
            ),
        );
    }
    if record.kind == "Event" {
        // Event names end in a wall-clock hash; name the event by its object instead, so
        // the same scenario and seed give the same log.
        let about = record.name.split('.').next().unwrap_or_default();
        log.record(
            EventSource::Operator,
            "event",
            &format!("event/{about}"),
            &detail,
        );
    } else {
        log.record(EventSource::K8s, record.verb.as_str(), &target, &detail);
    }
}

#[cfg(test)]
#[path = "write_refused_tests.rs"]
mod write_refused_tests;
