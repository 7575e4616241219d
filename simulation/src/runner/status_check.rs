//! The run's check of the world's `status json` (`fdb/status_schema.rs`): each mismatch
//! with FoundationDB's schema becomes the violation `status-off-schema`.

use std::sync::Arc;

use crate::event_log::EventLog;
use crate::fdb::{SimulatedFdb, StatusCheck};
use crate::invariants::STATUS_OFF_SCHEMA;

/// Every document `fdb` renders from now on is matched; mismatches land in `log`.
pub(super) fn check_statuses(fdb: &SimulatedFdb, log: &EventLog) {
    let log = log.clone();
    fdb.check_statuses(StatusCheck::new(Arc::new(move |mismatch: String| {
        log.note_violation(STATUS_OFF_SCHEMA, mismatch);
    })));
}
